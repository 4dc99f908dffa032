#!/usr/bin/env bash
# vm-lab: timeout=180
# An NVMe controller removed under load (PCI remove through sysfs) while
# numio reads its namespace (issue #16): numio reports the errors and exits
# within its run time (no hang, no lost report), exit 1. The last check of
# one-node: the controller stays removed.
. "$(dirname "$0")/../lib.sh"
require_numio

dev=""
for b in /sys/block/nvme*n1; do
  [ "$(tr -d ' ' <"$b/device/serial" 2>/dev/null)" = NUMIO-B ] && dev=${b##*/}
done
[ -n "$dev" ] || { not_ok "no namespace of controller NUMIO-B"; finish; }
pci=$(readlink -f "/sys/block/$dev/device/device")
[ -e "$pci/remove" ] || { not_ok "no PCI remove for $dev ($pci)"; finish; }
note "reading /dev/$dev, then removing its controller ${pci##*/}"

out=$CHECK_OUT/bench.json err=$CHECK_OUT/bench.err
"$NUMIO" bench "/dev/$dev" --backend uring --rw randread --runtime 30 --iodepth 16 \
  --progress always --json >"$out" 2>"$err" &
pid=$!
# The event: a progress line with I/O done (polled, 60 s at most).
for _ in $(seq 600); do
  grep -Eq '[1-9][0-9.]*k? IOPS' "$err" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
expect_eq "numio was reading when the controller went" yes \
  "$(grep -Eq '[1-9][0-9.]*k? IOPS' "$err" && echo yes || echo no)"
t0=$(date +%s)
echo 1 >"$pci/remove"
wait "$pid"
rc=$?
t1=$(date +%s)
note "numio ended $((t1 - t0)) s after the removal: $(tail -n 2 "$err" | tr '\n' ' ')"
expect_eq "exit 1 (errors), within the 30 s run time (+ 15 s)" "1 yes" \
  "$rc $([ $((t1 - t0)) -le 45 ] && echo yes || echo no)"
expect_eq "the report holds the reads before and the errors after" yes \
  "$(jq -e '.total.ops > 0 and (.errors | length) > 0' "$out" >/dev/null 2>&1 && echo yes || echo no)"
note "errors: $(jq -c '.errors' "$out" 2>/dev/null)"
finish
