# shellcheck shell=bash
# iommu: one-node's machine (1 node, 2 CPUs, 1 GiB, two single-path NVMe
# controllers on the root bus, one 1 GiB namespace each, NUMIO-B's kept in a
# file) behind an emulated Intel IOMMU the guest turns on (TOPO_IOMMU=1:
# intel_iommu=on iommu=pt), so each controller has its own IOMMU group and
# `numio vfio bind` can hand one to vfio-pci while the other stays on nvme.
TOPO_DESCRIPTION="1 node x 2 CPUs, 1 GiB; two single-path controllers behind an IOMMU"
TOPO_SMP="2,sockets=1,cores=2,threads=1"
TOPO_MEM_MB=1024
# Booted on Debian's 6.12 as well as the default 6.1 in the full lab
# (tests/vm/lab): VFIO and the IOMMU code differ between them.
TOPO_KERNELS="default 6.12"
TOPO_IOMMU=1

topology() {
  topo_controller c0 pcie.0 NUMIO-A
  topo_namespace c0 1 1G
  topo_controller c1 pcie.0 NUMIO-B
  # File-backed (sparse, in the job directory): what is written reads back
  # (mkfs.ext4 for the refusal check, numio's verify through the kernel).
  topo_namespace c1 1 1G file
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
# "SUBJECT CODE" per warning or error `numio doctor` must report: none (the
# VFIO findings are infos: modules not loaded, no hugepages).
EXPECT_DOCTOR_FLAGS=()
