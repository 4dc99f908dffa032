#!/usr/bin/env bash
# A file namespace grown under a running `numio serve`: the target completes
# the kernel host's Asynchronous Event Request with a Namespace Attribute
# Changed notice, the host reads the Changed Namespace List log, rescans,
# and the block device takes the new size, with no reconnect; data written
# before the resize reads back unchanged and the new blocks take I/O.
. "$(dirname "$0")/nvmf-lib.bash"
nvmf_setup
truncate -s 16M /tmp/ns-grow.img
NVMF_NS="/tmp/ns-grow.img" nvmf_start
nvmf_connect >"$CHECK_OUT/connect.log" 2>&1 || { not_ok "nvme connect: $(cat "$CHECK_OUT/connect.log")"; finish; }
nvmf_wait_devices 1 || { not_ok "namespaces seen: $(nvmf_devices | tr '\n' ' ')"; finish; }
dev=$(nvmf_devices)
expect_eq "size before" $((16 << 20)) "$(blockdev --getsize64 "/dev/$dev")"
dd if=/dev/urandom of=/tmp/first.bin bs=1M count=4 status=none
dd if=/tmp/first.bin of="/dev/$dev" bs=1M oflag=direct status=none
ctrl=$(ls -d /sys/block/"$dev"/device 2>/dev/null) && ctrl=$(basename "$(readlink -f "$ctrl")")
note "controller $ctrl, namespace /dev/$dev"
truncate -s 48M /tmp/ns-grow.img
grown=no
for i in $(seq 1 100); do
  [ "$(blockdev --getsize64 "/dev/$dev")" = $((48 << 20)) ] && { grown=yes; break; }
  sleep 0.1
done
expect_eq "the host sees the new size without reconnecting" yes "$grown"
note "after $((i / 10)).$((i % 10)) s: $(blockdev --getsize64 "/dev/$dev") bytes"
expect_eq "target said it sent the notice" yes \
  "$(grep -q 'is now 50331648 bytes; Namespace Attribute Changed notice sent to 1 controller' "$NVMF_LOG" && echo yes || echo no)"
dmesg | grep -iE "nvme|capacity" | tail -n 5 >"$CHECK_OUT/dmesg.txt"
expect_eq "kernel logged the rescan" yes \
  "$(grep -qiE 'rescanning|capacity change' "$CHECK_OUT/dmesg.txt" && echo yes || echo no)"
expect_eq "data written before the resize reads back" \
  "$(md5sum </tmp/first.bin | cut -d' ' -f1)" "$(nvmf_md5 "$dev" 4)"
# The new blocks take I/O: write and read back at the new end.
dd if=/dev/urandom of=/tmp/tail.bin bs=1M count=1 status=none
dd if=/tmp/tail.bin of="/dev/$dev" bs=1M seek=47 oflag=direct status=none
expect_eq "the last MiB (beyond the old size) reads back" \
  "$(md5sum </tmp/tail.bin | cut -d' ' -f1)" \
  "$(dd if="/dev/$dev" bs=1M skip=47 count=1 iflag=direct status=none | md5sum | cut -d' ' -f1)"
finish
