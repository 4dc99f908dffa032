#!/usr/bin/env bash
# 4 KiB random reads, 1 pinned core, numio (uring backend) vs fio's io_uring
# engine at its best options (fixedbufs, registerfiles, batch submit and
# complete 32, hipri off), on a zram device and on a loop device over tmpfs
# with --direct-io=on. Alternating runs in one invocation. fio 3.33 always
# asks for COOP_TASKRUN|SINGLE_ISSUER|DEFER_TASKRUN (strace).
#   QD 128: targets >= 1.15x fio's IOPS and >= fio's IOPS per CPU-second.
#           numio runs its default set-up (auto: a 400 ms task-run trial
#           keeps DEFER_TASKRUN or COOP_TASKRUN, whichever is faster here).
#   QD 1:   numio's clat p50 within 5 % of fio's. This checks that numio
#           times I/O as fio does, so numio runs fio's ring set-up
#           (--uring-setup defer): the two modes give the same QD 1 IOPS
#           within the noise, but COOP_TASKRUN's clat p50 on loop sits ~8 %
#           above DEFER_TASKRUN's, which a trial would pick by chance.
# The script creates and removes its own zram and loop devices (needs root)
# and confines the kernel's unbound workqueues to $CPU while it runs.
# Env: CPU (default 1), RUNTIME seconds (5), REPEATS (3), SIZE_MB (1024),
# DEVICES ("zram loop"), QDS ("128 1"), NUMIO (a numio binary to measure
# instead of building this tree's).
source "$(dirname "$0")/lib.sh"
[ "${RUNTIME:-5}" -ge 3 ] || { echo "bench/randread.sh needs RUNTIME >= 3 (it samples the core from 1 s in)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "bench/randread.sh needs root (zram and loop set-up)" >&2; exit 2; }
SIZE_MB="${SIZE_MB:-1024}"
ZRAM=""; LOOP=""; MNT=""
# "1 pinned core" holds for the kernel's helpers too: zram reads run on
# io-wq workers, which inherit the benchmark's CPU; the loop device's
# kworker is unbound and would otherwise land on either vCPU (an idle-CPU
# wake-up in this VM costs tens of microseconds, so QD 1 latency swung
# 4x between runs). PIN_KWORKERS=1 (default) confines unbound workqueues to
# $CPU for the run, for both tools alike, and restores the mask after.
PIN_KWORKERS="${PIN_KWORKERS:-1}"
WQ_MASK_FILE=/sys/devices/virtual/workqueue/cpumask
WQ_MASK_SAVED=""

cleanup() {
  set +e
  [ -n "$WQ_MASK_SAVED" ] && echo "$WQ_MASK_SAVED" > "$WQ_MASK_FILE"
  [ -n "$LOOP" ] && losetup -d "$LOOP"
  [ -n "$MNT" ] && { umount "$MNT"; rmdir "$MNT"; }
  if [ -n "$ZRAM" ]; then
    zramctl --reset "$ZRAM"
    [ -e "$ZRAM" ] && echo "${ZRAM#/dev/zram}" > /sys/class/zram-control/hot_remove 2>/dev/null
  fi
  rm -rf "$RESULTS"
}
trap cleanup EXIT

setup_zram() {
  modprobe zram 2>/dev/null || true
  local id; id=$(cat /sys/class/zram-control/hot_add)
  ZRAM="/dev/zram$id"
  zramctl --size "${SIZE_MB}M" "$ZRAM" >/dev/null
  # Incompressible data, so reads decompress real pages (unwritten pages read as zeroes for free).
  dd if=/dev/urandom of="$ZRAM" bs=1M count="$SIZE_MB" oflag=direct status=none
}

setup_loop() {
  MNT=$(mktemp -d /tmp/numio-bench-tmpfs.XXXXXX)
  mount -t tmpfs -o size=$((SIZE_MB + 64))M numio-bench "$MNT"
  dd if=/dev/urandom of="$MNT/backing" bs=1M count="$SIZE_MB" status=none
  LOOP=$(losetup --find --show --direct-io=on "$MNT/backing")
}

fio_run() { # DEV QD OUT
  fio --name=rr --filename="$1" --ioengine=io_uring --direct=1 --rw=randread --bs=4k \
      --iodepth="$2" --fixedbufs=1 --registerfiles=1 --hipri=0 \
      --iodepth_batch_submit=$(( $2 < 32 ? $2 : 32 )) --iodepth_batch_complete_min=$(( $2 < 32 ? $2 : 32 )) \
      --norandommap --randrepeat=0 --time_based --runtime="$RUNTIME" --cpus_allowed="$CPU" \
      --output-format=json --output="$3" >/dev/null
}

numio_run() { # DEV QD OUT [EXTRA FLAGS...]
  local dev="$1" qd="$2" out="$3"; shift 3
  "$NUMIO" bench "$dev" --backend uring --rw randread --bs 4k --iodepth "$qd" \
      --cpus "$CPU" --runtime "$RUNTIME" --json "$@" > "$out"
}

# sampled CMD...: runs CMD and prints the benchmark CPU's busy fraction over
# the steady part of its run only, from 1 s after the start to 0.5 s before
# the planned end (both tools are measuring by then: numio's 0.4 s task-run
# trial and fio's start-up are over). Sampling the whole process lifetime
# instead would count each tool's start-up and exit, which are not equally
# busy, into the per-I/O split.
sampled() {
  local t0 t1 pid
  "$@" & pid=$!
  sleep 1; t0=$(cpu_ticks "$CPU")
  sleep "$(python3 -c "print(max($RUNTIME - 1.5, 0.5))")"; t1=$(cpu_ticks "$CPU")
  wait "$pid"
  busy_between "$t0" "$t1"
}

compare() { # NAME DEV QD
  local tag="$1-qd$3"; tag="${tag// /_}"
  local setup=()
  [ "$3" -eq 1 ] && setup=(--uring-setup defer)
  for i in $(seq "$REPEATS"); do
    local busy
    busy=$(sampled fio_run "$2" "$3" "$RESULTS/fio.$tag.$i.json")
    echo "$(fio_stats "$RESULTS/fio.$tag.$i.json") $busy $(user_us "$RESULTS/fio.$tag.$i.json")" >> "$RESULTS/fio.$tag.txt"
    busy=$(sampled numio_run "$2" "$3" "$RESULTS/numio.$tag.$i.json" "${setup[@]}")
    echo "$(numio_stats "$RESULTS/numio.$tag.$i.json") $busy $(user_us "$RESULTS/numio.$tag.$i.json")" >> "$RESULTS/numio.$tag.txt"
  done
  table "$1 ($2), 4k randread, QD $3, CPU $CPU, ${RUNTIME}s" "fio io_uring" "$RESULTS/fio.$tag.txt" "$RESULTS/numio.$tag.txt"
}

DEVICES="${DEVICES:-zram loop}"   # which devices to measure
QDS="${QDS:-128 1}"               # which queue depths
pin_kworkers() {
  [ "$PIN_KWORKERS" = 1 ] && [ -w "$WQ_MASK_FILE" ] || { echo "bench: unbound kworkers not pinned" >&2; return 0; }
  WQ_MASK_SAVED=$(cat "$WQ_MASK_FILE")
  printf '%x\n' $((1 << CPU)) > "$WQ_MASK_FILE"
  echo "bench: unbound workqueues confined to CPU $CPU (mask $(cat "$WQ_MASK_FILE"); was $WQ_MASK_SAVED)" >&2
}

build_release
pin_kworkers
if [[ " $DEVICES " == *" zram "* ]]; then setup_zram; fi
if [[ " $DEVICES " == *" loop "* ]]; then setup_loop; fi
for qd in $QDS; do
  if [ -n "$ZRAM" ]; then compare zram "$ZRAM" "$qd"; fi
  if [ -n "$LOOP" ]; then compare "loop over tmpfs" "$LOOP" "$qd"; fi
done
