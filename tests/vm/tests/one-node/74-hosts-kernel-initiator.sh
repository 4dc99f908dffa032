#!/usr/bin/env bash
# vm-lab: timeout=400
# vm-lab: kernels=default
# Default kernel only: the orchestration of a sweep over hosts (agents,
# records, signals); the kernel host's connect runs on 6.12 in 60, 69 and
# 73, numio connect's in 75's part 8 on the default kernel.
# numio sweep --hosts --stack kernel: the Linux host as the initiator. The guest
# plays every host through an ssh stand-in that runs the remote command
# here (the fleet's ssh sessions are tested with real sshd in
# crates/numio/tests/fleet_ssh.rs; what needs a kernel with nvme-tcp is
# tested here). numio serve starts as the target; the initiator's agent
# connects the kernel (numio connect), benches the block device the kernel
# made and disconnects:
#   1. a sweep runs (twice, saved): I/Os counted on /dev/nvmeXnY, the
#      merged reads' percentiles, the table reprinted by numio report;
#      nothing left connected, no record left in /run/numio/fabric, no
#      numio left running;
#   2. the initiator's agent killed with SIGKILL mid-run (after the event:
#      its connect line): numio connect, tied to it, still disconnects, and
#      the sweep names the host as failed;
#   2b. Ctrl-C at the controller: exit 130, everything undone;
#   3. numio connect on its own, its stdin closed: disconnects; then
#      numio connect itself killed with SIGKILL: the connection stays, its
#      record names it, and `numio connect --cleanup` disconnects it.
. "$(dirname "$0")/nvmf-lib.bash"
nvmf_setup
NQN=nqn.2026-01.io.numio:subsys0 # the sweep's served target (numio serve's default NQN)
STATE=/run/numio/fabric

ssh_stub=$CHECK_OUT/ssh
cat >"$ssh_stub" <<'EOF'
#!/bin/bash
# ssh stand-in: the words after `--` are the remote command; run it here.
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec bash -c "$*"
EOF
chmod +x "$ssh_stub"
export NUMIO_SSH=$ssh_stub

# numio as the agent (started by the path given), or as its children
# (started by the path the kernel gives /proc/self/exe).
left_running() { pgrep -f -- "/numio (agent|connect|serve)( |\$)" | tr '\n' ' '; }
records() { ls "$STATE" 2>/dev/null | tr '\n' ' '; }

# study NAME [sweep flags]: a --stack kernel sweep of one 120 s point in
# the background (stdout NAME.out, stderr NAME.err in CHECK_OUT; pid in $sweep).
study() {
  local name=$1
  shift
  "$NUMIO" sweep initiators=1 --hosts lab-ini --target-host lab-tgt --target-listen 127.0.0.1:4420 \
    --target-ns mem:64M --stack kernel --remote-numio "$NUMIO" "$@" \
    --rw randread --bs 4k --iodepth 4 --runtime 120s --progress never \
    >"$CHECK_OUT/$name.out" 2>"$CHECK_OUT/$name.err" &
  sweep=$!
}

# until_event PID CONDITION...: waits for the event CONDITION (a command)
# while PID runs (with `false`: for PID to exit), polling every 0.1 s for
# at most 120 s.
until_event() {
  local pid=$1 i
  shift
  for i in $(seq 1200); do
    "$@" && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
connected() { [ -n "$(nvmf_devices "$NQN")" ]; }

# 1. A sweep.
out=$CHECK_OUT/study.json
"$NUMIO" sweep initiators=1 --hosts lab-ini --target-host lab-tgt --target-listen 127.0.0.1:4420 \
  --target-ns mem:64M --stack kernel --remote-numio "$NUMIO" --repeat 2 --save "$out" \
  --rw randread --bs 4k --iodepth 4 --runtime 2s --progress never \
  >"$CHECK_OUT/study.out" 2>"$CHECK_OUT/study.err"
rc=$?
expect_eq "sweep --hosts --stack kernel exits 0" 0 "$rc"
[ "$rc" = 0 ] || note "stderr: $(tail -n 8 "$CHECK_OUT/study.err")"
summary=$(python3 - "$out" <<'EOF' 2>&1
import json, re, sys
s = json.load(open(sys.argv[1]))
ok = []
runs = s["arms"][0]["runs"]
for run in runs:
    m = run["raw"]
    path = m["targets"][0]["path"]
    ok.append(all([bool(re.fullmatch(r"lab-ini:/dev/nvme\d+n1", path)), m["total"]["ops"] > 0,
                   not m["errors"], m["read"]["latency"]["clat"]["samples"] > 0,
                   run["total"]["per_io"].get("target_cpu_ns") is not None]))
print(s["sweep"]["fleet"]["stack"], len(runs), all(ok))
EOF
)
expect_eq "kernel stack, 2 runs: a /dev/nvmeXn1 target, I/Os counted, no errors, reads' percentiles, target CPU" \
  "kernel 2 True" "$summary"
run_numio report "$out"
expect_eq "numio report reprints every line of the sweep's table" "" \
  "$(grep -vxF -f <(printf '%s\n' "$NUMIO_OUT") "$CHECK_OUT/study.out")"
grep -q "the Linux kernel's NVMe/TCP host" "$CHECK_OUT/study.out"
expect_eq "the table names the kernel's initiator" 0 $?
grep -q 'numio: lab-ini: ready: /dev/nvme[0-9]*n1 ' "$CHECK_OUT/study.err"
expect_eq "the controller says which device the initiator's kernel made" 0 $?
expect_eq "no namespace of $NQN left" "" "$(nvmf_devices "$NQN" | tr '\n' ' ')"
expect_eq "no connection record left" "" "$(records)"
expect_eq "no numio left running" "" "$(left_running)"

# 2. The initiator's agent killed mid-run.
study kill-agent
err=$CHECK_OUT/kill-agent.err
# The event: the kernel made the namespace's block device (sysfs).
until_event "$sweep" connected
connect_pid=$(pgrep -f -- "/numio connect nvme-tcp://" | head -n1)
agent_pid=$(ps -o ppid= -p "${connect_pid:-0}" 2>/dev/null | tr -d ' ')
note "numio connect pid '$connect_pid', its agent '$agent_pid'"
expect_eq "a controller of $NQN is connected" 1 "$(nvmf_devices "$NQN" | wc -l)"
[ -n "$agent_pid" ] && kill -9 "$agent_pid"
# The event: numio connect exits (it disconnects first).
until_event "${connect_pid:-0}" false
expect_eq "after the agent's SIGKILL, numio connect disconnected" "" "$(nvmf_devices "$NQN" | tr '\n' ' ')"
wait "$sweep"
rc=$?
expect_eq "the sweep fails (its only initiator died: exit 2)" 2 "$rc"
grep -q 'no initiator ran: lab-ini' "$err"
expect_eq "and names the host" 0 $?
[ "$rc" = 2 ] || note "stderr: $(tail -n 5 "$err")"
expect_eq "no connection record left" "" "$(records)"
[ -z "$(records)" ] || note "record: $(cat "$STATE"/*) controllers: $(ls /sys/class/nvme) procs: $(ps -eo pid,ppid,stat,args | grep -v grep | grep numio)"
expect_eq "no numio left running" "" "$(left_running)"

# 2b. Ctrl-C at the controller mid-run: exit 130, the measured part
# reported, the kernel disconnected, nothing left.
study ctrl-c
# The events: the run started (the controller's barrier line), and the
# initiator's bench is measuring: reads complete on the kernel's devices
# (the hosts start at an instant a little after the barrier line; a
# Ctrl-C before it leaves no measured part, and the sweep exits 2).
until_event "$sweep" grep -q 'host(s) start together' "$CHECK_OUT/ctrl-c.err"
# Reads completed by every NVMe disk, multipath path devices included (6.1
# counts a multipath head's I/O only on its path).
nvme_reads() { cat /sys/block/nvme*/stat 2>/dev/null | awk '{ n += $1 } END { print n + 0 }'; }
reads0=$(nvme_reads)
io_flowing() { [ "$(nvme_reads)" -gt $((reads0 + 1000)) ]; }
until_event "$sweep" io_flowing
expect_eq "the kernel is connected before Ctrl-C" 1 "$(nvmf_devices "$NQN" | wc -l)"
kill -INT "$sweep"
wait "$sweep"
rc=$?
expect_eq "Ctrl-C: exit 130" 130 "$rc"
[ "$rc" = 130 ] || note "stderr: $(tail -n 5 "$CHECK_OUT/ctrl-c.err")"
grep -q '^ *initiators=1 ' "$CHECK_OUT/ctrl-c.out"
expect_eq "the measured part is reported" 0 $?
nvmf_wait_devices 0 "$NQN"
expect_eq "disconnected" "" "$(nvmf_devices "$NQN")"
for _ in $(seq 300); do
  [ -z "$(left_running)$(records)" ] && break
  sleep 0.1
done
expect_eq "no numio left running, no record" "" "$(left_running)$(records)"

# 3. numio connect killed itself: the record, then --cleanup.
"$NUMIO" serve --listen 127.0.0.1:4421 --allow-any-host --ns mem:16M --discovery-port 0 \
  >"$CHECK_OUT/serve3.log" 2>&1 &
serve=$!
until_event "$serve" grep -q 'ready' "$CHECK_OUT/serve3.log"
fifo=$(mktemp -u /dev/shm/numio-hold.XXXXXX) # (not in CHECK_OUT: a 9p share has no FIFOs)
# hold NAME: numio connect with a FIFO as stdin (held open on $hold_fd),
# stdout NAME.out and stderr NAME.err in CHECK_OUT, pid in $holder; waits
# for its device line.
hold() {
  mkfifo "$fifo"
  "$NUMIO" connect "nvme-tcp://127.0.0.1:4421/$NQN/1" <"$fifo" \
    >"$CHECK_OUT/$1.out" 2>"$CHECK_OUT/$1.err" &
  holder=$!
  exec {hold_fd}>"$fifo"
  until_event "$holder" grep -q '^device ' "$CHECK_OUT/$1.out"
}
# First the ordinary life: connect, the device, stdin closed, disconnect.
hold connect-ok
expect_eq "numio connect: the kernel's device" "device /dev/$(nvmf_devices "$NQN")" "$(cat "$CHECK_OUT/connect-ok.out")"
# A second connect of the same host to the same subsystem and portal: the
# kernel refuses it (EALREADY) and numio says what to do.
run_numio connect "nvme-tcp://127.0.0.1:4421/$NQN/1" </dev/null
expect_eq "a duplicate connect fails (exit 2)" 2 "$NUMIO_RC"
grep -q "already connected to that subsystem" <<<"$NUMIO_ERR"
expect_eq "and says the host is already connected" 0 $?
[ "$NUMIO_RC" = 2 ] || note "duplicate: $NUMIO_ERR"
expect_eq "the first connection is untouched" 1 "$(nvmf_devices "$NQN" | wc -l)"
exec {hold_fd}>&-
wait "$holder"
expect_eq "numio connect exits 0 when its stdin closes" 0 $?
grep -q '^numio connect: nvme[0-9]* disconnected$' "$CHECK_OUT/connect-ok.err"
expect_eq "and says it disconnected" 0 $?
expect_eq "nothing left connected, no record" "" "$(nvmf_devices "$NQN")$(records)"
rm -f "$fifo"
# Then killed with SIGKILL.
hold connect3
dev=$(sed -n 's|^device /dev/||p' "$CHECK_OUT/connect3.out")
expect_eq "numio connect printed the kernel's device" "$(nvmf_devices "$NQN")" "$dev"
kill -9 "$holder"
wait "$holder" 2>/dev/null
exec {hold_fd}>&-
rm -f "$fifo"
expect_eq "after its SIGKILL the connection stays" "$dev" "$(nvmf_devices "$NQN")"
expect_eq "and its record names the controller" 1 "$(ls "$STATE" | wc -l)"
run_numio connect --cleanup
expect_eq "numio connect --cleanup exits 0" 0 "$NUMIO_RC"
grep -q "disconnected nvme[0-9]* ($NQN at 127.0.0.1:4421), left connected by numio pid $holder" <<<"$NUMIO_ERR"
expect_eq "--cleanup says what it disconnected and whose it was" 0 $?
[ -z "$NUMIO_ERR" ] || note "cleanup: $NUMIO_ERR"
nvmf_wait_devices 0 "$NQN"
expect_eq "the connection is gone" "" "$(nvmf_devices "$NQN")"
expect_eq "and its record" "" "$(records)"
kill -TERM "$serve"
wait "$serve" 2>/dev/null
finish
