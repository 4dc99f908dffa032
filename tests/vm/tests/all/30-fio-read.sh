#!/usr/bin/env bash
# vm-lab: kernels=default
# Default kernel only: fio's read path is fio's, not numio's; all/31-33
# run numio's io_uring reads, passthrough and polling on each kernel.
# Smoke test: fio (the Debian package, io_uring engine, O_DIRECT) reads an
# NVMe namespace in the guest for 2 s through the real nvme driver; fio
# reports no error and bytes read, and the block layer counted the reads.
# The I/O path this checks does not depend on the machine's NUMA shape: it
# runs in one-node and in two-socket (the NUMA case), not in every topology.
# vm-lab: topologies=one-node two-socket
. "$(dirname "$0")/../lib.sh"

command -v fio >/dev/null || { not_ok "fio is not installed on the host (tests/vm/setup installs it)"; finish; }
dev=$(first_private_namespace) || { not_ok "no NVMe namespace in the guest"; finish; }
note "reading /dev/$dev"
before=$(reads_completed "$dev")
fio --name=smoke --filename="/dev/$dev" --rw=randread --bs=4k --iodepth=8 \
  --ioengine=io_uring --direct=1 --runtime=2 --time_based \
  --output-format=json --output="$CHECK_OUT/fio.json" >"$CHECK_OUT/fio.stderr" 2>&1
rc=$?
expect_eq "fio exit status" 0 "$rc"
[ "$rc" -eq 0 ] || note "fio said: $(tail -n 5 "$CHECK_OUT/fio.stderr")"
if jq -e . "$CHECK_OUT/fio.json" >/dev/null 2>&1; then
  expect_eq "fio job error" 0 "$(jq '.jobs[0].error' "$CHECK_OUT/fio.json")"
  bytes=$(jq '.jobs[0].read.io_bytes' "$CHECK_OUT/fio.json")
  note "fio read $bytes bytes, $(jq '.jobs[0].read.iops | floor' "$CHECK_OUT/fio.json") IOPS (TCG: slow on purpose)"
  expect_eq "fio read something" yes "$([ "$bytes" -gt 0 ] && echo yes || echo no)"
else
  not_ok "fio wrote no JSON to $CHECK_OUT/fio.json"
fi
after=$(reads_completed "$dev")
expect_eq "block layer counted fio's reads" yes "$([ "$after" -gt "$before" ] && echo yes || echo no)"
finish
