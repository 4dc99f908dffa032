#!/usr/bin/env bash
# vm-lab: kernels=default
# Default kernel only: numio serve's data path, the same under each
# kernel; the 6.12 pass runs fio verify through the kernel host in 69
# and 73 (DH-HMAC-CHAP, TLS) and connects in 60.
# fio (verify=crc32c) writes and reads back a whole numio serve namespace
# (16 MiB) through the kernel's nvme-tcp host with zero errors; after
# disconnect and reconnect the same data reads back.
. "$(dirname "$0")/nvmf-lib.bash"
nvmf_setup
nvmf_start
nvmf_connect >"$CHECK_OUT/connect.log" 2>&1 || { not_ok "nvme connect: $(cat "$CHECK_OUT/connect.log")"; finish; }
nvmf_wait_devices 2 || { not_ok "namespaces did not appear"; finish; }
dev=$(nvmf_devices | sed -n 2p)
note "fio on /dev/$dev"
nvmf_fio_verify write-verify "$dev" 16M
before=$(nvmf_md5 "$dev" 16)
nvmf_disconnect
nvmf_wait_devices 0 || not_ok "namespaces still present after disconnect"
nvmf_connect >"$CHECK_OUT/reconnect.log" 2>&1
expect_eq "reconnect exit status" 0 "$?"
nvmf_wait_devices 2 || { not_ok "namespaces did not come back"; finish; }
dev=$(nvmf_devices | sed -n 2p)
expect_eq "md5 of the namespace after reconnect" "$before" "$(nvmf_md5 "$dev" 16)"
nvmf_fio_verify verify-only "$dev" 16M --verify_only=1
finish
