#!/usr/bin/env bash
# vm-lab: timeout=240
# numio vfio behind an emulated IOMMU: bind NUMIO-B to vfio-pci (nvme list
# loses it, status shows it bound and recorded, NUMIO-A stays on nvme),
# unbind (the nvme driver and nvme list have it back, no record left); a
# namespace with ext4 on it is refused without --force and nothing rebinds.
# Users of the namespace that leave no signature at its start are refused
# too, each named (issue 38): a loop device over it at an offset (mounted),
# an nvmet export of it (configfs device_path), a process holding the
# controller's /dev/nvmeN open, and a filesystem mounted only in another
# mount namespace (no fd, no mount in ours, its signature gone from the
# disk: only the exclusive open just before the unbind sees it).
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

# refused WHAT PATTERN: numio vfio bind $b exits 2 naming PATTERN and
# --force, and $b stays on nvme with nothing recorded.
refused() {
  run_numio vfio bind "$b"
  expect_eq "$1: bind exits 2" 2 "$NUMIO_RC"
  note "$NUMIO_ERR"
  expect_eq "$1: the refusal names it and --force" yes \
    "$([[ $NUMIO_ERR == *$2*"--force"* ]] && echo yes || echo no)"
  expect_eq "$1: $b stays on nvme" nvme "$(driver_of "$b")"
  expect_eq "$1: nothing recorded" no "$([ -e /run/numio/vfio.json ] && echo yes || echo no)"
}

# A loop device 1 MiB into the namespace, with ext4 on it, mounted.
mnt=$(mktemp -d)
vm-modprobe loop >/dev/null 2>&1
if loopdev=$(losetup -o 1M --show -f "/dev/$ns" 2>&1) && mkfs.ext4 -q -F "$loopdev" && mount "$loopdev" "$mnt"; then
  refused "a loop device over it (mounted)" "/dev/$ns backs the loop device $loopdev"
  umount "$mnt"
  losetup -d "$loopdev"
else
  not_ok "loop device over /dev/$ns at 1 MiB: $loopdev"
fi

# An nvmet export (configfs only: no port, nothing enabled).
nqn=nqn.2026-11.io.numio:vfio-export
sub=/sys/kernel/config/nvmet/subsystems/$nqn
vm-modprobe nvmet >"$CHECK_OUT/modprobe-nvmet.log" 2>&1
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
if [ -d /sys/kernel/config/nvmet ] && mkdir "$sub" && mkdir "$sub/namespaces/1" &&
  echo "/dev/$ns" >"$sub/namespaces/1/device_path"; then
  refused "an nvmet export" "/dev/$ns is exported by nvmet subsystem $nqn"
else
  not_ok "nvmet export of /dev/$ns through configfs"
fi
rmdir "$sub/namespaces/1" "$sub" 2>/dev/null

# The controller's character device held open by a process.
ctrl=$(basename "$(ls -d "/sys/bus/pci/devices/$b/nvme/"nvme* | head -n 1)")
sleep 600 <"/dev/$ctrl" &
holder=$!
refused "a process holding /dev/$ctrl" "/dev/$ctrl is open in sleep (pid $holder)"
kill "$holder"
wait "$holder" 2>/dev/null

# Mounted in another mount namespace only, its superblock then wiped: our
# mounts, fds and blkid see nothing; the kernel's EBUSY on an exclusive
# open does.
mkfs.ext4 -q -F "/dev/$ns" || not_ok "mkfs.ext4 /dev/$ns"
ready=$CHECK_OUT/other-ns-mounted
unshare -m --propagation private sh -c "mount /dev/$ns $mnt && touch $ready && exec sleep 600" &
other=$!
for _ in $(seq 100); do [ -e "$ready" ] && break; sleep 0.1; done
if [ -e "$ready" ]; then
  wipefs -q -a -f "/dev/$ns" >/dev/null
  expect_eq "the other namespace's mount is not in ours" no "$(grep -q "^/dev/$ns " /proc/self/mounts && echo yes || echo no)"
  refused "a mount in another mount namespace" "/dev/$ns is in use: the kernel refused an exclusive open"
else
  not_ok "mount /dev/$ns in another mount namespace"
fi
kill "$other" 2>/dev/null
wait "$other" 2>/dev/null
wipefs -q -a "/dev/$ns" >/dev/null 2>&1
rmdir "$mnt"
finish
