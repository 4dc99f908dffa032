#!/usr/bin/env bash
# IOPOLL for real: the lab boots the nvme driver with poll queues
# (nvme.poll_queues, tests/vm/run), so `numio bench --iopoll on` on a
# namespace runs, reports the IOPOLL feature, does I/O the block layer
# counted, and its completions were polled: the controller's interrupt-driven
# I/O queues saw (almost) none of them, where a run without IOPOLL raises
# interrupts. `numio doctor` has no
# no-poll-queues finding, and a device without poll queues (a loop device) is
# refused before the run with the fix.
# The I/O path this checks does not depend on the machine's NUMA shape: it
# runs in one-node and in two-socket (the NUMA case), not in every topology.
# vm-lab: topologies=one-node two-socket
. "$(dirname "$0")/../lib.sh"

want=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^nvme\.poll_queues=//p')
[ "${want:-0}" -gt 0 ] || skip "this topology boots without nvme poll queues (TOPO_NVME_POLL_QUEUES=0)"
expect_eq "nvme.poll_queues (from the kernel command line)" "$want" "$(cat /sys/module/nvme/parameters/poll_queues)"

dev=$(first_private_namespace) || { not_ok "no NVMe namespace in the guest"; finish; }
ctrl=$(basename "$(readlink -f "/sys/block/$dev/device")")
expect_eq "/sys/block/$dev/queue/io_poll" 1 "$(cat "/sys/block/$dev/queue/io_poll")"

# Interrupts of the controller's I/O queues (nvmeNq1...; poll queues have none).
io_queue_irqs() {
  awk -v q="^${ctrl}q[1-9][0-9]*$" '$NF ~ q { for (i = 2; i < NF; i++) if ($i ~ /^[0-9]+$/) s += $i } END { print s + 0 }' /proc/interrupts
}

# Reads the block layer saw: completed plus merged into another request.
reads_seen() { awk '{ print $1 + $2 }' "/sys/block/$1/stat"; }

reads0=$(reads_seen "$dev")
irqs0=$(io_queue_irqs)
run_numio bench "/dev/$dev" --iopoll on --runtime 2 --iodepth 16 --json
reads=$(($(reads_seen "$dev") - reads0))
irqs=$(($(io_queue_irqs) - irqs0))
json="$CHECK_OUT/bench.json"
printf '%s\n' "$NUMIO_OUT" >"$json"
expect_eq "numio bench --iopoll on exit status" 0 "$NUMIO_RC"
[ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 5 <<<"$NUMIO_ERR")"
expect_eq "io_uring granted IOPOLL" yes \
  "$(jq -r 'if (.environment.uring_features | index("IOPOLL")) then "yes" else "no" end' "$json" 2>/dev/null)"
ops=$(jq -r '.total.ops // 0' "$json" 2>/dev/null || echo 0)
expect_eq "numio measured reads without errors" "yes 0" \
  "$([ "${ops:-0}" -gt 0 ] && echo yes || echo no) $(jq -r '.errors | length' "$json" 2>/dev/null)"
expect_eq "block layer counted numio's reads (completed + merged)" yes "$([ "$reads" -ge "${ops:-1}" ] && echo yes || echo no)"
note "$ops reads measured, $reads counted by the block layer, $irqs interrupts on ${ctrl}'s I/O queues"
expect_eq "completions were polled (I/O-queue interrupts < 1 % of reads)" yes \
  "$([ $((irqs * 100)) -lt "$reads" ] && echo yes || echo no)"
# numio's own count (its report's per-target interrupts, #17): measured, not
# left out, and within what /proc/interrupts saw around the whole run (numio
# also counts the admin queue's line: 10 to spare for it).
own=$(jq -r '.counters.targets[0].interrupts // "none"' "$json" 2>/dev/null)
note "numio counted $own interrupts on $(jq -r '.counters.targets[0].controllers | join(",")' "$json" 2>/dev/null)'s queues"
expect_eq "numio's report: a polled run's interrupts measured, at most the check's (+10) and < 1 % of its reads" yes \
  "$([[ $own =~ ^[0-9]+$ ]] && [ "$own" -le $((irqs + 10)) ] && [ $((own * 100)) -lt "${ops:-0}" ] && echo yes || echo no)"

# The contrast: without IOPOLL the same reads raise interrupts (so the
# counter above does see this controller's queues).
irqs0=$(io_queue_irqs)
run_numio bench "/dev/$dev" --iopoll off --runtime 1 --iodepth 16 --json
irqs=$(($(io_queue_irqs) - irqs0))
note "--iopoll off: $irqs interrupts on ${ctrl}'s I/O queues"
expect_eq "without IOPOLL the I/O queues raise interrupts" yes "$([ "$irqs" -gt 100 ] && echo yes || echo no)"
own=$(jq -r '.counters.targets[0].interrupts // "none"' <<<"$NUMIO_OUT" 2>/dev/null)
note "--iopoll off: numio counted $own"
expect_eq "numio's report counts them too (> 100, at most the check's + 10)" yes \
  "$([[ $own =~ ^[0-9]+$ ]] && [ "$own" -gt 100 ] && [ "$own" -le $((irqs + 10)) ] && echo yes || echo no)"

run_numio doctor --json
expect_eq "numio doctor has no no-poll-queues finding" 0 \
  "$(jq '[.findings[] | select(.code == "no-poll-queues")] | length' <<<"$NUMIO_OUT" 2>/dev/null || echo unreadable)"

# A device without poll queues: a clear error before any I/O.
img=$(mktemp /tmp/iopoll-loop.XXXXXX)
truncate -s 64M "$img"
if vm-modprobe loop >/dev/null 2>&1 && loop=$(losetup --find --show "$img" 2>/dev/null); then
  run_numio bench "$loop" --iopoll on --runtime 1
  expect_eq "--iopoll on $loop (no poll queues) exit status" 2 "$NUMIO_RC"
  expect_eq "the error names the device and the fix" yes \
    "$(grep -q "$loop has no poll queues.*nvme.poll_queues" <<<"$NUMIO_ERR" && echo yes || echo no)"
  losetup --detach "$loop"
else
  note "no loop device in this guest: the refusal is covered by crates/engine/tests/uring_polling.rs"
fi
rm -f "$img"
finish
