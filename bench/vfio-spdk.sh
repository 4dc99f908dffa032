#!/usr/bin/env bash
# numio's user-space NVMe driver (`numio bench --backend vfio`) vs SPDK's
# `spdk_nvme_perf` on the same drive, side by side in one run (issue #24):
# QEMU's emulated NVMe behind an emulated Intel IOMMU in the VM lab (the
# iommu topology, TCG), both polled user-space drivers over VFIO, pinned to
# the guest's CPU 1, alternating runs, randread at each QD. Prints IOPS and
# CPU per I/O of each side and numio/SPDK ratios. A benchmark, not a CI test:
# under TCG the emulated device sets the pace, so the ratios say how the
# two drivers compare on one slow device, not what either does on hardware.
#
#   bench/vfio-spdk.sh                                    # RUNTIME=5 REPEATS=3 QDS="1 32"
#   RUNTIME=3 REPEATS=5 QDS="1 8 32 128" bench/vfio-spdk.sh
#
# SPDK: spdk_nvme_perf under SPDK_DIR (default /var/tmp/spdk-generic/src),
# built by ../shared/spdk/build-spdk.sh with `--target-arch=x86-64-v2`
# added to its configure line: a -march=native build stops with "Illegal
# instruction" under QEMU's TCG CPU. It needs hugepages: the guest
# reserves HUGEPAGES 2 MiB pages (default 128) through `numio vfio bind
# --hugepages`, which gives them back with the drive.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SPDK_DIR="${SPDK_DIR:-/var/tmp/spdk-generic/src}"
PERF="$SPDK_DIR/build/bin/spdk_nvme_perf"
RUNTIME="${RUNTIME:-5}"
REPEATS="${REPEATS:-3}"
QDS="${QDS:-1 32}"
HUGEPAGES="${HUGEPAGES:-128}"
[ -x "$PERF" ] || { echo "bench/vfio-spdk.sh: no $PERF: build SPDK with ../shared/spdk/build-spdk.sh (DEST=$SPDK_DIR, --target-arch=x86-64-v2 in its configure line), or set SPDK_DIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "bench/vfio-spdk.sh needs root (the VM lab)" >&2; exit 2; }
echo "==> building numio (release)" >&2
(cd "$ROOT" && cargo build --release -p numio >&2)
OUT="$(mktemp -d /tmp/numio-vfio-spdk.XXXXXX)"
export PERF RUNTIME REPEATS QDS HUGEPAGES OUT
cat >"$OUT/guest.sh" <<'GUEST'
#!/usr/bin/env bash
set -euo pipefail
. tests/vm/tests/iommu/vfio-lib.bash
vm-modprobe vfio-pci vfio_iommu_type1
b=$(pci_of_serial NUMIO-B)
N=target/release/numio
$N vfio bind --hugepages "$HUGEPAGES" "$b" >&2
trap '$N vfio unbind "$b" >&2' EXIT
# SPDK takes a lock file per device under /var/tmp, read-only in the lab
# guest: its own tmpfs there, the binary run from the writable out dir.
cp "$PERF" "$OUT/spdk_nvme_perf"
PERF=$OUT/spdk_nvme_perf
mount -t tmpfs tmpfs /var/tmp
mkdir -p /dev/hugepages
mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
for qd in $QDS; do
  for r in $(seq "$REPEATS"); do
    # numio: its workers' CPU time (cpu_usage) per I/O, from its JSON.
    $N bench "pci:$b" --rw randread --bs 4k --iodepth "$qd" --runtime "${RUNTIME}s" --cpus 1 \
      --json --no-progress >"$OUT/numio-$qd-$r.json"
    jq -r --arg qd "$qd" '"numio \($qd) \(.total.iops) \((.cpu_usage.user_ns + .cpu_usage.system_ns) / .total.ops)"' \
      "$OUT/numio-$qd-$r.json" >>"$OUT/rows"
    # SPDK: its reactor polls core 1 for the whole run.
    "$PERF" -q "$qd" -o 4096 -w randread -t "$RUNTIME" -c 0x2 -r "trtype:PCIe traddr:$b" \
      >"$OUT/spdk-$qd-$r.txt" 2>&1 ||
      { echo "spdk_nvme_perf failed:" >&2; tail -n 20 "$OUT/spdk-$qd-$r.txt" >&2; exit 1; }
    iops=$(awk '/^Total/ { print $3 }' "$OUT/spdk-$qd-$r.txt")
    # One polling core for the run: CPU per I/O = run time / I/Os.
    echo "spdk $qd $iops $(awk -v t="$RUNTIME" -v i="$iops" 'BEGIN { print (i > 0) ? 1e9 / i : 0 }')" >>"$OUT/rows"
  done
done
GUEST
chmod +x "$OUT/guest.sh"
cd "$ROOT"
tests/vm/run --topology iommu --out "$OUT" --timeout $((600 + 4 * REPEATS * RUNTIME * $(wc -w <<<"$QDS"))) -- \
  env PERF="$PERF" RUNTIME="$RUNTIME" REPEATS="$REPEATS" QDS="$QDS" HUGEPAGES="$HUGEPAGES" OUT="$OUT" \
  "$OUT/guest.sh"
python3 - "$OUT/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
by = {}
for tool, qd, iops, cpu in rows:
    by.setdefault((int(qd), tool), []).append((float(iops), float(cpu)))
print("QD   numio IOPS   SPDK IOPS  ratio   numio CPU/IO  SPDK CPU/IO  ratio   (medians; CPU per I/O in ns)")
for qd in sorted({q for q, _ in by}):
    n, s = by.get((qd, "numio"), []), by.get((qd, "spdk"), [])
    if not n or not s:
        continue
    ni, nc = statistics.median(x[0] for x in n), statistics.median(x[1] for x in n)
    si, sc = statistics.median(x[0] for x in s), statistics.median(x[1] for x in s)
    print(f"{qd:<4} {ni:>10,.0f} {si:>11,.0f} {ni / si:>6.2f}x {nc:>12,.0f} {sc:>12,.0f} {nc / sc:>6.2f}x")
PY
echo "(runs: $OUT)"
