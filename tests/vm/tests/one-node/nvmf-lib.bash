# shellcheck shell=bash
# Helpers for the `numio serve` interop checks (sourced by 6N-nvmf-*.sh; not a
# check itself: run-checks only runs *.sh). The guest kernel's nvme-tcp host
# talks to `numio serve` on the guest's loopback.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

NVMF_NQN=nqn.2026-01.io.numio:lab
NVMF_MODEL="numio lab target"
NVMF_HOSTID=6e756d69-6f6c-4000-8000-000000000001
NVMF_HOST=nqn.2014-08.org.nvmexpress:uuid:$NVMF_HOSTID
NVMF_OTHER_HOSTID=6e756d69-6f6c-4000-8000-0000000000ff
NVMF_OTHER_HOST=nqn.2014-08.org.nvmexpress:uuid:$NVMF_OTHER_HOSTID
NVMF_LOG=$CHECK_OUT/serve.log
NVMF_PID=

# Loads nvme-tcp, brings loopback up; a missing piece fails the check (CI
# must not skip interop silently).
nvmf_setup() {
  require_numio
  command -v nvme >/dev/null || { not_ok "nvme-cli is not installed (tests/vm/setup installs it)"; finish; }
  ip link set lo up 2>/dev/null || busybox ip link set lo up || { not_ok "cannot bring lo up"; finish; }
  vm-modprobe nvme-tcp >"$CHECK_OUT/modprobe.log" 2>&1 ||
    { not_ok "vm-modprobe nvme-tcp failed: $(tail -n 3 "$CHECK_OUT/modprobe.log")"; finish; }
  trap nvmf_cleanup EXIT
}

# Starts `numio serve` (the namespaces in NVMF_NS, default two RAM ones; only
# $NVMF_HOST allowed, or NVMF_ALLOW: NQN,dhchap-secret=FILE...) and waits for
# its ready line. Extra arguments go to
# numio serve.
nvmf_start() {
  local ns_args=() b
  for b in ${NVMF_NS:-mem:64M mem:16M}; do ns_args+=(--ns "$b"); done
  "$NUMIO" serve --nqn "$NVMF_NQN" --model "$NVMF_MODEL" "${ns_args[@]}" \
    --allow-host "${NVMF_ALLOW:-$NVMF_HOST}" --log-connections "$@" >"$NVMF_LOG" 2>&1 &
  NVMF_PID=$!
  local i
  for i in $(seq 1 100); do
    grep -q 'ready' "$NVMF_LOG" 2>/dev/null && return 0
    kill -0 "$NVMF_PID" 2>/dev/null || break
    sleep 0.1
  done
  not_ok "numio serve did not become ready: $(tail -n 5 "$NVMF_LOG")"
  finish
}

# The EXIT trap of nvmf_setup: disconnects our controllers, stops numio serve
# and tlshd, and clears the .nvme keyring when nvmf_tls_setup ran.
nvmf_cleanup() {
  nvmf_disconnect
  if [ -n "$NVMF_PID" ] && kill -0 "$NVMF_PID" 2>/dev/null; then
    kill -TERM "$NVMF_PID" 2>/dev/null
    wait "$NVMF_PID" 2>/dev/null
  fi
  nvmf_tlshd_stop
  [ -z "$NVMF_TLS_USED" ] || nvmf_psk_clear
}

# nvme connect as $NVMF_HOST (NVMF_AS=other: as $NVMF_OTHER_HOST); extra args
# appended. Each host NQN keeps its own host id (the kernel insists).
nvmf_connect() {
  local nqn=$NVMF_HOST id=$NVMF_HOSTID
  [ "${NVMF_AS:-}" = other ] && { nqn=$NVMF_OTHER_HOST; id=$NVMF_OTHER_HOSTID; }
  nvme connect -t tcp -a 127.0.0.1 -s 4420 -n "$NVMF_NQN" --hostnqn="$nqn" --hostid="$id" "$@"
}

# The same connect without nvme-cli: writes the options to /dev/nvme-fabrics
# as nvme-cli does (much faster under TCG); prints the controller name.
nvmf_connect_raw() {
  local fd reply
  exec {fd}<>/dev/nvme-fabrics || return 1
  printf 'transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=%s,hostnqn=%s,hostid=%s' \
    "$NVMF_NQN" "$NVMF_HOST" "$NVMF_HOSTID" >&"$fd" || { exec {fd}>&-; return 1; }
  read -r -u "$fd" reply
  exec {fd}>&-
  [[ $reply =~ instance=([0-9]+) ]] || return 1
  printf 'nvme%s\n' "${BASH_REMATCH[1]}"
}

# Deletes every controller of our subsystem (or of subsystem NQN, the first
# argument) through sysfs (what `nvme disconnect` does, without its start-up
# cost under TCG).
nvmf_disconnect() {
  local c nqn want=${1:-$NVMF_NQN}
  for c in /sys/class/nvme/nvme*; do
    read -r nqn <"$c/subsysnqn" 2>/dev/null || continue
    [ "$nqn" = "$want" ] && echo 1 >"$c/delete_controller" 2>/dev/null
  done
  return 0
}

# Prints our subsystem's namespace block devices (heads), by nsid; another
# subsystem's with NQN. Pure bash: it runs in polling loops, where every
# process start costs under TCG.
nvmf_devices() {
  local b name nqn nsid out=() want=${1:-$NVMF_NQN}
  for b in /sys/block/nvme*n*; do
    name=${b##*/}
    [[ $name =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
    read -r nqn <"$b/device/subsysnqn" 2>/dev/null || continue
    [ "$nqn" = "$want" ] || continue
    read -r nsid <"$b/nsid" || continue
    out[nsid]=$name
  done
  [ ${#out[@]} -eq 0 ] || printf '%s\n' "${out[@]}"
}

# Waits until N namespaces of our subsystem (or of subsystem NQN) are
# visible (0: all gone).
nvmf_wait_devices() {
  local want=$1 nqn=${2:-$NVMF_NQN} i
  local devs
  for ((i = 0; i < 200; i++)); do
    mapfile -t devs < <(nvmf_devices "$nqn")
    [ "${#devs[@]}" -eq "$want" ] && return 0
    sleep 0.05
  done
  return 1
}

# md5 of the first MiB count of a device, read with O_DIRECT.
nvmf_md5() { dd if="/dev/$1" bs=1M count="$2" iflag=direct status=none | md5sum | cut -d' ' -f1; }

# fio write+verify (crc32c) over SIZE of a device with block sizes from 4 KiB
# (in-capsule) to 256 KiB (R2T, several H2CData PDUs); extra args appended.
# Leaves JSON in $CHECK_OUT/$NAME.json and records exit status and errors.
nvmf_fio_verify() {
  local name=$1 dev=$2 size=$3
  shift 3
  fio --name="$name" --filename="/dev/$dev" --rw=randwrite --bsrange=4k-256k --size="$size" \
    --ioengine=libaio --direct=1 --iodepth=8 --verify=crc32c --do_verify=1 --randseed=42 \
    --output-format=json --output="$CHECK_OUT/$name.json" "$@" >"$CHECK_OUT/$name.stderr" 2>&1
  nvmf_fio_results "$name" $?
}

# The checks of nvmf_fio_verify on run NAME that exited RC (for a run in
# the background: its subshell's results would not count).
nvmf_fio_results() {
  local name=$1 rc=$2
  expect_eq "$name: fio exit status" 0 "$rc"
  [ "$rc" -eq 0 ] || note "fio said: $(tail -n 5 "$CHECK_OUT/$name.stderr")"
  if jq -e . "$CHECK_OUT/$name.json" >/dev/null 2>&1; then
    expect_eq "$name: fio errors" 0 "$(jq '.jobs[0].error' "$CHECK_OUT/$name.json")"
    local rb
    rb=$(jq '.jobs[0].read.io_bytes' "$CHECK_OUT/$name.json")
    expect_eq "$name: verified bytes read back" yes "$([ "$rb" -gt 0 ] && echo yes || echo no)"
  else
    not_ok "$name: fio wrote no JSON"
  fi
}

# ---- NVMe/TCP TLS 1.3 (PSK): tlshd, the tls module, the .nvme keyring ----
# The Linux host and target (6.7 and later: the lab's 6.12) hand each queue's
# TLS handshake to tlshd (ktls-utils), which reads the PSK from the kernel's
# ".nvme" keyring. tests/vm/lab provides tlshd (tests/vm/tlshd/build) as
# NUMIO_VM_TLSHD. Debian's 6.1 has neither CONFIG_NVME_TCP_TLS nor the
# handshake netlink family: there tlshd cannot start.
NVMF_TLSHD_PID=
NVMF_TLSHD_LOG=$CHECK_OUT/tlshd.log
NVMF_TLSHD_CONF=$CHECK_OUT/tlshd.conf
NVMF_TLS_USED=

# nvmf_tls_setup: loads the kernel's TLS record layer (vm-modprobe tls: tlshd
# sets the TLS ULP on each socket, and the guest cannot load modules on
# demand) and checks for keyctl; a missing piece fails the check. Call it
# after nvmf_setup (its EXIT trap also stops tlshd and clears the keys).
nvmf_tls_setup() {
  NVMF_TLS_USED=1
  command -v keyctl >/dev/null || { not_ok "keyctl is not installed (tests/vm/setup installs keyutils)"; finish; }
  vm-modprobe tls >"$CHECK_OUT/modprobe-tls.log" 2>&1 ||
    { not_ok "vm-modprobe tls failed: $(tail -n 3 "$CHECK_OUT/modprobe-tls.log")"; finish; }
}

# nvmf_tlshd_path: prints the tlshd binary: $NUMIO_VM_TLSHD (tests/vm/lab),
# else one tests/vm/tlshd/build cached (for tests/vm/run by hand), else
# returns 1 saying why on stderr.
nvmf_tlshd_path() {
  if [ -n "${NUMIO_VM_TLSHD:-}" ] && [ -x "$NUMIO_VM_TLSHD" ]; then
    printf '%s\n' "$NUMIO_VM_TLSHD"
    return 0
  fi
  local c
  for c in "$VM_CACHE"/tlshd/*/.complete; do
    [ -x "${c%/.complete}/bin/tlshd" ] && { printf '%s\n' "${c%/.complete}/bin/tlshd"; return 0; }
  done
  echo "no tlshd: ${NUMIO_VM_TLSHD_ERROR:-NUMIO_VM_TLSHD is unset and $VM_CACHE/tlshd has no build (run tests/vm/tlshd/build on the host)}" >&2
  return 1
}

# _nvmf_tlshd_joined PID: true once PID holds a generic netlink socket
# (protocol 16) with a multicast group joined: tlshd's last step before it
# waits for requests is joining the handshake family's "tlshd" group, and the
# kernel refuses a handshake (ESRCH) while no socket has. Pure bash but one
# readlink a descriptor.
_nvmf_tlshd_joined() {
  local fd link inodes=" " sk eth portid groups inode
  for fd in /proc/"$1"/fd/*; do
    link=$(readlink "$fd" 2>/dev/null) || continue
    [[ $link =~ ^socket:\[([0-9]+)\]$ ]] && inodes+="${BASH_REMATCH[1]} "
  done
  # sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
  while read -r sk eth portid groups _ _ _ _ _ inode _; do
    [ "$eth" = 16 ] && [ "$groups" != 00000000 ] && [[ $inodes == *" $inode "* ]] && return 0
  done </proc/net/netlink
  return 1
}

# nvmf_tlshd_start: writes $NVMF_TLSHD_CONF (ktls-utils' tlshd.conf: debug
# log level 1, the ".nvme" keyring, no x.509 material; NVMF_TLSHD_TLS_DEBUG
# sets GnuTLS's log level, default 0), starts tlshd -s with its log in
# $NVMF_TLSHD_LOG and waits (10 s at most) until it has joined the handshake
# family's multicast group; sets NVMF_TLSHD_PID. Failing to start fails the
# check. nvmf_cleanup stops it.
nvmf_tlshd_start() {
  local bin i
  bin=$(nvmf_tlshd_path 2>"$CHECK_OUT/tlshd-path.err") || { not_ok "$(cat "$CHECK_OUT/tlshd-path.err")"; finish; }
  cat >"$NVMF_TLSHD_CONF" <<CONF
# tlshd.conf of a VM lab check (nvmf_tlshd_start, tests/vm/tests/one-node/nvmf-lib.bash)
[debug]
loglevel=1
tls=${NVMF_TLSHD_TLS_DEBUG:-0}
nl=0

[authenticate]
keyrings=.nvme

[authenticate.client]

[authenticate.server]
CONF
  "$bin" -s -c "$NVMF_TLSHD_CONF" >"$NVMF_TLSHD_LOG" 2>&1 &
  NVMF_TLSHD_PID=$!
  for ((i = 0; i < 100; i++)); do
    _nvmf_tlshd_joined "$NVMF_TLSHD_PID" && return 0
    kill -0 "$NVMF_TLSHD_PID" 2>/dev/null || break
    sleep 0.1
  done
  not_ok "tlshd did not start listening for handshake requests: $(tail -n 5 "$NVMF_TLSHD_LOG" | tr '\n' ' ')"
  nvmf_tlshd_stop
  finish
}

# nvmf_tlshd_stop: stops tlshd (its per-handshake children end with their
# handshakes).
nvmf_tlshd_stop() {
  if [ -n "$NVMF_TLSHD_PID" ] && kill -0 "$NVMF_TLSHD_PID" 2>/dev/null; then
    kill -TERM "$NVMF_TLSHD_PID" 2>/dev/null
    wait "$NVMF_TLSHD_PID" 2>/dev/null
  fi
  NVMF_TLSHD_PID=
  return 0
}

# nvmf_psk_insert IDENTITY [FILE]: adds a "psk" key to the kernel's .nvme
# keyring (`keyctl padd psk IDENTITY %:.nvme`) whose payload is the binary
# PSK read from FILE (default stdin): 32 bytes for an ...R01/SHA-256
# identity, 48 for R02/SHA-384. IDENTITY is the TLS PSK identity the host
# looks up and sends, e.g. "NVMe1R01 HOSTNQN SUBNQN DIGEST" or
# "NVMe0R01 HOSTNQN SUBNQN". Prints the key's serial (decimal); the host's
# tls_key=SERIAL option and sysfs tls_key (hex) name it.
nvmf_psk_insert() {
  local identity=$1 file=${2:-/dev/stdin}
  keyctl padd psk "$identity" %:.nvme <"$file"
}

# nvmf_psk_clear: invalidates every key in the .nvme keyring (the keys a
# check inserted: the keyring is empty at boot).
nvmf_psk_clear() {
  local k
  command -v keyctl >/dev/null || return 0
  for k in $(keyctl rdescribe %:.nvme >/dev/null 2>&1 && keyctl rlist %:.nvme 2>/dev/null); do
    keyctl invalidate "$k" 2>/dev/null
  done
  return 0
}

# nvmf_fabrics_connect OPTIONS: writes the option string OPTIONS (the
# kernel's fabrics options, e.g. "transport=tcp,traddr=127.0.0.1,
# trsvcid=4420,nqn=...,hostnqn=...,hostid=...,tls") to /dev/nvme-fabrics, as
# nvme-cli does; prints the new controller's name (nvmeN). On failure returns
# 1 and prints the kernel's error (errno text) on stderr.
nvmf_fabrics_connect() {
  local fd reply
  exec {fd}<>/dev/nvme-fabrics || return 1
  if ! printf '%s' "$1" >&"$fd"; then
    exec {fd}>&-
    return 1
  fi
  read -r -u "$fd" reply
  exec {fd}>&-
  [[ $reply =~ instance=([0-9]+) ]] || { echo "no instance in the reply '$reply'" >&2; return 1; }
  printf 'nvme%s\n' "${BASH_REMATCH[1]}"
}
