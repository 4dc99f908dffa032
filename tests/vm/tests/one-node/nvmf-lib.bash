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

nvmf_cleanup() {
  nvmf_disconnect
  if [ -n "$NVMF_PID" ] && kill -0 "$NVMF_PID" 2>/dev/null; then
    kill -TERM "$NVMF_PID" 2>/dev/null
    wait "$NVMF_PID" 2>/dev/null
  fi
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

# Deletes every controller of our subsystem through sysfs (what
# `nvme disconnect` does, without its start-up cost under TCG).
nvmf_disconnect() {
  local c nqn
  for c in /sys/class/nvme/nvme*; do
    read -r nqn <"$c/subsysnqn" 2>/dev/null || continue
    [ "$nqn" = "$NVMF_NQN" ] && echo 1 >"$c/delete_controller" 2>/dev/null
  done
  return 0
}

# Prints our subsystem's namespace block devices (heads), by nsid. Pure bash:
# it runs in polling loops, where every process start costs under TCG.
nvmf_devices() {
  local b name nqn nsid out=()
  for b in /sys/block/nvme*n*; do
    name=${b##*/}
    [[ $name =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
    read -r nqn <"$b/device/subsysnqn" 2>/dev/null || continue
    [ "$nqn" = "$NVMF_NQN" ] || continue
    read -r nsid <"$b/nsid" || continue
    out[nsid]=$name
  done
  [ ${#out[@]} -eq 0 ] || printf '%s\n' "${out[@]}"
}

# Waits until N namespaces of our subsystem are visible (0: all gone).
nvmf_wait_devices() {
  local want=$1 i
  local devs
  for ((i = 0; i < 200; i++)); do
    mapfile -t devs < <(nvmf_devices)
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
