#!/usr/bin/env bash
# vm-lab: kernels=default
# Default kernel only: numio serve's connection handling; the kernel
# host's connect and disconnect run on 6.12 in 60, 68, 69 and 73.
# 20 connect/disconnect cycles in a row leave numio serve healthy (it still
# serves I/O and holds no connection), and SIGTERM stops it cleanly.
. "$(dirname "$0")/nvmf-lib.bash"
nvmf_setup
nvmf_start
# Connect through /dev/nvme-fabrics and delete_controller (what nvme-cli
# does, without its start-up cost under TCG).
ok_cycles=0
t0=$(date +%s)
for i in $(seq 1 20); do
  if ctrl=$(nvmf_connect_raw 2>"$CHECK_OUT/connect-$i.log") && nvmf_wait_devices 2; then
    echo 1 >"/sys/class/nvme/$ctrl/delete_controller"
    nvmf_wait_devices 0 && ok_cycles=$((ok_cycles + 1))
  else
    note "cycle $i failed: $(tail -n 2 "$CHECK_OUT/connect-$i.log")"
    nvmf_disconnect
  fi
done
note "20 cycles in $(($(date +%s) - t0)) s"
expect_eq "connect/disconnect cycles" 20 "$ok_cycles"
expect_eq "admin connects logged by the target" 20 "$(grep -c "connected $NVMF_NQN qid 0 " "$NVMF_LOG")"
ctrl=$(nvmf_connect_raw 2>"$CHECK_OUT/connect-final.log") && nvmf_wait_devices 2 ||
  not_ok "connect after the cycles: $(cat "$CHECK_OUT/connect-final.log")"
dev=$(nvmf_devices | head -n1)
expect_eq "I/O after the cycles" 4194304 "$(dd if="/dev/$dev" bs=1M count=4 iflag=direct status=none | wc -c)"
[ -n "${ctrl:-}" ] && echo 1 >"/sys/class/nvme/$ctrl/delete_controller"
nvmf_wait_devices 0
kill -TERM "$NVMF_PID"
wait "$NVMF_PID"
expect_eq "numio serve exit status after SIGTERM" 0 "$?"
expect_eq "numio serve flushed and stopped" yes "$(grep -q 'stopped; every namespace flushed' "$NVMF_LOG" && echo yes || echo no)"
NVMF_PID=
finish
