#!/usr/bin/env bash
# The NUMA contrast (issue 40) on NUMIO-N0's namespace (a controller on
# node 0, CPUs 0 1; node 1 has CPUs 2 3):
# - `numio bench --numa remote` runs its workers on node 1: their last CPU
#   (field 39 of /proc/PID/task/TID/stat) and affinity, read while the run
#   is in progress (after its first progress line), are node 1's, and the
#   result says policy remote, buffers bound to node 1;
# - `numio plan --numa spread` deals the jobs to node 0 and node 1 in turn;
# - `numio compare --a policy=local --b policy=remote` runs both arms,
#   interleaved, each on its own node (the runs' engine results).
# Reads only. Under TCG the IOPS mean nothing: this checks where work runs.
# vm-lab: timeout=300
. "$(dirname "$0")/../lib.sh"
require_numio

dev=""
for b in /sys/block/nvme*n1; do
  [ "$(tr -d ' ' <"$b/device/serial" 2>/dev/null)" = NUMIO-N0 ] && dev=${b##*/}
done
[ -n "$dev" ] || { not_ok "no namespace of controller NUMIO-N0"; finish; }
expect_eq "NUMIO-N0's controller sits on node 0" 0 "$(cat "/sys/block/$dev/device/numa_node")"
node0=$(expand_list "$(cat /sys/devices/system/node/node0/cpulist)")
node1=$(expand_list "$(cat /sys/devices/system/node/node1/cpulist)")
expect_eq "node 1's CPUs" "${EXPECT_NODE_CPUS[1]}" "$node1"
# on_node LIST CPUS: yes when every CPU of CPUS is in LIST (and there is one).
on_node() {
  local c
  [ -n "$2" ] || { echo none; return; }
  for c in $2; do [[ " $1 " == *" $c "* ]] || { echo "no ($2)"; return; }; done
  echo yes
}

# --- bench --numa remote, watched while it runs ---
err=$CHECK_OUT/bench.err
"$NUMIO" bench "/dev/$dev" --numa remote --jobs 2 --rw randread --iodepth 4 \
  --runtime 8 --progress always --json >"$CHECK_OUT/bench.json" 2>"$err" &
pid=$!
# The first progress line: the workers passed the start barrier, pinned.
if timeout 120 grep -m1 -q 'running)' <(tail -n +1 -f --pid="$pid" "$err"); then
  ran=() allowed=()
  for t in /proc/"$pid"/task/*; do
    [[ $(cat "$t/comm" 2>/dev/null) == numio-w* ]] || continue
    stat=$(cat "$t/stat" 2>/dev/null) || continue
    # Field 39 (processor) is the 37th after "PID (COMM) ".
    ran+=("$(awk '{print $37}' <<<"${stat##*) }")")
    allowed+=("$(awk '/^Cpus_allowed_list/ {print $2}' "$t/status")")
  done
  note "workers last ran on CPUs ${ran[*]}, allowed ${allowed[*]}"
  expect_eq "worker threads seen in /proc" 2 "${#ran[@]}"
  expect_eq "workers run on node 1's CPUs (stat field 39)" yes "$(on_node "$node1" "${ran[*]}")"
  expect_eq "workers may run on node 1's CPUs only" yes \
    "$(on_node "$node1" "$(expand_list "$(IFS=,; echo "${allowed[*]}")")")"
else
  not_ok "no progress line from numio bench: $(tail -n 5 "$err")"
fi
wait "$pid"
expect_eq "numio bench --numa remote exit status" 0 "$?"
out=$(cat "$CHECK_OUT/bench.json")
expect_eq "the result's policy" remote "$(jq -r '.policy' <<<"$out")"
expect_eq "the target's own node is kept" 0 "$(jq '.targets[0].node' <<<"$out")"
expect_eq "the result's worker CPUs are node 1's" yes \
  "$(on_node "$node1" "$(jq -r '[.targets[0].workers[].cpu] | map(tostring) | join(" ")' <<<"$out")")"
expect_eq "buffers bound to node 1" "1 1" "$(jq -r '[.targets[0].workers[].buffer_node] | map(tostring) | join(" ")' <<<"$out")"
expect_eq "the reads really happened" true "$(jq '.targets[0].read.ops > 0' <<<"$out")"

# --- plan --numa spread: nodes in turn ---
run_numio plan "/dev/$dev" --numa spread --jobs 4
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/plan-spread.out"
expect_eq "spread: job CPUs alternate nodes" "0 2 1 3" \
  "$(awk -v d="/dev/$dev" '$1 == d {print $5, $6, $7, $8}' <<<"$NUMIO_OUT")"

# --- compare local vs remote ---
run_numio compare --a policy=local --b policy=remote "/dev/$dev" --repeat 2 --runtime 1 \
  --iodepth 4 --save "$CHECK_OUT/compare.json"
printf '%s\n%s\n' "$NUMIO_OUT" "$NUMIO_ERR" >"$CHECK_OUT/compare.out"
expect_eq "numio compare exit status" 0 "$NUMIO_RC"
[ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 5 <<<"$NUMIO_ERR")"
grep -E '^  [AB]: ' <<<"$NUMIO_OUT" | while read -r line; do note "$line"; done
order=$(awk '/^Runs \(in execution order\)/ {on=1; next} on && $1 ~ /^[0-9]+$/ {print $2}' <<<"$NUMIO_OUT" | tr '\n' ' ')
expect_eq "runs interleave" "local remote local remote " "$order"
# arm_cpus LABEL: the worker CPUs of every run of the arm.
arm_cpus() {
  jq -r --arg l "$1" '[.arms[] | select(.label == $l) | .runs[].raw.targets[].workers[].cpu]
    | map(tostring) | join(" ")' "$CHECK_OUT/compare.json"
}
arm_field() {
  jq -r --arg l "$1" "[.arms[] | select(.label == \$l) | .runs[].raw | $2] | unique | join(\" \")" \
    "$CHECK_OUT/compare.json"
}
expect_eq "local arm ran on node 0" yes "$(on_node "$node0" "$(arm_cpus local)")"
expect_eq "remote arm ran on node 1" yes "$(on_node "$node1" "$(arm_cpus remote)")"
expect_eq "the remote arm's runs say policy remote" remote "$(arm_field remote .policy)"
expect_eq "remote arm's buffers on node 1" 1 "$(arm_field remote '.targets[].workers[].buffer_node | tostring')"
finish
