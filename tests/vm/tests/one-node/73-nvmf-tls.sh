#!/usr/bin/env bash
# vm-lab: timeout=480
# NVMe/TCP over TLS 1.3 with a pre-shared key, the kernel alone on both
# ends first (the kernel control, tls_kernel_control): the kernel's nvmet-tcp
# target on 127.0.0.1 with a port that requires TLS 1.3 (addr_tsas tls1.3,
# addr_treq required), one random 32-byte PSK in the kernel's .nvme keyring
# under a v1 identity "NVMe1R01 HOSTNQN SUBNQN DIGEST", tlshd (ktls-utils)
# doing both ends' handshakes; the kernel host connects with the fabrics
# option `tls` (its default PSK lookup: a prefix match on "NVMe1R01 HOSTNQN
# SUBNQN") and with `tls,tls_key=SERIAL`, every queue is a TLS 1.3 session
# (one tlshd handshake per end and queue), sysfs names the negotiated key, the
# namespace reads back what was written (O_DIRECT, md5, and the target's
# backing file holds the same bytes), and a connect without TLS to that port
# is refused. Then numio against the kernel, with keys nvme-cli makes
# (`nvme gen-tls-key`) and the kernel's side of each key derived by
# tls-psk.py (Python, not numio): the Linux host connects to
# `numio serve --tls` (every queue over TLS, fio verify, a plain connect
# refused with a line that says so), and `numio bench --tls-key-file` writes
# and verifies through the kernel's TLS target.
# Debian's 6.1 is built without CONFIG_NVME_TCP_TLS and without the
# handshake netlink family: there the check proves only that its fabrics
# driver refuses the `tls` option and that tlshd, finding no handshake
# service, says so and exits; the 6.12 pass runs the interop.
. "$(dirname "$0")/nvmf-lib.bash"
nvmf_setup

TLS_NQN=nqn.2026-11.io.numio:tls-kernel-target
TLS_PORT=4430
TLS_PORT_ID=73
CFG=/sys/kernel/config/nvmet
TLS_SUB=$CFG/subsystems/$TLS_NQN
TLS_PORT_DIR=$CFG/ports/$TLS_PORT_ID
TLS_IMG=/tmp/nvmet-tls-ns1.img
TLS_IMG_BYTES=$((16 << 20))
TLS_PSK=/tmp/nvmet-tls.psk
TLS_BASE_OPTS="transport=tcp,traddr=127.0.0.1,trsvcid=$TLS_PORT,nqn=$TLS_NQN,hostnqn=$NVMF_HOST,hostid=$NVMF_HOSTID"
TLS_KEY_SERIAL=

tls_cleanup() {
  nvmf_disconnect "$TLS_NQN"
  rm -f "$TLS_PORT_DIR/subsystems/$TLS_NQN" "$TLS_SUB/allowed_hosts/$NVMF_HOST" 2>/dev/null
  rmdir "$TLS_PORT_DIR" "$CFG/hosts/$NVMF_HOST" 2>/dev/null
  [ -d "$TLS_SUB/namespaces/1" ] && echo 0 >"$TLS_SUB/namespaces/1/enable" 2>/dev/null
  rmdir "$TLS_SUB/namespaces/1" "$TLS_SUB" 2>/dev/null
  rm -f "$TLS_IMG" "$TLS_PSK"
  dmesg >"$CHECK_OUT/dmesg.log" 2>&1
  nvmf_cleanup
}
trap tls_cleanup EXIT

# ---- Debian's 6.1: no TLS in its NVMe/TCP host or target ----
if [ ! -d /sys/module/nvme_keyring ]; then
  case $(uname -r) in
    6.1.*) ;;
    *)
      not_ok "nvme_keyring is not loaded on $(uname -r) after nvme-tcp: this kernel's NVMe/TCP has no TLS"
      finish
      ;;
  esac
  note "6.1 is built without CONFIG_NVME_TCP_TLS: the 6.12 pass runs the interop"
  if nvmf_fabrics_connect "$TLS_BASE_OPTS,tls" >"$CHECK_OUT/connect-tls.out" 2>&1; then
    not_ok "6.1: the fabrics driver accepted the tls option: $(cat "$CHECK_OUT/connect-tls.out")"
  else
    ok "6.1: the fabrics driver refuses the tls option ($(tail -n 1 "$CHECK_OUT/connect-tls.out" | sed 's/.*: //'))"
    expect_eq "6.1: the kernel says why" yes \
      "$(dmesg | grep -q "unknown parameter or missing value 'tls'" && echo yes || echo no)"
  fi
  # tlshd runs from the host's root in the guest, but 6.1 has no handshake
  # netlink family (Linux 6.4): it must say so and exit rather than wait.
  if tlshd=$(nvmf_tlshd_path 2>"$CHECK_OUT/tlshd-path.err"); then
    printf '[debug]\nloglevel=1\n[authenticate]\nkeyrings=.nvme\n' >"$NVMF_TLSHD_CONF"
    timeout 20 "$tlshd" -s -c "$NVMF_TLSHD_CONF" >"$NVMF_TLSHD_LOG" 2>&1
    expect_eq "6.1: tlshd exits (status; 124 = still waiting)" 0 "$?"
    expect_eq "6.1: tlshd finds no handshake service" yes \
      "$(grep -q 'Kernel handshake service is not available' "$NVMF_TLSHD_LOG" && echo yes || echo no)"
  else
    not_ok "$(cat "$CHECK_OUT/tlshd-path.err")"
  fi
  # numio serve --tls still refuses this host's plain-text connect, by name.
  mkdir -p "$CHECK_OUT/keys" && chmod 700 "$CHECK_OUT/keys"
  (umask 077 && nvme gen-tls-key --hmac=1 >"$CHECK_OUT/keys/host.tls") || { not_ok "nvme gen-tls-key failed"; finish; }
  NVMF_ALLOW="$NVMF_HOST,tls-key=$CHECK_OUT/keys/host.tls"
  nvmf_start --tls
  if ctrl=$(nvmf_fabrics_connect "transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=$NVMF_NQN,hostnqn=$NVMF_HOST,hostid=$NVMF_HOSTID" \
    2>"$CHECK_OUT/connect-numio-plain.err"); then
    not_ok "6.1: numio serve --tls admitted a plain-text host ($ctrl)"
  else
    ok "6.1: numio serve --tls refuses the plain-text host ($(tail -n 1 "$CHECK_OUT/connect-numio-plain.err" | sed 's/.*: //'))"
    for _ in $(seq 1 100); do
      grep -q 'plain-text NVMe/TCP' "$NVMF_LOG" && break
      sleep 0.1
    done
    expect_eq "6.1: numio serve names the mistake" yes \
      "$(grep -q 'plain-text NVMe/TCP (an ICReq) where TLS is required' "$NVMF_LOG" && echo yes || echo no)"
  fi
  finish
fi

# ---- 6.12: the kernel's target and host, TLS through tlshd ----

# tls_kernel_target_up: the kernel's nvmet-tcp target: subsystem TLS_NQN
# (only NVMF_HOST allowed) with a 16 MiB file on tmpfs as namespace 1, on
# port 127.0.0.1:TLS_PORT requiring TLS 1.3.
tls_kernel_target_up() {
  vm-modprobe nvmet nvmet-tcp >"$CHECK_OUT/modprobe-nvmet.log" 2>&1 ||
    { not_ok "vm-modprobe nvmet nvmet-tcp: $(tail -n 3 "$CHECK_OUT/modprobe-nvmet.log")"; finish; }
  [ -d "$CFG" ] || { not_ok "no $CFG after loading nvmet"; finish; }
  truncate -s "$TLS_IMG_BYTES" "$TLS_IMG"
  {
    mkdir "$TLS_SUB" &&
      echo 0 >"$TLS_SUB/attr_allow_any_host" &&
      mkdir "$CFG/hosts/$NVMF_HOST" &&
      ln -s "$CFG/hosts/$NVMF_HOST" "$TLS_SUB/allowed_hosts/$NVMF_HOST" &&
      mkdir "$TLS_SUB/namespaces/1" &&
      echo -n "$TLS_IMG" >"$TLS_SUB/namespaces/1/device_path" &&
      echo 1 >"$TLS_SUB/namespaces/1/buffered_io" &&
      echo 1 >"$TLS_SUB/namespaces/1/enable" &&
      mkdir "$TLS_PORT_DIR" &&
      echo tcp >"$TLS_PORT_DIR/addr_trtype" &&
      echo ipv4 >"$TLS_PORT_DIR/addr_adrfam" &&
      echo 127.0.0.1 >"$TLS_PORT_DIR/addr_traddr" &&
      echo "$TLS_PORT" >"$TLS_PORT_DIR/addr_trsvcid" &&
      echo tls1.3 >"$TLS_PORT_DIR/addr_tsas" &&
      echo required >"$TLS_PORT_DIR/addr_treq" &&
      ln -s "$TLS_SUB" "$TLS_PORT_DIR/subsystems/$TLS_NQN"
  } 2>"$CHECK_OUT/configfs.err" ||
    { not_ok "nvmet configfs set-up: $(cat "$CHECK_OUT/configfs.err"); dmesg: $(dmesg | tail -n 3 | tr '\n' ' ')"; finish; }
}

# tls_wait_namespace CTRL: prints CTRL's namespace block device once it shows.
tls_wait_namespace() {
  nvmf_wait_devices 1 "$TLS_NQN" && nvmf_devices "$TLS_NQN"
}

# The kernel control: the Linux host against the Linux target over TLS, no
# numio involved. Every result line starts "kernel control:".
tls_kernel_control() {
  local identity digest ctrl dev t0 want_key
  tls_kernel_target_up
  expect_eq "kernel control: port addr_tsas, addr_treq" "tls1.3 required" \
    "$(cat "$TLS_PORT_DIR/addr_tsas") $(cat "$TLS_PORT_DIR/addr_treq")"

  # A v1 identity; both ends find the key in the same keyring, so the digest
  # field needs only to be there (it is not the spec's HMAC of the PSK).
  umask 077
  head -c 32 /dev/urandom >"$TLS_PSK"
  digest=$(head -c 32 /dev/urandom | base64)
  identity="NVMe1R01 $NVMF_HOST $TLS_NQN $digest"
  if TLS_KEY_SERIAL=$(nvmf_psk_insert "$identity" "$TLS_PSK" 2>"$CHECK_OUT/keyctl.err") &&
    [[ $TLS_KEY_SERIAL =~ ^[0-9]+$ ]]; then
    ok "kernel control: PSK inserted into .nvme as key $TLS_KEY_SERIAL ($(printf '%08x' "$TLS_KEY_SERIAL"))"
    expect_eq "kernel control: the key's type and identity" "psk;$identity" \
      "$(keyctl rdescribe "$TLS_KEY_SERIAL" | awk -F';' '{ print $1 ";" $5 }')"
  else
    not_ok "kernel control: keyctl padd psk: $(cat "$CHECK_OUT/keyctl.err")"
    finish
  fi
  want_key=$(printf '%08x' "$TLS_KEY_SERIAL")

  # Default lookup: `tls` without a key.
  local before queues sessions
  before=$(grep -c 'Handshake with .* was successful' "$NVMF_TLSHD_LOG")
  t0=$SECONDS
  if ctrl=$(nvmf_fabrics_connect "$TLS_BASE_OPTS,tls" 2>"$CHECK_OUT/connect-tls.err"); then
    ok "kernel control: the host connects with tls ($ctrl, $((SECONDS - t0)) s)"
    # Each queue (admin and I/O) is its own TLS session: tlshd logs one
    # handshake per end (host's client, target's server).
    queues=$(($(dmesg | sed -n "s/.* $ctrl: creating \([0-9]*\) I\/O queues.*/\1/p" | tail -n 1) + 1))
    expect_eq "kernel control: handshakes (host and target end of each of $queues queues)" $((2 * queues)) \
      $(($(grep -c 'Handshake with .* was successful' "$NVMF_TLSHD_LOG") - before))
    sessions=$(grep -o 'Session description: .*' "$NVMF_TLSHD_LOG" | sort | uniq -c | sed 's/^ *//; s/Session description: //' | tr '\n' ';')
    note "tlshd sessions (count, description): $sessions"
    expect_eq "kernel control: sessions not TLS 1.3" 0 "$(grep 'Session description: ' "$NVMF_TLSHD_LOG" | grep -vc '(TLS1.3)')"
    expect_eq "kernel control: sysfs tls_key (the negotiated PSK)" "$want_key" \
      "$(cat "/sys/class/nvme/$ctrl/tls_key" 2>&1)"
    if dev=$(tls_wait_namespace); then
      ok "kernel control: namespace $dev, $(($(cat "/sys/block/$dev/size") * 512)) bytes"
      head -c $((4 << 20)) /dev/urandom >/tmp/tls-data
      dd if=/tmp/tls-data of="/dev/$dev" bs=1M oflag=direct status=none 2>"$CHECK_OUT/dd.err" ||
        not_ok "kernel control: dd write: $(cat "$CHECK_OUT/dd.err")"
      local want got backing
      want=$(md5sum </tmp/tls-data | cut -d' ' -f1)
      got=$(nvmf_md5 "$dev" 4)
      backing=$(head -c $((4 << 20)) "$TLS_IMG" | md5sum | cut -d' ' -f1)
      expect_eq "kernel control: 4 MiB read back over TLS (O_DIRECT, md5)" "$want" "$got"
      expect_eq "kernel control: the target's backing file holds them" "$want" "$backing"
      rm -f /tmp/tls-data
    else
      not_ok "kernel control: no namespace of $TLS_NQN after the TLS connect"
    fi
    nvmf_disconnect "$TLS_NQN"
    nvmf_wait_devices 0 "$TLS_NQN" || not_ok "kernel control: the namespace stays after disconnect"
  else
    not_ok "kernel control: the TLS connect failed: $(cat "$CHECK_OUT/connect-tls.err"); tlshd: $(tail -n 3 "$NVMF_TLSHD_LOG" | tr '\n' ' '); dmesg: $(dmesg | tail -n 5 | tr '\n' ' ')"
  fi

  # The key named: tls,tls_key=SERIAL (on 6.12 tls_key alone connects
  # without TLS: the host starts TLS only with `tls`).
  if ctrl=$(nvmf_fabrics_connect "$TLS_BASE_OPTS,tls,tls_key=$TLS_KEY_SERIAL" 2>"$CHECK_OUT/connect-tls-key.err"); then
    expect_eq "kernel control: tls,tls_key=$TLS_KEY_SERIAL connects; sysfs tls_configured_key, tls_key" \
      "$want_key $want_key" "$(cat "/sys/class/nvme/$ctrl/tls_configured_key" "/sys/class/nvme/$ctrl/tls_key" 2>&1 | tr '\n' ' ' | sed 's/ $//')"
    tls_wait_namespace >/dev/null || not_ok "kernel control: no namespace after the tls_key connect"
    nvmf_disconnect "$TLS_NQN"
    nvmf_wait_devices 0 "$TLS_NQN"
  else
    not_ok "kernel control: the tls,tls_key=$TLS_KEY_SERIAL connect failed: $(cat "$CHECK_OUT/connect-tls-key.err")"
  fi

  # Without TLS the port that requires it refuses the host (6.12's target
  # hands the plain ICReq to tlshd as a ClientHello, which fails, and resets).
  local failed_before
  failed_before=$(grep -c "Handshake with .* failed" "$NVMF_TLSHD_LOG")
  t0=$SECONDS
  if ctrl=$(nvmf_fabrics_connect "$TLS_BASE_OPTS" 2>"$CHECK_OUT/connect-plain.err"); then
    not_ok "kernel control: a connect without TLS was admitted ($ctrl)"
    nvmf_disconnect "$TLS_NQN"
  else
    ok "kernel control: a connect without TLS is refused ($(tail -n 1 "$CHECK_OUT/connect-plain.err" | sed 's/.*: //'), $((SECONDS - t0)) s)"
    note "tlshd: $(($(grep -c "Handshake with .* failed" "$NVMF_TLSHD_LOG") - failed_before)) failed handshake(s): $(grep -e 'audit: ' -e 'unhandled error' "$NVMF_TLSHD_LOG" | tail -n 2 | sed 's/^tlshd\[[0-9]*\]: //' | tr '\n' ';')"
  fi
}

# tls_key_for HOSTNQN SUBNQN: the identity and TLS PSK the Linux host uses
# for the configured key $TLS_KEY (tls-psk.py), inserted into .nvme; prints
# the key's serial.
tls_key_for() {
  local identity
  identity=$(python3 "$(dirname "$0")/tls-psk.py" "$TLS_KEY" "$1" "$2" "$CHECK_OUT/keys/psk-$2") ||
    { not_ok "tls-psk.py failed for $2"; return 1; }
  nvmf_psk_insert "$identity" "$CHECK_OUT/keys/psk-$2"
}

# The Linux host against numio serve --tls.
tls_numio_serve() {
  local serial ctrl connected over_tls
  serial=$(tls_key_for "$NVMF_HOST" "$NVMF_NQN") || return
  NVMF_ALLOW="$NVMF_HOST,tls-key=$TLS_KEY"
  NVMF_LOG=$CHECK_OUT/serve-tls.log
  nvmf_start --tls
  expect_eq "numio serve: listening line" yes \
    "$(grep -q 'NVMe/TCP listening on .*(TLS 1.3 required)' "$NVMF_LOG" && echo yes || echo no)"
  if ctrl=$(nvmf_fabrics_connect "transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=$NVMF_NQN,hostnqn=$NVMF_HOST,hostid=$NVMF_HOSTID,tls" \
    2>"$CHECK_OUT/connect-numio.err"); then
    ok "the Linux host connects to numio serve over TLS ($ctrl)"
    expect_eq "sysfs tls_key (the PSK tls-psk.py derived)" "$(printf '%08x' "$serial")" \
      "$(cat "/sys/class/nvme/$ctrl/tls_key" 2>&1)"
    if nvmf_wait_devices 2; then
      nvmf_fio_verify numio-serve-tls "$(nvmf_devices | head -n 1)" 8M
    else
      not_ok "numio serve's namespaces did not appear: $(nvmf_devices | tr '\n' ' ')"
    fi
    connected=$(grep -c "connected $NVMF_NQN qid" "$NVMF_LOG")
    over_tls=$(grep "connected $NVMF_NQN qid" "$NVMF_LOG" | grep -c 'tls TLS_AES_128_GCM_SHA256$')
    expect_eq "queues numio serve connected over TLS 1.3 (of $connected)" "$connected" "$over_tls"
    nvmf_disconnect
    nvmf_wait_devices 0 || not_ok "numio serve's namespaces stay after disconnect"
  else
    not_ok "the Linux host's TLS connect to numio serve failed: $(cat "$CHECK_OUT/connect-numio.err"); numio serve: $(tail -n 3 "$NVMF_LOG" | tr '\n' ' '); tlshd: $(tail -n 2 "$NVMF_TLSHD_LOG" | tr '\n' ' ')"
  fi
  if ctrl=$(nvmf_fabrics_connect "transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=$NVMF_NQN,hostnqn=$NVMF_HOST,hostid=$NVMF_HOSTID" \
    2>"$CHECK_OUT/connect-numio-plain.err"); then
    not_ok "numio serve --tls admitted a plain-text host ($ctrl)"
    nvmf_disconnect
  else
    ok "numio serve --tls refuses a plain-text connect ($(tail -n 1 "$CHECK_OUT/connect-numio-plain.err" | sed 's/.*: //'))"
    local i
    for i in $(seq 1 100); do
      grep -q 'plain-text NVMe/TCP' "$NVMF_LOG" && break
      sleep 0.1
    done
    expect_eq "numio serve names the plain-text host's mistake" yes \
      "$(grep -q 'plain-text NVMe/TCP (an ICReq) where TLS is required' "$NVMF_LOG" && echo yes || echo no)"
  fi
  kill -TERM "$NVMF_PID" && wait "$NVMF_PID"
  NVMF_PID=
}

# numio bench through the kernel's TLS target (left up by the control).
tls_numio_bench() {
  local url state
  tls_key_for "$NVMF_HOST" "$TLS_NQN" >/dev/null || return
  url=nvme-tcp://127.0.0.1:$TLS_PORT/$TLS_NQN/1
  state=$CHECK_OUT/verify-state.json
  if "$NUMIO" bench --backend tcp --hostnqn "$NVMF_HOST" --tls-key-file "$TLS_KEY" \
    --rw write --bs 64k --size 4m --force-write --verify --verify-state "$state" --no-progress "$url" \
    >"$CHECK_OUT/bench-tls.out" 2>&1; then
    ok "numio bench writes through the kernel's TLS target (verify blocks, 4 MiB)"
    expect_eq "numio bench ran over TLS 1.3" yes \
      "$(grep -q 'TLS 1.3 TLS_AES_128_GCM_SHA256' "$CHECK_OUT/bench-tls.out" && echo yes || echo no)"
    "$NUMIO" bench --backend tcp --hostnqn "$NVMF_HOST" --tls-key-file "$TLS_KEY" \
      --rw read --bs 64k --size 4m --verify-only --verify-state "$state" --no-progress "$url" \
      >"$CHECK_OUT/bench-tls-verify.out" 2>&1
    expect_eq "numio bench --verify-only over TLS: exit status" 0 "$?"
  else
    not_ok "numio bench through the kernel's TLS target: $(tail -n 4 "$CHECK_OUT/bench-tls.out" | tr '\n' ' '); tlshd: $(tail -n 2 "$NVMF_TLSHD_LOG" | tr '\n' ' ')"
  fi
}

nvmf_tls_setup
nvmf_tlshd_start
tls_kernel_control
mkdir -p "$CHECK_OUT/keys" && chmod 700 "$CHECK_OUT/keys"
TLS_KEY=$CHECK_OUT/keys/host.tls
(umask 077 && nvme gen-tls-key --hmac=1 >"$TLS_KEY") || { not_ok "nvme gen-tls-key failed"; finish; }
tls_numio_serve
tls_numio_bench
finish
