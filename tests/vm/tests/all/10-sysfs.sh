#!/usr/bin/env bash
# The guest's sysfs matches the topology file (checks the lab itself, with
# plain shell, independently of numio): online nodes, CPU lists, distances,
# each controller's numa_node, namespace sizes, multipath iopolicy and paths.
. "$(dirname "$0")/../lib.sh"

sys=/sys/devices/system/node
expect_eq "online nodes" "$EXPECT_NODES" "$(expand_list "$(cat $sys/online)")"
for n in $EXPECT_NODES; do
  expect_eq "node $n cpus" "${EXPECT_NODE_CPUS[$n]}" "$(expand_list "$(cat $sys/node$n/cpulist)")"
  expect_eq "node $n distances" "${EXPECT_DISTANCES[$n]}" "$(cat $sys/node$n/distance)"
done

node_of() { local v; v=$(cat "$1/numa_node"); [ "$v" = -1 ] && echo unknown || echo "$v"; }

controllers=()
for c in /sys/class/nvme/nvme*; do
  controllers+=("$(tr -d ' ' <"$c/serial") $(node_of "$c/device")")
done
expect_eq "controllers (serial node)" "$(sorted_lines EXPECT_CONTROLLERS)" "$(sorted_lines controllers)"

namespaces=()
multipath=()
for b in /sys/block/nvme*n*; do
  name=${b##*/}
  [[ $name =~ ^nvme[0-9]+c[0-9]+n[0-9]+$ ]] && continue # a path, not a head
  serial=$(tr -d ' ' <"$b/device/serial")
  namespaces+=("$serial $(cat "$b/nsid") $(($(cat "$b/size") * 512))")
  [[ $name =~ ^nvme([0-9]+)n([0-9]+)$ ]] || continue
  paths=(/sys/block/nvme"${BASH_REMATCH[1]}"c*n"${BASH_REMATCH[2]}")
  [ -e "${paths[0]}" ] || continue
  subsys=$(readlink -f "$b/device")
  nodes=$(for p in "${paths[@]}"; do
    node_of "$(readlink -f "$p/device")/device"
  done | sort -n | paste -sd,)
  multipath+=("$(cat "$subsys/subsysnqn") $(cat "$subsys/iopolicy") $nodes")
done
expect_eq "namespaces (serial nsid bytes)" "$(sorted_lines EXPECT_NAMESPACES)" "$(sorted_lines namespaces)"
expect_eq "multipath (nqn iopolicy path-nodes)" "$(sorted_lines EXPECT_MULTIPATH)" "$(sorted_lines multipath)"
finish
