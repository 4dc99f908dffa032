#!/usr/bin/env bash
# numio's nop backend vs the bare io_uring NOP loop (crates/engine/examples/
# nop_ceiling.rs, t/io_uring -N1's loop with numio's best ring set-up):
# 1 pinned core, QD 128, alternating runs. Target: within 5 % of the ceiling.
# Env: CPU (default 1), RUNTIME seconds (5), REPEATS (3), NUMIO (a numio
# binary to measure instead of this tree's), CEIL (a nop_ceiling binary).
source "$(dirname "$0")/lib.sh"
build_release
if [ -z "${CEIL:-}" ]; then
  (cd "$ROOT" && cargo build --release -p engine --example nop_ceiling >&2)
  CEIL="$ROOT/target/release/examples/nop_ceiling"
fi
target="$RESULTS/nop-target"
truncate -s 1G "$target"
for i in $(seq "$REPEATS"); do
  "$CEIL" "$RUNTIME" 128 "$CPU" | python3 -c '
import sys
kv = dict(f.split("=") for f in sys.stdin.read().split())
print(kv["ops_per_s"], kv["ops_per_cpu_s"], 0, 0)' >> "$RESULTS/ceil.txt"
  "$NUMIO" bench "$target" --backend nop --rw randread --bs 4k --iodepth 128 \
      --cpus "$CPU" --runtime "$RUNTIME" --json > "$RESULTS/numio.$i.json"
  numio_stats "$RESULTS/numio.$i.json" >> "$RESULTS/numio.txt"
done
table "io_uring NOPs, QD 128, CPU $CPU, ${RUNTIME}s" "bare NOP loop" "$RESULTS/ceil.txt" "$RESULTS/numio.txt"
rm -rf "$RESULTS"
