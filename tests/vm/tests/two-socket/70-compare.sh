#!/usr/bin/env bash
# `numio compare --a policy=local --b policy=spread` on a real NVMe namespace
# of the two-node guest: the runs interleave A B A B A B, a verdict is
# printed, the results JSON and the chart are written. Under TCG the sign of
# the difference means nothing: this checks the mechanics.
# vm-lab: timeout=180
. "$(dirname "$0")/../lib.sh"

dev=$(first_private_namespace) || { not_ok "no NVMe namespace in the guest"; finish; }
run_numio compare --a policy=local --b policy=spread --repeat 3 --runtime 1 --iodepth 8 \
  "/dev/$dev" --save "$CHECK_OUT/compare.json" --chart "$CHECK_OUT/compare.svg"
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/compare.out"
expect_eq "numio compare exit status" 0 "$NUMIO_RC"
[ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 5 <<<"$NUMIO_ERR")"
verdict=no
grep -Eq '^ +(no (significant )?difference in IOPS|(local|spread): [+-][0-9.]+ % IOPS)' <<<"$NUMIO_OUT" && verdict=yes
expect_eq "a verdict on IOPS is printed" yes "$verdict"
order=$(awk '/^Runs \(in execution order\)/ {on=1; next} on && $1 ~ /^[0-9]+$/ {print $2}' <<<"$NUMIO_OUT" | tr '\n' ' ')
expect_eq "runs interleave" "local spread local spread local spread " "$order"
expect_eq "results JSON schema" numio-results "$(jq -r '.schema' "$CHECK_OUT/compare.json" 2>/dev/null)"
expect_eq "chart is an SVG" "<svg" "$(head -c 4 "$CHECK_OUT/compare.svg" 2>/dev/null)"
finish
