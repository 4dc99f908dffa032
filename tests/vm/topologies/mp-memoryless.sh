# shellcheck shell=bash
# mp-memoryless: the published case of a multipath namespace with a path
# behind a node the kernel does not online. Nodes 0 and 1 have 2 CPUs and
# 512 MiB each; node 2 has neither CPUs nor memory. Subsystem numio-mp has
# one namespace shared by two controllers: path A behind node 0's pxb-pcie
# bridge, path B behind node 2's, whose numa_node reads -1. Under iopolicy
# numa the kernel counts -1 as local to every node: from node 0 both paths
# tie at distance 10 (the first path of the list wins), from node 1 the
# -1 path (10) beats the node-0 path (21), though it really sits 31 away.
# NUMIO-L0 (node 0, a private namespace) is for the all/ checks.
TOPO_DESCRIPTION="3 nodes: 2 x (2 CPUs, 512 MiB) + 1 empty node; a 2-path subsystem on node 0 and the empty node"
TOPO_SMP="4,sockets=2,cores=2,threads=1"
TOPO_MEM_MB=1024
# Booted on Debian's 6.12 as well as the default 6.1 in the full lab
# (tests/vm/lab): native multipath differs between them.
TOPO_KERNELS="default 6.12"

topology() {
  topo_node 0 0-1 512
  topo_node 1 2-3 512
  topo_node 2 "" 0
  topo_distance 0 1 21
  topo_distance 0 2 31
  topo_distance 1 2 31
  topo_bridge pxb0 0 64
  topo_bridge pxb2 2 192
  topo_subsystem numio-mp
  topo_controller mpa pxb0 NUMIO-MP numio-mp
  topo_namespace mpa 1 1G shared
  topo_controller mpb pxb2 NUMIO-MP numio-mp
  topo_controller l0 pxb0 NUMIO-L0
  topo_namespace l0 1 256M
}

# ---- expected: what `numio topo --json` must report in this guest ----
# Node 2 is not online, so only nodes 0 and 1 appear.
EXPECT_NODES="0 1"
declare -gA EXPECT_NODE_CPUS=([0]="0 1" [1]="2 3")
declare -gA EXPECT_DISTANCES=([0]="10 21" [1]="21 10")
# "SERIAL NODE" per controller; NODE is the kernel's numa_node ("unknown" for -1).
EXPECT_CONTROLLERS=("NUMIO-MP 0" "NUMIO-MP unknown" "NUMIO-L0 0")
# "SERIAL NSID SIZE_BYTES" per namespace.
EXPECT_NAMESPACES=("NUMIO-MP 1 1073741824" "NUMIO-L0 1 268435456")
# "SUBSYSTEM_NQN IOPOLICY PATH_NODES" per multipath namespace.
EXPECT_MULTIPATH=("nqn.2019-08.org.qemu:numio-mp numa 0,unknown")
# "SUBJECT CODE" per warning or error `numio doctor` must report (a
# namespace's name in a subject reads as its serial): the
# controller behind the memoryless node, and the multipath audit's finding
# for each CPU node: node 0 ties between its local path and the -1 path
# (the -1 controller probes first, so it is first in the list and wins),
# node 1 takes the -1 path (10) over the node-0 path (21).
EXPECT_DOCTOR_FLAGS=("NUMIO-MP controller-node-unknown"
  "NUMIO-MP node 0 multipath-path-not-nearest" "NUMIO-MP node 1 multipath-path-not-nearest")
