#!/usr/bin/env bash
# vm-lab: timeout=400
# vm-lab: kernels=default
# Default kernel only: numio's NVMe/TCP initiator against nvmet-tcp;
# 73 benches numio against the 6.12 kernel's nvmet-tcp (over TLS).
# numio bench --backend tcp against the Linux kernel's NVMe/TCP target
# (nvmet + nvmet-tcp set up through configfs; a 32 MiB file on tmpfs with
# buffered_io=1 as namespace 1) on the guest's loopback: random reads count
# every I/O with no errors; a write without --force-write is refused; a
# verify run writes the pattern with 64 KiB writes (R2T/H2CData: larger than
# the target's in-capsule size) and 4 KiB random writes (in the capsule),
# then reads it all back (4 KiB random, 128 KiB sequential, and with header
# and data digests); the sync backend finds the same pattern in the file
# behind the kernel target: numio's initiator and nvmet agree byte for byte.
. "$(dirname "$0")/../lib.sh"
require_numio

NQN=nqn.2026-11.io.numio:kernel-target
CFG=/sys/kernel/config/nvmet
IMG=/tmp/nvmet-ns1.img
IMG_BYTES=$((32 << 20))
PORT_DIR=$CFG/ports/1
SUB_DIR=$CFG/subsystems/$NQN
URL=nvme-tcp://127.0.0.1:4420/$NQN/1

cleanup() {
  rm -f "$PORT_DIR/subsystems/$NQN" 2>/dev/null
  rmdir "$PORT_DIR" 2>/dev/null
  [ -d "$SUB_DIR/namespaces/1" ] && echo 0 >"$SUB_DIR/namespaces/1/enable" 2>/dev/null
  rmdir "$SUB_DIR/namespaces/1" "$SUB_DIR" 2>/dev/null
  rm -f "$IMG"
}
trap cleanup EXIT

ip link set lo up 2>/dev/null || busybox ip link set lo up || { not_ok "cannot bring lo up"; finish; }
vm-modprobe nvmet nvmet-tcp >"$CHECK_OUT/modprobe.log" 2>&1 ||
  { not_ok "vm-modprobe nvmet nvmet-tcp: $(tail -n 3 "$CHECK_OUT/modprobe.log")"; finish; }
if [ ! -d "$CFG" ]; then
  mount -t configfs none /sys/kernel/config 2>"$CHECK_OUT/mount.err" ||
    { not_ok "mount configfs: $(cat "$CHECK_OUT/mount.err")"; finish; }
fi
[ -d "$CFG" ] || { not_ok "no $CFG after loading nvmet"; finish; }

truncate -s "$IMG_BYTES" "$IMG"
{
  mkdir "$SUB_DIR" &&
    echo 1 >"$SUB_DIR/attr_allow_any_host" &&
    mkdir "$SUB_DIR/namespaces/1" &&
    echo -n "$IMG" >"$SUB_DIR/namespaces/1/device_path" &&
    echo 1 >"$SUB_DIR/namespaces/1/buffered_io" &&
    echo 1 >"$SUB_DIR/namespaces/1/enable" &&
    mkdir "$PORT_DIR" &&
    echo tcp >"$PORT_DIR/addr_trtype" &&
    echo ipv4 >"$PORT_DIR/addr_adrfam" &&
    echo 127.0.0.1 >"$PORT_DIR/addr_traddr" &&
    echo 4420 >"$PORT_DIR/addr_trsvcid" &&
    ln -s "$SUB_DIR" "$PORT_DIR/subsystems/$NQN"
} 2>"$CHECK_OUT/configfs.err" || { not_ok "nvmet configfs set-up: $(cat "$CHECK_OUT/configfs.err")"; finish; }
note "kernel target: $NQN on 127.0.0.1:4420, namespace 1 = $IMG (buffered_io), inline data $(cat "$PORT_DIR/param_inline_data_size" 2>/dev/null || echo '?') B"


blocks_4k=$((IMG_BYTES / 4096))
bench_json randread-4k "$URL" --backend tcp --rw randread --bs 4k --iodepth 16 --runtime 2
expect_eq "randread-4k: I/Os done" yes "$([ "${OPS:-0}" -gt 0 ] 2>/dev/null && echo yes || echo no)"
note "randread-4k QD16: $OPS I/Os in 2 s (TCG)"
expect_eq "randread-4k: target kind" '"nvme_tcp"' "$(jq '.environment.targets[0].kind' "$CHECK_OUT/randread-4k.json")"
expect_eq "randread-4k: size from Identify Namespace" "$IMG_BYTES" "$(jq '.environment.targets[0].size_bytes' "$CHECK_OUT/randread-4k.json")"

run_numio bench "$URL" --backend tcp --rw randwrite --bs 4k --runtime 1 --no-progress
expect_eq "a write without --force-write is refused" yes \
  "$([ "$NUMIO_RC" -ne 0 ] && grep -q -- '--force-write' <<<"$NUMIO_ERR" && echo yes || echo no)"

bench_json write-64k "$URL" --backend tcp --rw write --bs 64k --iodepth 8 --verify --force-write --no-time-based --runtime 120
expect_eq "write-64k: I/Os (the whole namespace once)" $((IMG_BYTES / 65536)) "$OPS"
bench_json randwrite-4k "$URL" --backend tcp --rw randwrite --bs 4k --iodepth 16 --verify --force-write \
  --no-time-based --runtime 120 --size 4M
expect_eq "randwrite-4k: I/Os (4 MiB)" 1024 "$OPS"
bench_json verify-4k "$URL" --backend tcp --rw randread --bs 4k --iodepth 16 --verify --randommap --no-time-based --runtime 120
expect_eq "verify-4k: every 4 KiB block read back once" "$blocks_4k" "$OPS"
bench_json verify-128k "$URL" --backend tcp --rw read --bs 128k --iodepth 4 --verify --no-time-based --runtime 120
expect_eq "verify-128k: I/Os" $((IMG_BYTES / 131072)) "$OPS"
bench_json verify-digests "$URL" --backend tcp --rw randread --bs 16k --iodepth 8 --verify --hdr-digest --data-digest \
  --number-ios 500 --runtime 120
expect_eq "verify-digests: I/Os" 500 "$OPS"
expect_eq "verify-digests: header and data digests negotiated" yes \
  "$(jq -r '.environment.notes[]' "$CHECK_OUT/verify-digests.json" | grep -q 'header digest on, data digest on' && echo yes || echo no)"

# The file behind the kernel target holds numio's pattern (page cache: the
# target wrote it with buffered_io).
bench_json backing-file "$IMG" --backend sync --rw read --bs 1M --iodepth 1 --verify --buffered --no-time-based --runtime 120
expect_eq "backing-file: I/Os" $((IMG_BYTES >> 20)) "$OPS"
finish
