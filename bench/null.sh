#!/usr/bin/env bash
# numio's null backend vs fio --ioengine=null: 1 pinned core, QD 128, 4 KiB
# random reads, alternating runs in one invocation. Target: >= 10x fio's ops/s.
# Env: CPU (default 1), RUNTIME seconds (5), REPEATS (3), NUMIO (a numio
# binary to measure instead of building this tree's).
source "$(dirname "$0")/lib.sh"
build_release
target="$RESULTS/null-target"
truncate -s 1G "$target"     # never read: null does no I/O
for i in $(seq "$REPEATS"); do
  fio --name=null --ioengine=null --size=1g --rw=randread --bs=4k --iodepth=128 \
      --norandommap --time_based --runtime="$RUNTIME" --cpus_allowed="$CPU" \
      --output-format=json --output="$RESULTS/fio.$i.json" >/dev/null
  fio_stats "$RESULTS/fio.$i.json" >> "$RESULTS/fio.txt"
  "$NUMIO" bench "$target" --backend null --rw randread --bs 4k --iodepth 128 \
      --cpus "$CPU" --runtime "$RUNTIME" --json > "$RESULTS/numio.$i.json"
  numio_stats "$RESULTS/numio.$i.json" >> "$RESULTS/numio.txt"
done
table "null engine, 4k randread, QD 128, CPU $CPU, ${RUNTIME}s" "fio null" "$RESULTS/fio.txt" "$RESULTS/numio.txt"
rm -rf "$RESULTS"
