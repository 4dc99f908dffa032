# shellcheck shell=bash
# eight-node: 4 sockets x 2 cores, one NUMA node per CPU (8 nodes of
# 128 MiB): distance 12 between the two nodes of a socket, 22 to a
# neighbouring socket (0-1, 2-3 paired), 32 to the others. One NVMe
# controller on node 5.
TOPO_DESCRIPTION="8 nodes x 1 CPU (4 sockets x 2 cores); a controller on node 5"
TOPO_SMP="8,sockets=4,cores=2,threads=1"
TOPO_MEM_MB=1024

# The distance between nodes A and B (A != B).
eight_node_distance() {
  local sa=$(($1 / 2)) sb=$(($2 / 2))
  if [ "$sa" -eq "$sb" ]; then echo 12
  elif [ $((sa / 2)) -eq $((sb / 2)) ]; then echo 22
  else echo 32; fi
}

topology() {
  local a b
  for a in 0 1 2 3 4 5 6 7; do topo_node "$a" "$a" 128; done
  for a in 0 1 2 3 4 5 6; do
    for b in $(seq $((a + 1)) 7); do topo_distance "$a" "$b" "$(eight_node_distance "$a" "$b")"; done
  done
  topo_bridge pxb5 5 160
  topo_controller c5 pxb5 NUMIO-8N-5
  topo_namespace c5 1 1G
}

# ---- expected: what `numio topo --json` must report in this guest ----
EXPECT_NODES="0 1 2 3 4 5 6 7"
declare -gA EXPECT_NODE_CPUS=()
declare -gA EXPECT_DISTANCES=()
for _a in 0 1 2 3 4 5 6 7; do
  EXPECT_NODE_CPUS[$_a]=$_a
  _row=""
  for _b in 0 1 2 3 4 5 6 7; do
    if [ "$_a" -eq "$_b" ]; then _row+=" 10"; else _row+=" $(eight_node_distance "$_a" "$_b")"; fi
  done
  EXPECT_DISTANCES[$_a]=${_row# }
done
unset _a _b _row
EXPECT_CONTROLLERS=("NUMIO-8N-5 5")
EXPECT_NAMESPACES=("NUMIO-8N-5 1 1073741824")
EXPECT_MULTIPATH=()
EXPECT_DOCTOR_FLAGS=()
