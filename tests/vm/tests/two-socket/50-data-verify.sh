#!/usr/bin/env bash
# Data path: fio writes a verifiable pattern to the file-backed namespace of
# NUMIO-N1 through the real nvme driver (O_DIRECT, io_uring) and reads it
# back with crc32c verification; a second pass only verifies, proving the
# data came from the device and not from fio's memory.
. "$(dirname "$0")/../lib.sh"

dev=""
for b in /sys/block/nvme*n1; do
  [ "$(tr -d ' ' <"$b/device/serial" 2>/dev/null)" = NUMIO-N1 ] && dev=${b##*/}
done
[ -n "$dev" ] || { not_ok "no namespace of controller NUMIO-N1"; finish; }
note "writing and verifying /dev/$dev (16 MiB)"
common=(--filename="/dev/$dev" --bs=64k --size=16m --ioengine=io_uring --direct=1
  --verify=crc32c --verify_fatal=1 --output-format=json)
fio --name=write --rw=write --do_verify=1 "${common[@]}" --output="$CHECK_OUT/write.json" >"$CHECK_OUT/write.err" 2>&1
expect_eq "write+verify: fio exit status" 0 "$?"
fio --name=write --rw=read --verify_only=1 "${common[@]}" --output="$CHECK_OUT/verify.json" >"$CHECK_OUT/verify.err" 2>&1
expect_eq "verify only: fio exit status" 0 "$?"
expect_eq "verify only: fio job error" 0 "$(jq '.jobs[0].error' "$CHECK_OUT/verify.json" 2>/dev/null)"
expect_eq "nothing but zeroes would fail: first 64 KiB is not all zero" yes \
  "$(cmp -s -n 65536 "/dev/$dev" /dev/zero && echo no || echo yes)"
finish
