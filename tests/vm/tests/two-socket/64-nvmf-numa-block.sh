#!/usr/bin/env bash
# numio serve on a block device: with no --cpus its reactors run on the CPUs
# of the device's NUMA node (NUMIO-N1 sits on node 1: CPUs 2 3), and the
# kernel's nvme-tcp host reads the device's data back through it.
. "$(dirname "$0")/../one-node/nvmf-lib.bash"
nvmf_setup
local_dev=
for c in /sys/class/nvme/nvme*; do
  [ "$(tr -d ' ' <"$c/serial")" = NUMIO-N1 ] && local_dev=$(basename "$c")n1
done
[ -b "/dev/$local_dev" ] || { not_ok "no NUMIO-N1 namespace (got '$local_dev')"; finish; }
NVMF_NS=/dev/$local_dev nvmf_start
expect_eq "reactor CPUs" "reactors on CPUs [2, 3] (NUMA node 1 of the backing devices)" \
  "$(sed -n 's/^numio serve: \(reactors on CPUs.*\)/\1/p' "$NVMF_LOG")"
nvmf_connect >"$CHECK_OUT/connect.log" 2>&1 || { not_ok "nvme connect: $(cat "$CHECK_OUT/connect.log")"; finish; }
nvmf_wait_devices 1 || { not_ok "namespace did not appear"; finish; }
remote=$(nvmf_devices | head -n1)
expect_eq "size over TCP" "$(blockdev --getsize64 "/dev/$local_dev")" "$(blockdev --getsize64 "/dev/$remote")"
expect_eq "first 8 MiB over TCP = local" "$(nvmf_md5 "$local_dev" 8)" "$(nvmf_md5 "$remote" 8)"
finish
