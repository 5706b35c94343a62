#!/usr/bin/env node
import { run } from 'probot';
import app from '../app.js';
import { GpuReviewOctokit } from './octokit.js';

// `probot run` would build clients with Probot's own Octokit, whose secondary-rate-limit handler
// only logs; this entry hands Probot the tuned class. Environment: see README "Install as a GitHub App".
await run(app, { Octokit: GpuReviewOctokit });
