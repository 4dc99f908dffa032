#!/usr/bin/env bash
# The published case: a 2-path namespace whose second controller sits
# behind a node without CPUs or memory (numa_node -1). `numio multipath`
# must show the -1 path taken from node 1 (the kernel counts -1 as local:
# 10 beats the node-0 path's 21) and the tie from node 0; `--probe` must
# show which path each node's reads went through (node 0: whichever tied
# path is first in the kernel's list), agreeing with the audit;
# doctor must name the fix; plan names the path its node's I/O takes (both
# paths of a tie), and bench runs on the head.
. "$(dirname "$0")/../lib.sh"
require_numio

run_numio multipath --json
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/audit.json"
expect_eq "numio multipath exit" 0 "$NUMIO_RC"
q() { jq -r "$@" "$CHECK_OUT/audit.json"; }
expect_eq "multipath heads" 1 "$(q '.heads | length')"
head=$(q '.heads[0].block_device')
far=$(q '.heads[0].paths[] | select(.node == "unknown") | .device')
near=$(q '.heads[0].paths[] | select(.node != "unknown") | .device')
note "head $head: path $far on the -1 controller, $near on node 0"
expect_eq "source (6.1 writes no numa_nodes)" false "$(q '.heads[0].kernel_reports')"
taken() { q --argjson n "$1" '.heads[0] as $h | $h.routes[] | select(.node == $n) | [.taken[] | $h.paths[.].device] | join(",")'; }
ties() { q --argjson n "$1" '.heads[0] as $h | $h.routes[] | select(.node == $n) | [.ties[] | $h.paths[.].device] | join(",")'; }
verdict() { q --argjson n "$1" '.heads[0].routes[] | select(.node == $n) | .verdict'; }
expect_eq "node 1 takes the -1 path" "$far" "$(taken 1)"
expect_eq "node 1 verdict" unknown_node "$(verdict 1)"
# Node 0: the two paths tie at kernel distance 10; the first of the list
# (controller order in the model) wins, the other is the tie.
t0=$(taken 0)
expect_eq "node 0 ties between both paths" "$(printf '%s\n' "$far" "$near" | sort | paste -sd,)" \
  "$(printf '%s\n' "$t0" "$(ties 0)" | sort | paste -sd,)"
run_numio multipath "/dev/$head"
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/audit.txt"
# A tie the kernel breaks by an order sysfs does not show: the table names
# both paths as tied and takes neither (issue 39).
tie_line=$(grep "node 0: tie between" "$CHECK_OUT/audit.txt")
expect_eq "table names the tie for node 0, both paths, neither taken" yes \
  "$([[ "$tie_line" == *"$far"* && "$tie_line" == *"$near"* && "$tie_line" == *"list order"* ]] && echo yes || echo "no: $tie_line")"

run_numio multipath --probe --json
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/probe.json"
expect_eq "numio multipath --probe exit (0: agrees)" 0 "$NUMIO_RC"
p() { jq -r --argjson n "$1" ".heads[0].probe[] | select(.node == \$n) | $2" "$CHECK_OUT/probe.json"; }
# Node 1: exactly the -1 path. Node 0: one of the two tied paths, the first
# of the head's list, which follows the order the controllers found the
# namespace (asynchronous probing: the lab has seen both).
expect_eq "node 1's reads carried by the -1 path" "$far" "$(p 1 '.carried_by | join(",")')"
carried0=$(p 0 '.carried_by | join(",")')
expect_eq "node 0's reads carried by one tied path" yes \
  "$([ "$carried0" = "$far" ] || [ "$carried0" = "$near" ] && echo yes || echo no)"
expect_eq "node 0's tie reported as going to it" "$carried0" "$(p 0 '.tie_went_to')"
for n in 0 1; do
  expect_eq "node $n probe agrees" true "$(p "$n" .agrees)"
  note "node $n: $(p "$n" '[.paths[] | "\(.device) \(.read_ios) ios"] | join(", ")')"
done
note "node 0's tie went to $carried0 ($([ "$carried0" = "$far" ] && echo 'the -1 path: the published case' || echo 'its local path'))"
run_numio multipath --probe
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/probe.txt"

run_numio doctor --json
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/doctor.json"
fix=$(jq -r --arg s "$head node 1" '.findings[] | select(.code == "multipath-path-not-nearest" and .subject == $s) | .fix' "$CHECK_OUT/doctor.json")
expect_eq "doctor's fix for node 1 names the firmware table" yes "$(grep -q 'SRAT/_PXM' <<<"$fix" && echo yes || echo no)"
expect_eq "and no queue-depth (6.1 shows none)" no "$(grep -q 'queue-depth' <<<"$fix" && echo yes || echo no)"

# plan and bench on the head (#18): the plan says which path its node's I/O
# takes, the path the audit models for that node; a short bench placed by
# the same plan runs there.
run_numio plan "/dev/$head" --format fio
printf '%s\n%s\n' "$NUMIO_OUT" "$NUMIO_ERR" >"$CHECK_OUT/plan.fio"
expect_eq "numio plan exit" 0 "$NUMIO_RC"
said=$(grep -o "$head: node [0-9]*'s I/O takes [^:]*" <<<"$NUMIO_OUT" | head -n 1)
note "plan: ${said:-no path line}"
pnode=$(sed -n "s/.*node \([0-9]*\)'s I\/O takes.*/\1/p" <<<"$said")
expect_eq "the plan names the path of one node" yes "$([ -n "$pnode" ] && echo yes || echo no)"
if [ -n "$(ties "${pnode:-0}")" ]; then
  # A tie: the plan names both paths and takes neither (issue 39).
  expect_eq "the plan names node $pnode's tie, both paths" yes \
    "$([[ "$said" == *"takes one of"* && "$said" == *"$far"* && "$said" == *"$near"* ]] && echo yes || echo "no: $said")"
else
  expect_eq "the plan's path for its node is the audit's" "$(taken "$pnode")" \
    "$(sed -n 's/.*takes path \([a-z0-9]*\).*/\1/p' <<<"$said")"
fi
run_numio bench "/dev/$head" --runtime 1 --iodepth 4 --json
expect_eq "numio bench on the head: exit, I/O done" "0 yes" \
  "$NUMIO_RC $(jq -r 'if .total.ops > 0 then "yes" else "no" end' <<<"$NUMIO_OUT" 2>/dev/null)"
finish
