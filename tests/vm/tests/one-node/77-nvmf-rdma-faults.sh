#!/usr/bin/env bash
# vm-lab: timeout=500
# vm-lab: kernels=default
# Default kernel only: numio serve against hostile RDMA hosts, numio's
# own logic; 75 runs its RDMA target on 6.12's soft-RoCE.
# numio serve --transport rdma against hostile and failing NVMe/RDMA hosts
# (soft-RoCE, rdma-lib.bash; the misbehaving host is rdma_probe, from
# crates/nvmf/examples); after each the target still serves:
#   1. connect requests with bad private data (queue sizes beyond the
#      limits, HRQSIZE 0, a queue id past the limit, an unknown RECFMT,
#      rping's none) are rejected with the NVMe/RDMA status naming the
#      field, and logged with the limit;
#   2. a host that never posts receives is disconnected (its response
#      not taken for 10 s);
#   3. a host killed (SIGKILL) mid-I/O: its queues close, and the next host
#      reads with no errors;
#   4. no RDMA device on the address: numio serve --transport rdma on
#      127.0.0.1 and numio bench nvme-rdma://127.0.0.1 fail with exit 2,
#      naming rdma_rxe;
#   5. no rdma-core: with libibverbs hidden (a private mount namespace),
#      both name the packages to install.
. "$(dirname "$0")/rdma-lib.bash"
. "$(dirname "$0")/nvmf-lib.bash"
rdma_setup
nvmf_setup
NVMF_ALLOW=$NVMF_HOST nvmf_start --transport rdma --listen "$RDMA_TGT:4420" --discovery-port 0 --queue-depth 64
URL=nvme-rdma://$RDMA_TGT:4420/$NVMF_NQN/1

PROBE=${NUMIO_VM_RDMA_PROBE:-}
[ -x "$PROBE" ] || { not_ok "no rdma_probe (tests/vm/lab builds crates/nvmf/examples/rdma_probe.rs)"; finish; }
# probe WHAT EXPECTED ARGS...: the probe's answer to a connect request.
probe() {
  local what=$1 want=$2
  shift 2
  local got
  got=$(timeout 60 "$PROBE" "$RDMA_TGT:4420" req "$@" 2>&1)
  expect_eq "$what" "$want" "$(printf '%s' "$got" | sed 's/ (.*//')"
}

# 1. Connect requests: good ones accepted with CRQSIZE, bad ones rejected
#    with the NVMe/RDMA status that names the field.
probe "admin queue, 32 entries: accepted" "accepted crqsize=32" 0 31 32
probe "I/O queue 1, 64 entries: accepted" "accepted crqsize=64" 1 63 64
probe "I/O queue of 1024 entries against --queue-depth 64: invalid HSQSIZE" "rejected status=4" 1 1023 1024
probe "admin queue of 64 entries: invalid HSQSIZE" "rejected status=4" 0 63 64
probe "HRQSIZE 0: invalid HRQSIZE" "rejected status=5" 1 31 0
probe "queue id 999: invalid QID" "rejected status=3" 999 31 32
probe "RECFMT 7: invalid RECFMT" "rejected status=2" 1 31 32 7
wait_line "$NVMF_LOG" "rejecting an NVMe/RDMA queue .*HSQSIZE 1023 asks for a 1024-entry queue 1; the target takes 2 to 64" "$NVMF_PID"
expect_eq "the reject is logged with the field and the limit" 0 "$?"
# rping: an RDMA CM client with no NVMe/RDMA private data (RoCE's CM pads
# it to 56 zero bytes: HSQSIZE 0).
if command -v rping >/dev/null; then
  timeout 20 rping -c -a "$RDMA_TGT" -p 4420 -C 1 >"$CHECK_OUT/rping.out" 2>&1
  expect_eq "rping: rejected" yes "$(grep -q 'REJECTED' "$CHECK_OUT/rping.out" && echo yes || echo no)"
else
  not_ok "rping (rdmacm-utils) is not installed (scripts/install-deps installs it)"
fi

# 2. A host that never posts receives: the target's response cannot be
#    delivered (receiver not ready, retried a finite number of times), so
#    it gives the queue up instead of stalling on it.
got=$(timeout 90 "$PROBE" "$RDMA_TGT:4420" norecv "$NVMF_NQN" "$NVMF_HOST" 2>&1)
expect_eq "a host that posts no receives: the target disconnects it" disconnected "${got%% after*}"
note "rdma_probe norecv: $got"
wait_line "$NVMF_LOG" "NVMe/RDMA queue 0 from .* closed: a response not taken for 10 s (RNR" "$NVMF_PID"
expect_eq "the target gave that queue up after 10 s of an undeliverable response" 0 "$?"
note "$(grep 'RNR' "$NVMF_LOG" | head -n 1)"

# 3. A host killed mid-I/O.
"$NUMIO" bench "$URL" --hostnqn "$NVMF_HOST" --rw randread --bs 4k --iodepth 8 --runtime 60 --no-progress \
  >"$CHECK_OUT/victim.out" 2>&1 &
victim=$!
wait_line "$NVMF_LOG" "connected $NVMF_NQN qid 1 " "$victim" || note "no I/O queue line: $(tail -n 2 "$NVMF_LOG")"
kill -KILL "$victim"
wait "$victim" 2>/dev/null
wait_line "$NVMF_LOG" "NVMe/RDMA queue 1 from .* closed" "$NVMF_PID"
expect_eq "the killed host's I/O queue closed" 0 "$?"
run_numio bench "$URL" --hostnqn "$NVMF_HOST" --rw randread --bs 4k --iodepth 8 --number-ios 2000 --runtime 60 --json --no-progress
expect_eq "the next host: exit status" 0 "$NUMIO_RC"
expect_eq "the next host: I/Os" 2000 "$(jq '.total.ops' <<<"$NUMIO_OUT" 2>/dev/null)"
expect_eq "numio serve still runs" yes "$(kill -0 "$NVMF_PID" 2>/dev/null && echo yes || echo no)"

# 4. No RDMA device on the address.
run_numio serve --transport rdma --listen 127.0.0.1:4430 --ns mem:1M --allow-any-host --discovery-port 0
expect_eq "serve --transport rdma on 127.0.0.1: exit 2 naming rdma_rxe" yes \
  "$([ "$NUMIO_RC" -eq 2 ] && grep -q 'rdma_rxe' <<<"$NUMIO_ERR" && echo yes || echo no)"
note "serve said: $NUMIO_ERR"
run_numio bench "nvme-rdma://127.0.0.1:4420/$NVMF_NQN" --rw randread --runtime 1 --no-progress
expect_eq "bench nvme-rdma://127.0.0.1: exit 2 naming rdma_rxe" yes \
  "$([ "$NUMIO_RC" -eq 2 ] && grep -q 'rdma_rxe' <<<"$NUMIO_ERR" && echo yes || echo no)"
note "bench said: $NUMIO_ERR"

# 5. No rdma-core: libibverbs hidden in a private mount namespace.
lib=$(ldconfig -p | awk '/libibverbs.so.1 / { print $NF; exit }')
if [ -n "$lib" ]; then
  out=$(unshare -m bash -c "mount --bind /dev/null '$lib' && '$NUMIO' bench 'nvme-rdma://$RDMA_TGT/$NVMF_NQN' --rw randread --runtime 1 --no-progress" 2>&1)
  rc=$?
  expect_eq "without libibverbs: exit 2 naming the packages" yes \
    "$([ "$rc" -eq 2 ] && grep -q 'apt install libibverbs1' <<<"$out" && echo yes || echo no)"
  note "bench said: $out"
else
  not_ok "ldconfig knows no libibverbs.so.1"
fi
finish
