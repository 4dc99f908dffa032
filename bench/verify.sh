#!/usr/bin/env bash
# What --verify costs, against what fio's verify=crc32c costs on the same
# run: 4 KiB sequential writes of the whole target with verify headers,
# then the read-back that checks them (fio: verify_only=1 of the same job;
# numio: --verify-only, replaying the write run's saved state), each tool
# on its own copy of one file in a tmpfs (RAM: the device is not the
# bottleneck, so the checksums and headers are what is measured), one
# pinned core, buffered (tmpfs before Linux 6.6 has no O_DIRECT), QD 32.
# Alternating runs in one invocation; medians and numio / fio printed side
# by side. Goal: numio's MB/s at least fio's in both phases (ratio >= 1).
# Env: CPU (default 1), REPEATS (3), SIZE_MB (512), BS (4k), QD (32).
source "$(dirname "$0")/lib.sh"
SIZE_MB="${SIZE_MB:-512}"
BS="${BS:-4k}"
QD="${QD:-32}"
DIR=$(mktemp -d /dev/shm/numio-bench-verify.XXXXXX)
trap 'rm -rf "$DIR" "$RESULTS"' EXIT
STATE="$DIR/verify-state.json"

fio_job() { # PHASE(write|verify) OUT
  local only=0; [ "$1" = verify ] && only=1
  fio --name=v --filename="$DIR/fio.img" --size="${SIZE_MB}M" --ioengine=io_uring --direct=0 \
      --rw=write --bs="$BS" --iodepth="$QD" --verify=crc32c --verify_only="$only" \
      --do_verify="$only" --verify_state_save=0 --cpus_allowed="$CPU" \
      --output-format=json --output="$2" >/dev/null
}

numio_job() { # PHASE(write|verify) OUT
  local phase=(--rw write --verify)
  [ "$1" = verify ] && phase=(--verify-only)
  "$NUMIO" bench "$DIR/numio.img" --backend uring --buffered --bs "$BS" --iodepth "$QD" \
      --size "${SIZE_MB}m" --no-time-based --cpus "$CPU" --verify-state "$STATE" \
      --no-progress --json "${phase[@]}" >"$2" 2>"$2.err" || {
    echo "bench: numio failed ($1): $(tail -n 3 "$2.err")" >&2; exit 1; }
}

# mb_s FILE PHASE -> MB/s of the phase (fio: write bw, or the verify reads;
# numio: write or read bandwidth), and the verify errors seen.
mb_s() {
  python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); phase = sys.argv[2]
if "jobs" in j:
    job = j["jobs"][0]
    bw = job["write" if phase == "write" else "read"]["bw_bytes"]
    errs = job.get("total_err", 0)
else:
    bw = j["total"]["bandwidth_bytes_per_s"]
    errs = sum(e["count"] for e in j["errors"])
print(f"{bw / 1e6:.1f} {errs}")
PY
}

build_release
truncate -s "${SIZE_MB}M" "$DIR/fio.img" "$DIR/numio.img"
for i in $(seq "$REPEATS"); do
  for phase in write verify; do
    fio_job "$phase" "$RESULTS/fio.$phase.$i.json"
    echo "$(mb_s "$RESULTS/fio.$phase.$i.json" "$phase")" >>"$RESULTS/fio.$phase.txt"
    numio_job "$phase" "$RESULTS/numio.$phase.$i.json"
    echo "$(mb_s "$RESULTS/numio.$phase.$i.json" "$phase")" >>"$RESULTS/numio.$phase.txt"
  done
done
python3 - "$RESULTS" "$SIZE_MB" "$BS" "$QD" "$CPU" <<'PY'
import sys, statistics as st
res, size, bs, qd, cpu = sys.argv[1:]
print(f"\n## verify cost: {size} MiB, bs {bs}, QD {qd}, CPU {cpu}, tmpfs, buffered (median of runs)")
print("| phase | fio verify=crc32c MB/s | numio --verify MB/s | numio / fio | verify errors (fio, numio) |")
print("|---|---:|---:|---:|---:|")
for phase, name in (("write", "write with headers"), ("verify", "read back and check")):
    rows = {t: [list(map(float, l.split())) for l in open(f"{res}/{t}.{phase}.txt")] for t in ("fio", "numio")}
    f = st.median(r[0] for r in rows["fio"]); n = st.median(r[0] for r in rows["numio"])
    ef = int(sum(r[1] for r in rows["fio"])); en = int(sum(r[1] for r in rows["numio"]))
    print(f"| {name} | {f:,.0f} | {n:,.0f} | **{n / f if f else float('nan'):.2f}x** | {ef}, {en} |")
PY
