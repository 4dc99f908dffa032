#!/usr/bin/env bash
# The lab QEMU's NVMe implements Interrupt Coalescing (tests/vm/qemu/),
# proved with nvme-cli alone (an independent reader, no numio): Feature 08h
# reports itself changeable (Get Features SEL=3), `nvme set-feature -f 8 -v
# 0x0109` (TIME 1 = 100 us, THR 9 = 10 completions) reads back as 0x109, and
# a 4 KiB randread at QD 32 (fio, libaio, O_DIRECT) takes at most a third of
# the interrupts per I/O with that value than with 0 (three rounds of 2 s
# runs, 0 and 0x0109 alternating, summed: both see the same host load, which
# under TCG moves the interrupt count of a run). The timer: at QD 1
# with THR 9 no threshold is ever reached, so every completion waits for
# TIME (x the topology's TOPO_COALESCE_TIME_SCALE): the reads per second
# stay below what that time allows, and none is lost (fio ends, without
# error). Feature 09h: the Coalescing Disable bit reads back per vector, and
# with it set on every I/O vector the QD 32 run takes interrupts as with
# coalescing off. The controller is left as it was found (0, no vector
# disabled), also when the check fails.
# vm-lab: timeout=180
. "$(dirname "$0")/../lib.sh"

command -v nvme >/dev/null || { not_ok "nvme-cli is not installed on the host (tests/vm/setup installs it)"; finish; }
command -v fio >/dev/null || { not_ok "fio is not installed on the host (tests/vm/setup installs it)"; finish; }
dev=$(first_private_namespace) || { not_ok "no NVMe namespace in the guest"; finish; }
ctrl=$(basename "$(readlink -f "/sys/block/$dev/device")")
note "controller /dev/$ctrl, namespace /dev/$dev"

# The feature's value as nvme-cli prints it (hex, "%#010x": "Current
# value:0x00000109", but "value:00000000" for 0), as a decimal number.
get_feature() {
  local out hex
  out=$(nvme get-feature "/dev/$ctrl" "$@" 2>&1) || { printf 'error: %s' "$out"; return 1; }
  hex=$(sed -n 's/.*[Vv]alue: *\(0x\)\{0,1\}\([0-9a-fA-F]\{1,8\}\)$/\2/p' <<<"$out" | head -n 1)
  [ -n "$hex" ] || { printf 'unparsed: %s' "$out"; return 1; }
  printf '%d' "$((16#$hex))"
}
set_feature() { nvme set-feature "/dev/$ctrl" "$@" >/dev/null 2>&1; }

# The controller's interrupt-driven I/O queues (nvmeNqM, M >= 1; poll
# queues have no line) and their interrupts, summed over CPUs.
io_queue_irqs() {
  awk -v q="^${ctrl}q[1-9][0-9]*$" '$NF ~ q { for (i = 2; i < NF; i++) if ($i ~ /^[0-9]+$/) s += $i } END { print s + 0 }' /proc/interrupts
}
# Linux gives I/O queue M vector M (the admin queue has vector 0).
io_vectors() { sed -n "s/.* ${ctrl}q\([1-9][0-9]*\)$/\1/p" /proc/interrupts; }
reads_seen() { awk '{ print $1 + $2 }' "/sys/block/$dev/stat"; }

restore() {
  local v
  set_feature -f 8 -v 0
  for v in $(io_vectors); do set_feature -f 9 -v "$v"; done
}
trap restore EXIT

# A 4 KiB randread of $3 seconds (default 3) at QD $2 (default 32): prints
# "RATE IOS IRQS", interrupts per I/O, reads, interrupts.
irq_rate() {
  local name=$1 qd=${2:-32} secs=${3:-3} reads0 irqs0 ios irqs
  reads0=$(reads_seen)
  irqs0=$(io_queue_irqs)
  fio --name="$name" --filename="/dev/$dev" --rw=randread --bs=4k --iodepth="$qd" \
    --ioengine=libaio --direct=1 --runtime="$secs" --time_based --output-format=json \
    --output="$CHECK_OUT/fio-$name.json" >"$CHECK_OUT/fio-$name.stderr" 2>&1 ||
    note "fio ($name) failed: $(tail -n 3 "$CHECK_OUT/fio-$name.stderr")"
  irqs=$(($(io_queue_irqs) - irqs0))
  ios=$(($(reads_seen) - reads0))
  awk -v i="$irqs" -v n="$ios" 'BEGIN { printf "%.4f %d %d\n", (n > 0 ? i / n : -1), n, i }'
}

expect_eq "Feature 08h is changeable (SEL=3 capabilities, bit 2)" 4 "$(($(get_feature -f 8 -s 3) & 4))"
expect_eq "Feature 08h starts at 0" 0 "$(get_feature -f 8)"
expect_eq "set-feature -f 8 -v 0x0109 succeeds" 0 "$(set_feature -f 8 -v 0x0109; echo $?)"
expect_eq "get-feature -f 8 reads 0x109 back" "$((0x109))" "$(get_feature -f 8)"
set_feature -f 8 -v 0

vectors=$(io_vectors | tr '\n' ' ')
[ -n "$vectors" ] || { not_ok "no interrupt-driven I/O queue of $ctrl in /proc/interrupts"; finish; }
note "I/O vectors of $ctrl: $vectors"
first=${vectors%% *}
expect_eq "Feature 09h vector $first: Coalescing Disable reads 0" "$first" "$(get_feature -f 9 -c "$first")"
expect_eq "Feature 09h vector 0 (admin): always Coalescing Disable" "$((0x10000))" "$(get_feature -f 9 -c 0)"

ios_off=0 irqs_off=0 ios_on=0 irqs_on=0
for round in 1 2 3; do
  set_feature -f 8 -v 0
  read -r rate ios irqs <<<"$(irq_rate "thr0-$round" 32 2)"
  note "round $round, THR 0: $irqs interrupts for $ios reads ($rate per I/O)"
  ios_off=$((ios_off + ios)) irqs_off=$((irqs_off + irqs))
  set_feature -f 8 -v 0x0109
  read -r rate ios irqs <<<"$(irq_rate "thr9-$round" 32 2)"
  note "round $round, THR 9, TIME 1: $irqs interrupts for $ios reads ($rate per I/O)"
  ios_on=$((ios_on + ios)) irqs_on=$((irqs_on + irqs))
done
per_io() { awk -v i="$1" -v n="$2" 'BEGIN { printf "%.4f", (n > 0 ? i / n : -1) }'; }
rate_off=$(per_io "$irqs_off" "$ios_off")
rate_on=$(per_io "$irqs_on" "$ios_on")
note "THR 0: $irqs_off interrupts for $ios_off reads ($rate_off per I/O); THR 9: $irqs_on for $ios_on ($rate_on per I/O)"
read -r rate_qd1 ios_qd1 irqs_qd1 <<<"$(irq_rate thr9-qd1 1)"
scale=${TOPO_COALESCE_TIME_SCALE:-1}
# 3 s, one read in flight, each completion signalled TIME x scale x 100 us
# after it was posted: at most this many reads (10 % for timer slack).
max_qd1=$((3 * 1000000 / (100 * scale) * 11 / 10))
note "THR 9, TIME 1, QD 1: $irqs_qd1 interrupts for $ios_qd1 reads (the timer's unit: $((100 * scale)) us)"
for v in $vectors; do set_feature -f 9 -v $((0x10000 | v)); done
expect_eq "Feature 09h vector $first: Coalescing Disable reads 1" "$((0x10000 | first))" "$(get_feature -f 9 -c "$first")"
read -r rate_cd ios_cd irqs_cd <<<"$(irq_rate thr9-cd)"
note "THR 9 with Coalescing Disable on every I/O vector: $irqs_cd interrupts for $ios_cd reads ($rate_cd per I/O)"
restore

expect_eq "all three runs did I/O and took interrupts" yes \
  "$([ "$ios_off" -gt 0 ] && [ "$ios_on" -gt 0 ] && [ "$ios_cd" -gt 0 ] && [ "$irqs_off" -gt 0 ] && echo yes || echo no)"
expect_eq "QD 1: reads completed, each with its own interrupt (>= 90 %), fio without error" "yes 0" \
  "$([ "$ios_qd1" -gt 0 ] && [ $((irqs_qd1 * 10)) -ge $((ios_qd1 * 9)) ] && echo yes || echo no) $(jq '.jobs[0].error' "$CHECK_OUT/fio-thr9-qd1.json" 2>/dev/null)"
expect_eq "QD 1: at most $max_qd1 reads in 3 s (each waited for the timer)" yes \
  "$([ "$ios_qd1" -le "$max_qd1" ] && echo yes || echo no)"
expect_eq "THR 9: interrupts per I/O at most a third of THR 0's" yes \
  "$(awk -v a="$rate_on" -v b="$rate_off" 'BEGIN { print (a >= 0 && a * 3 <= b) ? "yes" : "no" }')"
expect_eq "Coalescing Disable: at least twice THR 9's interrupts per I/O" yes \
  "$(awk -v c="$rate_cd" -v a="$rate_on" 'BEGIN { print (c >= 2 * a && a >= 0) ? "yes" : "no" }')"
expect_eq "Feature 08h is back at 0" 0 "$(get_feature -f 8)"
expect_eq "Feature 09h vector $first is back to coalescing allowed" "$first" "$(get_feature -f 9 -c "$first")"
finish
