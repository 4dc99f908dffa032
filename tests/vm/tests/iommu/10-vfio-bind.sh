#!/usr/bin/env bash
# vm-lab: timeout=240
# numio vfio behind an emulated IOMMU: bind NUMIO-B to vfio-pci (nvme list
# loses it, status shows it bound and recorded, NUMIO-A stays on nvme),
# unbind (the nvme driver and nvme list have it back, no record left); a
# namespace with ext4 on it is refused without --force and nothing rebinds.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/vfio-lib.bash"
require_numio

[ -n "$(ls /sys/kernel/iommu_groups 2>/dev/null)" ] || { not_ok "no IOMMU groups: is intel_iommu=on in effect?"; finish; }
# vm-modprobe follows no soft dependencies: vfio_iommu_type1 by name.
vm-modprobe vfio-pci vfio_iommu_type1 || { not_ok "vm-modprobe vfio-pci vfio_iommu_type1"; finish; }
a=$(pci_of_serial NUMIO-A) b=$(pci_of_serial NUMIO-B)
[ -n "$a" ] && [ -n "$b" ] || { not_ok "controllers NUMIO-A and NUMIO-B not found"; finish; }
group=$(basename "$(readlink -f "/sys/bus/pci/devices/$b/iommu_group")")
note "NUMIO-A at $a, NUMIO-B at $b (IOMMU group $group)"

run_numio vfio bind "pci:$b"
expect_eq "bind exits 0 ($NUMIO_ERR)" 0 "$NUMIO_RC"
printf '%s\n' "$NUMIO_OUT" | sed 's/^/    /'
expect_eq "$b is on vfio-pci" vfio-pci "$(driver_of "$b")"
expect_eq "$a stays on nvme" nvme "$(driver_of "$a")"
expect_eq "/dev/vfio/$group exists" yes "$([ -c "/dev/vfio/$group" ] && echo yes || echo no)"
expect_eq "nvme list no longer shows NUMIO-B" 0 "$(wait_nvme_list no NUMIO-B; echo $?)"
run_numio vfio status
printf '%s\n' "$NUMIO_OUT" | sed 's/^/    /'
line=$(printf '%s\n' "$NUMIO_OUT" | grep "^$b ")
expect_eq "status shows $b on vfio-pci, held by nobody, recorded until unbind" yes \
  "$([[ $line == *vfio-pci*"held by nobody"*"until \`numio vfio unbind\`, was nvme"* ]] && echo yes || echo no)"
run_numio vfio status --json
expect_eq "status --json: record of $b says nvme" nvme \
  "$(jq -r --arg b "$b" '.devices[] | select(.address == $b) | .record.driver' <<<"$NUMIO_OUT")"

run_numio vfio unbind "${b#0000:}"
expect_eq "unbind exits 0 ($NUMIO_ERR)" 0 "$NUMIO_RC"
printf '%s\n' "$NUMIO_OUT" | sed 's/^/    /'
expect_eq "$b is back on nvme" nvme "$(driver_of "$b")"
expect_eq "nvme list shows NUMIO-B again" 0 "$(wait_nvme_list yes NUMIO-B; echo $?)"
expect_eq "no record left" no "$([ -e /run/numio/vfio.json ] && echo yes || echo no)"

ns=$(namespace_of "$b") || { not_ok "no namespace of $b after unbind"; finish; }
mkfs.ext4 -q -F "/dev/$ns" || { not_ok "mkfs.ext4 /dev/$ns"; finish; }
run_numio vfio bind "$b"
expect_eq "bind of a drive with ext4 exits 2" 2 "$NUMIO_RC"
note "$NUMIO_ERR"
expect_eq "the refusal names ext4 and --force" yes \
  "$([[ $NUMIO_ERR == *"/dev/$ns holds a ext4"*"--force"* ]] && echo yes || echo no)"
expect_eq "$b stays on nvme" nvme "$(driver_of "$b")"
expect_eq "nothing recorded" no "$([ -e /run/numio/vfio.json ] && echo yes || echo no)"
wipefs -q -a "/dev/$ns" >/dev/null
finish
