#!/usr/bin/env bash
# Eight one-CPU nodes with a three-level distance table: numio plan keeps
# jobs of the node-5 drive on CPU 5 (sharing it rather than going remote);
# with CPU 5 offline, node 5 has no CPU, so the plan borrows the nearest
# node's (node 4, distance 12, not 6 or 7 at 22) and says so, and doctor
# warns that node 5 holds a drive but no online CPU. CPU 5 comes back
# online at the end.
. "$(dirname "$0")/../lib.sh"

run_numio topo --json
json="$CHECK_OUT/topo.json"
printf '%s\n' "$NUMIO_OUT" >"$json"
ns=$(jq -r '(.controllers[] | select(.serial == "NUMIO-8N-5") | .name) as $c
        | .subsystems[] | select(.controllers | index($c)) | .namespaces[0].block_device' "$json")
[ -n "$ns" ] || { not_ok "no namespace of NUMIO-8N-5 in numio topo --json"; finish; }

run_numio plan "/dev/$ns" --jobs 2 --format json
expect_eq "plan: node, each job's CPUs" "5 5 5" \
  "$(jq -r '.targets[0] | "\(.node) \([.jobs[].cpus[]] | map(tostring) | join(" "))"' <<<"$NUMIO_OUT")"

cpu5=/sys/devices/system/cpu/cpu5/online
echo 0 >"$cpu5" || { not_ok "cannot take CPU 5 offline"; finish; }
trap 'echo 1 > "$cpu5"' EXIT
run_numio plan "/dev/$ns" --jobs 1 --format json
expect_eq "plan with CPU 5 offline: node, CPU" "5 4" \
  "$(jq -r '.targets[0] | "\(.node) \(.jobs[0].cpus | map(tostring) | join(","))"' <<<"$NUMIO_OUT")"
expect_eq "the plan says where the CPUs came from" yes \
  "$(jq -r '[.targets[0].notes[] | select(test("node 5 has no online CPUs.*node 4 \\(distance 12\\)"))] | if length > 0 then "yes" else "no" end' <<<"$NUMIO_OUT")"
run_numio doctor --json
expect_eq "doctor: node 5 holds a drive but no online CPU" "node-without-cpus node 5" \
  "$(jq -r '.findings[] | select(.code == "node-without-cpus") | "\(.code) \(.subject)"' <<<"$NUMIO_OUT")"
finish
