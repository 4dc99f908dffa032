#!/usr/bin/env bash
# `numio doctor` reads each controller's coalescing live (as root): with
# the four drives of node 0 off and their queue IRQs on the node's 2 CPUs it
# reports the info finding irq-coalescing-off (the four drives, the IRQ and
# CPU counts, a `numio coalesce sweep` of their namespaces as the fix);
# once `numio coalesce set` coalesces them the finding is gone; `numio
# coalesce restore` puts them back. From a snapshot of the same machine
# (`--root`, no live values) doctor says nothing about it.
# vm-lab: timeout=120
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../coalesce-lib.bash"

command -v nvme >/dev/null || { not_ok "nvme-cli is not installed on the host"; finish; }
ctrls=()
for s in NUMIO-C0 NUMIO-C1 NUMIO-C2 NUMIO-C3; do
  c=$(ctrl_by_serial "$s") || { not_ok "no controller with serial $s"; finish; }
  ctrls+=("$c")
done
rm -f "$STATE_FILE"
trap 'for c in "${ctrls[@]}"; do nvme set-feature "/dev/$c" -f 8 -v 0 >/dev/null 2>&1; done' EXIT
finding() { jq -c '[.findings[] | select(.code == "irq-coalescing-off")]' <<<"$NUMIO_OUT" 2>/dev/null; }

run_numio doctor --json
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/doctor-off.json"
f=$(finding)
expect_eq "off: one irq-coalescing-off finding, info, node 0" "1 info node 0" \
  "$(jq -r 'length as $n | "\($n) \(.[0].severity) \(.[0].subject)"' <<<"$f")"
msg=$(jq -r '.[0].message' <<<"$f")
named=yes
[[ $msg == "4 NVMe drives on node 0 ("* ]] || named=no
for c in "${ctrls[@]}"; do [[ $msg == *"$c"* ]] || named=no; done
expect_eq "off: the four drives named" yes "$named"
expect_eq "off: evidence per drive plus the IRQ counts" 5 "$(jq '.[0].evidence | length' <<<"$f")"
expect_eq "off: the fix is a coalesce sweep" yes \
  "$(jq -r '.[0].fix' <<<"$f" | grep -q 'numio coalesce sweep /dev/nvme' && echo yes || echo no)"
run_numio doctor
grep -A6 'irq-coalescing-off\|coalescing' <<<"$NUMIO_OUT" >"$CHECK_OUT/doctor-off.txt"
sed 's/^/  # /' "$CHECK_OUT/doctor-off.txt"

run_numio coalesce set "${ctrls[@]}" --threshold 9 --time 100us
expect_eq "set on all four: exit status" 0 "$NUMIO_RC"
run_numio doctor --json
expect_eq "coalescing on: no irq-coalescing-off finding" 0 "$(finding | jq length)"
run_numio coalesce restore
expect_eq "restore: exit status" 0 "$NUMIO_RC"

run_numio topo --save "$CHECK_OUT/snapshot.tar.gz"
run_numio doctor --json --root "$CHECK_OUT/snapshot.tar.gz"
expect_eq "from a snapshot: nothing said about coalescing" 0 "$(finding | jq length)"
finish
