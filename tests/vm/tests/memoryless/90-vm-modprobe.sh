#!/usr/bin/env bash
# The lab's vm-modprobe loads guest-kernel modules with their dependencies
# and parameters, resolves aliases (crc32c), skips built-in and loaded ones,
# mounts configfs, and fails clearly on an unknown name. (Topology-
# independent; it runs here because memoryless has the fewest checks.)
. "$(dirname "$0")/../lib.sh"

vm-modprobe null_blk nr_devices=2 >"$CHECK_OUT/null_blk.log" 2>&1
expect_eq "vm-modprobe null_blk nr_devices=2" 0 "$?"
expect_eq "null_blk devices (parameter applied)" "nullb0 nullb1" "$(cd /sys/block && echo nullb*)"
expect_eq "configfs mounted" yes "$(grep -q ' /sys/kernel/config configfs ' /proc/mounts && echo yes || echo no)"
# (nvme-tcp, nvmet-tcp: loaded by the NVMe/TCP checks of one-node; each
# module load costs about a second here, signature check included.)
mods=(crc32c dm-flakey dm-delay loop zram)
vm-modprobe "${mods[@]}" >"$CHECK_OUT/many.log" 2>&1
expect_eq "vm-modprobe ${mods[*]}" 0 "$?"
missing=""
for m in crc32c_generic dm_flakey dm_delay loop zram; do
  [ -d "/sys/module/$m" ] || missing="$missing $m"
done
expect_eq "modules loaded (missing ones listed)" "" "$missing"
vm-modprobe null_blk nvme >"$CHECK_OUT/again.log" 2>&1
expect_eq "loading loaded modules again" 0 "$?"
vm-modprobe no-such-module >"$CHECK_OUT/unknown.log" 2>&1
expect_eq "an unknown module fails" 1 "$?"
expect_eq "and says so" yes "$(grep -q 'module no-such-module not found' "$CHECK_OUT/unknown.log" && echo yes || echo no)"
finish
