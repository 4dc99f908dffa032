#!/usr/bin/env bash
# vm-lab: timeout=300
# numio's driver without an IOMMU (VFIO's no-IOMMU mode):
# 1. With Debian's vfio (built without CONFIG_VFIO_NOIOMMU): numio vfio
#    bind is refused with a message naming --allow-noiommu and what it
#    risks; with --allow-noiommu, refused naming CONFIG_VFIO_NOIOMMU. The
#    controller stays on nvme and nothing is recorded.
# 2. With vfio.ko rebuilt from the same source with no-IOMMU mode
#    (tests/vm/noiommu/build) and the mode on: bind without
#    --allow-noiommu is still refused; with it (and --hugepages 32) the
#    controller is on vfio-pci in a no-IOMMU group (bound without
#    hugepages, a bench is refused naming --hugepages); a bench without
#    --allow-noiommu is refused naming the risk; with it numio's driver
#    reads (IOPS > 0, no error, the set-up says no-IOMMU), writes 64k by SGL
#    blocks and 12k slots straddling hugepages by PRP lists, and reads both
#    back verified; unbind gives it back to nvme, the hugepage pool is put
#    back, and the kernel reads valid verify blocks where numio wrote.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../iommu/vfio-lib.bash"
require_numio

[ -z "$(ls /sys/kernel/iommu_groups 2>/dev/null)" ] || skip "an IOMMU is on here"
vm-modprobe vfio-pci || { not_ok "vm-modprobe vfio-pci"; finish; }
a=$(pci_of_serial NUMIO-A) || { not_ok "controller NUMIO-A not found"; finish; }

run_numio vfio bind "$a"
note "$NUMIO_ERR"
expect_eq "bind without an IOMMU exits 2" 2 "$NUMIO_RC"
expect_eq "it names --allow-noiommu and the risk" yes \
  "$([[ $NUMIO_ERR == *"no IOMMU is on"*"--allow-noiommu"*"DMA anywhere in memory"* ]] && echo yes || echo no)"
run_numio vfio bind --allow-noiommu "$a"
note "$NUMIO_ERR"
expect_eq "bind --allow-noiommu exits 2" 2 "$NUMIO_RC"
noiommu=$([ -e /sys/module/vfio/parameters/enable_unsafe_noiommu_mode ] && echo yes || echo no)
if [ "$noiommu" = no ]; then
  expect_eq "it names CONFIG_VFIO_NOIOMMU" yes \
    "$([[ $NUMIO_ERR == *CONFIG_VFIO_NOIOMMU* ]] && echo yes || echo no)"
else
  expect_eq "it names enable_unsafe_noiommu_mode" yes \
    "$([[ $NUMIO_ERR == *enable_unsafe_noiommu_mode* ]] && echo yes || echo no)"
fi
expect_eq "$a stays on nvme" nvme "$(driver_of "$a")"
expect_eq "nothing recorded" no "$([ -e /run/numio/vfio.json ] && echo yes || echo no)"

# 2. No-IOMMU mode working: Debian's vfio.ko swapped for the same source
#    built with CONFIG_VFIO_NOIOMMU (tests/vm/noiommu/build), mode on.
ko=${NUMIO_VM_VFIO_NOIOMMU:-}
if [ -z "$ko" ]; then
  not_ok "no vfio.ko with no-IOMMU mode: ${NUMIO_VM_VFIO_NOIOMMU_ERROR:-the lab passed none}"
  finish
fi
for m in vfio_pci vfio_pci_core vfio_iommu_type1 vfio; do
  [ ! -d "/sys/module/$m" ] || rmmod "$m" || not_ok "rmmod $m"
done
insmod "$ko" enable_unsafe_noiommu_mode=1 || { not_ok "insmod $ko"; finish; }
vm-modprobe vfio-pci || { not_ok "vm-modprobe vfio-pci (against the rebuilt vfio)"; finish; }
expect_eq "no-IOMMU mode is on" Y "$(cat /sys/module/vfio/parameters/enable_unsafe_noiommu_mode)"
ns=$(namespace_of "$a") || { not_ok "no namespace of $a"; finish; }
wipefs -q -a "/dev/$ns" >/dev/null 2>&1
pool=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
before=$(cat "$pool")

run_numio vfio bind "$a"
expect_eq "bind without --allow-noiommu (mode on): exit 2" 2 "$NUMIO_RC"
expect_eq "it names --allow-noiommu" yes "$([[ $NUMIO_ERR == *--allow-noiommu* ]] && echo yes || echo no)"
expect_eq "$a stays on nvme" nvme "$(driver_of "$a")"

# Too few hugepages: no-IOMMU mode needs them for queues and buffers.
if [ "$before" -eq 0 ]; then
  run_numio vfio bind --allow-noiommu "$a"
  expect_eq "vfio bind --allow-noiommu (no hugepages): exit status ($NUMIO_ERR)" 0 "$NUMIO_RC"
  run_numio bench "pci:$a" --allow-noiommu --rw randread --bs 4k --iodepth 16 --runtime 1s --no-progress
  note "$NUMIO_ERR"
  expect_eq "no-IOMMU bench without hugepages: exit 2" 2 "$NUMIO_RC"
  expect_eq "it names hugepages and --hugepages" yes \
    "$([[ $NUMIO_ERR == *hugepages*--hugepages* ]] && echo yes || echo no)"
  run_numio vfio unbind "$a"
  expect_eq "vfio unbind after the refusal: exit status ($NUMIO_ERR)" 0 "$NUMIO_RC"
  expect_eq "$a is back on nvme after the refusal" nvme "$(driver_of "$a")"
else
  not_ok "the guest has $before hugepages reserved before the check (expected none)"
fi

run_numio vfio bind --allow-noiommu --hugepages 32 "$a"
expect_eq "vfio bind --allow-noiommu --hugepages 32: exit status ($NUMIO_ERR)" 0 "$NUMIO_RC"
note "$NUMIO_OUT"
expect_eq "$a is on vfio-pci" vfio-pci "$(driver_of "$a")"
group=$(basename "$(readlink -f "/sys/bus/pci/devices/$a/iommu_group")")
expect_eq "its group is a no-IOMMU group" yes "$([ -e "/dev/vfio/noiommu-$group" ] && echo yes || echo no)"

run_numio bench "pci:$a" --rw randread --bs 4k --iodepth 16 --runtime 1s --no-progress
expect_eq "bench of a no-IOMMU device without --allow-noiommu: exit 2" 2 "$NUMIO_RC"
note "$NUMIO_ERR"
expect_eq "it names --allow-noiommu and the risk" yes \
  "$([[ $NUMIO_ERR == *"no-IOMMU mode"*"--allow-noiommu"*"DMA anywhere in memory"* ]] && echo yes || echo no)"

run_numio bench "pci:$a" --allow-noiommu --rw randread --bs 4k --iodepth 16 --runtime 2s --json --no-progress
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/noiommu-read.json"
expect_eq "no-IOMMU randread: exit status ($(tail -n 3 <<<"$NUMIO_ERR"))" 0 "$NUMIO_RC"
iops=$(jq '.total.iops // 0 | floor' "$CHECK_OUT/noiommu-read.json" 2>/dev/null || echo 0)
note "vfio randread 4k QD16 in no-IOMMU mode (TCG): $iops IOPS"
expect_eq "no-IOMMU randread: IOPS > 0" yes "$([ "${iops:-0}" -gt 0 ] && echo yes || echo no)"
expect_eq "no-IOMMU randread: errors" "[]" "$(jq -c '.errors' "$CHECK_OUT/noiommu-read.json")"
expect_eq "no-IOMMU randread: the set-up says no-IOMMU mode" yes \
  "$(jq -r '.environment.uring_features[]' "$CHECK_OUT/noiommu-read.json" | grep -q '^VFIO no-IOMMU mode' && echo yes || echo no)"

# The report a user sees (kept for docs/readme/vfio.md).
"$NUMIO" bench "pci:$a" --allow-noiommu --rw randread --bs 4k --iodepth 16 --runtime 1s --no-progress \
  >"$CHECK_OUT/noiommu-read.txt" 2>&1 || not_ok "no-IOMMU randread (text report): $(tail -n 3 "$CHECK_OUT/noiommu-read.txt")"

# Writes addressed physically: 64k by one SGL block each, 12k slots (some
# straddle two hugepages) by PRPs; each read back through numio's driver.
state=$CHECK_OUT/noiommu-state.json
run_numio bench "pci:$a" --allow-noiommu --rw write --bs 64k --iodepth 8 --size 16m --number-ios 256 --verify \
  --verify-state "$state" --json --no-progress
expect_eq "no-IOMMU write 64k --verify: exit status ($(tail -n 3 <<<"$NUMIO_ERR"))" 0 "$NUMIO_RC"
expect_eq "no-IOMMU write 64k: SGL data blocks" yes \
  "$(jq -r '.environment.uring_features[]' <<<"$NUMIO_OUT" | grep -q '^data pointers: one SGL data block' && echo yes || echo no)"
run_numio bench "pci:$a" --allow-noiommu --verify-only --verify-state "$state" --vfio-dptr prp --json --no-progress
expect_eq "no-IOMMU --verify-only by PRPs: exit status ($(tail -n 3 <<<"$NUMIO_ERR"))" 0 "$NUMIO_RC"
expect_eq "no-IOMMU --verify-only: no mismatch" "[]" "$(jq -c '.errors' <<<"$NUMIO_OUT")"
run_numio bench "pci:$a" --allow-noiommu --rw write --bs 12k --iodepth 192 --offset 32m --size 24m --verify \
  --verify-state "$CHECK_OUT/noiommu-12k.json" --json --no-progress
expect_eq "no-IOMMU write 12k QD192 --verify: exit status ($(tail -n 3 <<<"$NUMIO_ERR"))" 0 "$NUMIO_RC"
expect_eq "no-IOMMU write 12k QD192: PRP lists (slots straddle hugepages)" yes \
  "$(jq -r '.environment.uring_features[]' <<<"$NUMIO_OUT" | grep -q '^data pointers: PRPs, a PRP list per slot' && echo yes || echo no)"
run_numio bench "pci:$a" --allow-noiommu --verify-only --verify-state "$CHECK_OUT/noiommu-12k.json" --json --no-progress
expect_eq "no-IOMMU 12k --verify-only: no mismatch ($(tail -n 3 <<<"$NUMIO_ERR"))" "[]" "$(jq -c '.errors' <<<"$NUMIO_OUT")"

run_numio vfio unbind "$a"
expect_eq "vfio unbind: exit status ($NUMIO_ERR)" 0 "$NUMIO_RC"
expect_eq "$a is back on nvme" nvme "$(driver_of "$a")"
expect_eq "nvme list shows NUMIO-A" 0 "$(wait_nvme_list yes NUMIO-A; echo $?)"
expect_eq "the hugepage pool is put back" "$before" "$(cat "$pool")"
# Through the kernel: the 64k region holds valid verify blocks of its offsets.
ns=$(namespace_of "$a") || not_ok "no namespace of $a after unbind"
run_numio bench "/dev/$ns" --backend uring --rw read --bs 64k --size 16m --number-ios 256 --verify \
  --verify-state "$CHECK_OUT/kernel-state.json" --json --no-progress
expect_eq "the kernel reads what no-IOMMU vfio wrote: exit status ($(tail -n 3 <<<"$NUMIO_ERR"))" 0 "$NUMIO_RC"
expect_eq "the kernel reads what no-IOMMU vfio wrote: no mismatch" "[]" "$(jq -c '.errors' <<<"$NUMIO_OUT")"
for m in vfio_pci vfio_pci_core vfio_iommu_type1 vfio; do
  [ ! -d "/sys/module/$m" ] || rmmod "$m" || not_ok "rmmod $m (leaving Debian's modules to later checks)"
done
finish
