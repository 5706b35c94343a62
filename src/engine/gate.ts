import type { Confidence, Finding, Severity } from '../core/types.js';
import { atLeast } from '../core/types.js';

const CONFIDENCE_RANK: Record<Confidence, number> = { high: 0, medium: 1, low: 2 };

/**
 * Does this finding fail the review (CLI exit 1, failing check run)? Only when it is at least
 * `failOn` severe and at least `failOnConfidence` sure: by default (high, high) a check fails for
 * findings that are both severe and high-confidence; the rest are comments, not a red build.
 */
export function failsGate(f: Pick<Finding, 'severity' | 'confidence'>, failOn: Severity | 'none', failOnConfidence: Confidence = 'high'): boolean {
  return failOn !== 'none' && atLeast(f.severity, failOn) && CONFIDENCE_RANK[f.confidence] <= CONFIDENCE_RANK[failOnConfidence];
}
