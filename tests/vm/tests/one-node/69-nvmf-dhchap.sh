#!/usr/bin/env bash
# DH-HMAC-CHAP between the Linux host and numio serve, after blktests'
# nvme/041-045: the kernel's nvme-tcp host connects with secrets nvme-cli
# made (`nvme gen-dhchap-key`), each hash with a DH group, one-way and
# bidirectional; every queue authenticates and fio verifies data over it;
# a host without a secret, with a wrong one, or holding a controller secret
# the target does not have is refused; re-authentication (a secret written
# to the controller's sysfs dhchap_secret) succeeds on every queue.
# Debian's 6.1 kernel is built without CONFIG_NVME_AUTH: there the check
# proves only that such a host is refused by a target that requires
# authentication (and served by one that does not); the 6.12 pass runs the
# interop.
. "$(dirname "$0")/nvmf-lib.bash"
nvmf_setup
if [ ! -d /sys/module/nvme_auth ]; then
  case $(uname -r) in
    6.1.*) ;;
    *)
      not_ok "nvme_auth is not loaded on $(uname -r): the host cannot authenticate"
      finish
      ;;
  esac
  note "$(uname -r) is built without CONFIG_NVME_AUTH: the 6.12 pass runs the interop"
  umask 077
  secret=$(mktemp /tmp/dhchap.XXXXXX)
  nvme gen-dhchap-key -m 1 -n "$NVMF_HOST" >"$secret" || { not_ok "nvme gen-dhchap-key failed"; finish; }
  NVMF_ALLOW="$NVMF_HOST,dhchap-secret=$secret"
  nvmf_start
  if nvmf_connect_raw >"$CHECK_OUT/connect.out" 2>&1; then
    not_ok "a host that cannot authenticate was admitted"
  else
    ok "a host that cannot authenticate is refused"
  fi
  expect_eq "queues authenticated" 0 "$(grep -c "authenticated $NVMF_NQN" "$NVMF_LOG")"
  expect_eq "namespaces the host sees" 0 "$(nvmf_devices | wc -l)"
  kill -TERM "$NVMF_PID" && wait "$NVMF_PID"
  NVMF_PID=
  NVMF_ALLOW=$NVMF_HOST
  NVMF_LOG=$CHECK_OUT/serve-plain.log
  nvmf_start
  nvmf_connect_raw >"$CHECK_OUT/connect-plain.out" 2>&1 && nvmf_wait_devices 2 &&
    ok "the same host is served where no secret is required" ||
    not_ok "connect without authentication: $(cat "$CHECK_OUT/connect-plain.out")"
  rm -f "$secret"
  finish
fi

keys=$CHECK_OUT/keys
mkdir -p "$keys" && chmod 700 "$keys"
umask 077
nvme gen-dhchap-key -m 1 -n "$NVMF_HOST" >"$keys/host" &&
  nvme gen-dhchap-key -m 3 -l 64 -n "$NVMF_NQN" >"$keys/ctrl" &&
  nvme gen-dhchap-key -m 0 -l 48 >"$keys/wrong" ||
  { not_ok "nvme gen-dhchap-key failed"; finish; }
host_key=$(cat "$keys/host") ctrl_key=$(cat "$keys/ctrl") wrong_key=$(cat "$keys/wrong")

# Connects through /dev/nvme-fabrics with the kernel's dhchap options
# (what nvme connect --dhchap-secret/--dhchap-ctrl-secret write); prints the
# controller. Empty arguments leave an option out.
auth_connect() {
  local fd reply opts="transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=$NVMF_NQN,hostnqn=$NVMF_HOST,hostid=$NVMF_HOSTID"
  [ -n "$1" ] && opts+=",dhchap_secret=$1"
  [ -n "$2" ] && opts+=",dhchap_ctrl_secret=$2"
  exec {fd}<>/dev/nvme-fabrics || return 1
  printf '%s' "$opts" >&"$fd" || { exec {fd}>&-; return 1; }
  read -r -u "$fd" reply
  exec {fd}>&-
  [[ $reply =~ instance=([0-9]+) ]] || return 1
  printf 'nvme%s\n' "${BASH_REMATCH[1]}"
}

nvmf_stop() {
  nvmf_disconnect
  nvmf_wait_devices 0
  kill -TERM "$NVMF_PID" && wait "$NVMF_PID"
  NVMF_PID=
}

# Waits until the target logged at least N lines matching PATTERN.
wait_lines() {
  local n=$1 pattern=$2 i
  for ((i = 0; i < 600; i++)); do
    [ "$(grep -c -- "$pattern" "$NVMF_LOG")" -ge "$n" ] && return 0
    sleep 0.1
  done
  return 1
}

# One target configuration, one good connect, fio verify.
good_case() {
  local hash=$1 group=$2 bidir=$3 name=$1-$2-$3 ctrl
  NVMF_LOG=$CHECK_OUT/serve-$name.log
  NVMF_ALLOW="$NVMF_HOST,dhchap-secret=$keys/host,dhchap-hash=$hash,dhchap-dhgroup=$group"
  [ "$bidir" = yes ] && NVMF_ALLOW+=",dhchap-ctrl-secret=$keys/ctrl"
  nvmf_start
  local t0=$SECONDS
  if ctrl=$(auth_connect "$host_key" "$([ "$bidir" = yes ] && echo "$ctrl_key")" 2>"$CHECK_OUT/$name.connect") &&
    nvmf_wait_devices 2; then
    note "$name: connected in $((SECONDS - t0)) s"
    local queues authed
    queues=$(grep -c "connected $NVMF_NQN qid" "$NVMF_LOG")
    authed=$(grep -c "authenticated $NVMF_NQN qid .* host $NVMF_HOST hash $hash dhgroup $group bidirectional $bidir" "$NVMF_LOG")
    expect_eq "$name: queues authenticated, of $queues connected" "$queues" "$authed"
    expect_eq "$name: the host kept its secret" "$host_key" "$(cat "/sys/class/nvme/$ctrl/dhchap_secret")"
    nvmf_fio_verify "$name" "$(nvmf_devices | sed -n 2p)" 4M
  else
    not_ok "$name: connect failed: $(cat "$CHECK_OUT/$name.connect"); numio serve said: $(tail -n 3 "$NVMF_LOG")"
  fi
  [ "$name" = sha512-ffdhe3072-yes ] || nvmf_stop
}

good_case sha256 null no
good_case sha384 ffdhe2048 yes
good_case sha512 ffdhe3072 yes

# The last target stays up: refusals and re-authentication against it.
refused() {
  local what=$1 failures_before
  failures_before=$(grep -c "DH-HMAC-CHAP failed for host.*${4:-}" "$NVMF_LOG")
  if auth_connect "$2" "$3" >"$CHECK_OUT/refused.out" 2>&1; then
    not_ok "$what: the connect succeeded"
    nvmf_disconnect
  else
    ok "$what: refused"
  fi
  [ -z "${4:-}" ] && return
  wait_lines $((failures_before + 1)) "DH-HMAC-CHAP failed for host.*$4" &&
    ok "$what: numio serve says why ($4)" ||
    not_ok "$what: no failure line with '$4': $(tail -n 3 "$NVMF_LOG")"
}
nvmf_disconnect
nvmf_wait_devices 0
refused "no secret" "" ""
refused "a wrong host secret" "$wrong_key" "" "wrong secret"
refused "a controller secret the target does not hold" "$host_key" "$wrong_key" "refused the target's response"

# Re-authentication: the host renegotiates every queue of a live
# controller when its secret is written again (blktests nvme/044).
if ctrl=$(auth_connect "$host_key" "$ctrl_key" 2>"$CHECK_OUT/reauth.connect") && nvmf_wait_devices 2; then
  before=$(grep -c "authenticated $NVMF_NQN" "$NVMF_LOG")
  queues=$(grep -c "authenticated $NVMF_NQN qid .* cntlid $(cat "/sys/class/nvme/$ctrl/cntlid") " "$NVMF_LOG")
  echo "$host_key" >"/sys/class/nvme/$ctrl/dhchap_secret"
  wait_lines $((before + queues)) "authenticated $NVMF_NQN" &&
    ok "re-authentication: all $queues queues authenticated again" ||
    not_ok "re-authentication: $(($(grep -c "authenticated $NVMF_NQN" "$NVMF_LOG") - before)) of $queues queues re-authenticated"
  expect_eq "I/O after re-authentication" 1048576 \
    "$(dd if="/dev/$(nvmf_devices | head -n1)" bs=1M count=1 iflag=direct status=none | wc -c)"
else
  not_ok "connect for re-authentication: $(cat "$CHECK_OUT/reauth.connect")"
fi

# numio connect with the same secrets, read from files: it connects,
# authenticates both ways, prints the device and (its stdin at EOF at once)
# disconnects; the secrets appear in none of its output.
nvmf_disconnect
nvmf_wait_devices 0
before=$(grep -c "authenticated $NVMF_NQN qid .* bidirectional yes" "$NVMF_LOG")
"$NUMIO" connect "nvme-tcp://127.0.0.1:4420/$NVMF_NQN/1" --hostnqn "$NVMF_HOST" --hostid "$NVMF_HOSTID" \
  --dhchap-secret-file "$keys/host" --dhchap-ctrl-secret-file "$keys/ctrl" \
  </dev/null >"$CHECK_OUT/numio-connect.out" 2>"$CHECK_OUT/numio-connect.err"
expect_eq "numio connect with DH-HMAC-CHAP exits 0" 0 $?
grep -Eq '^device /dev/nvme[0-9]+n[0-9]+$' "$CHECK_OUT/numio-connect.out"
expect_eq "numio connect printed the device" 0 $?
after=$(grep -c "authenticated $NVMF_NQN qid .* bidirectional yes" "$NVMF_LOG")
[ "$after" -gt "$before" ] && ok "numio connect's queues authenticated both ways ($((after - before)))" ||
  not_ok "numio connect: no queue authenticated: $(cat "$CHECK_OUT/numio-connect.err")"
grep -qF -e "${host_key#DHHC-1:??:}" -e "${ctrl_key#DHHC-1:??:}" "$CHECK_OUT/numio-connect.out" "$CHECK_OUT/numio-connect.err"
expect_eq "no secret in numio connect's output" 1 $?
expect_eq "numio connect disconnected" 0 "$(nvmf_devices | wc -l)"
nvmf_stop
finish
