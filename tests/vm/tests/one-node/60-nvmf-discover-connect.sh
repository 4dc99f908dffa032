#!/usr/bin/env bash
# numio serve ↔ the guest kernel's nvme-tcp host: the discovery service lists
# the subsystem (only to allowed hosts); connect shows every namespace with
# the size, NGUID, UUID and model the target announced; a host NQN that is
# not allowed is refused.
. "$(dirname "$0")/nvmf-lib.bash"
nvmf_setup
nvmf_start

nvme discover -t tcp -a 127.0.0.1 -s 8009 --hostnqn="$NVMF_HOST" --hostid="$NVMF_HOSTID" -o json >"$CHECK_OUT/discover.json" 2>"$CHECK_OUT/discover.err"
expect_eq "nvme discover exit status" 0 "$?"
expect_eq "discovery log entry (subnqn trtype traddr trsvcid)" "$NVMF_NQN tcp 127.0.0.1 4420" \
  "$(jq -r '.records[] | "\(.subnqn) \(.trtype) \(.traddr) \(.trsvcid)"' "$CHECK_OUT/discover.json" 2>/dev/null)"
nvme discover -t tcp -a 127.0.0.1 -s 8009 --hostnqn="$NVMF_OTHER_HOST" --hostid="$NVMF_OTHER_HOSTID" -o json >"$CHECK_OUT/discover-other.json" 2>&1
expect_eq "discovery hides the subsystem from other hosts" 0 \
  "$(jq '[.records[]? | select(.subnqn == "'"$NVMF_NQN"'")] | length' "$CHECK_OUT/discover-other.json" 2>/dev/null || echo parse-error)"

nvmf_connect >"$CHECK_OUT/connect.log" 2>&1
expect_eq "nvme connect exit status" 0 "$?"
nvmf_wait_devices 2 || note "namespaces seen: $(nvmf_devices | tr '\n' ' ')"
mapfile -t devs < <(nvmf_devices)
expect_eq "namespaces" 2 "${#devs[@]}"
for i in "${!devs[@]}"; do
  d=${devs[$i]}
  nsid=$((i + 1))
  line=$(grep "nsid $nsid " "$NVMF_LOG")
  want_bytes=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "bytes") print $(i - 1) }' <<<"$line")
  want_nguid=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "nguid") print $(i + 1) }' <<<"$line")
  want_uuid=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "uuid") print $(i + 1) }' <<<"$line")
  expect_eq "nsid $nsid size bytes" "$want_bytes" "$(($(cat "/sys/block/$d/size") * 512))"
  expect_eq "nsid $nsid nguid" "$want_nguid" "$(tr -d '\n-' <"/sys/block/$d/nguid")"
  expect_eq "nsid $nsid uuid" "$want_uuid" "$(tr -d '\n' <"/sys/block/$d/uuid")"
done
models=$(for c in /sys/class/nvme/nvme*; do
  [ "$(cat "$c/subsysnqn")" = "$NVMF_NQN" ] && sed 's/ *$//' "$c/model"
done)
expect_eq "model" "$NVMF_MODEL" "$models"
nvme disconnect -n "$NVMF_NQN" >"$CHECK_OUT/disconnect.log" 2>&1
expect_eq "nvme disconnect exit status" 0 "$?"
nvmf_wait_devices 0
expect_eq "namespaces gone after disconnect" 0 "$(nvmf_devices | wc -l)"

NVMF_AS=other nvmf_connect >"$CHECK_OUT/connect-other.log" 2>&1
expect_eq "connect from a host that is not allowed fails" yes "$([ $? -ne 0 ] && echo yes || echo no)"
expect_eq "no namespace for the refused host" 0 "$(nvmf_devices | wc -l)"
expect_eq "the kernel saw Connect Invalid Host" yes \
  "$(dmesg | grep -q "is not allowed, hostnqn: $NVMF_OTHER_HOST" && echo yes || echo no)"
finish
