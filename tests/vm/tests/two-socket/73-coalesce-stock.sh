#!/usr/bin/env bash
# On Debian's stock QEMU the emulated NVMe keeps a Feature 08h value but
# refuses to change it: `numio coalesce set` on NUMIO-N0 and the multipath
# namespace (its two controllers) fails with "not changeable", exit status
# 2, and nothing changed: nvme-cli reads every value as before and no state
# file record is left. `numio coalesce show --json` reports the value
# nvme-cli reads and changeable false; `off` is refused the same way.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../coalesce-lib.bash"

command -v nvme >/dev/null || { not_ok "nvme-cli is not installed on the host (tests/vm/setup installs it)"; finish; }
n0=$(ctrl_by_serial NUMIO-N0) || { not_ok "no controller with serial NUMIO-N0"; finish; }
mp_head=""
for b in /sys/block/nvme*n*; do
  [[ ${b##*/} =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
  [[ $(readlink -f "$b/device") == */nvme-subsys* ]] || continue
  mp_head=${b##*/}
done
[ -n "$mp_head" ] || { not_ok "no multipath head in the guest"; finish; }
# The head's device is its subsystem, which links its controllers.
subsys=$(readlink -f "/sys/block/$mp_head/device")
mapfile -t mp_ctrls < <(for c in "$subsys"/nvme*; do
  [[ ${c##*/} =~ ^nvme[0-9]+$ ]] && printf '%s\n' "${c##*/}"
done | sort -V)
[ "${#mp_ctrls[@]}" -eq 2 ] || { not_ok "/dev/$mp_head: 2 controllers wanted in $subsys, found ${mp_ctrls[*]:-none}"; finish; }
all=("$n0" "${mp_ctrls[@]}")
note "NUMIO-N0 is $n0; /dev/$mp_head goes through ${mp_ctrls[*]}"
before=$(coalesce_values "${all[@]}")
note "Feature 08h before: $(tr '\n' ' ' <<<"$before")"

run_numio coalesce set "/dev/$mp_head" "$n0" --threshold 9 --time 100us
printf '%s\n' "$NUMIO_ERR" >"$CHECK_OUT/set.err"
note "numio said: $NUMIO_ERR"
expect_eq "set: exit status" 2 "$NUMIO_RC"
expect_eq "set: the error names the NVMe status" yes \
  "$(grep -q 'refused Set Features 0x08 (interrupt coalescing) = 0x0109: feature not changeable' <<<"$NUMIO_ERR" && echo yes || echo no)"
# The namespace's controllers come first (the order named), in path order.
expect_eq "set: the error names a controller of the first target" yes \
  "$(grep -qE "error: (${mp_ctrls[0]}|${mp_ctrls[1]}) refused" <<<"$NUMIO_ERR" && echo yes || echo no)"
expect_eq "set: the others were not changed" yes \
  "$(grep -q 'no other controller was changed' <<<"$NUMIO_ERR" && echo yes || echo no)"
expect_eq "Feature 08h after (nvme-cli)" "$before" "$(coalesce_values "${all[@]}")"
expect_eq "no state file record left" 0 "$(state_records)"

run_numio coalesce off "$n0"
expect_eq "off: exit status" 2 "$NUMIO_RC"
expect_eq "off: not changeable" yes "$(grep -q 'feature not changeable' <<<"$NUMIO_ERR" && echo yes || echo no)"
expect_eq "no state file record left after off" 0 "$(state_records)"

run_numio coalesce show --json "${all[@]}"
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/show.json"
expect_eq "show: exit status" 0 "$NUMIO_RC"
j() { jq -r "$@" <<<"$NUMIO_OUT" 2>/dev/null; }
expect_eq "show: the values nvme-cli reads" "$before" "$(j '.controllers[] | "\(.name)=\(.raw)"')"
expect_eq "show: changeable false on each" "false false false" "$(j '[.controllers[].changeable] | map(tostring) | join(" ")')"
expect_eq "show: nothing pending" 0 "$(j '.pending_restore | length')"
run_numio coalesce show "$n0"
printf '%s\n' "$NUMIO_OUT" | tee "$CHECK_OUT/show.txt" | sed 's/^/  # /'
finish
