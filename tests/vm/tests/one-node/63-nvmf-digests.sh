#!/usr/bin/env bash
# vm-lab: kernels=default
# Default kernel only: numio's CRC32C digests against the spec's; the
# kernel host's data path runs on 6.12 in 69 and 73.
# With header and data digests (nvme connect --hdr-digest --data-digest, the
# kernel's hdr_digest,data_digest options) the fio verify run passes too, and
# the target confirms both digests were negotiated on every queue.
. "$(dirname "$0")/nvmf-lib.bash"
nvmf_setup
nvmf_start
nvmf_connect --hdr-digest --data-digest >"$CHECK_OUT/connect.log" 2>&1 ||
  { not_ok "nvme connect with digests: $(cat "$CHECK_OUT/connect.log")"; finish; }
nvmf_wait_devices 2 || { not_ok "namespaces did not appear"; finish; }
queues=$(grep -c "connected $NVMF_NQN qid" "$NVMF_LOG")
with=$(grep -c "connected $NVMF_NQN qid.*digests header=on data=on" "$NVMF_LOG")
note "$queues queues connected"
expect_eq "queues with header and data digests" "$queues" "$with"
dev=$(nvmf_devices | sed -n 2p)
nvmf_fio_verify digests "$dev" 8M
finish
