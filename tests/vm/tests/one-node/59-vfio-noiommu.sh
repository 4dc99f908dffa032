#!/usr/bin/env bash
# numio vfio bind without an IOMMU: refused with a message naming
# --allow-noiommu and what it risks; with --allow-noiommu, Debian's kernels
# (built without CONFIG_VFIO_NOIOMMU) refuse with that cause instead of a
# crash. The controller stays on nvme and nothing is recorded.
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
finish
