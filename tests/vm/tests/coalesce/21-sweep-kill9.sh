#!/usr/bin/env bash
# `kill -9` of a running `numio coalesce sweep`: nothing in numio runs to put
# the controllers back, so they keep the sweep's value and the state file
# keeps the originals; `numio coalesce restore` then brings every original
# back, as nvme-cli (nvme get-feature -f 8, an independent reader) confirms.
# The kill waits for the event: the sweep's stderr line that the threshold 9
# point started (its value is on the controllers), not a sleep.
# vm-lab: timeout=300
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/sweep-lib.bash"
require_numio
coalesce_namespaces

nvme set-feature "/dev/${CTRLS[2]}" -f 8 -v 0x0201 >/dev/null 2>&1 ||
  not_ok "nvme set-feature -f 8 -v 0x0201 on ${CTRLS[2]} failed"
before=$(feature8_all)
note "before: $before"

err=$CHECK_OUT/sweep.err
# Runs of 20 s: reading four values with nvme-cli under TCG takes seconds,
# and the kill must land in the threshold 9 run (its value on every
# controller), not in the next one (the originals back, then off).
"$NUMIO" coalesce sweep "${NSES[@]}" --threshold 9 --time 100us --repeat 5 \
  --rw randread --bs 4k --iodepth 32 --runtime 20s --iopoll off --progress never \
  >"$CHECK_OUT/sweep.out" 2>"$err" &
pid=$!
started='^numio: coalesce: point threshold=9 devices=4 starts'
# The event: the line saying threshold 9 is set and its run starts (polled
# for it, 120 s at most; the sweep runs far longer).
for _ in $(seq 1200); do
  grep -q "$started" "$err" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
expect_eq "the sweep reached threshold 9" yes "$(grep -q "$started" "$err" && echo yes || echo no)"
during=$(feature8_all)
note "during: $during"
expect_eq "threshold 9 (0x0109) is on every controller" \
  "${CTRLS[0]}=0x0109 ${CTRLS[1]}=0x0109 ${CTRLS[2]}=0x0109 ${CTRLS[3]}=0x0109" "$during"
kill -9 "$pid"
wait "$pid"
expect_eq "numio died of SIGKILL" 137 "$?"
expect_eq "nothing was put back by the killed sweep" "$during" "$(feature8_all)"

run_numio coalesce show
expect_eq "show warns of the record the sweep left" yes \
  "$(grep -qi 'restore' <<<"$NUMIO_OUT$NUMIO_ERR" && echo yes || echo no)"
run_numio coalesce restore
note "restore said: $(tr '\n' ' ' <<<"$NUMIO_OUT$NUMIO_ERR")"
expect_eq "numio coalesce restore exit status" 0 "$NUMIO_RC"
after=$(feature8_all)
note "after restore: $after"
expect_eq "every original is back (nvme get-feature -f 8)" "$before" "$after"
run_numio coalesce show --json
expect_eq "no restore record left" 0 "$(jq -r '.pending_restore | length' <<<"$NUMIO_OUT" 2>/dev/null)"
nvme set-feature "/dev/${CTRLS[2]}" -f 8 -v 0 >/dev/null 2>&1
finish
