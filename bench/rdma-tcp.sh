#!/usr/bin/env bash
# NVMe/TCP vs NVMe/RDMA, numio vs the kernel, side by side in one run
# (issue #25): in the VM lab (one-node, TCG) on soft-RoCE (rdma_rxe over a
# veth pair, tests/vm/tests/one-node/rdma-lib.bash), 4 KiB random reads of a
# RAM-backed namespace through every pairing of
#   initiator: numio (its tcp or rdma backend)  | the kernel (nvme-tcp or
#              nvme-rdma, fio with libaio on the block device)
#   target:    numio serve --transport tcp,rdma | the kernel's nvmet (a tcp
#              and an rdma port on a file on tmpfs, buffered_io)
# over each transport, alternating, REPEATS times. Initiator and target
# share the guest, so the CPU per I/O is the whole guest's (every CPU,
# /proc/stat over the run) and IOPS per core is IOPS over the busy cores.
# Prints the medians and the RDMA/TCP ratio of each pairing.
#
#   bench/rdma-tcp.sh                          # RUNTIME=4 REPEATS=3 QD=16
#   RUNTIME=5 REPEATS=5 QD=32 bench/rdma-tcp.sh
#
# A benchmark, not a CI test. Soft-RoCE does in software (and here under
# TCG) what an RDMA NIC does in hardware, so the absolute figures say
# little; the ratios and the shape of the table are what it reports.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUNTIME="${RUNTIME:-4}"
REPEATS="${REPEATS:-3}"
QD="${QD:-16}"
[ "$(id -u)" -eq 0 ] || { echo "bench/rdma-tcp.sh needs root (the VM lab)" >&2; exit 2; }
echo "==> building numio (release)" >&2
(cd "$ROOT" && cargo build --release -p numio >&2)
OUT="$(mktemp -d /tmp/numio-rdma-tcp.XXXXXX)"
cat >"$OUT/guest.sh" <<'GUEST'
#!/usr/bin/env bash
set -uo pipefail
CHECK_OUT=$OUT
NUMIO=$PWD/target/release/numio
. tests/vm/tests/one-node/rdma-lib.bash
rdma_setup nvmet nvmet-tcp nvmet-rdma nvme-tcp nvme-rdma
N=target/release/numio
NQN_N=nqn.2026-01.io.numio:bench
NQN_K=nqn.2026-01.io.numio:kbench
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:6e756d69-6f6c-4000-8000-0000000000bb
# numio serve on port 4420, both transports; nvmet on 4421 (tcp and rdma ports).
$N serve --transport tcp,rdma --listen "$RDMA_TGT:4420" --nqn "$NQN_N" --ns mem:256M --allow-any-host \
  --discovery-port 0 >"$OUT/serve.log" 2>&1 &
serve=$!
trap 'kill $serve 2>/dev/null' EXIT
wait_line "$OUT/serve.log" ready "$serve" || { echo "numio serve did not start: $(tail -n 3 "$OUT/serve.log")" >&2; exit 1; }
CFG=/sys/kernel/config/nvmet
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
truncate -s 256M /tmp/kbench.img
S=$CFG/subsystems/$NQN_K
mkdir "$S" && echo 1 >"$S/attr_allow_any_host" && mkdir "$S/namespaces/1" &&
  echo -n /tmp/kbench.img >"$S/namespaces/1/device_path" && echo 1 >"$S/namespaces/1/buffered_io" &&
  echo 1 >"$S/namespaces/1/enable"
for t in tcp rdma; do
  P=$CFG/ports/$([ $t = tcp ] && echo 11 || echo 12)
  mkdir "$P" && echo $t >"$P/addr_trtype" && echo ipv4 >"$P/addr_adrfam" && echo "$RDMA_TGT" >"$P/addr_traddr" &&
    echo 4421 >"$P/addr_trsvcid" && ln -s "$S" "$P/subsystems/$NQN_K"
done
# Fill both namespaces once so reads read data.
dd if=/dev/urandom of=/tmp/kbench.img bs=1M count=256 conv=notrunc status=none
busy() { awk '/^cpu / { printf "%.0f %.0f\n", ($2+$3+$4+$6+$7+$8) * 10000000, $5 * 10000000 }' /proc/stat; }
# row INITIATOR TARGET TRANSPORT IOS BUSY0 BUSY1
row() { echo "$1 $2 $3 $4 $(( $6 - $5 )) $RUNTIME" >>"$OUT/rows"; }
run_numio() { # target-kind transport
  local nqn=$NQN_N port=4420
  [ "$1" = kernel ] && { nqn=$NQN_K; port=4421; }
  local b0 b1 ios
  read -r b0 _ < <(busy)
  $N bench "nvme-$2://$RDMA_TGT:$port/$nqn/1" --hostnqn "$HOSTNQN" --rw randread --bs 4k --iodepth "$QD" \
    --runtime "${RUNTIME}s" --json --no-progress >"$OUT/last.json" 2>"$OUT/last.err" ||
    { echo "numio bench $1 $2 failed: $(tail -n 2 "$OUT/last.err")" >&2; return; }
  read -r b1 _ < <(busy)
  ios=$(jq '.total.ops' "$OUT/last.json")
  row numio "$1" "$2" "$ios" "$b0" "$b1"
}
run_kernel() { # target-kind transport
  local nqn=$NQN_N port=4420 c dev b0 b1 ios
  [ "$1" = kernel ] && { nqn=$NQN_K; port=4421; }
  nvme connect -t "$2" -a "$RDMA_TGT" -s "$port" -n "$nqn" --hostnqn="$HOSTNQN" >/dev/null 2>&1 ||
    { echo "nvme connect -t $2 to $1 failed" >&2; return; }
  dev=""
  for _ in $(seq 100); do
    for b in /sys/block/nvme*n*; do
      # Heads and plain namespaces (nvmeXnY), not multipath paths (nvmeXcYnZ).
      [[ ${b##*/} =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
      [ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = "$nqn" ] && { dev=/dev/${b##*/}; break; }
    done
    [ -n "$dev" ] && break
    sleep 0.1
  done
  [ -n "$dev" ] || { echo "no block device for $nqn over $2" >&2; return; }
  read -r b0 _ < <(busy)
  fio --name=k --filename="$dev" --rw=randread --bs=4k --iodepth="$QD" --ioengine=libaio --direct=1 \
    --time_based --runtime="$RUNTIME" --output-format=json >"$OUT/last-fio.json" 2>/dev/null
  read -r b1 _ < <(busy)
  ios=$(jq '.jobs[0].read.total_ios' "$OUT/last-fio.json")
  [ "$(jq '.jobs[0].error' "$OUT/last-fio.json")" = 0 ] || echo "fio on $dev ($1 over $2) failed: error $(jq '.jobs[0].error' "$OUT/last-fio.json")" >&2
  row kernel "$1" "$2" "$ios" "$b0" "$b1"
  for c in /sys/class/nvme/nvme*; do [ "$(cat "$c/subsysnqn")" = "$nqn" ] && echo 1 >"$c/delete_controller"; done
  sleep 0.5
}
for r in $(seq "$REPEATS"); do
  for tgt in numio kernel; do
    for t in tcp rdma; do
      run_numio "$tgt" "$t"
      run_kernel "$tgt" "$t"
    done
  done
done
GUEST
chmod +x "$OUT/guest.sh"
cd "$ROOT"
tests/vm/run --topology one-node --out "$OUT" --timeout $((600 + 10 * REPEATS * RUNTIME)) -- \
  env RUNTIME="$RUNTIME" REPEATS="$REPEATS" QD="$QD" OUT="$OUT" "$OUT/guest.sh"
python3 - "$OUT/rows" "$RUNTIME" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
cpus = None
by = {}
for ini, tgt, tr, ios, busy_ns, rt in rows:
    ios, busy_ns, rt = int(ios), int(busy_ns), float(rt)
    if ios <= 0:
        continue
    iops = ios / rt
    cpu_per_io = busy_ns / ios
    per_core = iops / (busy_ns / 1e9 / rt) if busy_ns > 0 else 0
    by.setdefault((ini, tgt, tr), []).append((iops, cpu_per_io, per_core))
print("initiator  target  transport       IOPS  CPU/IO (us)  IOPS/core   (medians; guest-wide CPU)")
med = {}
for key in sorted(by):
    v = by[key]
    m = tuple(statistics.median(x[i] for x in v) for i in range(3))
    med[key] = m
    print(f"{key[0]:<10} {key[1]:<7} {key[2]:<9} {m[0]:>10,.0f} {m[1] / 1000:>11.1f} {m[2]:>10,.0f}")
print()
print("RDMA/TCP ratios          IOPS  CPU/IO  IOPS/core")
for ini in ("numio", "kernel"):
    for tgt in ("numio", "kernel"):
        t, r = med.get((ini, tgt, "tcp")), med.get((ini, tgt, "rdma"))
        if t and r:
            print(f"{ini} -> {tgt:<10} {r[0] / t[0]:>10.2f}x {r[1] / t[1]:>6.2f}x {r[2] / t[2]:>9.2f}x")
PY
echo "(runs: $OUT)"
