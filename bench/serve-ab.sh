#!/usr/bin/env bash
# numio serve against itself: two builds of the target (OLD=PATH, NEW=PATH;
# NEW defaults to this tree's release build), the same initiator (NEW's
# `numio bench`), over loopback, alternating OLD and NEW run by run. Prints
# per row the median IOPS and target CPU per I/O of each, and NEW/OLD.
# A before/after check for changes on the target's I/O path, not a CI test.
#
#   OLD=/tmp/numio-old bench/serve-ab.sh           # REPEATS=3 RUNTIME=5
#
# The target's reactor runs on CPU 0; a QD1 row runs the initiator on CPU 0
# too (a wake-up across vCPUs costs this VM ~40 us and would dominate), the
# deeper rows on CPU 1. Target CPU per I/O: the serve process's utime +
# stime (/proc/PID/stat, all threads) over the run, divided by its I/Os.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUNTIME="${RUNTIME:-5}"
REPEATS="${REPEATS:-3}"
OLD="${OLD:?OLD=PATH: the numio binary to compare against}"
if [ -z "${NEW:-}" ]; then
  (cd "$ROOT" && cargo build --release -p numio >&2)
  NEW="$ROOT/target/release/numio"
fi
for b in "$OLD" "$NEW"; do [ -x "$b" ] || { echo "serve-ab: $b is not an executable file" >&2; exit 2; }; done
command -v jq >/dev/null || { echo "serve-ab: jq is missing (scripts/install-deps)" >&2; exit 2; }
PORT="${PORT:-4490}"
NQN=nqn.2026-01.io.numio:ab
TMP=$(mktemp -d /tmp/numio-serve-ab.XXXXXX)
trap 'if [ -n "$serve" ]; then kill "$serve" 2>/dev/null; fi; rm -rf "$TMP"' EXIT
serve=""
tick_hz=$(getconf CLK_TCK)

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# one BIN ROW RW QD CPU -> "iops cpu_ns_per_io"
one() {
  local bin=$1 rw=$2 qd=$3 cpu=$4
  "$bin" serve --ns mem:1G --nqn "$NQN" --allow-any-host --listen "127.0.0.1:$PORT" \
    --discovery-port 0 --cpus 0 >"$TMP/serve.out" 2>"$TMP/serve.err" &
  serve=$!
  # Waits for the listener (an event: the port answers), not a clock.
  for _ in $(seq 1 500); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    kill -0 "$serve" 2>/dev/null || { cat "$TMP/serve.err" >&2; exit 1; }
    sleep 0.02
  done
  local t0 t1
  t0=$(cpu_ticks "$serve")
  taskset -c "$cpu" "$NEW" bench "nvme-tcp://127.0.0.1:$PORT/$NQN" --rw "$rw" --bs 4k \
    --iodepth "$qd" --runtime "$RUNTIME" --force-write --no-progress --json >"$TMP/bench.json"
  t1=$(cpu_ticks "$serve")
  kill "$serve"; wait "$serve" 2>/dev/null || true; serve=""
  local ops iops
  ops=$(jq -r '.total.ops' "$TMP/bench.json")
  iops=$(jq -r '.total.iops' "$TMP/bench.json")
  awk -v i="$iops" -v t=$((t1 - t0)) -v hz="$tick_hz" -v o="$ops" \
    'BEGIN { printf "%.0f %.0f\n", i, t * 1e9 / hz / (o > 0 ? o : 1) }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-22s %12s %12s %7s %14s %14s %7s\n' row "old IOPS" "new IOPS" new/old "old CPU ns/IO" "new CPU ns/IO" new/old
for row in "randread 1 0" "randread 32 1" "randwrite 32 1"; do
  read -r rw qd cpu <<<"$row"
  : >"$TMP/old" && : >"$TMP/new"
  for _ in $(seq 1 "$REPEATS"); do
    one "$OLD" "$rw" "$qd" "$cpu" >>"$TMP/old"
    one "$NEW" "$rw" "$qd" "$cpu" >>"$TMP/new"
  done
  oi=$(cut -d' ' -f1 "$TMP/old" | median); ni=$(cut -d' ' -f1 "$TMP/new" | median)
  oc=$(cut -d' ' -f2 "$TMP/old" | median); nc=$(cut -d' ' -f2 "$TMP/new" | median)
  awk -v r="4k $rw QD$qd" -v oi="$oi" -v ni="$ni" -v oc="$oc" -v nc="$nc" \
    'BEGIN { printf "%-22s %12.0f %12.0f %7.3f %14.0f %14.0f %7.3f\n", r, oi, ni, ni / oi, oc, nc, nc / oc }'
done
echo "medians of $REPEATS alternating ${RUNTIME} s runs; old: $OLD, new: $NEW"
