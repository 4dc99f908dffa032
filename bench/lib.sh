#!/usr/bin/env bash
# Shared helpers of numio's benchmark scripts: building, JSON extraction, the
# side-by-side table. Sourced, not run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# NUMIO=PATH measures that binary (e.g. an older build, for before/after
# tables) instead of building this tree's release binary.
NUMIO="${NUMIO:-}"
CPU="${CPU:-1}"            # the one pinned core every side runs on
RUNTIME="${RUNTIME:-5}"    # seconds per run
REPEATS="${REPEATS:-3}"    # alternating runs per side
RESULTS="$(mktemp -d /tmp/numio-bench.XXXXXX)"

need() { command -v "$1" >/dev/null || { echo "bench: $1 is missing (run scripts/install-deps)" >&2; exit 2; }; }
need fio
need python3

build_release() {
  if [ -n "$NUMIO" ]; then
    [ -x "$NUMIO" ] || { echo "bench: NUMIO=$NUMIO is not an executable file" >&2; exit 2; }
    echo "==> measuring $NUMIO (NUMIO is set: nothing built)" >&2
    return
  fi
  echo "==> building release binaries" >&2
  (cd "$ROOT" && cargo build --release -p numio "$@" >&2)
  NUMIO="$ROOT/target/release/numio"
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

# user_us FILE -> the tool's user-space CPU per I/O in µs (fio's usr_cpu,
# numio's cpu_usage.user_ns), from fio's or numio's JSON.
user_us() {
  python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
if "jobs" in j:
    job = j["jobs"][0]
    iops = job["read"]["iops"] + job["write"]["iops"]
    print(f'{job["usr_cpu"] / 100.0 / iops * 1e6 if iops else 0:.4f}')
else:
    ops = j["total"]["ops"]
    print(f'{j["cpu_usage"]["user_ns"] / 1e3 / ops if ops else 0:.4f}')
PY
}

# cpu_ticks CPU -> "busy total": the CPU's jiffies from /proc/stat, to take
# before and after a run. total is user through steal (guest time is already
# in user); busy leaves out idle, iowait and steal (time the hypervisor gave
# to someone else).
cpu_ticks() {
  awk -v c="cpu$1" '$1 == c { t = 0; for (i = 2; i <= 9; i++) t += $i; print t - $5 - $6 - $9, t }' /proc/stat
}

# busy_between "BUSY0 TOTAL0" "BUSY1 TOTAL1" -> the fraction of the CPU busy in between.
busy_between() {
  python3 -c 'import sys; b0, t0, b1, t1 = map(int, sys.argv[1:5]); print(f"{(b1 - b0) / max(t1 - t0, 1):.4f}")' $1 $2
}

# table TITLE REF_NAME REF_FILE NUMIO_FILE [NUMIO_NAME]: medians of the runs and ratios.
# Each file holds one "iops per_cpu p50 lat_mean [core_busy [user_us]]" line
# per run. With core_busy (the benchmark CPU's busy fraction, from cpu_ticks),
# it also splits each side's CPU time per I/O into its own thread and the
# rest of the core (the kernel's I/O threads), and says what 1.15x the
# reference's IOPS would leave the tool per I/O. With user_us (user_us
# above), it splits the own thread into user space and kernel, and gives
# the bound that matters: the ratio a tool with no user-space cost at all
# would reach, paying the kernel what numio's thread pays and what the
# reference's kernel threads cost.
table() {
  python3 - "$@" <<'PY'
import sys, statistics as st
title, ref_name, ref_file, numio_file = sys.argv[1:5]
numio_name = sys.argv[5] if len(sys.argv) > 5 else "numio"
def load(p):
    rows = [list(map(float, l.split())) for l in open(p) if l.strip()]
    return [st.median(c) for c in zip(*rows)], len(rows), rows
ref, n, ref_rows = load(ref_file)
num, _, num_rows = load(numio_file)
span = lambda rows, i, f: f"{f(min(r[i] for r in rows))}–{f(max(r[i] for r in rows))}"
k = lambda v: f"{v / 1000:,.0f}k"
print(f"\n## {title}  (median of {n} alternating runs; the runs' range after it)")
print(f"| side | IOPS | IOPS per CPU-second | clat p50 | lat mean |")
print(f"|---|---:|---:|---:|---:|")
for name, side, rows in ((ref_name, ref, ref_rows), (numio_name, num, num_rows)):
    print(f"| {name} | {side[0]:,.0f} ({span(rows, 0, k)}) | {side[1]:,.0f} | "
          f"{side[2]:,.0f} ns ({span(rows, 2, lambda v: f'{v:,.0f}')}) | {side[3]:,.0f} ns |")
r = lambda a, b: a / b if b else float("nan")
print(f"| **{numio_name} / {ref_name}** | **{r(num[0], ref[0]):.2f}x** | **{r(num[1], ref[1]):.2f}x** | {r(num[2], ref[2]):.3f} | {r(num[3], ref[3]):.3f} |")
if len(ref) > 4 and len(num) > 4 and ref[0] and num[0] and ref[1] and num[1]:
    # Per I/O on the benchmark core: the tool's own thread (1 / IOPS per
    # CPU-second) and everything else that ran there (busy / IOPS - own).
    def split(side):
        own_us = 1e6 / side[1]
        rest_us = 1e6 * side[4] / side[0] - own_us
        return own_us, rest_us
    users = len(ref) > 5 and len(num) > 5
    print()
    if users:
        print("| side | core busy | own thread µs per I/O | of which user space | rest of the core µs per I/O |")
        print("|---|---:|---:|---:|---:|")
    else:
        print("| side | core busy | own thread µs per I/O | rest of the core µs per I/O |")
        print("|---|---:|---:|---:|")
    for name, side in ((ref_name, ref), (numio_name, num)):
        own, rest = split(side)
        user = f" {side[5]:.3f} |" if users else ""
        print(f"| {name} | {100 * side[4]:.0f} % | {own:.3f} |{user} {rest:.3f} |")
    own_ref, rest_ref = split(ref)
    budget = 1e6 / (1.15 * ref[0]) - rest_ref
    print(f"\n1.15x {ref_name}'s IOPS on a saturated core, at {ref_name}'s rest-of-core cost, "
          f"leaves the tool {budget:.3f} µs per I/O (its own thread: {split(num)[0]:.3f}).")
    if users:
        kernel_own = split(num)[0] - num[5]
        bound = (own_ref + rest_ref) / (kernel_own + rest_ref)
        print(f"Bound: a tool with no user-space cost, whose thread pays the kernel what {numio_name}'s "
              f"does ({kernel_own:.3f} µs per I/O), at {ref_name}'s rest-of-core cost, would reach "
              f"{bound:.3f}x {ref_name}'s IOPS.")
PY
}
