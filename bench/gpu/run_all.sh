#!/usr/bin/env bash
# Builds and runs every GPU program of this folder on the machine's GPU; results into $1 (default .).
# Used on the device machine: bash bench/gpu/run_all.sh "$OUT".
set -uo pipefail
out=${1:-.}; mkdir -p "$out"; here=$(cd "$(dirname "$0")" && pwd); b=$(mktemp -d)
arch=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
{ nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.max.sm,memory.total --format=csv; nvcc --version | tail -2; date -u; } > "$out/env.txt" 2>&1
nvcc -O2 -arch="$arch" -o "$b/occ" "$here/occupancy_sweep.cu" && "$b/occ" "$out" 2>&1 | tail -3
nvcc -O3 -std=c++17 -arch="$arch" -o "$b/costs" "$here/costs.cu" -lnvrtc -lcuda && "$b/costs" > "$out/costs.jsonl"
export PYTHONUNBUFFERED=1
python3 "$here/costs_cupy.py" > "$out/costs_cupy.jsonl" 
python3 "$here/rawkernel_per_call.py" > "$out/rawkernel.jsonl" 
ls -la "$out"
