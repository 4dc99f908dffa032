#!/usr/bin/env bash
# `numio topo --json` in the guest matches the topology file: online nodes,
# CPU lists, distances, each controller's node, namespaces, and for each
# multipath namespace its subsystem NQN, iopolicy and the nodes of its paths.
. "$(dirname "$0")/../lib.sh"

run_numio topo --json
[ "$NUMIO_RC" -eq 0 ] || { not_ok "numio topo --json exited $NUMIO_RC: $NUMIO_ERR"; finish; }
json="$CHECK_OUT/topo.json"
printf '%s\n' "$NUMIO_OUT" >"$json"
jq -e . "$json" >/dev/null || { not_ok "numio topo --json printed no JSON"; finish; }
q() { jq -r "$@" "$json"; }

# The controller's node as the topology files write it.
node_fn='def node_of: if (.numa_node | type) == "object" then (.numa_node.known | tostring) else "unknown" end;'

expect_eq "schema_version" 1 "$(q .schema_version)"
expect_eq "nodes" "$EXPECT_NODES" "$(q '[.nodes[].id] | map(tostring) | join(" ")')"
for n in $EXPECT_NODES; do
  expect_eq "node $n cpus" "${EXPECT_NODE_CPUS[$n]}" "$(q --argjson n "$n" '.nodes[] | select(.id == $n) | .cpus | map(tostring) | join(" ")')"
  expect_eq "node $n distances" "${EXPECT_DISTANCES[$n]}" "$(q --argjson n "$n" '.nodes[] | select(.id == $n) | .distances | map(tostring) | join(" ")')"
done
expect_eq "controllers (serial node)" "$(sorted_lines EXPECT_CONTROLLERS)" \
  "$(q "$node_fn"' .controllers[] | "\(.serial) \(node_of)"' | LC_ALL=C sort)"
expect_eq "namespaces (serial nsid bytes)" "$(sorted_lines EXPECT_NAMESPACES)" \
  "$(q '(.controllers | map({(.name): .serial}) | add // {}) as $serial
        | .subsystems[] | . as $s | .namespaces[]
        | "\($serial[.controller // $s.controllers[0]]) \(.nsid) \(.size_bytes)"' | LC_ALL=C sort)"
expect_eq "multipath (nqn iopolicy path-nodes)" "$(sorted_lines EXPECT_MULTIPATH)" \
  "$(q "$node_fn"' (.controllers | map({(.name): node_of}) | add // {}) as $node
        | .subsystems[] | . as $s | .namespaces[] | select(.controller == null)
        | "\($s.nqn) \($s.iopolicy) \([.paths[] | $node[.controller]] | sort | join(","))"' | LC_ALL=C sort)"
expect_eq "unreadable files" "" "$(q '.unreadable[] | "\(.path): \(.reason)"')"
finish
