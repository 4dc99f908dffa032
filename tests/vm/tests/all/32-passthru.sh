#!/usr/bin/env bash
# NVMe passthrough: `numio bench /dev/ngXnY --backend passthru` sends NVMe
# Read commands with io_uring (IORING_OP_URING_CMD) to a namespace's generic
# character device through the real nvme driver. It exits 0 with IOPS > 0
# and no error, and the controller counted the commands. (Linux 6.1 leaves
# passthrough commands out of the block layer's /sys/block/X/stat, so the
# count comes from the controller's SMART log, host read commands; the
# stat delta is printed as a note.) A fio job file with
# ioengine=io_uring_cmd runs on the same backend.
#
# Data path, both ways, where a namespace keeps what is written (a
# file-backed one: two-socket's NUMIO-N1; the null-backed namespaces of the
# other topologies read back zeroes): passthru writes the verify pattern
# that uring reads back through the block device; after the region is
# zeroed, a passthru read-verify must flag every block (the data comes from
# the device); uring writes the pattern and passthru reads it back. Write
# safety is judged on the block device: with an ext4 magic there, a
# passthru write is refused naming it. Where the driver has poll queues,
# `--iopoll on` must not poll passthrough (it crashed Linux 6.1).
# vm-lab: timeout=240
# The I/O path this checks does not depend on the machine's NUMA shape: it
# runs in one-node and in two-socket (the NUMA case), not in every topology.
# vm-lab: topologies=one-node two-socket
. "$(dirname "$0")/../lib.sh"

dev=$(first_private_namespace) || { not_ok "no NVMe namespace in the guest"; finish; }
ng=ng${dev#nvme}
[ -c "/dev/$ng" ] || { not_ok "no generic device /dev/$ng next to $dev"; finish; }
ctrl=$(basename "$(readlink -f "/sys/block/$dev/device")")
host_reads() { nvme smart-log "/dev/$ctrl" -o json 2>/dev/null | jq -r '.host_read_commands // empty'; }

note "reading /dev/$ng (namespace /dev/$dev of $ctrl) with --backend passthru"
before_stat=$(reads_completed "$dev")
before_ctrl=$(host_reads)
run_numio bench "/dev/$ng" --backend passthru --runtime 2 --json --no-progress
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/read.json"
expect_eq "passthru read: exit status" 0 "$NUMIO_RC"
[ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 5 <<<"$NUMIO_ERR")"
ops=$(jq '.total.ops // 0' "$CHECK_OUT/read.json" 2>/dev/null || echo 0)
iops=$(jq '.total.iops // 0 | floor' "$CHECK_OUT/read.json" 2>/dev/null || echo 0)
note "passthru randread 4k QD64: $iops IOPS, $ops I/Os (TCG: slow on purpose)"
expect_eq "passthru read: IOPS > 0" yes "$([ "${iops:-0}" -gt 0 ] && echo yes || echo no)"
expect_eq "passthru read: errors" "[]" "$(jq -c '.errors' "$CHECK_OUT/read.json" 2>/dev/null)"
expect_eq "passthru read: target kind" nvme_generic \
  "$(jq -r '.environment.targets[0].kind' "$CHECK_OUT/read.json" 2>/dev/null)"
expect_eq "passthru read: ring has 128-byte SQEs and 32-byte CQEs" true \
  "$(jq '.environment.uring_features | index("SQE128+CQE32") != null' "$CHECK_OUT/read.json" 2>/dev/null)"
note "io_uring: $(jq -r '.environment.uring_features | join(", ")' "$CHECK_OUT/read.json" 2>/dev/null)"
after_ctrl=$(host_reads)
if [ -n "$before_ctrl" ] && [ -n "$after_ctrl" ]; then
  expect_eq "controller counted at least numio's reads" yes \
    "$([ $((after_ctrl - before_ctrl)) -ge "${ops:-1}" ] && [ "${ops:-0}" -gt 0 ] && echo yes || echo no)"
else
  not_ok "no host_read_commands in nvme smart-log /dev/$ctrl"
fi
note "block layer stat reads delta: $(($(reads_completed "$dev") - before_stat)) (Linux 6.1 does not count passthrough)"

# Passthru never polls: polled passthrough crashed this 6.1 kernel (a GPF in
# bio_poll under nvme_ns_chr_uring_cmd_iopoll with two polled rings), so
# --iopoll on runs interrupt-driven and says so.
if [ "$(cat "/sys/block/$dev/queue/io_poll" 2>/dev/null)" = 1 ]; then
  run_numio bench "/dev/$ng" --backend passthru --iopoll on --jobs 2 --runtime 1 --json --no-progress
  expect_eq "passthru --iopoll on (poll queues present): exit, IOPOLL used, note, errors" "0 false true []" \
    "$NUMIO_RC $(jq -r '"\(.environment.uring_features | index("IOPOLL") != null) \(.environment.notes | any(test("IOPOLL is not used"))) \(.errors | tostring)"' <<<"$NUMIO_OUT" 2>/dev/null)"
else
  note "$dev has no poll queues: no --iopoll run"
fi

# fio's ioengine=io_uring_cmd (cmd_type=nvme) runs on the passthru backend.
cat >"$CHECK_OUT/pt.fio" <<EOF
[pt]
ioengine=io_uring_cmd
cmd_type=nvme
filename=/dev/$ng
rw=randread
bs=4k
iodepth=16
runtime=1
time_based
EOF
run_numio bench "$CHECK_OUT/pt.fio" --json --no-progress
expect_eq "job file with ioengine=io_uring_cmd: exit status" 0 "$NUMIO_RC"
[ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 5 <<<"$NUMIO_ERR")"
expect_eq "job file: backend, target kind, passthrough ring" "passthru nvme_generic true" \
  "$(jq -r '"\(.environment.backend) \(.environment.targets[0].kind) \(.environment.uring_features | index("SQE128+CQE32") != null)"' <<<"$NUMIO_OUT" 2>/dev/null)"

# The data path needs a namespace that keeps what is written.
ddev=""
for b in /sys/block/nvme*n*; do
  [ "$(tr -d ' ' <"$b/device/serial" 2>/dev/null)" = NUMIO-N1 ] && ddev=${b##*/}
done
if [ -z "$ddev" ]; then
  note "no file-backed namespace in $TOPOLOGY (NUMIO-N1): the data path both ways is checked on two-socket"
  finish
fi
dng=ng${ddev#nvme}
note "data path on /dev/$dng and its block device /dev/$ddev (16 MiB)"
zero_region() { dd if=/dev/zero of="/dev/$ddev" bs=1M count=16 oflag=direct status=none; }

printf '\123\357' | dd of="/dev/$ddev" bs=1 seek=1080 conv=notrunc,fsync status=none
run_numio bench "/dev/$dng" --backend passthru --rw write --size 1m --no-time-based --no-progress
expect_eq "passthru write onto an ext4 magic: exit status" 2 "$NUMIO_RC"
expect_eq "refused, naming the block device" yes \
  "$(grep -q "refusing to write to /dev/$dng: it holds a ext2 filesystem signature (seen on its block device /dev/$ddev)" <<<"$NUMIO_ERR" && echo yes || echo no)"
[ "$NUMIO_RC" -eq 2 ] || note "numio said: $(tail -n 3 <<<"$NUMIO_ERR")"
zero_region

common=(--size 16m --no-time-based --verify --json --no-progress)
run_numio bench "/dev/$dng" --backend passthru --rw write --bs 64k --iodepth 8 "${common[@]}"
expect_eq "passthru write+verify pattern: exit status, bytes, errors" "0 16777216 []" \
  "$NUMIO_RC $(jq -r '"\(.write.bytes) \(.errors | tostring)"' <<<"$NUMIO_OUT" 2>/dev/null)"
run_numio bench "/dev/$ddev" --backend uring --rw read --bs 4k --iodepth 16 "${common[@]}"
expect_eq "uring reads back what passthru wrote: exit, ops, errors" "0 4096 []" \
  "$NUMIO_RC $(jq -r '"\(.read.ops) \(.errors | tostring)"' <<<"$NUMIO_OUT" 2>/dev/null)"

zero_region
run_numio bench "/dev/$dng" --backend passthru --rw read --bs 4k --iodepth 16 "${common[@]}"
expect_eq "passthru read-verify of a zeroed region flags every block (exit, EILSEQ count)" "1 4096" \
  "$NUMIO_RC $(jq '[.errors[] | select(.errno == 84) | .count] | add // 0' <<<"$NUMIO_OUT" 2>/dev/null)"

run_numio bench "/dev/$ddev" --backend uring --rw write --bs 64k --iodepth 8 "${common[@]}"
expect_eq "uring write+verify pattern: exit status, bytes, errors" "0 16777216 []" \
  "$NUMIO_RC $(jq -r '"\(.write.bytes) \(.errors | tostring)"' <<<"$NUMIO_OUT" 2>/dev/null)"
run_numio bench "/dev/$dng" --backend passthru --rw randread --randommap --bs 4k --iodepth 16 "${common[@]}"
expect_eq "passthru reads back what uring wrote: exit, ops, errors" "0 4096 []" \
  "$NUMIO_RC $(jq -r '"\(.read.ops) \(.errors | tostring)"' <<<"$NUMIO_OUT" 2>/dev/null)"
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/verify-read.json"
finish
