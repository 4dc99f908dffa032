# shellcheck shell=bash
# four-node: 2 sockets x 2 cores x 2 threads (SMT siblings 0+1, 2+3, ...),
# split into 4 NUMA nodes of one core each (sub-NUMA clustering: distance
# 11 within a socket, 21 across), 256 MiB per node. One NVMe controller on
# node 0 and one on node 3, each behind its own pxb-pcie expander.
# tests/vm/capture takes CPU 5 offline first (TOPO_CAPTURE_SETUP), so the
# vm-four-node fixture also holds an offline SMT thread.
TOPO_DESCRIPTION="4 nodes x 1 core x 2 threads (2 sockets); a controller on node 0 and on node 3"
TOPO_SMP="8,sockets=2,cores=2,threads=2"
TOPO_MEM_MB=1024
TOPO_CAPTURE_SETUP="echo 0 > /sys/devices/system/cpu/cpu5/online"

topology() {
  # Under TCG `-cpu max` shows the guest no SMT (every thread a core of its
  # own); a named model reports the threads (the later -cpu wins).
  QEMU_ARGS+=(-cpu Skylake-Client)
  topo_node 0 0-1 256
  topo_node 1 2-3 256
  topo_node 2 4-5 256
  topo_node 3 6-7 256
  topo_distance 0 1 11
  topo_distance 0 2 21
  topo_distance 0 3 21
  topo_distance 1 2 21
  topo_distance 1 3 21
  topo_distance 2 3 11
  topo_bridge pxb0 0 64
  topo_bridge pxb3 3 192
  topo_controller c0 pxb0 NUMIO-4N-0
  topo_namespace c0 1 1G
  topo_controller c3 pxb3 NUMIO-4N-3
  topo_namespace c3 1 1G
}

# ---- expected: what `numio topo --json` must report in this guest ----
EXPECT_NODES="0 1 2 3"
declare -gA EXPECT_NODE_CPUS=([0]="0 1" [1]="2 3" [2]="4 5" [3]="6 7")
declare -gA EXPECT_DISTANCES=([0]="10 11 21 21" [1]="11 10 21 21" [2]="21 21 10 11" [3]="21 21 11 10")
EXPECT_CONTROLLERS=("NUMIO-4N-0 0" "NUMIO-4N-3 3")
EXPECT_NAMESPACES=("NUMIO-4N-0 1 1073741824" "NUMIO-4N-3 1 1073741824")
EXPECT_MULTIPATH=()
EXPECT_DOCTOR_FLAGS=()
