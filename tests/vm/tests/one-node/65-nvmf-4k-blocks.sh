#!/usr/bin/env bash
# vm-lab: kernels=default
# Default kernel only: numio serve's namespaces of 4 KiB blocks; the
# reactors' io_uring on 6.12 runs in 60, 69 and 73, numio's io_uring
# block I/O in all/31-33.
# numio serve with 4096-byte logical blocks: a block device (a loop device
# with 4 KiB sectors: its own logical block size, O_DIRECT on the reactors'
# io_uring), a RAM namespace and a file namespace with block=4096. The
# kernel's nvme-tcp host sees 4096-byte sectors (blockdev --getss), the size
# the target announced, and fio verify=crc32c passes on each. Then the host
# zeroes the first MiB of each (blkdiscard -z: Write Zeroes commands, which
# the target runs as IORING_OP_FALLOCATE) and deallocates the second
# (blkdiscard: Dataset Management), and reads zeroes back from both.
. "$(dirname "$0")/nvmf-lib.bash"
nvmf_setup
vm-modprobe loop >"$CHECK_OUT/modprobe-loop.log" 2>&1 ||
  { not_ok "vm-modprobe loop: $(tail -n 3 "$CHECK_OUT/modprobe-loop.log")"; finish; }
truncate -s 32M /tmp/ns4k-loop.img
loopdev=$(losetup --sector-size 4096 --show -f /tmp/ns4k-loop.img 2>"$CHECK_OUT/losetup.err") ||
  { not_ok "losetup --sector-size 4096: $(cat "$CHECK_OUT/losetup.err")"; finish; }
expect_eq "loop device logical block size" 4096 "$(blockdev --getss "$loopdev")"
truncate -s 16M /tmp/ns4k-file.img
NVMF_NS="$loopdev mem:32M,block=4096 /tmp/ns4k-file.img,block=4096" nvmf_start
expect_eq "namespaces announced with 4096-byte blocks" 3 "$(grep -c 'blocks of 4096)' "$NVMF_LOG")"
expect_eq "the block device is served with O_DIRECT" yes \
  "$(grep 'nsid 1 ' "$NVMF_LOG" | grep -q 'O_DIRECT via io_uring' && echo yes || echo no)"
note "file namespace: $(grep 'nsid 3 ' "$NVMF_LOG" | sed 's/.*uuid [^ ]* //')"
nvmf_connect >"$CHECK_OUT/connect.log" 2>&1 || { not_ok "nvme connect: $(cat "$CHECK_OUT/connect.log")"; finish; }
nvmf_wait_devices 3 || { not_ok "namespaces seen: $(nvmf_devices | tr '\n' ' ')"; finish; }
mapfile -t devs < <(nvmf_devices)
for i in "${!devs[@]}"; do
  d=${devs[$i]}
  nsid=$((i + 1))
  want_bytes=$(grep "nsid $nsid " "$NVMF_LOG" | awk '{ for (i = 1; i <= NF; i++) if ($i == "bytes") print $(i - 1) }')
  expect_eq "nsid $nsid: blockdev --getss" 4096 "$(blockdev --getss "/dev/$d")"
  expect_eq "nsid $nsid: size bytes" "$want_bytes" "$(blockdev --getsize64 "/dev/$d")"
  nvmf_fio_verify "ns$nsid-4k" "$d" 8M
done
# What the host reads over TCP is what lies in the loop device's backing
# file: fio's data went through O_DIRECT on the block device.
expect_eq "first 8 MiB over TCP = the loop device's backing file" \
  "$(dd if=/tmp/ns4k-loop.img bs=1M count=8 status=none | md5sum | cut -d' ' -f1)" "$(nvmf_md5 "${devs[0]}" 8)"
expect_eq "fio wrote something (not all zeroes)" no \
  "$([ "$(nvmf_md5 "${devs[0]}" 8)" = "$(head -c 8M /dev/zero | md5sum | cut -d' ' -f1)" ] && echo yes || echo no)"
zero_mib=$(head -c 1M /dev/zero | md5sum | cut -d' ' -f1)
for i in "${!devs[@]}"; do
  d=${devs[$i]}
  nsid=$((i + 1))
  wz=$(cat "/sys/block/$d/queue/write_zeroes_max_bytes" 2>/dev/null || echo 0)
  expect_eq "nsid $nsid: the host sends Write Zeroes (write_zeroes_max_bytes > 0)" yes \
    "$([ "$wz" -gt 0 ] && echo yes || echo no)"
  blkdiscard -z -o 0 -l 1M "/dev/$d" 2>"$CHECK_OUT/wz-$nsid.err" ||
    not_ok "nsid $nsid: blkdiscard -z: $(cat "$CHECK_OUT/wz-$nsid.err")"
  expect_eq "nsid $nsid: the zeroed MiB reads back as zeroes" "$zero_mib" "$(nvmf_md5 "$d" 1)"
  # Deallocate (DSM) of the next MiB: numio's target zeroes what it
  # deallocates (hole punch or zero-range), so it reads back as zeroes.
  blkdiscard -o 1M -l 1M "/dev/$d" 2>"$CHECK_OUT/dsm-$nsid.err" ||
    not_ok "nsid $nsid: blkdiscard: $(cat "$CHECK_OUT/dsm-$nsid.err")"
  expect_eq "nsid $nsid: the deallocated MiB reads back as zeroes" "$zero_mib" \
    "$(dd if="/dev/$d" bs=1M skip=1 count=1 iflag=direct status=none | md5sum | cut -d' ' -f1)"
done
expect_eq "the loop device's backing file holds the zeroes" "$zero_mib" \
  "$(dd if=/tmp/ns4k-loop.img bs=1M count=1 status=none | md5sum | cut -d' ' -f1)"
expect_eq "the MiB after those keeps fio's data" no \
  "$([ "$(dd if=/tmp/ns4k-loop.img bs=1M skip=2 count=1 status=none | md5sum | cut -d' ' -f1)" = "$zero_mib" ] && echo yes || echo no)"
finish
