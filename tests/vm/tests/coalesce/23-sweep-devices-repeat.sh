#!/usr/bin/env bash
# The shape of #17's "done when" run on the coalesce guest: `numio coalesce
# sweep` of the four namespaces with --devices 1,2,4, thresholds 0 and 9 and
# --repeat 2 (short, paced points: TCG is slow; 20-sweep checks the
# interrupt drop itself): one table per device count with the first 1, 2
# and 4 drives, every point measured twice (runs 2, a confidence interval),
# a recommendation with evidence per table, the chart, and every drive's
# Feature 0x08 back as nvme-cli read it before (one controller with a value
# of its own).
# vm-lab: timeout=420
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/sweep-lib.bash"
require_numio
coalesce_namespaces

nvme set-feature "/dev/${CTRLS[2]}" -f 8 -v 0x0201 >/dev/null 2>&1 ||
  not_ok "nvme set-feature -f 8 -v 0x0201 on ${CTRLS[2]} failed"
before=$(feature8_all)
note "before: $before"

run_numio coalesce sweep "${NSES[@]}" --devices 1,2,4 --threshold 0,9 --repeat 2 --time 500us \
  --rw randread --bs 4k --iodepth 16 --rate-iops 500 --runtime 1s --ramp-time 500ms \
  --uring-setup defer --iopoll off \
  --json --save "$CHECK_OUT/sweep.json" --chart "$CHECK_OUT/sweep.svg"
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/sweep.out.json"
printf '%s\n' "$NUMIO_ERR" >"$CHECK_OUT/sweep.err"
expect_eq "numio coalesce sweep exit status" 0 "$NUMIO_RC"
[ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 5 <<<"$NUMIO_ERR")"
j() { jq -r "$@" <<<"$NUMIO_OUT" 2>/dev/null; }
expect_eq "one table per device count" "1 2 4" "$(j '[.coalesce.tables[].devices] | join(" ")')"
expect_eq "each table's drives are the first N namespaces" \
  "${NSES[0]}|${NSES[0]} ${NSES[1]}|${NSES[*]}" \
  "$(j '[.coalesce.tables[].targets | join(" ")] | join("|")')"
expect_eq "thresholds of each table" "0 9|0 9|0 9" \
  "$(j '[.coalesce.tables[] | [.rows[].threshold] | join(" ")] | join("|")')"
expect_eq "every point ran twice, with an interval" "6 yes" \
  "$(j '[.coalesce.tables[].rows[].total | select(.runs == 2)] | length') \
$(j 'if all(.coalesce.tables[].rows[].total; .iops_ci95 != null) then "yes" else "no" end')"
expect_eq "every drive of every point did I/O" 14 \
  "$(j '[.coalesce.tables[].rows[].drives[] | select(.iops > 0)] | length')"
expect_eq "a recommendation with evidence per table" "true true true" \
  "$(j '[.coalesce.tables[].recommendation | (.summary | length > 0) and (.evidence | length > 0)] | map(tostring) | join(" ")')"
note "recommendations: $(j '[.coalesce.tables[] | "\(.devices) drive(s): \(.recommendation.summary)"] | join("; ")')"
expect_eq "the chart was drawn" yes "$(grep -q 'NVMe queue interrupts per I/O' "$CHECK_OUT/sweep.svg" 2>/dev/null && echo yes || echo no)"

after=$(feature8_all)
note "after: $after"
expect_eq "every controller's Feature 0x08 is back (nvme get-feature -f 8)" "$before" "$after"
run_numio coalesce show --json
expect_eq "no restore record left" 0 "$(jq -r '.pending_restore | length' <<<"$NUMIO_OUT" 2>/dev/null)"
nvme set-feature "/dev/${CTRLS[2]}" -f 8 -v 0 >/dev/null 2>&1
finish
