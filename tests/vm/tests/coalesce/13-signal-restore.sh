#!/usr/bin/env bash
# The restore promise on signals, over four controllers at once: a `numio
# coalesce sweep` gets SIGTERM while its threshold-9 point runs (nvme-cli
# reads 0x109 on all four: the event waited for) and exits 143 with every
# controller back at 0 and no state file. Then a second sweep gets SIGTERM
# twice (the second once the first one's "stopping" line is on stderr): it
# exits at once (143) after the exit hook put the values back, and again
# nvme-cli reads 0 everywhere and no record is left.
# vm-lab: timeout=300
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../coalesce-lib.bash"

command -v nvme >/dev/null || { not_ok "nvme-cli is not installed on the host"; finish; }
ctrls=() namespaces=()
for s in NUMIO-C0 NUMIO-C1 NUMIO-C2 NUMIO-C3; do
  c=$(ctrl_by_serial "$s") || { not_ok "no controller with serial $s"; finish; }
  ctrls+=("$c")
  namespaces+=("/dev/$(namespace_of "$c")")
done
rm -f "$STATE_FILE"
trap 'for c in "${ctrls[@]}"; do nvme set-feature "/dev/$c" -f 8 -v 0 >/dev/null 2>&1; done' EXIT
all_zero=$(printf '%s=0\n' "${ctrls[@]}")
all_set=$(printf '%s=265\n' "${ctrls[@]}")

# Starts a sweep ($1: a tag) and waits until its threshold-9 point is set
# on all four; leaves its pid in $sweep.
start_sweep_at_thr9() {
  "$NUMIO" coalesce sweep "${namespaces[@]}" --threshold 9 --time 100us --devices 4 \
    --rw randread --bs 4k --iodepth 8 --runtime 20s >"$CHECK_OUT/$1.out" 2>"$CHECK_OUT/$1.err" &
  sweep=$!
  local deadline=$((SECONDS + 150))
  until [ "$(coalesce_values "${ctrls[@]}")" = "$all_set" ]; do
    kill -0 "$sweep" 2>/dev/null || { not_ok "$1: the sweep ended before its threshold-9 point: $(tail -n 5 "$CHECK_OUT/$1.err")"; return 1; }
    [ $SECONDS -lt $deadline ] || { not_ok "$1: the threshold-9 point never showed on all four"; kill -KILL "$sweep"; return 1; }
    sleep 0.2
  done
}

# Waits (at most $2 s) until file $1 holds a line matching $3.
wait_for_line() {
  local deadline=$((SECONDS + $2))
  until grep -q "$3" "$1" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.1
  done
}

if start_sweep_at_thr9 sigterm; then
  kill -TERM "$sweep"
  wait "$sweep"
  rc=$?
  expect_eq "SIGTERM: exit status" 143 "$rc"
  expect_eq "SIGTERM: nvme-cli reads 0 on each" "$all_zero" "$(coalesce_values "${ctrls[@]}")"
  expect_eq "SIGTERM: no record left" 0 "$(state_records)"
fi

if start_sweep_at_thr9 twice; then
  kill -TERM "$sweep"
  wait_for_line "$CHECK_OUT/twice.err" 60 'stopping' || not_ok "no 'stopping' line after the first SIGTERM"
  kill -TERM "$sweep" 2>/dev/null
  wait "$sweep"
  rc=$?
  note "stderr: $(tr '\n' '|' <"$CHECK_OUT/twice.err" | tail -c 400)"
  expect_eq "SIGTERM twice: exit status" 143 "$rc"
  expect_eq "SIGTERM twice: nvme-cli reads 0 on each" "$all_zero" "$(coalesce_values "${ctrls[@]}")"
  expect_eq "SIGTERM twice: no record left" 0 "$(state_records)"
fi
finish
