#!/usr/bin/env bash
# vm-lab: kernels=default
# Default kernel only: numio serve's stop, flush and restart under a
# host's I/O, numio's own logic; the 6.12 host's handling of a path
# that goes away runs in 68 (ANA failover).
# After blktests nvme/060 and nvme/061, against numio serve: the target
# stopped (SIGTERM) and the host's controller deleted while fio runs. The
# host sees I/O errors, not a hang (ctrl_loss_tmo=2); numio serve exits 0
# having flushed every namespace; a restarted target takes a new connect
# and data written before the stop with a file namespace reads back; a
# controller deleted under I/O leaves the target with no controller and
# still serving.
. "$(dirname "$0")/nvmf-lib.bash"
nvmf_setup
img=$CHECK_OUT/ns.img
truncate -s 32M "$img"
NVMF_NS="$img"
nvmf_start
# Reconnect quickly and give up after 2 s, so a stopped target fails I/O
# instead of holding it for the default 600 s.
connect_opts="transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=$NVMF_NQN,hostnqn=$NVMF_HOST,hostid=$NVMF_HOSTID,ctrl_loss_tmo=2,reconnect_delay=1"
connect() {
  local fd reply
  exec {fd}<>/dev/nvme-fabrics || return 1
  printf '%s' "$connect_opts" >&"$fd" || { exec {fd}>&-; return 1; }
  read -r -u "$fd" reply
  exec {fd}>&-
  [[ $reply =~ instance=([0-9]+) ]] || return 1
  printf 'nvme%s\n' "${BASH_REMATCH[1]}"
}
ctrl=$(connect 2>"$CHECK_OUT/connect.log") && nvmf_wait_devices 1 ||
  { not_ok "connect: $(cat "$CHECK_OUT/connect.log")"; finish; }
dev=$(nvmf_devices | head -n1)
# Sleeps without starting a process (each costs under TCG): a read with a
# timeout on a FIFO nobody writes.
# (On the guest's own tmpfs: the shared result folder takes no FIFO.)
fifo=$(mktemp -u /tmp/never.XXXXXX) && mkfifo "$fifo" && exec {never}<>"$fifo" ||
  { not_ok "cannot make a FIFO in /tmp"; finish; }
rm -f "$fifo"
nap() { read -r -t "$1" -u "$never" _ || :; }
# Waits until the controller's path has completed 100 I/Os in stat field
# index N (0: reads, 4: writes; Documentation/block/stat.rst);
# the multipath head does not count them.
wait_io() {
  local field=$1 i stat v
  for ((i = 0; i < 400; i++)); do
    for stat in /sys/class/nvme/"$ctrl"/nvme*c*n1/stat; do
      read -r -a v <"$stat" 2>/dev/null && [ "${v[$field]:-0}" -gt 100 ] && return 0
    done
    nap 0.05
  done
  return 1
}
# 8 MiB of a known pattern, then md5 it through the host.
dd if=/dev/urandom of="$CHECK_OUT/pattern" bs=1M count=8 status=none
dd if="$CHECK_OUT/pattern" of="/dev/$dev" bs=1M oflag=direct status=none
want=$(md5sum <"$CHECK_OUT/pattern" | cut -d' ' -f1)
expect_eq "pattern written through the host" "$want" "$(nvmf_md5 "$dev" 8)"

# 060: stop the target under I/O (writes beyond the pattern, so it stays).
fio --name=stop --filename="/dev/$dev" --rw=randwrite --bs=4k --offset=16M --size=16M \
  --ioengine=libaio --direct=1 --iodepth=16 --time_based --runtime=120 \
  --output-format=json --output="$CHECK_OUT/stop.json" >"$CHECK_OUT/stop.stderr" 2>&1 &
fio_pid=$!
wait_io 4 || note "no writes seen before the stop"
note "stopping the target at ${SECONDS} s"
t0=$SECONDS
kill -TERM "$NVMF_PID"
wait "$NVMF_PID"
expect_eq "numio serve exit status after SIGTERM under I/O" 0 "$?"
NVMF_PID=
expect_eq "numio serve flushed and stopped" yes \
  "$(grep -q 'stopped; every namespace flushed' "$NVMF_LOG" && echo yes || echo no)"
# fio ends with errors once the host gives the controller up.
for ((i = 0; i < 300; i++)); do kill -0 "$fio_pid" 2>/dev/null || break; nap 0.1; done
if kill -0 "$fio_pid" 2>/dev/null; then
  not_ok "fio still running $((SECONDS - t0)) s after the target stopped (a hang)"
  kill -KILL "$fio_pid"
  wait "$fio_pid"
else
  wait "$fio_pid"
  rc=$?
  note "fio ended $((SECONDS - t0)) s after the stop, exit status $rc"
  expect_eq "fio saw the lost target as errors" yes "$([ "$rc" -ne 0 ] && echo yes || echo no)"
fi
nvmf_wait_devices 0 || not_ok "the host kept the namespace after ctrl_loss_tmo"

# A restarted target serves the data written before the stop.
NVMF_LOG=$CHECK_OUT/serve-restart.log
nvmf_start
ctrl=$(connect 2>"$CHECK_OUT/reconnect.log") && nvmf_wait_devices 1 ||
  { not_ok "connect to the restarted target: $(cat "$CHECK_OUT/reconnect.log")"; finish; }
dev=$(nvmf_devices | head -n1)
expect_eq "pattern after the stop and restart" "$want" "$(nvmf_md5 "$dev" 8)"

note "061 starts at ${SECONDS} s"
# 061: delete the controller under I/O; the target keeps serving.
fio --name=del --filename="/dev/$dev" --rw=randread --bs=4k --size=8M \
  --ioengine=libaio --direct=1 --iodepth=16 --time_based --runtime=120 \
  >"$CHECK_OUT/del.stderr" 2>&1 &
fio_pid=$!
wait_io 0 || note "no reads seen before the delete"
note "deleting the controller at ${SECONDS} s"
echo 1 >"/sys/class/nvme/$ctrl/delete_controller"
for ((i = 0; i < 300; i++)); do kill -0 "$fio_pid" 2>/dev/null || break; nap 0.1; done
if kill -0 "$fio_pid" 2>/dev/null; then
  not_ok "fio still running after its controller was deleted"
  kill -KILL "$fio_pid"
fi
wait "$fio_pid" 2>/dev/null
nvmf_wait_devices 0 || not_ok "namespace still present after delete_controller"
ctrl=$(connect 2>"$CHECK_OUT/reconnect2.log") && nvmf_wait_devices 1 ||
  { not_ok "connect after deleting a controller under I/O: $(cat "$CHECK_OUT/reconnect2.log")"; finish; }
ok "the target serves a new controller after one was deleted under I/O"
note "reconnected at ${SECONDS} s"
dev=$(nvmf_devices | head -n1)
expect_eq "pattern after the delete" "$want" "$(nvmf_md5 "$dev" 8)"
expect_eq "numio serve still running" yes "$(kill -0 "$NVMF_PID" 2>/dev/null && echo yes || echo no)"
finish
