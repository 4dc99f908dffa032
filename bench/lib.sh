#!/usr/bin/env bash
# Shared helpers of numio's benchmark scripts: building, JSON extraction, the
# side-by-side table. Sourced, not run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NUMIO="$ROOT/target/release/numio"
CPU="${CPU:-1}"            # the one pinned core every side runs on
RUNTIME="${RUNTIME:-5}"    # seconds per run
REPEATS="${REPEATS:-3}"    # alternating runs per side
RESULTS="$(mktemp -d /tmp/numio-bench.XXXXXX)"

need() { command -v "$1" >/dev/null || { echo "bench: $1 is missing (run scripts/install-deps)" >&2; exit 2; }; }
need fio
need python3

build_release() {
  echo "==> building release binaries" >&2
  (cd "$ROOT" && cargo build --release -p numio "$@" >&2)
}

# fio_json FILE -> "iops iops_per_cpu_s clat_p50_ns lat_mean_ns"
fio_stats() {
  python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
job = j["jobs"][0]
r = job["read"]
cpu = (job["usr_cpu"] + job["sys_cpu"]) / 100.0
iops = r["iops"]
p50 = r["clat_ns"].get("percentile", {}).get("50.000000", 0)
print(f'{iops:.0f} {iops / cpu if cpu else 0:.0f} {p50:.0f} {r["lat_ns"]["mean"]:.0f}')
PY
}

# numio_stats FILE -> "iops iops_per_cpu_s clat_p50_ns lat_mean_ns"
numio_stats() {
  python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
t = j["total"]
# The workers' own threads (RUSAGE_THREAD), as fio counts its job thread:
# neither side counts the kernel's iou-wrk threads serving punted I/O
# (numio reports those in process_cpu_usage).
cpu = j["cpu_usage"]
cpu_s = (cpu["user_ns"] + cpu["system_ns"]) / 1e9
wall_s = j["runtime_ns"] / 1e9
iops = t["iops"]
per_cpu = t["ops"] / cpu_s if cpu_s else 0
p50 = next((p["latency_ns"] for p in t["latency"]["clat"]["percentiles"] if p["percentile"] == 50.0), 0)
print(f'{iops:.0f} {per_cpu:.0f} {p50} {t["latency"]["lat"]["mean_ns"]:.0f}')
PY
}

# table TITLE REF_NAME REF_FILE NUMIO_FILE [NUMIO_NAME]: medians of the runs and ratios.
# Each file holds one "iops per_cpu p50 lat_mean" line per run.
table() {
  python3 - "$@" <<'PY'
import sys, statistics as st
title, ref_name, ref_file, numio_file = sys.argv[1:5]
numio_name = sys.argv[5] if len(sys.argv) > 5 else "numio"
def load(p):
    rows = [list(map(float, l.split())) for l in open(p) if l.strip()]
    return [st.median(c) for c in zip(*rows)], len(rows)
ref, n = load(ref_file)
num, _ = load(numio_file)
print(f"\n## {title}  (median of {n} alternating runs)")
print(f"| side | IOPS | IOPS per CPU-second | clat p50 | ")
print(f"|---|---:|---:|---:|")
print(f"| {ref_name} | {ref[0]:,.0f} | {ref[1]:,.0f} | {ref[2]:,.0f} ns |")
print(f"| {numio_name} | {num[0]:,.0f} | {num[1]:,.0f} | {num[2]:,.0f} ns |")
r = lambda a, b: a / b if b else float("nan")
print(f"| **{numio_name} / {ref_name}** | **{r(num[0], ref[0]):.2f}x** | **{r(num[1], ref[1]):.2f}x** | {r(num[2], ref[2]):.3f} |")
PY
}
