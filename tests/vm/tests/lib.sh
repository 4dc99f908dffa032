# shellcheck shell=bash
# Helpers for VM lab checks (sourced by tests/vm/tests/*/*.sh, inside the
# guest). See tests/vm/guest/run-checks for the convention.
#
# After sourcing: NUMIO (the numio binary), TOPOLOGY (its name), the
# topology file's TOPO_* and EXPECT_* variables, and:
#   expect_eq WHAT EXPECTED ACTUAL   records ok / not ok
#   note TEXT                        prints context
#   skip REASON                      ends the check as skipped (exit 77)
#   finish                           ends the check: exit 1 if any not ok
#   end_unless_default_kernel WHY    on a kernel other than the default,
#                                    ends the check here (what follows is
#                                    numio's own logic; WHY says so)
set -uo pipefail
# shellcheck source=tests/vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
TOPOLOGY=${NUMIO_VM_TOPOLOGY:?not inside tests/vm/run (NUMIO_VM_TOPOLOGY unset)}
NUMIO=${NUMIO:-$REPO_ROOT/target/debug/numio}
# numio keeps its verify state under $XDG_STATE_HOME, else ~/.local/state,
# never in a shared temporary directory; the guest's /root is the host's,
# read-only, and its /tmp its own.
export XDG_STATE_HOME=${XDG_STATE_HOME:-/tmp/numio-state}
# shellcheck source=/dev/null
. "$VM_DIR/topologies/$TOPOLOGY.sh"

_not_ok=0
_ok=0
# Every line says when, in seconds since the check began ("  12.3 ok: ..."),
# so a slow step shows in the output.
_t0_us=${EPOCHREALTIME/./}
# _at sets _AT (no subshell: a fork is slow in a TCG guest).
_at() {
  local us=$((${EPOCHREALTIME/./} - _t0_us))
  printf -v _AT '%5d.%d' $((us / 1000000)) $((us / 100000 % 10))
}
note() { _at; printf '%s # %s\n' "$_AT" "$*"; }
ok() { _ok=$((_ok + 1)); _at; printf '%s ok: %s\n' "$_AT" "$*"; }
not_ok() { _not_ok=$((_not_ok + 1)); _at; printf '%s NOT OK: %s\n' "$_AT" "$*"; }
expect_eq() {
  if [ "$2" = "$3" ]; then
    ok "$1 = $(printf '%s' "$2" | tr '\n' ';')"
  else
    not_ok "$1: expected [$(printf '%s' "$2" | tr '\n' ';')] got [$(printf '%s' "$3" | tr '\n' ';')]"
  fi
}
skip() { printf '  skip: %s\n' "$*"; exit 77; }
finish() {
  [ "$_ok" -gt 0 ] || [ "$_not_ok" -gt 0 ] || { printf '  NOT OK: the check asserted nothing\n'; exit 1; }
  [ "$_not_ok" -eq 0 ]
  exit $?
}

# The lab boots some topologies on a second kernel (TOPO_KERNELS) for the
# checks whose kernel side differs; a check whose first part is such and
# whose rest is numio's own logic ends after that part there, saying so.
# NUMIO_VM_BOOT_KERNEL: this boot's kernel as tests/vm/lab names it.
end_unless_default_kernel() {
  [ "${NUMIO_VM_BOOT_KERNEL:-default}" = default ] && return 0
  note "the rest runs on the default kernel only ($NUMIO_VM_BOOT_KERNEL boot): $*"
  finish
}

# Expands a kernel CPU/node list ("0-2,5") to "0 1 2 5".
expand_list() {
  local part out=() a b i
  local IFS=,
  for part in $1; do
    [ -n "$part" ] || continue
    case $part in
      *-*) a=${part%-*}; b=${part#*-}; for ((i = a; i <= b; i++)); do out+=("$i"); done ;;
      *) out+=("$part") ;;
    esac
  done
  IFS=' '
  printf '%s' "${out[*]}"
}

# Prints the elements of the named array, one a line, sorted.
sorted_lines() {
  local -n arr=$1
  [ ${#arr[@]} -eq 0 ] || printf '%s\n' "${arr[@]}" | LC_ALL=C sort
}

# Fails the check early unless the numio binary exists.
require_numio() {
  [ -x "$NUMIO" ] || { printf '  NOT OK: no numio binary at %s (cargo build -p numio)\n' "$NUMIO"; exit 1; }
}

# Runs numio SUBCOMMAND...; leaves stdout in $NUMIO_OUT, stderr in
# $NUMIO_ERR and the status in $NUMIO_RC.
run_numio() {
  require_numio
  local err_file
  err_file=$(mktemp)
  NUMIO_OUT=$("$NUMIO" "$@" 2>"$err_file")
  NUMIO_RC=$?
  NUMIO_ERR=$(cat "$err_file")
  rm -f "$err_file"
}

# bench_json NAME ARGS...: numio bench ARGS --json --no-progress; keeps its
# output in $CHECK_OUT/NAME.json and .stderr, checks exit status 0 and no
# I/O errors, and sets OPS (the run's I/Os).
bench_json() {
  local name=$1
  shift
  run_numio bench "$@" --json --no-progress
  printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/$name.json"
  printf '%s\n' "$NUMIO_ERR" >"$CHECK_OUT/$name.stderr"
  expect_eq "$name: exit status" 0 "$NUMIO_RC"
  [ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 3 <<<"$NUMIO_ERR")"
  OPS=$(jq '.total.ops' <<<"$NUMIO_OUT" 2>/dev/null || echo none)
  expect_eq "$name: errors" 0 "$(jq '[.errors[].count] | add // 0' <<<"$NUMIO_OUT" 2>/dev/null || echo none)"
}

# Prints the first namespace block device (sorted) that is not a multipath
# head or path, e.g. nvme0n1: one controller, plain block-layer statistics.
first_private_namespace() {
  local b name
  for b in /sys/block/nvme*n*; do
    name=${b##*/}
    [[ $name =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
    [[ $(readlink -f "$b/device") == */nvme-subsys* ]] && continue
    printf '%s\n' "$name"
    return 0
  done
  return 1
}

# Prints the number of reads completed on block device $1.
reads_completed() { awk '{ print $1 }' "/sys/block/$1/stat"; }
