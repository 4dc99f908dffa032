#!/usr/bin/env bash
# vm-lab: timeout=500
# vm-lab: kernels=default
# Default kernel only: numio's NVMe/RDMA initiator against nvmet-rdma;
# 75 runs numio's RDMA initiator and target on 6.12's soft-RoCE.
# numio bench nvme-rdma:// against the Linux kernel's NVMe/RDMA target
# (nvmet + nvmet-rdma through configfs on soft-RoCE, rdma-lib.bash; a
# 16 MiB file on tmpfs with buffered_io=1 as namespace 1): the backend
# follows from the URL; random reads count every I/O; a write without
# --force-write is refused; a verify run writes the pattern in 64 KiB
# writes (RDMA READ by the target of numio's registered buffers) and 4 KiB
# random writes (in the capsule), then reads it all back (4 KiB random,
# 128 KiB sequential: RDMA WRITE by the target); the sync backend finds
# the same pattern in the file behind the kernel target. A namespace the
# subsystem lacks and a port nothing listens on are refused by name.
. "$(dirname "$0")/rdma-lib.bash"
rdma_setup nvmet nvmet-rdma

NQN=nqn.2026-11.io.numio:kernel-rdma
CFG=/sys/kernel/config/nvmet
IMG=/tmp/nvmet-rdma-ns1.img
IMG_BYTES=$((16 << 20))
PORT_DIR=$CFG/ports/7
SUB_DIR=$CFG/subsystems/$NQN
URL=nvme-rdma://$RDMA_TGT:4420/$NQN/1

cleanup() {
  rm -f "$PORT_DIR/subsystems/$NQN" 2>/dev/null
  rmdir "$PORT_DIR" 2>/dev/null
  [ -d "$SUB_DIR/namespaces/1" ] && echo 0 >"$SUB_DIR/namespaces/1/enable" 2>/dev/null
  rmdir "$SUB_DIR/namespaces/1" "$SUB_DIR" 2>/dev/null
  rm -f "$IMG"
}
trap cleanup EXIT
if [ ! -d "$CFG" ]; then
  mount -t configfs none /sys/kernel/config 2>"$CHECK_OUT/mount.err" ||
    { not_ok "mount configfs: $(cat "$CHECK_OUT/mount.err")"; finish; }
fi
truncate -s "$IMG_BYTES" "$IMG"
{
  mkdir "$SUB_DIR" &&
    echo 1 >"$SUB_DIR/attr_allow_any_host" &&
    mkdir "$SUB_DIR/namespaces/1" &&
    echo -n "$IMG" >"$SUB_DIR/namespaces/1/device_path" &&
    echo 1 >"$SUB_DIR/namespaces/1/buffered_io" &&
    echo 1 >"$SUB_DIR/namespaces/1/enable" &&
    mkdir "$PORT_DIR" &&
    echo rdma >"$PORT_DIR/addr_trtype" &&
    echo ipv4 >"$PORT_DIR/addr_adrfam" &&
    echo "$RDMA_TGT" >"$PORT_DIR/addr_traddr" &&
    echo 4420 >"$PORT_DIR/addr_trsvcid" &&
    ln -s "$SUB_DIR" "$PORT_DIR/subsystems/$NQN"
} 2>"$CHECK_OUT/configfs.err" || { not_ok "nvmet-rdma configfs set-up: $(cat "$CHECK_OUT/configfs.err")"; finish; }
note "kernel target: $NQN on rdma $RDMA_TGT:4420, inline data $(cat "$PORT_DIR/param_inline_data_size" 2>/dev/null || echo '?') B"


bench_json randread-4k "$URL" --rw randread --bs 4k --iodepth 16 --runtime 2
expect_eq "randread-4k: I/Os done" yes "$([ "${OPS:-0}" -gt 0 ] 2>/dev/null && echo yes || echo no)"
note "randread-4k QD16: $OPS I/Os in 2 s (TCG, soft-RoCE)"
expect_eq "randread-4k: the rdma backend, chosen from the URL" rdma "$(jq -r '.environment.backend' "$CHECK_OUT/randread-4k.json")"
expect_eq "randread-4k: size from Identify Namespace" "$IMG_BYTES" "$(jq '.environment.targets[0].size_bytes' "$CHECK_OUT/randread-4k.json")"

run_numio bench "$URL" --rw randwrite --bs 4k --runtime 1 --no-progress
expect_eq "a write without --force-write is refused" yes \
  "$([ "$NUMIO_RC" -eq 2 ] && grep -q -- '--force-write' <<<"$NUMIO_ERR" && echo yes || echo no)"

bench_json write-64k "$URL" --rw write --bs 64k --iodepth 8 --verify --force-write --no-time-based --runtime 120
expect_eq "write-64k: I/Os (the whole namespace once)" $((IMG_BYTES / 65536)) "$OPS"
bench_json randwrite-4k "$URL" --rw randwrite --bs 4k --iodepth 16 --verify --force-write --no-time-based --runtime 120 --size 2M
expect_eq "randwrite-4k: I/Os (2 MiB)" 512 "$OPS"
bench_json verify-4k "$URL" --rw randread --bs 4k --iodepth 16 --verify --randommap --no-time-based --runtime 120
expect_eq "verify-4k: every 4 KiB block read back once" $((IMG_BYTES / 4096)) "$OPS"
bench_json verify-128k "$URL" --rw read --bs 128k --iodepth 4 --verify --no-time-based --runtime 120
expect_eq "verify-128k: I/Os" $((IMG_BYTES / 131072)) "$OPS"
bench_json backing-file "$IMG" --backend sync --rw read --bs 1M --iodepth 1 --verify --buffered --no-time-based --runtime 120
expect_eq "backing-file: the kernel target's file holds numio's pattern" $((IMG_BYTES >> 20)) "$OPS"

run_numio bench "nvme-rdma://$RDMA_TGT:4420/$NQN/7" --rw randread --runtime 1 --no-progress
expect_eq "namespace 7: refused, naming it" yes \
  "$([ "$NUMIO_RC" -eq 2 ] && grep -q 'namespace 7 is not in subsystem' <<<"$NUMIO_ERR" && echo yes || echo no)"
run_numio bench "nvme-rdma://$RDMA_TGT:4999/$NQN" --rw randread --runtime 1 --no-progress
expect_eq "port 4999: nothing listens, said so" yes \
  "$([ "$NUMIO_RC" -eq 2 ] && grep -q 'nothing listens there over RDMA' <<<"$NUMIO_ERR" && echo yes || echo no)"
[ "$NUMIO_RC" -eq 2 ] || note "numio said: $NUMIO_ERR"
finish
