# shellcheck shell=bash
# two-socket: 2 NUMA nodes x 2 CPUs (512 MiB each, distance 21 so a reader
# that assumes 20 is caught). Each node has a pxb-pcie expander bridge with
# its NVMe controllers behind root ports:
#   node 0: NUMIO-N0 (single path, 1 namespace)
#           NUMIO-MP path A (subsystem numio-mp)
#   node 1: NUMIO-N1 (single path, 1 namespace of 64 MiB backed by a
#           raw file: written data reads back, for data tests)
#           NUMIO-MP path B (subsystem numio-mp)
#           NUMIO-2NS (single path, 2 namespaces: 1 GiB and 512 MiB, the
#           second backed by a sparse raw file: a filesystem on it keeps
#           its data, for the dm-linear check)
# numio-mp holds one namespace shared by both controllers: native NVMe
# multipath gives one head device with two paths, iopolicy numa.
TOPO_DESCRIPTION="2 nodes x 2 CPUs; single-path controller per node; 2-path subsystem; 2-namespace controller"
TOPO_SMP="4,sockets=2,cores=2,threads=1"
TOPO_MEM_MB=1024

topology() {
  topo_node 0 0-1 512
  topo_node 1 2-3 512
  topo_distance 0 1 21
  topo_bridge pxb0 0 64
  topo_bridge pxb1 1 128
  topo_subsystem numio-mp
  topo_controller n0 pxb0 NUMIO-N0
  topo_namespace n0 1 1G
  topo_controller mpa pxb0 NUMIO-MP numio-mp
  topo_namespace mpa 1 1G shared
  topo_controller n1 pxb1 NUMIO-N1
  topo_namespace n1 1 64M file
  topo_controller mpb pxb1 NUMIO-MP numio-mp
  topo_controller ns2 pxb1 NUMIO-2NS
  topo_namespace ns2 1 1G
  topo_namespace ns2 2 512M file
}

# ---- expected: what `numio topo --json` must report in this guest ----
EXPECT_NODES="0 1"
declare -gA EXPECT_NODE_CPUS=([0]="0 1" [1]="2 3")
declare -gA EXPECT_DISTANCES=([0]="10 21" [1]="21 10")
# "SERIAL NODE" per controller; NODE is the kernel's numa_node ("unknown" for -1).
EXPECT_CONTROLLERS=("NUMIO-N0 0" "NUMIO-MP 0" "NUMIO-N1 1" "NUMIO-MP 1" "NUMIO-2NS 1")
# "SERIAL NSID SIZE_BYTES" per namespace.
EXPECT_NAMESPACES=("NUMIO-N0 1 1073741824" "NUMIO-MP 1 1073741824" "NUMIO-N1 1 67108864"
  "NUMIO-2NS 1 1073741824" "NUMIO-2NS 2 536870912")
# "SUBSYSTEM_NQN IOPOLICY PATH_NODES" per multipath namespace: PATH_NODES
# are the numa_node of each path's controller, sorted, comma-separated (QEMU
# prefixes the nvme-subsys id with nqn.2019-08.org.qemu:).
EXPECT_MULTIPATH=("nqn.2019-08.org.qemu:numio-mp numa 0,1")
# "SUBJECT CODE" per warning or error `numio doctor` must report (SUBJECT: a
# controller's serial, else doctor's subject): none, every controller is on
# a known node, the multipath subsystem uses iopolicy numa and queue IRQs
# keep the kernel's managed affinity.
EXPECT_DOCTOR_FLAGS=()
