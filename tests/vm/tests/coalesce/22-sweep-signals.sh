#!/usr/bin/env bash
# Signals to a running `numio coalesce sweep`, each sent once threshold 9 is
# on every controller (the sweep's stderr line that the point started, not
# a sleep): a SIGTERM stops the run, the sweep reports what it measured
# (marked interrupted) and exits 143 with every original back; a second
# SIGINT, sent once the first one's "stopping" line is out (two at once
# merge into one pending signal), exits 130 with every original back:
# through the second signal's exit hook when it lands before the sweep's
# own restore after the run (the stderr says which), else through that
# restore. nvme-cli (nvme get-feature -f 8) reads the values; no restore
# record is left either time.
# vm-lab: timeout=300
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/sweep-lib.bash"
require_numio
coalesce_namespaces

nvme set-feature "/dev/${CTRLS[3]}" -f 8 -v 0x0104 >/dev/null 2>&1 ||
  not_ok "nvme set-feature -f 8 -v 0x0104 on ${CTRLS[3]} failed"
before=$(feature8_all)
note "before: $before"
started='^numio: coalesce: point threshold=9 devices=4 starts'

# Starts a sweep in the background (PID in $pid, stderr in $CHECK_OUT/$1.err)
# and waits for threshold 9 to be on the controllers (polled, 120 s at most).
start_sweep() {
  "$NUMIO" coalesce sweep "${NSES[@]}" --threshold 9 --time 100us --repeat 5 \
    --rw randread --bs 4k --iodepth 32 --runtime 20s --iopoll off --progress never \
    >"$CHECK_OUT/$1.out" 2>"$CHECK_OUT/$1.err" &
  pid=$!
  for _ in $(seq 1200); do
    grep -q "$started" "$CHECK_OUT/$1.err" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  expect_eq "$1: the sweep reached threshold 9" yes \
    "$(grep -q "$started" "$CHECK_OUT/$1.err" && echo yes || echo no)"
}

start_sweep sigterm
kill -TERM "$pid"
wait "$pid"
expect_eq "SIGTERM: exit status 143" 143 "$?"
expect_eq "SIGTERM: the report of the points measured, marked interrupted" yes \
  "$(grep -q 'interrupted: the sweep stopped early' "$CHECK_OUT/sigterm.out" && echo yes || echo no)"
expect_eq "SIGTERM: every original is back (nvme get-feature -f 8)" "$before" "$(feature8_all)"
run_numio coalesce show --json
expect_eq "SIGTERM: no restore record left" 0 "$(jq -r '.pending_restore | length' <<<"$NUMIO_OUT" 2>/dev/null)"

start_sweep sigint2
kill -INT "$pid"
for _ in $(seq 600); do
  grep -q 'Ctrl-C: stopping' "$CHECK_OUT/sigint2.err" 2>/dev/null && break
  sleep 0.05
done
kill -INT "$pid" 2>/dev/null
wait "$pid"
expect_eq "two SIGINTs: exit status 130" 130 "$?"
if grep -q 'interrupted again: putting back the original coalescing values' "$CHECK_OUT/sigint2.err"; then
  note "the second SIGINT landed during the run: its exit hook put the values back"
else
  note "the second SIGINT landed after the sweep's own restore"
fi
expect_eq "two SIGINTs: every original is back (nvme get-feature -f 8)" "$before" "$(feature8_all)"
run_numio coalesce show --json
expect_eq "two SIGINTs: no restore record left" 0 "$(jq -r '.pending_restore | length' <<<"$NUMIO_OUT" 2>/dev/null)"
nvme set-feature "/dev/${CTRLS[3]}" -f 8 -v 0 >/dev/null 2>&1
finish
