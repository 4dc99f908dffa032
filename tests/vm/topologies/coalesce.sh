# shellcheck shell=bash
# coalesce: one NUMA node (2 CPUs, 1 GiB) with four single-path NVMe
# controllers (NUMIO-C0..NUMIO-C3, one 256 MiB namespace each) behind the
# node's pxb-pcie bridge, so `numio coalesce sweep --devices 1,2,4` has four
# drives on one node. It boots the lab QEMU (TOPO_QEMU=coalescing,
# tests/vm/qemu/: Debian's qemu with a patch whose emulated NVMe implements
# Interrupt Coalescing, Feature 08h; built once and cached), not Debian's
# stock qemu-system-x86_64, whose NVMe refuses to change the feature.
TOPO_DESCRIPTION="1 node x 2 CPUs, 1 GiB; four single-path controllers with Interrupt Coalescing (lab QEMU)"
TOPO_SMP="2,sockets=1,cores=2,threads=1"
TOPO_MEM_MB=1024
TOPO_QEMU=coalescing
# The lab QEMU's unit of the Aggregation Time is 100 us times this
# (x-aggregation-time-scale): TCG runs the guest some tens of times slower
# than host time, so with the spec's 100 us the timer, not the threshold,
# would end nearly every aggregation (measured: THR 9 took 0.18 to 0.22
# interrupts per I/O instead of 0.1). With 10, TIME 1 is 1 ms of host time
# and THR 9 takes 0.09 to 0.1, THR 3 0.21 to 0.23, as on real drives.
TOPO_COALESCE_TIME_SCALE=10

topology() {
  QEMU_ARGS+=(-global "nvme.x-aggregation-time-scale=$TOPO_COALESCE_TIME_SCALE")
  topo_node 0 0-1 1024
  topo_bridge pxb0 0 64
  local i
  for i in 0 1 2 3; do
    topo_controller "c$i" pxb0 "NUMIO-C$i"
    topo_namespace "c$i" 1 256M
  done
}

# ---- expected: what `numio topo --json` must report in this guest ----
EXPECT_NODES="0"
declare -gA EXPECT_NODE_CPUS=([0]="0 1")
declare -gA EXPECT_DISTANCES=([0]="10")
# "SERIAL NODE" per controller; NODE is the kernel's numa_node ("unknown" for -1).
EXPECT_CONTROLLERS=("NUMIO-C0 0" "NUMIO-C1 0" "NUMIO-C2 0" "NUMIO-C3 0")
# "SERIAL NSID SIZE_BYTES" per namespace.
EXPECT_NAMESPACES=("NUMIO-C0 1 268435456" "NUMIO-C1 1 268435456"
  "NUMIO-C2 1 268435456" "NUMIO-C3 1 268435456")
# "SUBSYSTEM_NQN IOPOLICY PATH_NODES" per multipath namespace (none here).
EXPECT_MULTIPATH=()
# "SUBJECT CODE" per warning or error `numio doctor` must report (SUBJECT: a
# controller's serial, else doctor's subject): none, every controller is on
# node 0, the one node.
EXPECT_DOCTOR_FLAGS=()
