#!/usr/bin/env bash
# The cost of the time axis: numio's null backend with per-interval results
# (--interval 1s, the default) against the same binary without them
# (--interval off), 1 pinned core, QD 128, 4 KiB random reads, alternating
# runs in one invocation. Target: the intervals cost at most 1 % of IOPS
# (ratio >= 0.99). Env: CPU (default 1), RUNTIME seconds (5), REPEATS (3),
# INTERVAL (1s; 100ms shows the shortest grid's cost), NUMIO (a numio
# binary to measure instead of building this tree's).
source "$(dirname "$0")/lib.sh"
build_release
INTERVAL="${INTERVAL:-1s}"
target="$RESULTS/null-target"
truncate -s 1G "$target"     # never read: null does no I/O
run() { # $1: --interval value, $2: output
  "$NUMIO" bench "$target" --backend null --rw randread --bs 4k --iodepth 128 \
      --cpus "$CPU" --runtime "$RUNTIME" --interval "$1" --json > "$2"
}
for i in $(seq "$REPEATS"); do
  run off "$RESULTS/off.$i.json"
  numio_stats "$RESULTS/off.$i.json" >> "$RESULTS/off.txt"
  run "$INTERVAL" "$RESULTS/on.$i.json"
  numio_stats "$RESULTS/on.$i.json" >> "$RESULTS/on.txt"
  python3 - "$RESULTS/on.$i.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
n = sum(i["total"]["ops"] for i in j["intervals"])
assert n == j["total"]["ops"], f"intervals hold {n} I/Os, the run {j['total']['ops']}"
PY
done
table "null engine, 4k randread, QD 128, CPU $CPU, ${RUNTIME}s: intervals of $INTERVAL vs none" \
  "--interval off" "$RESULTS/off.txt" "$RESULTS/on.txt" "--interval $INTERVAL"
rm -rf "$RESULTS"
