# shellcheck shell=bash
# memoryless: 3 NUMA nodes; nodes 0 and 1 have 2 CPUs and 512 MiB each,
# node 2 has neither CPUs nor memory but an NVMe controller behind its
# pxb-pcie bridge. The x86 kernel does not online a node without CPUs or
# memory, so that controller's numa_node reads -1: the case `numio doctor`
# must flag. NUMIO-L0 on node 0 is the well-placed control.
TOPO_DESCRIPTION="3 nodes: 2 x (2 CPUs, 512 MiB) + 1 empty node with an NVMe controller"
TOPO_SMP="4,sockets=2,cores=2,threads=1"
TOPO_MEM_MB=1024

topology() {
  topo_node 0 0-1 512
  topo_node 1 2-3 512
  topo_node 2 "" 0
  topo_distance 0 1 21
  topo_distance 0 2 31
  topo_distance 1 2 31
  topo_bridge pxb0 0 64
  topo_bridge pxb2 2 192
  topo_controller l0 pxb0 NUMIO-L0
  topo_namespace l0 1 1G
  topo_controller ml pxb2 NUMIO-ML
  topo_namespace ml 1 1G
}

# ---- expected: what `numio topo --json` must report in this guest ----
# Node 2 is not online, so only nodes 0 and 1 appear.
EXPECT_NODES="0 1"
declare -gA EXPECT_NODE_CPUS=([0]="0 1" [1]="2 3")
declare -gA EXPECT_DISTANCES=([0]="10 21" [1]="21 10")
# "SERIAL NODE" per controller; NODE is the kernel's numa_node ("unknown" for -1).
EXPECT_CONTROLLERS=("NUMIO-L0 0" "NUMIO-ML unknown")
# "SERIAL NSID SIZE_BYTES" per namespace.
EXPECT_NAMESPACES=("NUMIO-L0 1 1073741824" "NUMIO-ML 1 1073741824")
# "SUBSYSTEM_NQN IOPOLICY PATH_NODES" per multipath namespace (none here).
EXPECT_MULTIPATH=()
# "SUBJECT CODE" per warning or error `numio doctor` must report (SUBJECT: a
# controller's serial, else doctor's subject): the controller behind the
# memoryless node, whose node the kernel does not know.
EXPECT_DOCTOR_FLAGS=("NUMIO-ML controller-node-unknown")
