#!/usr/bin/env bash
# `numio sweep devices=1,2,4` over four NVMe namespaces of the two-node guest
# (the single-path ones: NUMIO-N0, NUMIO-N1 and NUMIO-2NS's two), a short
# random read: the "drives busy at once" curve. The sweep exits 0, reports 3
# points (devices 1, 2, 4) with IOPS above 0 and one per-target row per busy
# namespace. Under TCG the shape of the curve means nothing: this checks the
# mechanics on real block devices.
# vm-lab: timeout=240
. "$(dirname "$0")/../lib.sh"

# The namespace block devices, single-path ones first, sorted by name.
private=() shared=()
for path in /sys/block/nvme*n*; do
  b=${path##*/}
  [[ $b =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
  if [[ $(readlink -f "$path/device") == */nvme-subsys* ]]; then
    shared+=("/dev/$b")
  else
    private+=("/dev/$b")
  fi
done
devs=("${private[@]}" "${shared[@]}")
note "namespaces: ${devs[*]}"
[ "${#devs[@]}" -ge 4 ] || { not_ok "4 NVMe namespaces wanted, the guest has ${#devs[@]}"; finish; }
devs=("${devs[@]:0:4}")

run_numio sweep devices=1,2,4 "${devs[@]}" --rw randread --bs 4k --iodepth 8 --runtime 1s \
  --json --save "$CHECK_OUT/sweep.json"
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/sweep.out.json"
expect_eq "numio sweep exit status" 0 "$NUMIO_RC"
[ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 5 <<<"$NUMIO_ERR")"
j() { jq -r "$@" <<<"$NUMIO_OUT" 2>/dev/null; }
expect_eq "axis" devices "$(j '.sweeps[0].axis')"
expect_eq "points" "devices=1 devices=2 devices=4" "$(j '[.sweeps[0].points[].label] | join(" ")')"
expect_eq "points with IOPS above 0" 3 "$(j '[.sweeps[0].points[] | select(.iops > 0)] | length')"
expect_eq "per-target rows per point" "1 2 4" "$(j '[.sweeps[0].points[] | .targets | length] | join(" ")')"
expect_eq "per-target rows with IOPS above 0" 7 \
  "$(j '[.sweeps[0].points[].targets[] | select(.iops > 0)] | length')"
expect_eq "the 4-device point reads the 4 namespaces" "${devs[*]}" \
  "$(j '[.sweeps[0].points[2].targets[].target] | join(" ")')"

# The table, as a person reads it (kept for docs/readme/sweep.md).
run_numio report "$CHECK_OUT/sweep.json"
printf '%s\n' "$NUMIO_OUT" | tee "$CHECK_OUT/sweep.txt" | sed 's/^/  # /'
expect_eq "numio report of the saved sweep: exit status" 0 "$NUMIO_RC"
expect_eq "the table has the 3 points" 3 "$(grep -cE '^ +devices=[124]( |$)' <<<"$NUMIO_OUT")"
finish
