#!/usr/bin/env bash
# `numio doctor --json` in the guest reports exactly the topology file's
# EXPECT_DOCTOR_FLAGS as its warnings and errors (infos are listed, not
# judged), and exits 1 exactly when one of them is an error.
. "$(dirname "$0")/../lib.sh"

run_numio doctor --json
json="$CHECK_OUT/doctor.json"
printf '%s\n' "$NUMIO_OUT" >"$json"
jq -e .findings "$json" >/dev/null 2>&1 || {
  not_ok "numio doctor --json printed no findings document (exit $NUMIO_RC): $NUMIO_ERR"
  finish
}
# Controller names (nvmeN) are given by probe order: compare serials.
serials=$(for c in /sys/class/nvme/nvme*; do printf '%s %s\n' "${c##*/}" "$(tr -d ' ' <"$c/serial")"; done |
  jq -R -s -c '[split("\n")[] | select(. != "") | split(" ") | {(.[0]): .[1]}] | add // {}')
flags=$(jq -r --argjson serial "$serials" \
  '.findings[] | select(.severity != "info") | "\($serial[.subject] // .subject) \(.code)"' "$json" | LC_ALL=C sort)
expect_eq "warnings and errors (subject code)" "$(sorted_lines EXPECT_DOCTOR_FLAGS)" "$flags"
while read -r info; do
  [ -n "$info" ] && note "info: $info"
done < <(jq -r '.findings[] | select(.severity == "info") | "\(.subject) \(.code)"' "$json")
errors=$(jq '[.findings[] | select(.severity == "error")] | length' "$json")
expect_eq "exit status (1 when an error is found)" "$([ "$errors" -gt 0 ] && echo 1 || echo 0)" "$NUMIO_RC"
finish
