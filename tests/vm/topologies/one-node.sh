# shellcheck shell=bash
# one-node: a plain single-node machine (no NUMA description at all: the
# firmware has no SRAT, like most one-socket servers) with 2 CPUs, 1 GiB and
# two single-path NVMe controllers on the main PCIe root bus, one 1 GiB
# namespace each (NUMIO-A's kept in a file).
TOPO_DESCRIPTION="1 node x 2 CPUs, 1 GiB; two single-path controllers"
TOPO_SMP="2,sockets=1,cores=2,threads=1"
TOPO_MEM_MB=1024
# Booted on Debian's 6.12 as well as the default 6.1 in the full lab
# (tests/vm/lab): the kernel's NVMe/TCP and NVMe/RDMA host and target
# (DH-HMAC-CHAP and TLS only exist in 6.12's), VFIO, io_uring passthrough
# and polling differ between them.
TOPO_KERNELS="default 6.12"

topology() {
  topo_controller c0 pcie.0 NUMIO-A
  # File-backed (sparse, in the job directory): what numio's driver writes
  # in no-IOMMU mode (59) reads back.
  topo_namespace c0 1 1G file
  topo_controller c1 pcie.0 NUMIO-B
  topo_namespace c1 1 1G
}

# ---- expected: what `numio topo --json` must report in this guest ----
EXPECT_NODES="0"
declare -gA EXPECT_NODE_CPUS=([0]="0 1")
declare -gA EXPECT_DISTANCES=([0]="10")
# "SERIAL NODE" per controller; NODE is the kernel's numa_node ("unknown" for -1).
EXPECT_CONTROLLERS=("NUMIO-A unknown" "NUMIO-B unknown")
# "SERIAL NSID SIZE_BYTES" per namespace.
EXPECT_NAMESPACES=("NUMIO-A 1 1073741824" "NUMIO-B 1 1073741824")
# "SUBSYSTEM_NQN IOPOLICY PATH_NODES" per multipath namespace (none here).
EXPECT_MULTIPATH=()
# "SUBJECT CODE" per warning or error `numio doctor` must report (SUBJECT: a
# controller's serial, else doctor's subject): none on a plain one-node
# machine (numa_node -1 is harmless when there is one node).
EXPECT_DOCTOR_FLAGS=()
