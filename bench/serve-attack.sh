#!/usr/bin/env bash
# A good host's 4k QD1 random reads against numio serve (a RAM namespace,
# loopback) while the target is attacked as in issue 38, side by side in
# one run: quiet, then under each attack. Prints IOPS and p99 completion
# latency per row and the ratio to the quiet row of its target in the same
# round, the median over the rounds (the goal: >= 80 % of the IOPS, p99
# within 2x).
#
#   bench/serve-attack.sh   # RUNTIME=5 DH_CONNS=3 IDLE_CONNS=64 TLS_CONNS=8 ROUNDS=3
#
# Two targets run side by side, both on CPU 0: a plain one, and one that
# requires TLS (the good host reads over TLS there, against its own quiet
# row). ROUNDS: each round runs every row once; each row shows its median.
#
# The attacker is another machine: its sockets come from ATTACK_FROM
# (default 127.0.0.2; the good host reads from 127.0.0.1), and it runs at
# nice ATTACK_NICE (default 19). On this machine it shares the target's
# and the good host's 2 cores, which a remote attacker does not: at nice
# 19 it has the idle CPU only, so what remains is what the target lets
# the attack cost. Each row says how hard the attack pushed (its rate),
# so a weaker attack shows as one; ATTACK_NICE=0 runs it at full strength
# on the shared cores.
#
# The idle-cpu-hog row is not an attack but this machine's floor: a busy
# loop in SCHED_IDLE on each CPU (where the target's DH and TLS workers
# run too) while the good host reads.
#
# Attacks (crates/nvmf/examples/serve_attack.rs, raw NVMe/TCP or TLS):
#   dh-flood    DH_CONNS connections as a host that must authenticate
#               (its secret unknown to them) loop AUTH_Send Negotiate
#               (ffdhe8192 only) + AUTH_Receive: a key pair each.
#   idle-admin  IDLE_CONNS admin queues with KATO 0 hold controllers (the
#               default max_controllers is 64), as a host that must
#               authenticate (idle-unauth: 8 per address are kept, the
#               rest refused and retried every 50 ms) or as any allowed
#               host (idle-admin); the good host connects after they do,
#               and for idle-admin after they have held their slots past
#               the target's IDLE_ADMIN_GRACE (5 s), when a newcomer may
#               take the slot of the longest idle one.
#   tls-hello   TLS_CONNS sockets at a time replay one ClientHello of a
#               host that holds a PSK: offering only ffdhe8192 (which the
#               target refuses: it offers X25519 and P-256) or X25519 (the
#               target makes its key share, answers and waits for a
#               Finished that never comes), then hang up.
#
# The targets' reactors run on CPU 0, the good host on CPU 1, the attack
# wherever the scheduler puts it. On a shared or 2-core machine the figures
# are noisy: compare rows of one run, not runs.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUNTIME="${RUNTIME:-5}"
DH_CONNS="${DH_CONNS:-3}"
IDLE_CONNS="${IDLE_CONNS:-64}"
TLS_CONNS="${TLS_CONNS:-8}"
ROUNDS="${ROUNDS:-3}"
ATTACK_NICE="${ATTACK_NICE:-19}"
ATTACK_FROM="${ATTACK_FROM:-127.0.0.2}"
PORT="${PORT:-4491}"
TLS_PORT=$((PORT + 1))
NQN=nqn.2026-01.io.numio:attack
VICTIM=nqn.2014-08.org.nvmexpress:uuid:6e756d69-6f6c-4000-8000-0000000000aa
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
command -v jq >/dev/null || { echo "serve-attack: jq is missing (scripts/install-deps)" >&2; exit 2; }
echo "==> building release binaries" >&2
(cd "$ROOT" && cargo build --release -p numio >&2 && cargo build --release -p nvmf --example serve_attack >&2)
NUMIO="$TARGET_DIR/release/numio"
ATTACK="$TARGET_DIR/release/examples/serve_attack"
TMP=$(mktemp -d /tmp/numio-serve-attack.XXXXXX)
serve=""
serve_tls=""
attack=""
cleanup() {
  [ -n "$attack" ] && kill "$attack" 2>/dev/null
  [ -n "$serve" ] && kill "$serve" 2>/dev/null
  [ -n "$serve_tls" ] && kill "$serve_tls" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

GOOD_TLS=nqn.2014-08.org.nvmexpress:uuid:6e756d69-6f6c-4000-8000-0000000000cc
ATTACK_TLS=nqn.2014-08.org.nvmexpress:uuid:6e756d69-6f6c-4000-8000-0000000000dd
"$ATTACK" gen-secret >"$TMP/victim.key"
"$ATTACK" gen-tls-key >"$TMP/good-tls.key"
"$ATTACK" gen-tls-key >"$TMP/attack-tls.key"
chmod 600 "$TMP"/*.key
cat >"$TMP/serve.toml" <<TOML
listen = ["127.0.0.1:$PORT"]
discovery_port = 0
cpus = [0]

[[subsystem]]
nqn = "$NQN"
allow_any_host = true
[[subsystem.host]]
nqn = "$VICTIM"
dhchap_secret = "$TMP/victim.key"
dhchap_dhgroups = ["ffdhe8192"]
[[subsystem.namespace]]
backing = "mem:256M"
TOML
cat >"$TMP/serve-tls.toml" <<TOML
listen = ["127.0.0.1:$TLS_PORT"]
discovery_port = 0
cpus = [0]
tls = true

[[subsystem]]
nqn = "$NQN"
[[subsystem.host]]
nqn = "$GOOD_TLS"
tls_key = "$TMP/good-tls.key"
[[subsystem.host]]
nqn = "$ATTACK_TLS"
tls_key = "$TMP/attack-tls.key"
[[subsystem.namespace]]
backing = "mem:256M"
TOML
# start CONFIG NAME: numio serve in the background (its pid in $started),
# once its port answers (an event, not a clock)
start() {
  local port
  port=$(sed -n 's/^listen = \["127.0.0.1:\([0-9]*\)"\]/\1/p' "$1")
  "$NUMIO" serve --config "$1" >"$TMP/$2.out" 2>"$TMP/$2.err" &
  started=$!
  for _ in $(seq 1 500); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    kill -0 "$started" 2>/dev/null || { cat "$TMP/$2.err" >&2; exit 1; }
    sleep 0.02
  done
  echo "serve-attack: $2 did not listen on $port" >&2
  exit 1
}
start "$TMP/serve.toml" serve
serve=$started
start "$TMP/serve-tls.toml" serve-tls
serve_tls=$started

# bench NAME [tls] -> "iops p99_us" of the good host's reads ("0 -" if
# refused); with tls, over TLS against the TLS target
bench() {
  local url="nvme-tcp://127.0.0.1:$PORT/$NQN" extra=()
  if [ "${2:-}" = tls ]; then
    url="nvme-tcp://127.0.0.1:$TLS_PORT/$NQN"
    extra=(--tls-key-file "$TMP/good-tls.key" --hostnqn "$GOOD_TLS")
  fi
  if taskset -c 1 "$NUMIO" bench "$url" "${extra[@]}" --rw randread --bs 4k \
    --iodepth 1 --runtime "$RUNTIME" --no-progress --json >"$TMP/$1.json" 2>"$TMP/$1.err"; then
    jq -r '[.total.iops, ((.total.latency.clat.percentiles[] | select(.percentile == 99) | .latency_ns) / 1000)] | "\(.[0]) \(.[1])"' "$TMP/$1.json"
  else
    echo "0 -"
    sed 's/^/    bench: /' "$TMP/$1.err" | tail -3 >&2
  fi
}

# under NAME HOLD_S BENCH_ARGS -- ATTACK_ARGS: the attack running (for
# RUNTIME + HOLD_S + 10 s) from ATTACK_FROM, the bench started once it
# is under way and HOLD_S seconds more; prints the bench's "iops p99"
# and the attack's rates per second of its run: "done/s sockets/s".
under() {
  local name=$1 hold=$2 bargs=()
  shift 2
  while [ "$1" != -- ]; do bargs+=("$1"); shift; done
  shift
  local pos=("$@")
  while [[ "${pos[0]}" == --* ]]; do pos=("${pos[@]:2}"); done
  local kind=${pos[0]} port=${pos[1]##*:} conns=${pos[4]}
  nice -n "$ATTACK_NICE" "$ATTACK" --from "$ATTACK_FROM" "$@" $((RUNTIME + hold + 10)) \
    >"$TMP/$name.attack" 2>"$TMP/$name.attack.err" &
  attack=$!
  # Under way: the attacker says it started its connections (an event);
  # attacks that hold sockets also have them accepted.
  for _ in $(seq 1 500); do
    grep -q '^serve_attack: started' "$TMP/$name.attack.err" 2>/dev/null && break
    kill -0 "$attack" 2>/dev/null || break
    sleep 0.02
  done
  if [ "$kind" != tls-hello ]; then
    for _ in $(seq 1 250); do
      n=$(ss -Htn state established "( sport = :$port and dst $ATTACK_FROM )" | wc -l)
      [ "$n" -ge "$conns" ] && break
      sleep 0.02
    done
  fi
  [ "$hold" -eq 0 ] || sleep "$hold"
  local r
  r=$(bench "$name" "${bargs[@]}")
  kill "$attack" 2>/dev/null; wait "$attack" 2>/dev/null || true; attack=""
  # The attacker's last report: "KIND at T s: WHAT N connects M"
  echo "$r $(awk '/ at [0-9.]+ s: / { t = $4; d = $7; c = $9 } END {
    if (t > 0) printf "%.0f %.0f", d / t, c / t; else print "- -" }' "$TMP/$name.attack.err")"
}
# hogged NAME: not an attack, the machine's floor: a busy loop in
# SCHED_IDLE on each CPU while the good host reads. Anything that runs
# beside the reactor here (the target's DH and TLS workers are SCHED_IDLE
# too) costs at least this much: a reactor or host woken on a CPU that is
# running something must first preempt it (in a VM, an IPI that exits to
# the hypervisor) where an idle CPU polls for its wake-up.
hogged() {
  local hogs=() c r
  for c in 0 1; do
    taskset -c "$c" chrt -i 0 sh -c 'while :; do :; done' &
    hogs+=($!)
  done
  r=$(bench "$1")
  kill "${hogs[@]}" 2>/dev/null; wait "${hogs[@]}" 2>/dev/null || true
  echo "$r - -"
}

# ROUNDS rounds, each every row: a row's figure is its median over the
# rounds, so a drift of the shared machine (one quiet row 25 % off the
# next) weighs on every row alike. A row is "NAME BASE": BASE is the
# quiet row it is compared with.
ANY_HOST=nqn.2014-08.org.nvmexpress:uuid:6e756d69-6f6c-4000-8000-0000000000bb
A="127.0.0.1:$PORT"
AT="127.0.0.1:$TLS_PORT"
rows=(
  "quiet 0"
  "idle-cpu-hog-x2 0"
  "dh-flood-x$DH_CONNS 0"
  "idle-unauth-x$IDLE_CONNS 0"
  "idle-admin-x$IDLE_CONNS 0"
  "quiet-tls 5"
  "tls-ffdhe8192-x$TLS_CONNS 5"
  "tls-x25519-x$TLS_CONNS 5"
)
declare -A got=()
for round in $(seq 1 "$ROUNDS"); do
  echo "==> round $round of $ROUNDS" >&2
  got[0]+="$(bench "quiet$round") - -"$'\n'
  got[1]+="$(hogged "hog$round")"$'\n'
  got[2]+="$(under "dh$round" 0 -- dh-flood "$A" "$NQN" "$VICTIM" "$DH_CONNS")"$'\n'
  got[3]+="$(under "unauth$round" 0 -- idle-admin "$A" "$NQN" "$VICTIM" "$IDLE_CONNS")"$'\n'
  got[4]+="$(under "idle$round" 6 -- idle-admin "$A" "$NQN" "$ANY_HOST" "$IDLE_CONNS")"$'\n'
  got[5]+="$(bench "quiet-tls$round" tls) - -"$'\n'
  got[6]+="$(under "ffdhe$round" 0 tls -- --tls-key "$TMP/attack-tls.key" --groups ffdhe8192 \
    tls-hello "$AT" "$NQN" "$ATTACK_TLS" "$TLS_CONNS")"$'\n'
  got[7]+="$(under "x25519$round" 0 tls -- --tls-key "$TMP/attack-tls.key" --groups X25519 \
    tls-hello "$AT" "$NQN" "$ATTACK_TLS" "$TLS_CONNS")"$'\n'
done
# median COLUMN of the lines in $1 ("-" counts as unmeasured)
median() {
  awk -v c="$2" 'NF && $c != "-" { print $c }' <<<"$1" | sort -g | awk '{ v[NR] = $1 } END {
    if (!NR) { print "-"; exit }
    print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
printf '%-22s %9s %9s %7s %7s %9s %9s   %s\n' row IOPS "p99 us" IOPS/q p99/q "attack/s" "socks/s" "each round's IOPS"
for i in "${!rows[@]}"; do
  read -r name base <<<"${rows[$i]}"
  iops=$(median "${got[$i]}" 1)
  p99=$(median "${got[$i]}" 2)
  rate=$(median "${got[$i]}" 3)
  conns=$(median "${got[$i]}" 4)
  # Each round's ratio to the quiet row of the same round, then their
  # median: the machine drifts between rounds more than within one.
  ratios=$(paste -d' ' <(awk 'NF { print $1, $2 }' <<<"${got[$i]}") \
    <(awk 'NF { print $1, $2 }' <<<"${got[$base]}") | awk '$1 > 0 && $3 > 0 {
      print $1 / $3, ($2 == "-" || $4 == "-") ? "-" : $2 / $4 }')
  iq=$(median "$ratios" 1)
  pq=$(median "$ratios" 2)
  each=$(awk 'NF { printf "%s%.0f", (n++ ? " " : ""), $1 }' <<<"${got[$i]}")
  awk -v n="$name" -v i="$iops" -v p="$p99" -v iq="$iq" -v pq="$pq" -v r="$rate" -v c="$conns" -v e="$each" 'BEGIN {
    pr = (p == "-") ? "-" : sprintf("%.1f", p)
    iqs = (iq == "-") ? "-" : sprintf("%.2f", iq); pqs = (pq == "-") ? "-" : sprintf("%.2f", pq)
    printf "%-22s %9.0f %9s %7s %7s %9s %9s   %s\n", n, i, pr, iqs, pqs, r, c, e }'
done
echo "4k randread QD1, ${RUNTIME} s per row, medians of $ROUNDS rounds; IOPS/q and p99/q: the median of each round's ratio to that round's quiet row (numio serve on CPU 0, numio bench on CPU 1 from 127.0.0.1; the attack from $ATTACK_FROM at nice $ATTACK_NICE; attack/s: DH challenges, queues connected or hellos answered; socks/s: sockets opened)"
for t in serve serve-tls; do
  grep -oE 'refused|evicted|auth_[a-z_]+|tls_[a-z_]+|controller limit|backoff' "$TMP/$t.err" | sort | uniq -c | sed "s/^/  $t log: /" || true
done
