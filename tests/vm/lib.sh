# shellcheck shell=bash
# Shared helpers of the VM lab's host-side scripts (sourced, not run).

VM_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$VM_DIR/../.." && pwd)"
# Kernel, modules and initramfs live outside the repository.
if [ "$(id -u)" -eq 0 ]; then VM_CACHE_DEFAULT=/var/cache/numio-vm; else VM_CACHE_DEFAULT="${XDG_CACHE_HOME:-$HOME/.cache}/numio-vm"; fi
VM_CACHE="${NUMIO_VM_CACHE:-$VM_CACHE_DEFAULT}"

vm_log() { printf 'vm-lab: %s\n' "$*" >&2; }
vm_die() { printf 'vm-lab: error: %s\n' "$*" >&2; exit 2; }

# Runs "$@" as root (directly, or through sudo when not root).
vm_as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Lists the Debian packages among "$@" that are not installed.
vm_missing_pkgs() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || printf '%s\n' "$p"
  done
}

# ---- topology helpers: topology files call these to build QEMU_ARGS ----
# A controller is placed behind a PCIe root port, behind a pxb-pcie expander
# bridge bound to a NUMA node (or on the main root bus when NODE is "none").
QEMU_ARGS=()
_topo_chassis=1
_topo_drive=0

# topo_bridge ID NODE BUS_NR: a pxb-pcie expander on NUMA node NODE.
topo_bridge() {
  QEMU_ARGS+=(-device "pxb-pcie,id=$1,bus_nr=$3,numa_node=$2,bus=pcie.0")
}

# topo_controller ID BRIDGE SERIAL [SUBSYS]: an NVMe controller behind a new
# root port on BRIDGE ("pcie.0" for the main root bus); controllers that share
# SUBSYS (made with topo_subsystem) and SERIAL are paths of one subsystem.
topo_controller() {
  local id=$1 bridge=$2 serial=$3 subsys=${4:-}
  local port="rp$_topo_chassis"
  QEMU_ARGS+=(-device "pcie-root-port,id=$port,bus=$bridge,chassis=$_topo_chassis")
  _topo_chassis=$((_topo_chassis + 1))
  QEMU_ARGS+=(-device "nvme,id=$id,serial=$serial,bus=$port${subsys:+,subsys=$subsys}")
}

# topo_subsystem ID: an NVM subsystem (NQN = ID) for multipath controllers.
topo_subsystem() {
  QEMU_ARGS+=(-device "nvme-subsys,id=$1,nqn=$1")
}

# topo_namespace CONTROLLER NSID SIZE [shared] [file]: a namespace backed by
# QEMU's null-co driver (reads return zeroes, writes are dropped: no disk
# used), or with "file" by a sparse raw file in the run's job directory
# (data survives for the boot: for write/verify tests; removed afterwards).
# "shared" attaches it to every controller of the subsystem (multipath).
topo_namespace() {
  local ctrl=$1 nsid=$2 size=$3 shared="" file="" opt
  shift 3
  for opt in "$@"; do
    case $opt in
      shared) shared=1 ;;
      file) file=1 ;;
      *) vm_die "topo_namespace: unknown option '$opt' (shared, file)" ;;
    esac
  done
  local drive="d$_topo_drive"
  _topo_drive=$((_topo_drive + 1))
  if [ -n "$file" ]; then
    [ -n "${VM_SCRATCH:-}" ] || vm_die "topo_namespace ... file: no job directory (VM_SCRATCH)"
    truncate -s "$size" "$VM_SCRATCH/$drive.raw"
    QEMU_ARGS+=(-drive "file=$VM_SCRATCH/$drive.raw,if=none,id=$drive,format=raw,cache=unsafe")
  else
    QEMU_ARGS+=(-drive "file=null-co://,if=none,id=$drive,format=raw,file.size=$size,file.read-zeroes=on")
  fi
  QEMU_ARGS+=(-device "nvme-ns,drive=$drive,nsid=$nsid,bus=$ctrl${shared:+,shared=on}")
}

# topo_node ID CPUS MEM_MB: a NUMA node with CPUs (QEMU syntax: 0-1) and memory;
# topo_node ID "" 0 makes a node with neither.
topo_node() {
  local id=$1 cpus=$2 mem=$3
  if [ "$mem" -gt 0 ]; then
    QEMU_ARGS+=(-object "memory-backend-ram,id=mem$id,size=${mem}M")
    QEMU_ARGS+=(-numa "node,nodeid=$id${cpus:+,cpus=$cpus},memdev=mem$id")
  else
    QEMU_ARGS+=(-numa "node,nodeid=$id${cpus:+,cpus=$cpus}")
  fi
}

# topo_distance A B VALUE: symmetric NUMA distance.
topo_distance() {
  QEMU_ARGS+=(-numa "dist,src=$1,dst=$2,val=$3")
}

# Lists topology names.
vm_topologies() {
  local f
  for f in "$VM_DIR"/topologies/*.sh; do basename "$f" .sh; done
}

# Prints the kernels topology $1 boots on in the full lab: its file's
# TOPO_KERNELS ("default" when unset: linux-image-amd64's kernel).
vm_topology_kernels() {
  local file="$VM_DIR/topologies/$1.sh"
  [ -f "$file" ] || vm_die "unknown topology '$1' (have: $(vm_topologies | tr '\n' ' '))"
  (
    TOPO_KERNELS=default
    # shellcheck source=/dev/null
    . "$file"
    printf '%s\n' "$TOPO_KERNELS"
  )
}

# Prints check $1's time limit in seconds: its "# vm-lab: timeout=N" line,
# else CHECK_TIMEOUT_S, else 120.
vm_check_timeout() {
  local own
  own=$(sed -n 's/^# vm-lab: timeout=\([0-9][0-9]*\).*/\1/p' "$1" | head -n 1)
  echo "${own:-${CHECK_TIMEOUT_S:-120}}"
}

# Prints the checks topology $1 runs on kernel $2 (default: "default"), in
# order: tests/vm/tests/all/*.sh, then tests/vm/tests/$1/*.sh. A check with
# a "# vm-lab: topologies=A B" line runs in those topologies only (an all/
# check that does not depend on the machine's shape need not run in every
# one). A check with a "# vm-lab: kernels=K..." line runs on those kernels
# only ("default", or a series such as 6.12): the other kernels of
# TOPO_KERNELS boot to run what depends on kernel code that differs between
# them, and a check whose kernel side is the same on each (numio's own
# logic, or a kernel interface another check covers there) says
# "kernels=default" and why.
# vm_check_allows CHECK KEY VALUE: CHECK has no "# vm-lab: KEY=..." line,
# or VALUE is among the words of its first one.
vm_check_allows() {
  local only
  only=$(sed -n "s/^# vm-lab: $2=\\(.*\\)/\\1/p" "$1" | head -n 1)
  [ -z "$only" ] || [[ " $only " == *" $3 "* ]]
}
vm_topology_checks() {
  local check kernel=${2:-default}
  for check in "$VM_DIR"/tests/all/*.sh "$VM_DIR/tests/$1"/*.sh; do
    [ -f "$check" ] || continue
    vm_check_allows "$check" topologies "$1" && vm_check_allows "$check" kernels "$kernel" &&
      printf '%s\n' "$check"
  done
  return 0
}

# Prints topology $1's TOPO_QEMU: the lab QEMU it boots ("coalescing":
# tests/vm/qemu/, built by tests/vm/setup --qemu), empty for Debian's
# qemu-system-x86_64.
vm_topology_qemu() {
  local file="$VM_DIR/topologies/$1.sh"
  [ -f "$file" ] || vm_die "unknown topology '$1' (have: $(vm_topologies | tr '\n' ' '))"
  (
    TOPO_QEMU=""
    # shellcheck source=/dev/null
    . "$file"
    printf '%s\n' "$TOPO_QEMU"
  )
}

# Loads topology $1: sets TOPO_* and EXPECT_* variables and QEMU_ARGS.
vm_load_topology() {
  local file="$VM_DIR/topologies/$1.sh"
  [ -f "$file" ] || vm_die "unknown topology '$1' (have: $(vm_topologies | tr '\n' ' '))"
  QEMU_ARGS=()
  _topo_chassis=1
  _topo_drive=0
  # Poll queues of the guest's nvme driver (IOPOLL, fio --hipri); a topology
  # file may set another count, 0 for none.
  TOPO_NVME_POLL_QUEUES=2
  # Debian's qemu-system-x86_64 unless the topology names a lab QEMU.
  TOPO_QEMU=""
  # 1: an emulated IOMMU, on in the guest (tests/vm/run).
  TOPO_IOMMU=0
  # shellcheck source=/dev/null
  . "$file"
  topology
}
