#!/usr/bin/env bash
# `numio precondition` on two emulated namespaces of the two nodes
# (NUMIO-N0's on node 0, NUMIO-2NS's first on node 1; neither holds data
# another check reads): a small sequential fill (5 % of each) and short
# rounds, every drive at once, each on its own node's CPUs, to a verdict
# per drive. Checks the saved file: its schema, the fill, at least a
# window of rounds with IOPS above 0, a verdict (steady or not met by the
# round limit) for each drive, its CPUs on its node; and that a later
# bench notes the drive as preconditioned. Under TCG whether the numbers
# settle means nothing: this checks the mechanics on real block devices.
# vm-lab: timeout=300
. "$(dirname "$0")/../lib.sh"

# The block device of namespace NSID of the controller with SERIAL.
namespace_of() {
  local b
  for b in /sys/block/nvme*n*; do
    [[ ${b##*/} =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
    [[ $(readlink -f "$b/device") == */nvme-subsys* ]] && continue
    [ "$(tr -d ' ' <"$b/device/serial" 2>/dev/null)" = "$1" ] || continue
    [ "$(cat "$b/nsid" 2>/dev/null)" = "$2" ] || continue
    printf '/dev/%s\n' "${b##*/}"
    return 0
  done
  return 1
}
d0=$(namespace_of NUMIO-N0 1) || { not_ok "no namespace 1 of NUMIO-N0"; finish; }
d1=$(namespace_of NUMIO-2NS 1) || { not_ok "no namespace 1 of NUMIO-2NS"; finish; }
note "drives: $d0 (node 0), $d1 (node 1)"
export XDG_STATE_HOME="$CHECK_OUT/state"

run_numio precondition "$d0" "$d1" --fill 0.05x --round 500ms --rounds 8 --iodepth 4 \
  --no-progress --save "$CHECK_OUT/precondition.json"
printf '%s\n' "$NUMIO_OUT" | tee "$CHECK_OUT/precondition.txt" | sed 's/^/  # /'
printf '%s\n' "$NUMIO_ERR" >"$CHECK_OUT/precondition.stderr"
case $NUMIO_RC in
  0 | 3) ok "numio precondition exit status $NUMIO_RC (0: both steady, 3: one not)" ;;
  *) not_ok "numio precondition exit status $NUMIO_RC: $(tail -n 3 <<<"$NUMIO_ERR")" ;;
esac
j() { jq -r "$@" "$CHECK_OUT/precondition.json" 2>/dev/null; }
expect_eq "schema" numio-precondition "$(j .schema)"
expect_eq "drives" "$d0 $d1" "$(j '[.drives[].path] | join(" ")')"
# 5 % of 1 GiB in 128 KiB writes: 51.2 MiB, rounded down to 409 writes.
expect_eq "fill bytes per drive" "53608448 53608448" "$(j '[.drives[].fill[0].bytes | tostring] | join(" ")')"
expect_eq "drives with a window of rounds or more" 2 "$(j '[.drives[] | select((.rounds | length) >= 5)] | length')"
expect_eq "rounds with IOPS above 0" "$(j '[.drives[].rounds[]] | length')" \
  "$(j '[.drives[].rounds[] | select(.iops > 0)] | length')"
expect_eq "verdicts" "2" "$(j '[.drives[].verdict.outcome | select(. == "steady" or . == "not_met")] | length')"
expect_eq "exit status says the verdicts" "$([ "$(j '[.drives[] | select(.verdict.outcome != "steady")] | length')" = 0 ] && echo 0 || echo 3)" "$NUMIO_RC"
expect_eq "drive nodes" "0 1" "$(j '[.drives[].node | tostring] | join(" ")')"
expect_eq "node 0 drive's CPUs on node 0" "" "$(j '.drives[0].cpus[]' | grep -vxE "${EXPECT_NODE_CPUS[0]// /|}")"
expect_eq "node 1 drive's CPUs on node 1" "" "$(j '.drives[1].cpus[]' | grep -vxE "${EXPECT_NODE_CPUS[1]// /|}")"
expect_eq "identities by subsystem NQN" 2 "$(j '[.drives[].identity | select(startswith("nvme:nqn."))] | length')"

# A later bench of a drive says it was preconditioned.
run_numio bench "$d1" --rw randread --runtime 200ms --json --no-progress
expect_eq "a later bench notes the preconditioning" 1 \
  "$(jq '[.environment.notes[] | select(contains("preconditioned at"))] | length' <<<"$NUMIO_OUT" 2>/dev/null)"
finish
