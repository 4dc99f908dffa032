# shellcheck shell=bash
# Helpers for the NVMe/RDMA checks (sourced by 7N-*rdma*.sh; not a check
# itself). Soft-RoCE: the kernel's rdma_rxe on a veth pair inside the
# guest, 10.77.0.1 (rv0, rxe0) and 10.77.0.2 (rv1, rxe1): a target listens
# on the first, hosts connect from the second (rxe does not run on lo).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

RDMA_TGT=10.77.0.1
RDMA_INI=10.77.0.2

# Loads rdma_rxe (with the RDMA CM's user-space access) and veth, makes the
# pair and an rxe device on each end; lifts the locked-memory limit that
# registered buffers count against. A missing piece fails the check (CI must
# not skip RDMA silently).
rdma_setup() {
  require_numio
  command -v rdma >/dev/null || { not_ok "the rdma tool (iproute2) is missing"; finish; }
  vm-modprobe rdma_rxe rdma_ucm ib_uverbs veth "$@" >"$CHECK_OUT/modprobe-rdma.log" 2>&1 ||
    { not_ok "vm-modprobe rdma_rxe rdma_ucm ib_uverbs veth $*: $(tail -n 3 "$CHECK_OUT/modprobe-rdma.log")"; finish; }
  ip link set lo up 2>/dev/null
  if ! ip link show rv0 >/dev/null 2>&1; then
    {
      ip link add rv0 type veth peer name rv1 &&
        ip addr add "$RDMA_TGT/24" dev rv0 &&
        ip addr add "$RDMA_INI/24" dev rv1 &&
        ip link set rv0 up && ip link set rv1 up &&
        rdma link add rxe0 type rxe netdev rv0 &&
        rdma link add rxe1 type rxe netdev rv1
    } >"$CHECK_OUT/rdma-link.log" 2>&1 || { not_ok "soft-RoCE set-up: $(tail -n 3 "$CHECK_OUT/rdma-link.log")"; finish; }
  fi
  ulimit -l unlimited
  note "soft-RoCE: $(rdma link show 2>/dev/null | awk '{ print $2, $NF }' | tr '\n' ' ')"
}

# wait_line FILE PATTERN [PID]: waits (0.1 s steps, 60 s at most) for a
# line matching PATTERN in FILE, while PID (if given) runs.
wait_line() {
  local i
  for i in $(seq 600); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    [ -z "${3:-}" ] || kill -0 "$3" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
