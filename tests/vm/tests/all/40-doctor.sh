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
# Controller and namespace names (nvmeN, nvmeXnY) are given by probe order:
# compare serials (a subject "nvme0n1 node 1" reads "SERIAL node 1"; a
# head's device is its subsystem, which has the serial too).
serials=$({
  for c in /sys/class/nvme/nvme*; do printf '%s %s\n' "${c##*/}" "$(tr -d ' ' <"$c/serial")"; done
  for b in /sys/block/nvme*n*; do
    [[ ${b##*/} =~ ^nvme[0-9]+n[0-9]+$ ]] && [ -r "$b/device/serial" ] || continue
    printf '%s %s\n' "${b##*/}" "$(tr -d ' ' <"$b/device/serial")"
  done
} | jq -R -s -c '[split("\n")[] | select(. != "") | split(" ") | {(.[0]): .[1]}] | add // {}')
flags=$(jq -r --argjson serial "$serials" \
  '.findings[] | select(.severity != "info")
   | (.subject | split(" ")) as $w
   | "\(([$serial[$w[0]] // $w[0]] + $w[1:]) | join(" ")) \(.code)"' "$json" | LC_ALL=C sort)
expect_eq "warnings and errors (subject code)" "$(sorted_lines EXPECT_DOCTOR_FLAGS)" "$flags"
while read -r info; do
  [ -n "$info" ] && note "info: $info"
done < <(jq -r '.findings[] | select(.severity == "info") | "\(.subject) \(.code)"' "$json")
errors=$(jq '[.findings[] | select(.severity == "error")] | length' "$json")
expect_eq "exit status (1 when an error is found)" "$([ "$errors" -gt 0 ] && echo 1 || echo 0)" "$NUMIO_RC"
finish
