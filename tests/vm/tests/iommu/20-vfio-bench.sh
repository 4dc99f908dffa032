#!/usr/bin/env bash
# vm-lab: timeout=420
# numio's own user-space NVMe driver (--backend vfio) on NUMIO-B behind the
# emulated IOMMU, the controller still on nvme before each run:
# 1. `numio bench pci:ADDR` binds it for the run, reads through its own
#    polled queue pair (IOPS > 0, no error, target kind nvme_pci, the
#    driver's queue line) and gives it back: nvme owns it, `nvme list`
#    shows it.
# 2. A write with --verify through vfio (no --force-write: the probe
#    through the driver finds nothing on the namespace; 64 KiB I/Os, so
#    --vfio-dptr auto names them by one SGL data block: QEMU's NVMe takes
#    SGLs), then --verify-only through vfio with --vfio-dptr prp (PRP lists),
#    then the region read through the kernel (uring --verify: every block
#    a valid verify block of its offset), and `dd` sees non-zero data:
#    what numio's driver wrote is on the drive.
#    Without hugepages the run's notes say its buffers are on 4 KiB pages
#    and how to reserve hugepages; bound with `vfio bind --hugepages 8`,
#    the run's buffers are on 2 MiB hugepages (said in its set-up), and
#    `vfio unbind` puts the hugepage pool back as it was.
# 3. The engine's conformance part for vfio (number_ios over two queue
#    pairs, write + read-verify at 4 KiB, 8 KiB and 64 KiB: PRP1, PRP2 and
#    PRP lists, and by SGL data blocks at 4 KiB, 64 KiB and 256 KiB; a read past the namespace's end fails with LBA Out of Range
#    and leaves the controller's error log in the notes) and its counting-allocator test (no allocation per I/O) on
#    the bound controller.
# 4. SIGINT and SIGTERM mid-run: report, exit 130 and 143, back on nvme,
#    no record; kill -9
#    during a run leaves it on vfio-pci with a record; `numio vfio
#    restore` gives it back to nvme.
# 5. `numio compare --a backend=vfio --b backend=passthru --c
#    backend=uring pci:ADDR`: three arms, two runs each, B and C compared
#    with A, the drive back on nvme after; numio's driver takes the least
#    busy CPU per I/O (its empty polls excluded) of the three.
# 6. A run as an unprivileged user is refused naming the permission and
#    root; a namespace with ext4 is refused (exit 2, nothing rebinds); bound
#    anyway (vfio bind --force), a write is refused by the probe through
#    numio's own driver (libblkid on its first and last MiB) while reads
#    run; a bad namespace id and a function that is not NVMe are refused
#    by name.
# On a kernel other than the default (the 6.12 pass) it ends after 2 and the
# hugepage run: the rest is numio's own logic over the same VFIO calls.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/vfio-lib.bash"
require_numio

[ -n "$(ls /sys/kernel/iommu_groups 2>/dev/null)" ] || { not_ok "no IOMMU groups: is intel_iommu=on in effect?"; finish; }
vm-modprobe vfio-pci vfio_iommu_type1 || { not_ok "vm-modprobe vfio-pci vfio_iommu_type1"; finish; }
b=$(pci_of_serial NUMIO-B) || { not_ok "controller NUMIO-B not found"; finish; }
ns=$(namespace_of "$b") || { not_ok "no namespace of $b"; finish; }
wipefs -q -a "/dev/$ns" >/dev/null 2>&1
state=$CHECK_OUT/verify-state.json
back_on_nvme() {
  expect_eq "$1: $b is back on nvme" nvme "$(driver_of "$b")"
  expect_eq "$1: nvme list shows NUMIO-B" 0 "$(wait_nvme_list yes NUMIO-B; echo $?)"
}

# 1. Read through numio's driver, bound for the run.
run_numio bench "pci:$b" --rw randread --bs 4k --iodepth 16 --runtime 2s --json --no-progress
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/read.json"
expect_eq "vfio randread: exit status ($(tail -n 3 <<<"$NUMIO_ERR"))" 0 "$NUMIO_RC"
iops=$(jq '.total.iops // 0 | floor' "$CHECK_OUT/read.json" 2>/dev/null || echo 0)
note "vfio randread 4k QD16 (TCG): $iops IOPS"
expect_eq "vfio randread: IOPS > 0" yes "$([ "${iops:-0}" -gt 0 ] && echo yes || echo no)"
expect_eq "vfio randread: errors" "[]" "$(jq -c '.errors' "$CHECK_OUT/read.json")"
expect_eq "vfio randread: target kind" nvme_pci "$(jq -r '.environment.targets[0].kind' "$CHECK_OUT/read.json")"
expect_eq "vfio randread: backend" vfio "$(jq -r '.environment.backend' "$CHECK_OUT/read.json")"
expect_eq "vfio randread: a polled I/O queue of its own" yes \
  "$(jq -r '.environment.uring_features[]' "$CHECK_OUT/read.json" | grep -q 'polled' && echo yes || echo no)"
expect_eq "vfio randread without hugepages: the notes say 4 KiB pages and --hugepages" yes \
  "$(jq -r '.environment.notes[]' "$CHECK_OUT/read.json" | grep -q '4 KiB pages.*--hugepages' && echo yes || echo no)"
back_on_nvme "after the read"

# 2. Write + verify through vfio, read back through vfio and the kernel.
run_numio bench "pci:$b" --rw write --bs 64k --iodepth 8 --size 16m --number-ios 256 --verify \
  --verify-state "$state" --json --no-progress
expect_eq "vfio write --verify: exit status ($(tail -n 3 <<<"$NUMIO_ERR"))" 0 "$NUMIO_RC"
expect_eq "vfio write: 16 MiB written" 16777216 "$(jq '.total.bytes' <<<"$NUMIO_OUT")"
expect_eq "vfio write 64k (--vfio-dptr auto): SGL data blocks" yes \
  "$(jq -r '.environment.uring_features[]' <<<"$NUMIO_OUT" | grep -q '^data pointers: one SGL data block' && echo yes || echo no)"
run_numio bench "pci:$b" --verify-only --verify-state "$state" --vfio-dptr prp --json --no-progress
expect_eq "vfio --verify-only: exit status ($(tail -n 3 <<<"$NUMIO_ERR"))" 0 "$NUMIO_RC"
expect_eq "vfio --verify-only --vfio-dptr prp: PRP lists" yes \
  "$(jq -r '.environment.uring_features[]' <<<"$NUMIO_OUT" | grep -q '^data pointers: PRPs, a PRP list per slot' && echo yes || echo no)"
expect_eq "vfio --verify-only: no mismatch" "[]" "$(jq -c '.errors' <<<"$NUMIO_OUT")"
back_on_nvme "after the write"
# Through the kernel: every block of the region is a valid verify block of
# its own offset (plain --verify reads, no saved record: any generation).
run_numio bench "/dev/$ns" --backend uring --rw read --bs 64k --size 16m --number-ios 256 --verify \
  --verify-state "$CHECK_OUT/kernel-state.json" --json --no-progress
expect_eq "the kernel reads what vfio wrote: exit status ($(tail -n 3 <<<"$NUMIO_ERR"))" 0 "$NUMIO_RC"
expect_eq "the kernel reads what vfio wrote: no mismatch" "[]" "$(jq -c '.errors' <<<"$NUMIO_OUT")"
expect_eq "the kernel read 16 MiB" 16777216 "$(jq '.total.bytes' <<<"$NUMIO_OUT")"
expect_eq "dd through the kernel sees written data" yes \
  "$(dd if="/dev/$ns" bs=4k count=1 iflag=direct 2>/dev/null | tr -d '\0' | wc -c | awk '{ print ($1 > 0) ? "yes" : "no" }')"

# Hugepages: reserved by vfio bind, used by the run's buffers, put back.
pool=/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages
before=$(cat "$pool")
run_numio vfio bind --hugepages 8 "$b"
expect_eq "vfio bind --hugepages 8: exit status ($NUMIO_ERR)" 0 "$NUMIO_RC"
expect_eq "8 hugepages reserved on node 0" yes "$([ "$(cat "$pool")" -ge 8 ] && echo yes || echo no)"
run_numio bench "pci:$b" --rw randread --bs 64k --iodepth 16 --runtime 1s --json --no-progress
expect_eq "vfio bench with hugepages: exit status ($(tail -n 3 <<<"$NUMIO_ERR"))" 0 "$NUMIO_RC"
expect_eq "vfio bench with hugepages: buffers on 2 MiB hugepages" yes \
  "$(jq -r '.environment.uring_features[]' <<<"$NUMIO_OUT" | grep -qx 'buffers on 2 MiB hugepages' && echo yes || echo no)"
run_numio vfio unbind "$b"
expect_eq "vfio unbind: exit status ($NUMIO_ERR)" 0 "$NUMIO_RC"
expect_eq "the hugepage pool is put back" "$before" "$(cat "$pool")"
back_on_nvme "after the hugepage run"

end_unless_default_kernel "3 to 6 (conformance, signals, restore, compare, refusals) are numio's logic over the VFIO calls 1 and 2 made"

# 3. The engine's conformance part on the bound controller.
conf=$(ls -t target/debug/deps/conformance-* 2>/dev/null | grep -v '\.d$' | head -n 1)
if [ -x "$conf" ]; then
  run_numio vfio bind "$b"
  expect_eq "bind for the conformance test ($NUMIO_ERR)" 0 "$NUMIO_RC"
  out=$(NUMIO_TEST_NVME_PCI="pci:$b/1" "$conf" vfio_ --test-threads 1 --nocapture 2>&1)
  rc=$?
  expect_eq "conformance (vfio): exit status" 0 "$rc"
  [ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'
  expect_eq "conformance (vfio): the test ran" yes \
    "$(grep -q '2 passed' <<<"$out" && ! grep -q 'skipping vfio' <<<"$out" && echo yes || echo no)"
  za=$(ls -t target/debug/deps/vfio_zero_alloc-* 2>/dev/null | grep -v '\.d$' | head -n 1)
  out=$(NUMIO_TEST_NVME_PCI="pci:$b/1" "$za" --test-threads 1 --nocapture 2>&1)
  rc=$?
  expect_eq "no allocation in the vfio hot path: exit status" 0 "$rc"
  [ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'
  expect_eq "no allocation in the vfio hot path: the test ran" yes \
    "$(grep -q 'skipping' <<<"$out" && echo no || echo yes)"
  run_numio vfio unbind "$b"
  back_on_nvme "after the conformance test"
else
  not_ok "no conformance test binary under target/debug/deps (cargo test -p engine --no-run)"
fi

# 4a. Ctrl-C (SIGINT) and SIGTERM mid-run: the report of the time
#     measured, exit 130 and 143, the controller back on nvme and no
#     record left.
for sig in INT:130 TERM:143; do
  "$NUMIO" bench "pci:$b" --rw randread --runtime 120s --no-progress --json >"$CHECK_OUT/int.out" 2>"$CHECK_OUT/int.err" &
  pid=$!
  int_measuring() { grep -q "set-up done" "$CHECK_OUT/int.err"; }
  for _ in $(seq 600); do int_measuring && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  expect_eq "the run to interrupt (SIG${sig%:*}) is measuring on vfio-pci" "yes vfio-pci" "$(int_measuring && echo yes || echo no) $(driver_of "$b")"
  kill "-${sig%:*}" "$pid"
  wait "$pid"
  expect_eq "after SIG${sig%:*}: exit ${sig#*:}" "${sig#*:}" "$?"
  expect_eq "after SIG${sig%:*}: the report says interrupted" true "$(jq '.interrupted' "$CHECK_OUT/int.out")"
  back_on_nvme "after SIG${sig%:*}"
  expect_eq "after SIG${sig%:*}: no record left" no "$([ -e /run/numio/vfio.json ] && jq -e '.records | length > 0' /run/numio/vfio.json >/dev/null 2>&1 && echo yes || echo no)"
done

# 4. kill -9 mid-run, then numio vfio restore.
"$NUMIO" bench "pci:$b" --rw randread --runtime 120s --no-progress >"$CHECK_OUT/kill.out" 2>"$CHECK_OUT/kill.err" &
pid=$!
measuring() { grep -q "set-up done" "$CHECK_OUT/kill.err"; }
for _ in $(seq 600); do measuring && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
expect_eq "the run is measuring on vfio-pci" "yes vfio-pci" "$(measuring && echo yes || echo no) $(driver_of "$b")"
kill -9 "$pid"
wait "$pid" 2>/dev/null
expect_eq "after kill -9 the controller is still on vfio-pci" vfio-pci "$(driver_of "$b")"
run_numio vfio restore
expect_eq "numio vfio restore: exit status ($NUMIO_ERR)" 0 "$NUMIO_RC"
note "$NUMIO_OUT"
back_on_nvme "after numio vfio restore"

# 5. One drive through numio's driver, the kernel's passthrough and
#    io_uring, interleaved A B C A B C in one compare (each vfio run binds
#    and gives back).
run_numio compare --a backend=vfio --b backend=passthru --c backend=uring "pci:$b" --repeat 2 \
  --runtime 1s --rw randread --bs 4k --iodepth 16 --json --no-progress
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/compare.json"
expect_eq "compare vfio/passthru/uring: exit status ($(tail -n 3 <<<"$NUMIO_ERR"))" 0 "$NUMIO_RC"
expect_eq "compare: three arms of two runs each" "vfio:2 passthru:2 uring:2" \
  "$(jq -r '[.arms[] | "\(.label):\(.runs | length)"] | join(" ")' "$CHECK_OUT/compare.json")"
expect_eq "compare: B and C each against A" "passthru uring" \
  "$(jq -r '[.analysis.comparison.b.label, .analysis.more_comparisons[0].b.label] | join(" ")' "$CHECK_OUT/compare.json")"
expect_eq "compare: every run measured I/O" yes \
  "$(jq '[.arms[].runs[].total.iops] | all(. > 0)' "$CHECK_OUT/compare.json" | sed 's/true/yes/; s/false/no/')"
note "IOPS mean vfio/passthru/uring: $(jq -r '[.arms[] | ([.runs[].total.iops] | add / length | floor | tostring)] | join(" / ")' "$CHECK_OUT/compare.json")"
# What the kernel costs per I/O: the CPU the I/O itself took (a polling
# driver's empty polls excluded; passthru and io_uring sleep or poll in the
# kernel, so theirs is all their CPU). numio's own driver takes the least.
busy=$(jq -r '[.arms[] | ([.runs[].total.per_io.worker_busy_cpu_ns] | add / length | floor | tostring)] | join(" ")' "$CHECK_OUT/compare.json")
note "busy CPU ns per I/O vfio/passthru/uring: $busy; CPU ns per I/O: $(jq -r '[.arms[] | ([.runs[].total.per_io.worker_cpu_ns] | add / length | floor | tostring)] | join(" ")' "$CHECK_OUT/compare.json")"
read -r busy_vfio busy_passthru busy_uring <<<"$busy"
expect_eq "vfio's busy CPU per I/O is the lowest of the three" yes \
  "$([ "${busy_vfio:-x}" -lt "${busy_passthru:-0}" ] 2>/dev/null && [ "$busy_vfio" -lt "${busy_uring:-0}" ] && echo yes || echo no)"
expect_eq "compare: a verdict on busy CPU per I/O" yes \
  "$(jq -r '.analysis.comparison.metrics[].verdict' "$CHECK_OUT/compare.json" | grep -q 'busy CPU per I/O' && echo yes || echo no)"
back_on_nvme "after the compare"

# 6. Refusals. Not root: the group device is not this user's.
run_numio vfio bind "$b"
expect_eq "bind for the unprivileged run ($NUMIO_ERR)" 0 "$NUMIO_RC"
# A copy nobody may run (the lab's private copy is in a 0700 directory).
pub=$(mktemp -d) && chmod 755 "$pub" && cp "$NUMIO" "$pub/numio" && chmod 755 "$pub/numio"
mkdir -p "$pub/run" && chown 65534:65534 "$pub/run" && chmod 700 "$pub/run"
out=$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups \
  env HOME="$pub/run" XDG_RUNTIME_DIR="$pub/run" XDG_STATE_HOME="$pub/run" \
  "$pub/numio" bench "pci:$b" --rw randread --runtime 1s --no-progress 2>&1)
rc=$?
note "as nobody: $out"
expect_eq "vfio bench as nobody: exit 2" 2 "$rc"
expect_eq "it names the permission and running as root" yes \
  "$([[ $out == *"Permission denied"*"as root"* ]] && echo yes || echo no)"
rm -rf "$pub"
run_numio vfio unbind "$b"
back_on_nvme "after the unprivileged run"
mkfs.ext4 -q -F "/dev/$ns" || { not_ok "mkfs.ext4 /dev/$ns"; finish; }
run_numio bench "pci:$b" --rw randread --runtime 1s --no-progress
expect_eq "vfio bench of a drive with ext4: exit 2" 2 "$NUMIO_RC"
expect_eq "the refusal names ext4 and --force-unbind" yes \
  "$([[ $NUMIO_ERR == *ext4*--force-unbind* ]] && echo yes || echo no)"
[[ $NUMIO_ERR == *ext4*--force-unbind* ]] || note "$NUMIO_ERR"
expect_eq "$b stays on nvme" nvme "$(driver_of "$b")"
# Taken anyway (--force): a write through numio's driver still sees ext4,
# reading the namespace through the driver itself, and is refused.
run_numio vfio bind --force "$b"
expect_eq "vfio bind --force of the ext4 drive ($NUMIO_ERR)" 0 "$NUMIO_RC"
run_numio bench "pci:$b" --rw write --runtime 1s --no-progress
expect_eq "a write to the bound ext4 drive: exit 2" 2 "$NUMIO_RC"
expect_eq "the refusal names ext4, read through numio's driver, and --force-write" yes \
  "$([[ $NUMIO_ERR == *ext4*"read through numio's driver"*--force-write* ]] && echo yes || echo no)"
[[ $NUMIO_ERR == *ext4*"read through numio's driver"*--force-write* ]] || note "$NUMIO_ERR"
run_numio bench "pci:$b" --rw randread --runtime 1s --no-progress
expect_eq "reads of the bound ext4 drive run" 0 "$NUMIO_RC"
run_numio vfio unbind "$b"
back_on_nvme "after the forced bind"
wipefs -q -a "/dev/$ns" >/dev/null
run_numio bench "pci:$b/7" --rw randread --runtime 1s --no-progress
expect_eq "namespace 7: exit 2" 2 "$NUMIO_RC"
expect_eq "namespace 7: named, with the ones it has" yes \
  "$([[ $NUMIO_ERR == *"no active namespace 7; the controller has 1"* ]] && echo yes || echo no)"
back_on_nvme "after the refused namespace"
run_numio bench pci:0000:00:00.0 --rw randread --runtime 1s --no-progress
expect_eq "a host bridge: exit 2, named as not NVMe" "2 yes" \
  "$NUMIO_RC $([[ $NUMIO_ERR == *0000:00:00.0*NVMe* ]] && echo yes || echo no)"
[[ $NUMIO_ERR == *0000:00:00.0*NVMe* ]] || note "$NUMIO_ERR"
finish
