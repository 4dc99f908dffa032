#!/usr/bin/env bash
# A file on device-mapper: ext4 on a dm-linear device over NUMIO-2NS's
# second namespace (a controller on node 1; file-backed, so the filesystem
# keeps what mkfs writes). `numio bench FILE` follows the
# file's device through the dm table's slave to the NVMe controller and runs
# on node 1; `numio plan` says so. A dm device spanning NUMIO-N0 (node 0)
# and NUMIO-2NS (node 1) has no single node, and the plan's note says so.
# vm-lab: timeout=180
. "$(dirname "$0")/../lib.sh"
require_numio

vm-modprobe dm-mod ext4 >"$CHECK_OUT/modprobe.log" 2>&1 ||
  { not_ok "vm-modprobe dm-mod ext4: $(cat "$CHECK_OUT/modprobe.log")"; finish; }
# The namespace NSID of the controller with serial $1 (private: nvmeXnNSID).
namespace_of() {
  local c
  for c in /sys/class/nvme/nvme*; do
    if [ "$(tr -d ' ' <"$c/serial")" = "$1" ] && [ -b "/dev/${c##*/}n$2" ]; then
      printf '%s\n' "${c##*/}n$2"
      return 0
    fi
  done
  return 1
}
ns2=$(namespace_of NUMIO-2NS 2) || { not_ok "no second namespace of NUMIO-2NS"; finish; }
n0=$(namespace_of NUMIO-N0 1) || { not_ok "no namespace of NUMIO-N0"; finish; }
expect_eq "NUMIO-2NS sits on node 1" 1 "$(cat "/sys/block/$ns2/device/numa_node")"
expect_eq "NUMIO-N0 sits on node 0" 0 "$(cat "/sys/block/$n0/device/numa_node")"
node_cpus=$(expand_list "$(cat /sys/devices/system/node/node1/cpulist)")

# dmsetup makes the nodes itself: no udev runs in the guest.
dm() { dmsetup --noudevsync "$@"; }
cleanup() {
  [ -n "${mnt:-}" ] && { umount "$mnt"; rmdir "$mnt"; }
  dm remove numio-lin 2>/dev/null
  dm remove numio-span 2>/dev/null
}
trap cleanup EXIT
sectors=$(blockdev --getsz "/dev/$ns2")
dm create numio-lin --table "0 $sectors linear /dev/$ns2 0" >"$CHECK_OUT/dmsetup.log" 2>&1 ||
  { not_ok "dmsetup create numio-lin: $(cat "$CHECK_OUT/dmsetup.log")"; finish; }
lin=$(dm info -c --noheadings -o blkdevname numio-lin)
note "numio-lin is /dev/$lin: linear over /dev/$ns2 ($sectors sectors)"
mkfs.ext4 -q -F "/dev/$lin" >"$CHECK_OUT/mkfs.log" 2>&1 ||
  { not_ok "mkfs.ext4 /dev/$lin: $(cat "$CHECK_OUT/mkfs.log")"; finish; }
mnt=$(mktemp -d)
mount -t ext4 "/dev/$lin" "$mnt" || { not_ok "mount /dev/$lin"; mnt=; finish; }
file=$mnt/data.bin
dd if=/dev/zero of="$file" bs=1M count=16 status=none conv=fsync

run_numio bench "$file" --json --rw randread --runtime 1 --iodepth 4
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/bench.json"
printf '%s\n' "$NUMIO_ERR" >"$CHECK_OUT/bench.err"
expect_eq "numio bench exit status" 0 "$NUMIO_RC"
[ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 5 <<<"$NUMIO_ERR")"
expect_eq "the target's node is the dm slave's controller's" 1 "$(jq '.targets[0].node' <<<"$NUMIO_OUT")"
cpus=$(jq -r '[.targets[0].workers[].cpu] | map(tostring) | join(" ")' <<<"$NUMIO_OUT")
on_node=yes
for c in $cpus; do [[ " $node_cpus " == *" $c "* ]] || on_node=no; done
expect_eq "worker CPUs ($cpus) are node 1's" yes "$([ -n "$cpus" ] && echo "$on_node" || echo none)"

run_numio plan "$file"
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/plan.out"
expect_eq "numio plan: where the node came from" \
  "  note: $file is a file on $lin (device-mapper numio-lin) over $ns2: node 1, $ns2's" \
  "$(grep -F "note: $file is" <<<"$NUMIO_OUT")"

# 8 MiB of each namespace, concatenated: a stack over nodes 0 and 1.
dm create numio-span --table "0 16384 linear /dev/$n0 0
16384 16384 linear /dev/$ns2 0" >>"$CHECK_OUT/dmsetup.log" 2>&1 ||
  { not_ok "dmsetup create numio-span: $(cat "$CHECK_OUT/dmsetup.log")"; finish; }
span=$(dm info -c --noheadings -o blkdevname numio-span)
run_numio plan "/dev/$span"
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/plan-span.out"
printf '%s\n' "$NUMIO_ERR" >"$CHECK_OUT/plan-span.err"
expect_eq "numio plan: a stack over two nodes has no node" "?" \
  "$(awk -v f="/dev/$span" '$1 == f {print $2}' <<<"$NUMIO_OUT")"
# The namespaces come in name order (sysfs lists a dm device's slaves so).
declare -A node_of=([$n0]=0 [$ns2]=1)
mapfile -t by_name < <(printf '%s\n' "$n0" "$ns2" | LC_ALL=C sort)
a=${by_name[0]} b=${by_name[1]}
expect_eq "numio plan: and says why" \
  "  note: /dev/$span is $span (device-mapper numio-span) over $a, $b: its NVMe namespaces sit on nodes 0,1 ($a on node ${node_of[$a]}, $b on node ${node_of[$b]}), so it has no single NUMA node" \
  "$(grep -F "note: /dev/$span is" <<<"$NUMIO_OUT")"
finish
