#!/usr/bin/env bash
# numio serve ↔ the guest kernel's nvme-tcp host: the discovery service lists
# the subsystem (only to allowed hosts); connect shows every namespace with
# the size, NGUID, UUID and model the target announced; a host NQN that is
# not allowed is refused. numio connect --cleanup disconnects the
# controller only with a record that proves it is numio's connection.
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

# numio connect --cleanup trusts a record only as far as it proves the
# controller is the connection numio made (issue 38): a record of this
# controller (nvme-cli's) with its name, cntlid, NQN and address but
# another sysfs instance (a stale record after a reconnect, or a forged
# one) is dropped and the controller stays; a record naming a path
# (../../../x) is not one; the same record with the controller's own
# instance (as numio records it) and a dead owner disconnects it.
ctrl=$(for c in /sys/class/nvme/nvme*; do [ "$(cat "$c/subsysnqn")" = "$NVMF_NQN" ] && basename "$c"; done | head -n 1)
records=$(mktemp -d /tmp/numio-records.XXXXXX)
addr=$(cat "/sys/class/nvme/$ctrl/address")
traddr=$(sed -n 's/.*traddr=\([^,]*\).*/\1/p' <<<"$addr")
trsvcid=$(sed -n 's/.*trsvcid=\([0-9]*\).*/\1/p' <<<"$addr")
inode=$(stat -L -c %i "/sys/class/nvme/$ctrl")
true &
dead=$!
wait "$dead"
record() { # NAME INSTANCE: a record of $ctrl's connection owned by a dead numio
  (umask 077 && jq -n --arg c "$1" --argjson id "$2" --arg nqn "$NVMF_NQN" --arg a "$traddr" \
    --argjson p "$trsvcid" --argjson cntlid "$(cat "/sys/class/nvme/$ctrl/cntlid")" --argjson pid "$dead" \
    '{schema_version: 2, controller: $c, cntlid: $cntlid, subnqn: $nqn, traddr: $a, trsvcid: $p,
      instance_id: $id, pid: $pid, pid_start: 1, since_unix_s: 0}' >"$records/$1.json")
}
record "$ctrl" $((inode + 1))
run_numio connect --cleanup --state-dir "$records"
expect_eq "connect --cleanup, a record of another instance: exit status" 0 "$NUMIO_RC"
note "$NUMIO_ERR"
expect_eq "connect --cleanup: the record dropped, $ctrl left alone" yes \
  "$([[ $NUMIO_ERR == *"dropped the record of $ctrl"* ]] && [ -e "/sys/class/nvme/$ctrl" ] && echo yes || echo no)"
expect_eq "connect --cleanup: nvme-cli's namespaces still there" 2 "$(nvmf_devices | wc -l)"
(umask 077 && jq -n '{schema_version: 2, controller: "../../../x", cntlid: 1, subnqn: "n", traddr: "a",
  trsvcid: 1, instance_id: 1, pid: 1, pid_start: 1, since_unix_s: 0}' >"$records/x.json")
run_numio connect --cleanup --state-dir "$records"
expect_eq "connect --cleanup: a record naming ../../../x is not one" yes \
  "$([[ $NUMIO_ERR == *"x.json: not a connection record"* ]] && echo yes || echo no)"
rm -f "$records/x.json"
record "$ctrl" "$inode"
run_numio connect --cleanup --state-dir "$records"
note "$NUMIO_ERR"
expect_eq "connect --cleanup, its own instance and a dead owner: disconnected" yes \
  "$([[ $NUMIO_ERR == *"disconnected $ctrl ($NVMF_NQN at $traddr:$trsvcid)"* ]] && echo yes || echo no)"
nvmf_wait_devices 0
expect_eq "namespaces gone after the cleanup" 0 "$(nvmf_devices | wc -l)"
[ ! -e "/sys/class/nvme/$ctrl" ] || nvme disconnect -d "$ctrl" >/dev/null 2>&1
rm -rf "$records"

NVMF_AS=other nvmf_connect >"$CHECK_OUT/connect-other.log" 2>&1
expect_eq "connect from a host that is not allowed fails" yes "$([ $? -ne 0 ] && echo yes || echo no)"
expect_eq "no namespace for the refused host" 0 "$(nvmf_devices | wc -l)"
expect_eq "the kernel saw Connect Invalid Host" yes \
  "$(dmesg | grep -q "is not allowed, hostnqn: $NVMF_OTHER_HOST" && echo yes || echo no)"
finish
