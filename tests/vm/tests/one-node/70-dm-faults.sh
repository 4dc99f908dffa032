#!/usr/bin/env bash
# vm-lab: timeout=300
# vm-lab: kernels=default
# Default kernel only: numio's verify under device-mapper's fault
# targets, numio's own logic; dm-flakey and dm-delay do the same to it
# in both series.
# Faults injected under numio --verify with device-mapper over a 16 MiB
# loop device (issue #16): one dm device whose table is swapped between
# runs (the verify state follows the device, not the table).
# - clean: a write run with --verify, then --verify-only: no mismatch.
# - dm-flakey corrupt_bio_byte on writes to MiB 4..5: every corrupted block
#   reported as corrupt at its offset (one per 4 KiB write there, nothing
#   elsewhere), exit 1; rewritten on the clean table: no false positive.
# - dm-flakey drop_writes on MiB 0..1 while a later write run writes MiB
#   0..4: --verify-only reports exactly MiB 0..1 as lost writes (the older
#   generation), exit 1.
# - dm-flakey down (every I/O fails): the errors counted as EIO, exit 1.
# - dm-delay 20 ms: the run ends on time, exit 0, clat p50 >= 20 ms less
#   one jiffy.
. "$(dirname "$0")/../lib.sh"
require_numio

NAME=numio-faults
DM=""
IMG=/tmp/numio-faults.img
SECTORS=32768
STATE=$CHECK_OUT/verify-state.json
loopdev=""
cleanup() {
  dmsetup remove "$NAME" 2>/dev/null
  [ -n "$loopdev" ] && losetup -d "$loopdev" 2>/dev/null
  rm -f "$IMG"
}
trap cleanup EXIT

vm-modprobe loop dm-mod dm-flakey dm-delay >"$CHECK_OUT/modprobe.log" 2>&1 ||
  { not_ok "vm-modprobe loop dm-mod dm-flakey dm-delay: $(tail -n 3 "$CHECK_OUT/modprobe.log")"; finish; }
command -v dmsetup >/dev/null || skip "dmsetup is not installed (dmsetup package)"
truncate -s $((SECTORS * 512)) "$IMG"
loopdev=$(losetup --show -f "$IMG" 2>"$CHECK_OUT/losetup.err") ||
  { not_ok "losetup: $(cat "$CHECK_OUT/losetup.err")"; finish; }
linear="0 $SECTORS linear $loopdev 0"
dmsetup create "$NAME" --table "$linear" 2>"$CHECK_OUT/dm.err" ||
  { not_ok "dmsetup create: $(cat "$CHECK_OUT/dm.err")"; finish; }
# No udev here, so no /dev/mapper link: the kernel's own node.
DM=/dev/dm-$(dmsetup info -c --noheadings -o minor "$NAME" | tr -d ' ')
[ -b "$DM" ] || { not_ok "no block device $DM for $NAME"; finish; }
note "$DM ($NAME) over $loopdev"
table() { # TABLE (lines): swaps the device's table
  printf '%s\n' "$1" | dmsetup load "$NAME" && dmsetup resume "$NAME"
}
nb() { # NAME ARGS...: numio bench on the dm device, JSON in $CHECK_OUT/NAME.json
  local name=$1; shift
  run_numio bench "$DM" --backend uring --bs 4k --no-progress --json \
    --verify-state "$STATE" "$@"
  printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/$name.json"
  [ "$NUMIO_RC" -le 1 ] || note "$name: numio said: $(tail -n 3 <<<"$NUMIO_ERR")"
}
jqo() { jq -r "$2" "$CHECK_OUT/$1.json" 2>/dev/null; }

nb write1 --rw write --no-time-based --verify
expect_eq "write run (generation 1): exit, bytes" "0 $((SECTORS * 512))" "$NUMIO_RC $(jqo write1 '.write.bytes')"
nb clean1 --verify-only
expect_eq "clean --verify-only: exit, blocks checked, mismatches" "0 $SECTORS 0" \
  "$NUMIO_RC $(jqo clean1 '.targets[0].verify | "\(.checked_blocks) \(.mismatched_blocks | add // 0)"')"

# Writes to MiB 4..5 (sectors 8192..10239) get byte 224 of each bio set to
# 1 on their way down (Linux 6.1's flakey does not corrupt reads: their
# iterator is spent by the time it would), so the device stores them so.
table "0 8192 linear $loopdev 0
8192 2048 flakey $loopdev 8192 0 1 5 corrupt_bio_byte 224 w 1 0
10240 $((SECTORS - 10240)) linear $loopdev 10240"
nb write-corrupt --rw write --no-time-based --verify
expect_eq "corrupt_bio_byte: the write run sees no error (exit)" 0 "$NUMIO_RC"
table "$linear"
nb corrupt --verify-only
kinds=$(jqo corrupt '.targets[0].verify.mismatched_blocks | keys | join(",")')
n=$(jqo corrupt '.targets[0].verify.mismatched_blocks.corrupt // 0'); n=${n:-0}
expect_eq "corrupt_bio_byte: exit 1, only corrupt blocks" "1 corrupt" "$NUMIO_RC $kinds"
expect_eq "corrupt_bio_byte: one corrupt block per 4 KiB write in MiB 4..5 (a byte already 1 is no change)" yes \
  "$([ "$n" -ge 250 ] && [ "$n" -le 256 ] && echo yes || echo no)"
expect_eq "corrupt_bio_byte: every range is the first 512 B of a 4 KiB write in MiB 4..5" "$n" \
  "$(jqo corrupt '[.targets[0].verify.ranges[] | select(.offset_bytes >= 4194304 and .offset_bytes < 5242880 and .offset_bytes % 4096 == 0 and .len_bytes == 512)] | length')"
expect_eq "corrupt_bio_byte: EILSEQ errors = corrupt blocks" "$n" \
  "$(jqo corrupt '[.errors[] | select(.errno == 84) | .count] | add // 0')"
nb rewrite --rw write --no-time-based --verify
nb clean2 --verify-only
expect_eq "rewritten on the clean table: no false positive (exit, mismatches)" "0 0" \
  "$NUMIO_RC $(jqo clean2 '.targets[0].verify.mismatched_blocks | add // 0')"

# Writes to MiB 0..1 vanish while generation 4 writes MiB 0..4.
table "0 2048 flakey $loopdev 0 0 1 1 drop_writes
2048 $((SECTORS - 2048)) linear $loopdev 2048"
nb write2 --rw write --size 4m --no-time-based --verify
expect_eq "drop_writes: the write run sees no error (exit)" 0 "$NUMIO_RC"
table "$linear"
nb lost --verify-only
expect_eq "lost writes: exit 1, expected generation 4" "1 4" \
  "$NUMIO_RC $(jqo lost '.targets[0].verify.expected.generation')"
expect_eq "lost writes: MiB 0..1 and nothing else" '[{"kind":"lost_write","offset_bytes":0,"len_bytes":1048576}]' \
  "$(jqo lost '.targets[0].verify.ranges | tostring')"

# Down: every read and write fails.
table "0 $SECTORS flakey $loopdev 0 0 1"
nb down --rw randread --number-ios 64 --no-time-based
expect_eq "flakey down: exit 1, EIO counted for every I/O" "1 64" \
  "$NUMIO_RC $(jqo down '[.errors[] | select(.name == "EIO") | .count] | add // 0')"

table "0 $SECTORS delay $loopdev 0 20"
t0=$(date +%s)
nb delay --rw randread --iodepth 4 --runtime 3
t1=$(date +%s)
expect_eq "dm-delay 20 ms: exit 0, ended within 20 s" "0 yes" "$NUMIO_RC $([ $((t1 - t0)) -le 20 ] && echo yes || echo no)"
p50=$(jqo delay '.total.latency.clat.percentiles[] | select(.percentile == 50) | .latency_ns')
note "dm-delay: clat p50 ${p50:-?} ns"
# dm-delay sets each bio's expiry in jiffies from the jiffy already begun,
# so a bio may complete up to one jiffy (4 ms at Debian's HZ=250) before 20
# ms have passed since numio submitted it: 6.12 gave p50 19.79 ms.
expect_eq "dm-delay: clat p50 >= 20 ms less one jiffy (16 ms)" yes "$([ "${p50:-0}" -ge 16000000 ] && echo yes || echo no)"
finish
