#!/usr/bin/env bash
# vm-lab: timeout=300
# Ports and ANA: `numio serve` listens on two ports of one subsystem (port 1
# optimized, port 2 non-optimized). The kernel host connects through both and
# builds one multipath namespace of two paths that follow the ANA states.
# While fio (verify=crc32c) runs on it, port 1 turns inaccessible (SIGHUP
# re-reads --config): the host takes the ANA Change notice, the I/O moves to
# port 2's path, and back once port 1 is optimized again; fio verifies with
# no error and the kernel logs no I/O error.
. "$(dirname "$0")/nvmf-lib.bash"
nvmf_setup
[ "$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null)" = Y ] ||
  { not_ok "the guest kernel's nvme_core multipath is off"; finish; }
cfg=/tmp/ana.toml
ana() { printf 'listen = ["127.0.0.1:4420", "127.0.0.1:4421"]\nana = [%s]\n' "$1" >"$cfg"; }
ana '"optimized", "non-optimized"'
NVMF_NS="mem:64M" nvmf_start --config "$cfg"

# Connects through port $1 without nvme-cli (see nvmf_connect_raw).
connect_port() {
  local fd reply
  exec {fd}<>/dev/nvme-fabrics || return 1
  printf 'transport=tcp,traddr=127.0.0.1,trsvcid=%s,nqn=%s,hostnqn=%s,hostid=%s' \
    "$1" "$NVMF_NQN" "$NVMF_HOST" "$NVMF_HOSTID" >&"$fd" || { exec {fd}>&-; return 1; }
  read -r -u "$fd" reply
  exec {fd}>&-
  [[ $reply =~ instance=([0-9]+) ]] || return 1
  printf 'nvme%s\n' "${BASH_REMATCH[1]}"
}
c1=$(connect_port 4420) || { not_ok "connect through port 4420 failed"; finish; }
c2=$(connect_port 4421) || { not_ok "connect through port 4421 failed"; finish; }
nvmf_wait_devices 1 || { not_ok "namespaces seen: $(nvmf_devices | tr '\n' ' ')"; finish; }
dev=$(nvmf_devices)
# The path (hidden disk nvmeScCnN) of controller $1: a child of the
# controller's device (Linux 6.1 has no head-to-path links yet).
path_of() {
  local p
  for p in /sys/class/nvme/"$1"/nvme*c*n*; do
    [ -e "$p/ana_state" ] && { basename "$p"; return 0; }
  done
  return 1
}
for i in $(seq 1 100); do
  p1=$(path_of "$c1") && p2=$(path_of "$c2") && break
  sleep 0.1
done
expect_eq "one namespace, two paths" 2 "$(ls -d /sys/block/"${dev%n*}"c*n"${dev##*n}" 2>/dev/null | wc -l)"
[ -n "$p1" ] && [ -n "$p2" ] || { not_ok "paths of $c1 and $c2 not found under $dev"; finish; }
note "/dev/$dev: $p1 via $c1 (port 4420), $p2 via $c2 (port 4421)"
expect_eq "port 1 path ANA state" optimized "$(cat /sys/block/"$p1"/ana_state)"
expect_eq "port 2 path ANA state" non-optimized "$(cat /sys/block/"$p2"/ana_state)"

# I/Os completed through a path (reads + writes, from its stat).
ios() { local s; read -r -a s <"/sys/block/$1/stat"; echo $((s[0] + s[4])); }
# Waits until $1 holds (polls; each wait is bounded).
until_true() { local i; for ((i = 0; i < 600; i++)); do eval "$1" && return 0; sleep 0.1; done; return 1; }
# Sets both ports' states and waits until the host's paths show them.
set_ana() {
  ana "\"$1\", \"non-optimized\""
  kill -HUP "$NVMF_PID"
  until_true "[ \"\$(cat /sys/block/$p1/ana_state)\" = $1 ]"
}

kmsg=$(dmesg 2>/dev/null | wc -l)
start=$(ios "$p1")
fio --name=ana-failover --filename="/dev/$dev" --rw=randwrite --bsrange=4k-256k --size=32M \
  --ioengine=libaio --direct=1 --iodepth=8 --verify=crc32c --do_verify=1 --randseed=42 \
  --output-format=json --output="$CHECK_OUT/ana-failover.json" >"$CHECK_OUT/ana-failover.stderr" 2>&1 &
fio_pid=$!
until_true "[ \$(ios $p1) -gt $start ]" || not_ok "fio's I/O never reached port 1's path"
set_ana inaccessible
expect_eq "the host follows port 1 to inaccessible" 0 "$?"
before=$(ios "$p2")
until_true "[ \$(ios $p2) -gt $before ]"
expect_eq "I/O moves to port 2's path" 0 "$?"
note "port 2's path: $before -> $(ios "$p2") I/Os while port 1 was inaccessible"
set_ana optimized
expect_eq "the host follows port 1 back to optimized" 0 "$?"
wait "$fio_pid"
nvmf_fio_results ana-failover $?
before=$(ios "$p1")
nvmf_md5 "$dev" 1 >/dev/null
expect_eq "I/O is back on port 1's path" yes "$([ "$(ios "$p1")" -gt "$before" ] && echo yes || echo no)"
expect_eq "target announced the change" yes \
  "$(grep -q 'port 1 (127.0.0.1:4420) ANA optimized -> inaccessible; ANA Change notice sent to 1 controller' "$NVMF_LOG" && echo yes || echo no)"
dmesg 2>/dev/null | tail -n +"$((kmsg + 1))" >"$CHECK_OUT/dmesg.txt"
expect_eq "no I/O error in the kernel log" 0 "$(grep -ciE 'I/O error|blk_update_request' "$CHECK_OUT/dmesg.txt")"
finish
