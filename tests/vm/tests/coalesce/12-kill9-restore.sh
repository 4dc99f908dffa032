#!/usr/bin/env bash
# The restore promise after `kill -9`: a `numio coalesce sweep` over the
# four drives is SIGKILLed while its threshold-9 point runs (once nvme-cli
# reads 0x109 on all four, the event waited for). The values stay changed,
# the state file keeps the four originals, `numio coalesce show` warns and
# lists them, and `numio coalesce restore` brings every controller back to
# 0 (nvme-cli confirms) and removes the state file.
# vm-lab: timeout=240
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../coalesce-lib.bash"

command -v nvme >/dev/null || { not_ok "nvme-cli is not installed on the host"; finish; }
ctrls=() namespaces=()
for s in NUMIO-C0 NUMIO-C1 NUMIO-C2 NUMIO-C3; do
  c=$(ctrl_by_serial "$s") || { not_ok "no controller with serial $s"; finish; }
  ctrls+=("$c")
  namespaces+=("/dev/$(namespace_of "$c")")
done
rm -f "$STATE_FILE"
trap 'for c in "${ctrls[@]}"; do nvme set-feature "/dev/$c" -f 8 -v 0 >/dev/null 2>&1; done' EXIT
all_zero=$(printf '%s=0\n' "${ctrls[@]}")
all_set=$(printf '%s=265\n' "${ctrls[@]}")

"$NUMIO" coalesce sweep "${namespaces[@]}" --threshold 9 --time 100us --devices 4 \
  --rw randread --bs 4k --iodepth 8 --runtime 10s >"$CHECK_OUT/sweep.out" 2>"$CHECK_OUT/sweep.err" &
sweep=$!
# The event: the threshold-9 point is set on all four (the baseline point,
# 0, runs first). Each poll is one nvme-cli read per controller.
deadline=$((SECONDS + 150))
until [ "$(coalesce_values "${ctrls[@]}")" = "$all_set" ]; do
  kill -0 "$sweep" 2>/dev/null || { not_ok "the sweep ended before its threshold-9 point: $(tail -n 5 "$CHECK_OUT/sweep.err")"; finish; }
  [ $SECONDS -lt $deadline ] || { not_ok "the threshold-9 point never showed on all four"; kill -KILL "$sweep"; finish; }
  sleep 0.2
done
kill -KILL "$sweep"
wait "$sweep" 2>/dev/null
expect_eq "after kill -9: the values stay changed (nvme-cli)" "$all_set" "$(coalesce_values "${ctrls[@]}")"
expect_eq "after kill -9: four records, originals 0" "4 0" \
  "$(jq -r '"\(.records | length) \([.records[].original_raw] | unique | join(","))"' "$STATE_FILE" 2>&1)"

run_numio coalesce show --json "${ctrls[@]}"
expect_eq "show: pending_restore lists the four" 4 "$(jq '.pending_restore | length' <<<"$NUMIO_OUT")"
expect_eq "show: warns" yes "$(grep -q 'numio coalesce restore' <<<"$NUMIO_ERR" && echo yes || echo no)"

run_numio coalesce restore
printf '$ numio coalesce restore\n%s\n%s\n' "$NUMIO_OUT" "$NUMIO_ERR" | tee "$CHECK_OUT/restore.txt" | sed 's/^/  # /'
expect_eq "restore: exit status" 0 "$NUMIO_RC"
expect_eq "restore: nvme-cli reads 0 on each" "$all_zero" "$(coalesce_values "${ctrls[@]}")"
expect_eq "restore: no state file" no "$([ -e "$STATE_FILE" ] && echo yes || echo no)"
finish
