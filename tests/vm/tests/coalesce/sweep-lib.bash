# shellcheck shell=bash
# Helpers of the coalesce topology's sweep checks (20-sweep, 21-sweep-kill9),
# sourced after tests/vm/tests/lib.sh; reads features through
# coalesce-lib.bash (sourced here).
#
#   coalesce_namespaces   sets CTRLS (nvme0 …) and NSES (/dev/nvme0n1 …) of
#                         the controllers NUMIO-C0..C3, in serial order
#   feature8 CTRL         prints CTRL's Feature 0x08 value as nvme-cli reads
#                         it (nvme get-feature -f 8: an independent reader),
#                         as 0xNNNN, or "?" when it cannot be read

# shellcheck source=tests/vm/tests/coalesce-lib.bash
. "$(dirname "${BASH_SOURCE[0]}")/../coalesce-lib.bash"

coalesce_namespaces() {
  local c serial ns pairs=()
  command -v nvme >/dev/null || { not_ok "nvme-cli is not installed (tests/vm/setup installs it)"; finish; }
  for c in /sys/class/nvme/nvme*; do
    serial=$(tr -d ' ' <"$c/serial" 2>/dev/null)
    [[ $serial == NUMIO-C[0-9] ]] || continue
    ns=""
    [ -e "$c/${c##*/}n1" ] && ns=/dev/${c##*/}n1
    [ -n "$ns" ] || { not_ok "controller ${c##*/} ($serial) has no namespace ${c##*/}n1"; finish; }
    pairs+=("$serial ${c##*/} $ns")
  done
  mapfile -t pairs < <(printf '%s\n' "${pairs[@]}" | LC_ALL=C sort)
  CTRLS=() NSES=()
  local p
  for p in "${pairs[@]}"; do
    read -r _ c ns <<<"$p"
    CTRLS+=("$c")
    NSES+=("$ns")
  done
  note "controllers: ${CTRLS[*]}; namespaces: ${NSES[*]}"
  [ "${#CTRLS[@]}" -eq 4 ] || { not_ok "4 controllers NUMIO-C0..C3 wanted, the guest has ${#CTRLS[@]}"; finish; }
}

# nvme-cli's output is parsed once, by coalesce-lib.bash's nvme_feature.
feature8() {
  local v
  if ! v=$(nvme_feature "$1" 8); then
    echo "?"
    return
  fi
  printf '0x%04x\n' "$v"
}

# Prints "CTRL=VALUE …" for every controller in CTRLS.
feature8_all() {
  local c out=()
  for c in "${CTRLS[@]}"; do out+=("$c=$(feature8 "$c")"); done
  echo "${out[*]}"
}
