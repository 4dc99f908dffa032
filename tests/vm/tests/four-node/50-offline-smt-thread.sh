#!/usr/bin/env bash
# SMT threads split over four nodes, one taken offline in the guest: numio
# topo reports the pairs (0+1 ... 6+7), CPU 5 offline on node 2 with its
# sibling 4 alone, doctor warns about it citing cpu/online, and numio plan
# puts two jobs of the node-3 drive on that core's two threads (6, then 7),
# never on another node. CPU 5 comes back online at the end.
. "$(dirname "$0")/../lib.sh"

cpu5=/sys/devices/system/cpu/cpu5/online
echo 0 >"$cpu5" || { not_ok "cannot take CPU 5 offline"; finish; }
trap 'echo 1 > "$cpu5"' EXIT

run_numio topo --json
[ "$NUMIO_RC" -eq 0 ] || { not_ok "numio topo --json exited $NUMIO_RC: $NUMIO_ERR"; finish; }
json="$CHECK_OUT/topo.json"
printf '%s\n' "$NUMIO_OUT" >"$json"
q() { jq -r "$@" "$json"; }
expect_eq "SMT pairs of the online CPUs" "0,1 0,1 2,3 2,3 4 6,7 6,7" \
  "$(q '[.cpus[] | select(.online) | .siblings | map(tostring) | join(",")] | join(" ")')"
expect_eq "CPU 5: online, node" "false 2" "$(q '.cpus[5] | "\(.online) \(.node)"')"
expect_eq "node 2 cpus" "4" "$(q '.nodes[2].cpus | map(tostring) | join(" ")')"
expect_eq "CPU 1 is core 0's second thread (package core)" "0 0" "$(q '.cpus[1] | "\(.package) \(.core)"')"

run_numio doctor --json
expect_eq "doctor: the offline CPU, citing the file read" "cpus-offline /sys/devices/system/cpu/online" \
  "$(jq -r '.findings[] | select(.code == "cpus-offline") | "\(.code) \(.evidence[0].path)"' <<<"$NUMIO_OUT")"

ns=$(q '(.controllers[] | select(.serial == "NUMIO-4N-3") | .name) as $c
        | .subsystems[] | select(.controllers | index($c)) | .namespaces[0].block_device')
run_numio plan "/dev/$ns" --jobs 2 --format json
expect_eq "numio plan exit status" 0 "$NUMIO_RC"
expect_eq "plan: node, then each job's CPUs" "3 6 7" \
  "$(jq -r '.targets[0] | "\(.node) \([.jobs[].cpus[]] | map(tostring) | join(" "))"' <<<"$NUMIO_OUT")"
finish
