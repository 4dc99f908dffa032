#!/usr/bin/env bash
# A controller that vanishes mid-sweep (PCI remove through sysfs while
# threshold 9 is on every controller, waited for on the sweep's stderr):
# the sweep ends with exit status 2 and an error naming it, every other
# controller is back at its original (nvme-cli reads them), and the
# vanished one's original stays on record. Once a PCI rescan brings the
# controller back (under whatever name), `numio coalesce restore` finds it
# by PCI address and serial and puts its original back, as nvme-cli reads.
# Last of the topology's checks: it removes and re-adds a controller.
# vm-lab: timeout=300
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/sweep-lib.bash"
require_numio
coalesce_namespaces

gone=${CTRLS[1]}
serial=$(tr -d ' ' <"/sys/class/nvme/$gone/serial")
pci=$(readlink -f "/sys/class/nvme/$gone/device")
[ -e "$pci/remove" ] || { not_ok "no PCI remove for $gone ($pci)"; finish; }
nvme set-feature "/dev/$gone" -f 8 -v 0x0302 >/dev/null 2>&1 ||
  not_ok "nvme set-feature -f 8 -v 0x0302 on $gone failed"
before=$(feature8_all)
note "before: $before; removing $gone ($serial, ${pci##*/}) mid-sweep"

err=$CHECK_OUT/sweep.err
"$NUMIO" coalesce sweep "${NSES[@]}" --threshold 9 --time 100us --repeat 5 \
  --rw randread --bs 4k --iodepth 32 --runtime 20s --iopoll off --progress never \
  >"$CHECK_OUT/sweep.out" 2>"$err" &
pid=$!
started='^numio: coalesce: point threshold=9 devices=4 starts'
for _ in $(seq 1200); do
  grep -q "$started" "$err" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
expect_eq "the sweep reached threshold 9" yes "$(grep -q "$started" "$err" && echo yes || echo no)"
echo 1 >"$pci/remove"
wait "$pid"
expect_eq "numio coalesce sweep exit status" 2 "$?"
note "numio said: $(grep 'error' "$err" | tail -n 1)"
expect_eq "the error names the vanished controller" yes \
  "$(grep 'numio: error:' "$err" | grep -q "$gone" && echo yes || echo no)"

others=() want=()
for i in 0 2 3; do
  others+=("${CTRLS[$i]}=$(feature8 "${CTRLS[$i]}")")
  want+=("$(cut -d' ' -f$((i + 1)) <<<"$before")")
done
expect_eq "every other controller is back at its original (nvme get-feature -f 8)" "${want[*]}" "${others[*]}"
run_numio coalesce show --json
expect_eq "the vanished controller's original stays on record" "$serial 770" \
  "$(jq -r '.pending_restore[] | "\(.serial) \(.original_raw)"' <<<"$NUMIO_OUT" 2>/dev/null)"

echo 1 >/sys/bus/pci/rescan
back=""
for _ in $(seq 600); do
  for c in /sys/class/nvme/nvme*; do
    [ "$(tr -d ' ' <"$c/serial" 2>/dev/null)" = "$serial" ] && [ -e "/dev/${c##*/}" ] && back=${c##*/}
  done
  [ -n "$back" ] && break
  sleep 0.1
done
expect_eq "the PCI rescan brought $serial back" yes "$([ -n "$back" ] && echo yes || echo no)"
[ -n "$back" ] || finish
note "$serial is $back now; its value: $(feature8 "$back")"
run_numio coalesce restore
note "restore said: $(tr '\n' ' ' <<<"$NUMIO_OUT$NUMIO_ERR")"
expect_eq "numio coalesce restore exit status" 0 "$NUMIO_RC"
expect_eq "its original is back (nvme get-feature -f 8)" 0x0302 "$(feature8 "$back")"
run_numio coalesce show --json
expect_eq "no restore record left" 0 "$(jq -r '.pending_restore | length' <<<"$NUMIO_OUT" 2>/dev/null)"
nvme set-feature "/dev/$back" -f 8 -v 0 >/dev/null 2>&1
finish
