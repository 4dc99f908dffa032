#!/usr/bin/env bash
# numio-mp has paths on nodes 0 and 1. Under iopolicy numa each node takes
# its own node's path (audit: nearest; probe: carried by it). Switched to
# round-robin (put back on exit), every node's reads alternate over both
# paths: the audit says NOT nearest, the probe sees both paths carry I/O,
# doctor flags each node and its fix is `echo numa`.
. "$(dirname "$0")/../lib.sh"
require_numio

policy_file=$(grep -l numio-mp /sys/class/nvme-subsystem/*/subsysnqn | head -1)
policy_file=${policy_file%/subsysnqn}/iopolicy
original=$(cat "$policy_file")
trap 'echo "$original" >"$policy_file"' EXIT
expect_eq "iopolicy at start" numa "$original"

probe() { # POLICY
  run_numio multipath --probe --json
  printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/probe-$1.json"
  expect_eq "$1: numio multipath --probe exit (0: agrees)" 0 "$NUMIO_RC"
}
j() { jq -r "$2" "$CHECK_OUT/probe-$1.json"; }
node_path() { # POLICY NODE: the path whose controller is on NODE
  j "$1" ".heads[0].paths[] | select(.node.known == $2) | .device"
}

probe numa
for n in 0 1; do
  local_path=$(node_path numa "$n")
  expect_eq "numa: node $n takes its node's path" "$local_path" \
    "$(j numa ".heads[0] as \$h | \$h.routes[] | select(.node == $n) | [.taken[] | \$h.paths[.].device] | join(\",\")")"
  expect_eq "numa: node $n verdict" nearest "$(j numa ".heads[0].routes[] | select(.node == $n) | .verdict")"
  expect_eq "numa: node $n's reads carried by" "$local_path" \
    "$(j numa ".heads[0].probe[] | select(.node == $n) | .carried_by | join(\",\")")"
done

echo round-robin >"$policy_file"
expect_eq "iopolicy switched" round-robin "$(cat "$policy_file")"
probe round-robin
both=$(j round-robin '[.heads[0].paths[].device] | join(",")')
for n in 0 1; do
  expect_eq "round-robin: node $n verdict" not_nearest "$(j round-robin ".heads[0].routes[] | select(.node == $n) | .verdict")"
  expect_eq "round-robin: node $n's reads carried by both paths" "$both" \
    "$(j round-robin ".heads[0].probe[] | select(.node == $n) | .carried_by | join(\",\")")"
done
run_numio multipath
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/audit-round-robin.txt"
run_numio doctor --json
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/doctor-round-robin.json"
expect_eq "round-robin: doctor flags both nodes" 2 \
  "$(jq '[.findings[] | select(.code == "multipath-path-not-nearest")] | length' "$CHECK_OUT/doctor-round-robin.json")"
expect_eq "and says echo numa" yes \
  "$(jq -r '.findings[] | select(.code == "multipath-path-not-nearest") | .fix' "$CHECK_OUT/doctor-round-robin.json" | grep -q "echo numa >" && echo yes || echo no)"
echo "$original" >"$policy_file"
expect_eq "iopolicy put back" "$original" "$(cat "$policy_file")"
finish
