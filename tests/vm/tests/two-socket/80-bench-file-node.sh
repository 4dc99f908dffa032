#!/usr/bin/env bash
# A file's NUMA node: ext4 on NUMIO-N1's namespace (a controller on node 1,
# CPUs 2 3). `numio bench FILE` follows the file's device through topology
# down to the NVMe controller and runs there: the target's node is 1, its
# worker runs on a node-1 CPU and its buffers are bound to node 1, and
# `numio plan FILE` says where the node came from. (Before, a file's node
# was unknown and its job ran on the fallback node 0.) A write to the
# mounted device itself is refused, naming the mount (the engine's write
# safety reads the mount table through topology). Reads only; the
# filesystem replaces what 50-data-verify wrote.
# vm-lab: timeout=180
. "$(dirname "$0")/../lib.sh"
require_numio

vm-modprobe ext4 >"$CHECK_OUT/modprobe.log" 2>&1 ||
  { not_ok "vm-modprobe ext4: $(cat "$CHECK_OUT/modprobe.log")"; finish; }
dev=""
for b in /sys/block/nvme*n1; do
  [ "$(tr -d ' ' <"$b/device/serial" 2>/dev/null)" = NUMIO-N1 ] && dev=${b##*/}
done
[ -n "$dev" ] || { not_ok "no namespace of controller NUMIO-N1"; finish; }
expect_eq "NUMIO-N1's controller sits on node 1" 1 "$(cat "/sys/block/$dev/device/numa_node")"
node_cpus=$(expand_list "$(cat /sys/devices/system/node/node1/cpulist)")
expect_eq "node 1's CPUs" "${EXPECT_NODE_CPUS[1]}" "$node_cpus"

mkfs.ext4 -q -F "/dev/$dev" >"$CHECK_OUT/mkfs.log" 2>&1 ||
  { not_ok "mkfs.ext4 /dev/$dev: $(cat "$CHECK_OUT/mkfs.log")"; finish; }
mnt=$(mktemp -d)
mount -t ext4 "/dev/$dev" "$mnt" || { not_ok "mount /dev/$dev"; finish; }
trap 'umount "$mnt"; rmdir "$mnt"' EXIT
file=$mnt/data.bin
dd if=/dev/zero of="$file" bs=1M count=16 status=none conv=fsync
note "$file on /dev/$dev ($(stat -c 'st_dev %Hd:%Ld' "$file"))"

run_numio bench "$file" --json --rw randread --runtime 1 --iodepth 4
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/bench.json"
printf '%s\n' "$NUMIO_ERR" >"$CHECK_OUT/bench.err"
expect_eq "numio bench exit status" 0 "$NUMIO_RC"
[ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 5 <<<"$NUMIO_ERR")"
expect_eq "the target's node is its controller's" 1 "$(jq '.targets[0].node' <<<"$NUMIO_OUT")"
expect_eq "the environment records node 1" 1 "$(jq '.environment.targets[0].node' <<<"$NUMIO_OUT")"
cpus=$(jq -r '[.targets[0].workers[].cpu] | map(tostring) | join(" ")' <<<"$NUMIO_OUT")
on_node=yes
for c in $cpus; do [[ " $node_cpus " == *" $c "* ]] || on_node=no; done
expect_eq "worker CPUs ($cpus) are node 1's" yes "$([ -n "$cpus" ] && echo "$on_node" || echo none)"
expect_eq "buffers bound to node 1" 1 "$(jq '.targets[0].workers[0].buffer_node' <<<"$NUMIO_OUT")"
expect_eq "the read really happened" true "$(jq '.targets[0].read.ops > 0' <<<"$NUMIO_OUT")"

run_numio bench "/dev/$dev" --rw randwrite --runtime 1
expect_eq "a write to the mounted device is refused (exit status)" 2 "$NUMIO_RC"
expect_eq "naming the mount" yes \
  "$(grep -qF "a mounted filesystem (/dev/$dev on $mnt)" <<<"$NUMIO_ERR" && echo yes || echo "no: $NUMIO_ERR")"

run_numio plan "$file"
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/plan.out"
expect_eq "numio plan: node column" 1 "$(awk -v f="$file" '$1 == f {print $2}' <<<"$NUMIO_OUT")"
expect_eq "numio plan: where the node came from" \
  "  note: $file is a file on $dev: node 1, $dev's" "$(grep -F "note: $file is" <<<"$NUMIO_OUT")"
finish
