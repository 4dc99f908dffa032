#!/usr/bin/env bash
# vm-lab: timeout=500
# numio serve --transport tcp,rdma over soft-RoCE (rdma-lib.bash): one
# subsystem reached over both transports.
#   1. the kernel's discovery over RDMA lists the subsystem on an rdma and
#      a tcp port;
#   2. the kernel's nvme-rdma host connects over RDMA and fio writes and
#      verifies 4 KiB to 256 KiB blocks (in-capsule data, RDMA READ of
#      keyed SGLs in several chunks, RDMA WRITE of reads);
#   3. meanwhile a second host (numio's initiator, NVMe/TCP) reads the same
#      namespace: both transports at once on one subsystem;
#   4. numio's RDMA initiator against numio serve: write --verify, then
#      --verify-only reads it back;
#   5. what numio wrote over RDMA reads back, verified, through numio's
#      NVMe/TCP initiator;
#   6. numio sweep transport=tcp,rdma initiator-cores=1,2: each point on
#      its transport's backend, IOPS and CPU headroom measured;
#   7. the engine's conformance part for rdma;
#   8. numio sweep --hosts --target-transport rdma with the kernel's and numio's hosts
#      (numio connect nvme-rdma:// for the kernel's).
# On a kernel other than the default (the 6.12 pass) it ends after 5: 6 to 8
# are numio's own sweep, conformance and sweep-over-hosts logic over the same verbs.
. "$(dirname "$0")/rdma-lib.bash"
. "$(dirname "$0")/nvmf-lib.bash"
rdma_setup nvme-rdma
nvmf_setup
NVMF_ALLOW=$NVMF_HOST nvmf_start --transport tcp,rdma --listen "$RDMA_TGT:4420" --discovery-port 0 --allow-host "$NVMF_OTHER_HOST"
note "$(grep -E 'listening|port ' "$NVMF_LOG" | tr '\n' ' ')"
expect_eq "serve: an RDMA and a TCP listener" "2" "$(grep -c -E 'NVMe/(TCP|RDMA) listening on' "$NVMF_LOG")"

# 1. Discovery over RDMA.
disc=$(nvme discover -t rdma -a "$RDMA_TGT" -s 4420 --hostnqn="$NVMF_HOST" --hostid="$NVMF_HOSTID" -o json 2>"$CHECK_OUT/discover.err")
printf '%s\n' "$disc" >"$CHECK_OUT/discover.json"
expect_eq "discovery over RDMA: transports of $NVMF_NQN" "rdma;tcp" \
  "$(jq -r --arg n "$NVMF_NQN" '[.records[] | select(.subnqn == $n) | .trtype] | sort | join(";")' <<<"$disc" 2>/dev/null)"

# 2. The kernel host over RDMA, fio verify.
nvme connect -t rdma -a "$RDMA_TGT" -s 4420 -n "$NVMF_NQN" --hostnqn="$NVMF_HOST" --hostid="$NVMF_HOSTID" \
  >"$CHECK_OUT/connect.out" 2>&1
expect_eq "nvme connect -t rdma: exit status" 0 "$?"
nvmf_wait_devices 2 || not_ok "the RDMA controller's namespaces did not appear: $(cat "$CHECK_OUT/connect.out")"
mapfile -t devs < <(nvmf_devices)
dev=${devs[0]:-}
ctrl_transport() {
  local c nqn
  for c in /sys/class/nvme/nvme*; do
    read -r nqn <"$c/subsysnqn" 2>/dev/null || continue
    [ "$nqn" = "$NVMF_NQN" ] && cat "$c/transport"
  done
}
expect_eq "the kernel's controller of $NVMF_NQN is RDMA" rdma "$(ctrl_transport)"

# 3. A second host over TCP reads while fio runs over RDMA.
URL_TCP=nvme-tcp://$RDMA_TGT:4420/$NVMF_NQN/2
"$NUMIO" bench "$URL_TCP" --hostnqn "$NVMF_OTHER_HOST" --rw randread --bs 4k --iodepth 4 --runtime 4 \
  --json --no-progress >"$CHECK_OUT/tcp-reader.json" 2>"$CHECK_OUT/tcp-reader.err" &
reader=$!
wait_line "$NVMF_LOG" "qid 1 .*host $NVMF_OTHER_HOST" "$reader" || note "no TCP I/O queue line yet: $(tail -n 2 "$NVMF_LOG")"
nvmf_fio_verify fio-rdma "$dev" 16M
wait "$reader"
expect_eq "TCP host beside the RDMA host: exit status" 0 "$?"
expect_eq "TCP host beside the RDMA host: I/Os done" yes \
  "$([ "$(jq '.total.ops' "$CHECK_OUT/tcp-reader.json" 2>/dev/null || echo 0)" -gt 0 ] && echo yes || echo no)"
# numio serve's ports: 1 is TCP (listeners first), 2 RDMA.
expect_eq "the kernel host's I/O queue came over RDMA (port 2)" yes \
  "$(grep -q "connected $NVMF_NQN qid 1 .*host $NVMF_HOST port 2" "$NVMF_LOG" && echo yes || echo no)"
expect_eq "numio's I/O queue came over TCP (port 1)" yes \
  "$(grep -q "connected $NVMF_NQN qid 1 .*host $NVMF_OTHER_HOST port 1" "$NVMF_LOG" && echo yes || echo no)"
nvmf_disconnect
nvmf_wait_devices 0 || not_ok "the RDMA controller did not go away"

# 4. numio's RDMA initiator against numio serve.
URL=nvme-rdma://$RDMA_TGT:4420/$NVMF_NQN/1
bench() {
  local name=$1
  shift
  bench_json "$name" "$@" --hostnqn "$NVMF_HOST"
}
bench rdma-write "$URL" --rw write --bs 64k --iodepth 4 --size 8M --verify --force-write --no-time-based --runtime 120
expect_eq "rdma-write: I/Os (8 MiB once)" 128 "$OPS"
expect_eq "rdma-write: backend and target kind" "rdma nvme_rdma" \
  "$(jq -r '"\(.environment.backend // .options.backend) \(.environment.targets[0].kind)"' "$CHECK_OUT/rdma-write.json" 2>/dev/null)"
bench rdma-verify "$URL" --rw randread --bs 4k --iodepth 8 --size 8M --verify --randommap --no-time-based --runtime 120
expect_eq "rdma-verify: every 4 KiB block of 8 MiB read back" 2048 "$OPS"
# 5. The same bytes over TCP.
bench tcp-verify "nvme-tcp://$RDMA_TGT:4420/$NVMF_NQN/1" --rw read --bs 128k --iodepth 4 --size 8M --verify --no-time-based --runtime 120
expect_eq "tcp-verify: what numio wrote over RDMA reads back over TCP" 64 "$OPS"
end_unless_default_kernel "6 to 8 (sweep, conformance, sweep over hosts) are numio's logic over the verbs 1 to 5 used"

# 7. The engine's conformance part for rdma: an in-process target on the
#    rxe address, number_ios over two queues, the sync backend and rdma
#    each reading back what the other wrote (64 KiB and 4 KiB writes), a
#    corrupted block found.
conf=$(ls -t target/debug/deps/conformance-* 2>/dev/null | grep -v '\.d$' | head -n 1)
if [ -n "$conf" ]; then
  NUMIO_TEST_RDMA_ADDR=$RDMA_TGT "$conf" rdma_ --test-threads 1 >"$CHECK_OUT/conformance.out" 2>&1
  expect_eq "conformance (rdma): exit status" 0 "$?"
  expect_eq "conformance (rdma): its three tests ran" yes \
    "$(grep -q 'test result: ok. 3 passed' "$CHECK_OUT/conformance.out" && ! grep -q 'skipping rdma' "$CHECK_OUT/conformance.out" && echo yes || echo no)"
else
  not_ok "no conformance test binary under target/debug/deps (cargo test -p engine --no-run)"
fi

# 6. The transport axis: the same target over TCP and RDMA, one and two
#    initiator cores, interleaved; a point per pair in the JSON.
run_numio sweep transport=tcp,rdma initiator-cores=1,2 "nvme-tcp://$RDMA_TGT:4420/$NVMF_NQN/1" \
  --hostnqn "$NVMF_HOST" --rw randread --bs 4k --iodepth 4 --runtime 1 --json --progress never
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/sweep.json"
printf '%s\n' "$NUMIO_ERR" >"$CHECK_OUT/sweep.stderr"
expect_eq "sweep transport=tcp,rdma initiator-cores=1,2: exit status" 0 "$NUMIO_RC"
[ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 3 <<<"$NUMIO_ERR")"
expect_eq "sweep: each point's backend" "tcp rdma tcp rdma" \
  "$(jq -r '[.results.arms[].runs[0].raw.environment.backend] | join(" ")' <<<"$NUMIO_OUT" 2>/dev/null)"
expect_eq "sweep: each point's target, the scheme the transport's" \
  "nvme-tcp nvme-rdma nvme-tcp nvme-rdma" \
  "$(jq -r '[.sweeps[].points[].targets[0].target | split(":")[0]] | join(" ")' <<<"$NUMIO_OUT" 2>/dev/null)"
expect_eq "sweep: every point measured IOPS and CPU headroom" yes \
  "$(jq -e '[.sweeps[].points[] | (.iops > 0 and .cpu_headroom_pct != null)] | (length == 4 and all)' <<<"$NUMIO_OUT" >/dev/null 2>&1 && echo yes || echo no)"
note "sweep: $(jq -r '[.sweeps[].points[] | "\(.label): \(.iops | floor) IOPS, \(.initiator_cpu_ns_per_io / 1000 | floor) us CPU/IO"] | join("; ")' <<<"$NUMIO_OUT" 2>/dev/null)"

# 8. numio sweep --hosts --target-transport rdma: numio serve started as the target over
#    the lab's ssh stand-in (see 74-hosts-kernel-initiator), the kernel's
#    nvme-rdma host on the initiator (numio connect nvme-rdma://), then
#    numio's rdma backend; each side's CPU measured.
ssh_stub=$CHECK_OUT/ssh
cat >"$ssh_stub" <<'STUB'
#!/bin/bash
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec bash -c "$*"
STUB
chmod +x "$ssh_stub"
for stack in kernel numio; do
  NUMIO_SSH=$ssh_stub run_numio sweep initiators=1 --hosts lab-ini --target-host lab-tgt \
    --target-listen "$RDMA_TGT:4430" --target-ns mem:64M --target-transport rdma --stack "$stack" \
    --remote-numio "$NUMIO" --json --rw randread --bs 4k --iodepth 4 --runtime 2 --progress never
  printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/hosts-$stack.json"
  printf '%s\n' "$NUMIO_ERR" >"$CHECK_OUT/hosts-$stack.stderr"
  expect_eq "sweep --hosts --target-transport rdma --stack $stack: exit status" 0 "$NUMIO_RC"
  [ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 3 <<<"$NUMIO_ERR")"
  expect_eq "sweep --hosts --target-transport rdma --stack $stack: the target's URL" "nvme-rdma://$RDMA_TGT:4430/nqn.2026-01.io.numio:subsys0/1" \
    "$(jq -r '.results.sweep.fleet.url' <<<"$NUMIO_OUT" 2>/dev/null)"
  expect_eq "sweep --hosts --target-transport rdma --stack $stack: I/Os and the target's CPU headroom measured" yes \
    "$(jq -e '.sweeps[0].points[0] | (.iops > 0) and (.target_headroom_pct != null)' <<<"$NUMIO_OUT" >/dev/null 2>&1 && echo yes || echo no)"
done
expect_eq "sweep over hosts: nothing left connected" "" "$(nvmf_devices nqn.2026-01.io.numio:subsys0)"
finish
