# shellcheck shell=bash
# Helpers of the `numio coalesce` lab checks (tests/vm/tests/coalesce/1*.sh
# and two-socket/73-coalesce-stock.sh), sourced after tests/lib.sh. nvme-cli
# is the independent reader: numio's values are compared with what it
# reads.

# The state file numio keeps as root (/run is the guest's own tmpfs).
STATE_FILE=/run/numio/coalesce.json

# Prints the controller name (nvme2) whose serial is $1.
ctrl_by_serial() {
  local c
  for c in /sys/class/nvme/nvme*; do
    [ "$(tr -d ' ' <"$c/serial")" = "$1" ] && { printf '%s\n' "${c##*/}"; return 0; }
  done
  return 1
}

# Prints the first namespace block device (nvme2n1) of controller $1.
namespace_of() {
  local b
  for b in /sys/class/nvme/"$1"/nvme*n*; do
    [ -e "$b" ] || continue
    b=${b##*/}
    # A multipath path device (nvme2c2n1) is not a block device of its own.
    [[ $b =~ ^nvme[0-9]+n[0-9]+$ ]] && { printf '%s\n' "$b"; return 0; }
  done
  return 1
}

# Prints Feature $2's value on controller $1 as nvme-cli reads it, in
# decimal (nvme-cli prints "Current value:0x00000109", or "value:00000000"
# for 0); extra get-feature arguments follow.
nvme_feature() {
  local ctrl=$1 fid=$2 out hex
  shift 2
  out=$(nvme get-feature "/dev/$ctrl" -f "$fid" "$@" 2>&1) || { printf 'error: %s' "$out"; return 1; }
  hex=$(sed -n 's/.*[Vv]alue: *\(0x\)\{0,1\}\([0-9a-fA-F]\{1,8\}\)$/\2/p' <<<"$out" | head -n 1)
  [ -n "$hex" ] || { printf 'unparsed: %s' "$out"; return 1; }
  printf '%d' "$((16#$hex))"
}

# Prints "name=value" of Feature 08h of each controller named, one a line.
coalesce_values() {
  local c
  for c in "$@"; do printf '%s=%s\n' "$c" "$(nvme_feature "$c" 8)"; done
}

# Number of records in the state file (0 when there is none).
state_records() {
  if [ -e "$STATE_FILE" ]; then jq '.records | length' "$STATE_FILE"; else echo 0; fi
}
