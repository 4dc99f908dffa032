#!/usr/bin/env bash
# `numio coalesce set/show/off/restore` on the lab QEMU's NVMe, whose
# Feature 08h changes (tests/vm/qemu/), with nvme-cli as the independent
# reader: `set nvme0 --threshold 9 --time 100us` makes `nvme get-feature -f
# 8` read 0x109 and leaves the other controllers alone; `show --json` agrees
# and lists the original under pending_restore (and warns); a second `set`
# keeps the first original; `restore` brings the original back and removes
# the state file. A namespace names its controller; `--persist` keeps no
# record and prints the command that undoes it; `off` back to the original
# leaves nothing to restore; bad input, and a user who is not root, exit 2
# with nothing changed.
# vm-lab: timeout=120
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../coalesce-lib.bash"

command -v nvme >/dev/null || { not_ok "nvme-cli is not installed on the host (tests/vm/setup installs it)"; finish; }
ctrls=()
for s in NUMIO-C0 NUMIO-C1 NUMIO-C2 NUMIO-C3; do
  c=$(ctrl_by_serial "$s") || { not_ok "no controller with serial $s"; finish; }
  ctrls+=("$c")
done
c0=${ctrls[0]} c1=${ctrls[1]} c2=${ctrls[2]}
note "controllers NUMIO-C0..3: ${ctrls[*]}"
rm -f "$STATE_FILE"
# Whatever happens, the controllers are left at 0.
trap 'for c in "${ctrls[@]}"; do nvme set-feature "/dev/$c" -f 8 -v 0 >/dev/null 2>&1; done' EXIT
all_zero=$(printf '%s=0\n' "${ctrls[@]}")
expect_eq "Feature 08h starts at 0 on each (nvme-cli)" "$all_zero" "$(coalesce_values "${ctrls[@]}")"
j() { jq -r "$@" <<<"$NUMIO_OUT" 2>/dev/null; }

run_numio coalesce show "${ctrls[@]}"
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/show-before.txt"
expect_eq "show: exit status" 0 "$NUMIO_RC"

run_numio coalesce set "$c0" --threshold 9 --time 100us
printf '$ numio coalesce set %s --threshold 9 --time 100us\n%s\n%s\n' "$c0" "$NUMIO_OUT" "$NUMIO_ERR" >"$CHECK_OUT/set.txt"
expect_eq "set: exit status" 0 "$NUMIO_RC"
expect_eq "set: nvme-cli reads 0x109 on $c0, 0 elsewhere" \
  "$(printf '%s=%d\n' "$c0" 0x109; printf '%s=0\n' "${ctrls[@]:1}")" "$(coalesce_values "${ctrls[@]}")"
expect_eq "set: says how to undo it" yes \
  "$(grep -q '`numio coalesce restore` puts them back' <<<"$NUMIO_ERR" && echo yes || echo no)"
expect_eq "state file: one record, original 0" "$c0 0" "$(jq -r '.records[] | "\(.name) \(.original_raw)"' "$STATE_FILE" 2>&1)"

run_numio coalesce show --json "$c0"
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/show-set.json"
expect_eq "show --json: threshold, time_us, raw, changeable" "9 100 265 true" \
  "$(j '.controllers[0] | "\(.threshold) \(.time_us) \(.raw) \(.changeable)"')"
expect_eq "show --json: one I/O vector per interrupt-driven queue, none with CD" \
  "$(grep -cE " ${c0}q[1-9][0-9]*\$" /proc/interrupts) 0" \
  "$(j '.controllers[0].vectors | "\(length) \([.[] | select(.coalescing_disabled)] | length)"')"
expect_eq "show --json: pending_restore" "$c0 0 numio coalesce set" \
  "$(j '.pending_restore[] | "\(.name) \(.original_raw) \(.command)"')"
expect_eq "show: warns on stderr" yes \
  "$(grep -q 'has not put back' <<<"$NUMIO_ERR" && echo yes || echo no)"
run_numio coalesce show "$c0"
printf '$ numio coalesce show %s\n%s\n%s\n' "$c0" "$NUMIO_OUT" "$NUMIO_ERR" >"$CHECK_OUT/show-set.txt"
sed 's/^/  # /' "$CHECK_OUT/show-set.txt"

# A second change keeps the first original.
run_numio coalesce set "$c0" --threshold 3 --time 0.2ms
printf '$ numio coalesce set %s --threshold 3 --time 0.2ms\n%s\n%s\n' "$c0" "$NUMIO_OUT" "$NUMIO_ERR" >"$CHECK_OUT/set-again.txt"
expect_eq "second set: nvme-cli reads 0x203" "$((0x203))" "$(nvme_feature "$c0" 8)"
expect_eq "state file: still original 0" "$c0 0" "$(jq -r '.records[] | "\(.name) \(.original_raw)"' "$STATE_FILE" 2>&1)"

# A namespace names its controller.
ns1=$(namespace_of "$c1")
run_numio coalesce set "/dev/$ns1" --threshold 5 --time 100us
printf '$ numio coalesce set /dev/%s --threshold 5 --time 100us\n%s\n%s\n' "$ns1" "$NUMIO_OUT" "$NUMIO_ERR" >"$CHECK_OUT/set-ns.txt"
expect_eq "set /dev/$ns1: nvme-cli reads 0x105 on $c1" "$((0x105))" "$(nvme_feature "$c1" 8)"
expect_eq "state file: two records" 2 "$(state_records)"

run_numio coalesce restore
printf '$ numio coalesce restore\n%s\n%s\n' "$NUMIO_OUT" "$NUMIO_ERR" >"$CHECK_OUT/restore.txt"
expect_eq "restore: exit status" 0 "$NUMIO_RC"
expect_eq "restore: nvme-cli reads 0 on each" "$all_zero" "$(coalesce_values "${ctrls[@]}")"
expect_eq "restore: no state file" no "$([ -e "$STATE_FILE" ] && echo yes || echo no)"
run_numio coalesce restore
expect_eq "restore again: nothing to restore, exit 0" "0 yes" \
  "$NUMIO_RC $(grep -q 'nothing to restore' <<<"$NUMIO_ERR" && echo yes || echo no)"

# off back to the original leaves nothing to restore.
run_numio coalesce set "$c2" --threshold 1 --time 100us
run_numio coalesce off "$c2"
expect_eq "set then off: 0 and no record" "0 0" "$(nvme_feature "$c2" 8) $(state_records)"

# --persist: no record, the undo command printed, and it works.
run_numio coalesce set "$c2" --threshold 1 --time 100us --persist
printf '$ numio coalesce set %s --threshold 1 --time 100us --persist\n%s\n%s\n' "$c2" "$NUMIO_OUT" "$NUMIO_ERR" >"$CHECK_OUT/persist.txt"
expect_eq "--persist: nvme-cli reads 0x101, no record" "$((0x101)) 0" "$(nvme_feature "$c2" 8) $(state_records)"
undo=$(sed -n 's/.*to undo: \(numio coalesce .*\)$/\1/p' <<<"$NUMIO_ERR")
expect_eq "--persist: the undo command" "numio coalesce off $c2 --persist" "$undo"
read -ra undo_args <<<"${undo#numio }"
run_numio "${undo_args[@]}"
expect_eq "the undo command: 0, no record" "0 0" "$(nvme_feature "$c2" 8) $(state_records)"

# Bad input: exit 2, nothing changed, nothing recorded.
for bad in "256 100us --threshold 256" "9 25.6ms --time 25.6ms" "9 150us --time 150us"; do
  read -r thr time named <<<"$bad"
  run_numio coalesce set "${ctrls[@]}" --threshold "$thr" --time "$time"
  expect_eq "set --threshold $thr --time $time: exit 2, a message naming it" "2 yes" \
    "$NUMIO_RC $(grep -qF -- "error: $named" <<<"$NUMIO_ERR" && echo yes || echo no)"
done
run_numio coalesce set nvme99 --threshold 9 --time 100us
expect_eq "set nvme99: exit 2, unknown controller" "2 yes" \
  "$NUMIO_RC $(grep -q 'unknown controller or namespace `nvme99`' <<<"$NUMIO_ERR" && echo yes || echo no)"
expect_eq "after bad input: nvme-cli reads 0 on each, no record" "$all_zero
0" "$(coalesce_values "${ctrls[@]}"; state_records)"

# Not root: exit 2, the device and the fix named, nothing changed, nothing
# recorded (its state file would go to its own XDG_RUNTIME_DIR).
if command -v setpriv >/dev/null; then
  nobody_dir=$(mktemp -d /tmp/numio-nobody.XXXXXX)
  cp "$NUMIO" "$nobody_dir/numio"
  chmod 755 "$nobody_dir" "$nobody_dir/numio"
  chown 65534:65534 "$nobody_dir"
  out=$(XDG_RUNTIME_DIR=$nobody_dir setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$nobody_dir/numio" coalesce set "$c0" --threshold 9 --time 100us 2>&1)
  rc=$?
  printf '$ setpriv --reuid=65534 ... numio coalesce set %s --threshold 9 --time 100us\n%s\n' "$c0" "$out" >"$CHECK_OUT/not-root.txt"
  expect_eq "set as uid 65534: exit 2, naming /dev/$c0 and 'run as root'" "2 yes" \
    "$rc $(grep -q "/dev/$c0.*run as root" <<<"$out" && echo yes || echo no)"
  expect_eq "set as uid 65534: nvme-cli reads 0 on each, no record anywhere" "$all_zero
0 0" "$(coalesce_values "${ctrls[@]}"; echo "$(state_records) $(find "$nobody_dir" -name '*.json' | wc -l)")"
  rm -rf "$nobody_dir"
else
  note "no setpriv in the guest: not-root is covered by crates/tune/src/guard_tests.rs"
fi
finish
