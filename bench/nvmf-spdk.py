#!/usr/bin/env python3
"""numio against SPDK over NVMe/TCP, side by side in one run (issue #21).

Pairings (target + initiator), alternating inside every (workload, QD, repetition) cell, a
fresh target for every run, every namespace preconditioned (written whole) first:

  spdk+spdk          SPDK nvmf_tgt         + spdk_nvme_perf          (both poll)
  numio+spdk         numio serve           + spdk_nvme_perf
  numio-poll+spdk    numio serve --poll    + spdk_nvme_perf
  spdk+numio         SPDK nvmf_tgt         + numio bench --backend tcp
  spdk+numio-poll    SPDK nvmf_tgt         + numio bench --backend tcp --poll
  numio+numio        numio serve           + numio bench
  numio-poll+numio-poll

With NUMIO_BEFORE=PATH (another numio, e.g. an older commit's), every pairing with a numio
side runs again with that binary there (`numio@before+spdk`, `spdk+numio-poll@before`, ...),
interleaved in the same cells, and a last table gives this numio / that one per role: a
before-and-after check of a change, side by side in one run.

The target runs on CPU 0, the initiator on CPU 1 (each process pinned whole with taskset),
over 127.0.0.1. Both targets serve a 1 GiB RAM namespace of 512-byte blocks with I/O queues of
256 entries. CPU per side: the process's utime+stime over a steady window of the run.

Run through bench/nvmf-spdk.sh, which builds SPDK and numio and reserves hugepages first. Environment: SPDK (the
SPDK tree with build/bin), NUMIO (the binary), NUMIO_BEFORE (another, optional), RUNTIME (s, 10), REPEATS (3), QDS ("1 32 128"),
WORKLOADS ("randread:4096 randwrite:4096 read:131072"), PAIRS (space-separated names above),
OUTDIR. Prints the per-cell table and the goal table (numio / SPDK in the same role).
"""
import csv
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

SPDK = os.environ.get("SPDK", "/var/tmp/spdk/src")
NUMIO = os.environ.get("NUMIO", "target/release/numio")
RUNTIME = int(os.environ.get("RUNTIME", "10"))
REPEATS = int(os.environ.get("REPEATS", "3"))
QDS = [int(q) for q in os.environ.get("QDS", "1 32 128").split()]
WORKLOADS = [(w.split(":")[0], int(w.split(":")[1]))
             for w in os.environ.get("WORKLOADS", "randread:4096 randwrite:4096 read:131072").split()]
ALL_PAIRS = ["spdk+spdk", "numio+spdk", "numio-poll+spdk", "spdk+numio", "spdk+numio-poll",
             "numio+numio", "numio-poll+numio-poll"]
NUMIO_BEFORE = os.environ.get("NUMIO_BEFORE")


def before(pair):
    """`pair` with NUMIO_BEFORE on its numio side(s)."""
    return "+".join(s if s == "spdk" else s + "@before" for s in pair.split("+"))


if NUMIO_BEFORE:
    ALL_PAIRS += [before(p) for p in ALL_PAIRS if p != "spdk+spdk"]
PAIRS = os.environ.get("PAIRS", " ".join(p for p in ALL_PAIRS if "@" not in p)).split()
if NUMIO_BEFORE:
    PAIRS += [before(p) for p in PAIRS if p != "spdk+spdk" and "@" not in p and before(p) not in PAIRS]
OUTDIR = os.environ.get("OUTDIR") or time.strftime("/var/tmp/numio-nvmf-spdk/%Y%m%d-%H%M%S")
PORT = 4420
TGT_CPU, INI_CPU = 0, 1
HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:6e756d69-6f6c-4000-8000-0000000000aa"
SPDK_NQN = "nqn.2016-06.io.spdk:cnode1"
NUMIO_NQN = "nqn.2026-01.io.numio:subsys0"
WIN0 = float(os.environ.get("WIN0", "2"))  # the CPU window starts WIN0 s into the run
HZ = os.sysconf("SC_CLK_TCK")

for p in PAIRS:
    if p not in ALL_PAIRS:
        sys.exit(f"nvmf-spdk: unknown pairing {p!r} in PAIRS; known: {' '.join(ALL_PAIRS)}")

# SPDK's target: a 1 GiB malloc bdev of 512-byte blocks behind one TCP subsystem, sockets as
# SPDK's own NVMe/TCP performance reports set them (2 MiB buffers, zero-copy sends).
SPDK_CONFIG = {"subsystems": [
    {"subsystem": "sock", "config": [
        {"method": "sock_set_default_impl", "params": {"impl_name": "posix"}},
        {"method": "sock_impl_set_options", "params": {
            "impl_name": "posix", "recv_buf_size": 2097152, "send_buf_size": 2097152,
            "enable_recv_pipe": True, "enable_zerocopy_send_server": True,
            "enable_zerocopy_send_client": False}}]},
    {"subsystem": "bdev", "config": [
        {"method": "bdev_malloc_create", "params": {
            "name": "Malloc0", "num_blocks": 2097152, "block_size": 512}},
        {"method": "bdev_wait_for_examine"}]},
    {"subsystem": "nvmf", "config": [
        {"method": "nvmf_create_transport", "params": {
            "trtype": "TCP", "max_queue_depth": 256, "max_io_qpairs_per_ctrlr": 127,
            "in_capsule_data_size": 4096, "max_io_size": 131072, "max_aq_depth": 128,
            "c2h_success": True}},
        {"method": "nvmf_create_subsystem", "params": {
            "nqn": SPDK_NQN, "allow_any_host": True, "serial_number": "SPDK00000000000001",
            "model_number": "SPDK bdev Controller", "max_namespaces": 8}},
        {"method": "nvmf_subsystem_add_ns", "params": {
            "nqn": SPDK_NQN, "namespace": {"nsid": 1, "bdev_name": "Malloc0"}}},
        {"method": "nvmf_subsystem_add_listener", "params": {
            "nqn": SPDK_NQN, "listen_address": {
                "trtype": "TCP", "adrfam": "IPv4", "traddr": "127.0.0.1",
                "trsvcid": str(PORT)}}}]}]}


def die(msg):
    sys.exit(f"nvmf-spdk: {msg}")


def listening():
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", PORT)) == 0


def side(name):
    """A pairing's side: (kind without @before, its numio binary)."""
    if name.endswith("@before"):
        return name[:-len("@before")], NUMIO_BEFORE
    return name, NUMIO


def ticks(pid):
    """utime + stime of a process (all its threads), in clock ticks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError):
        return None


class Target:
    def __init__(self, name, log):
        kind, exe = side(name)
        if listening():
            die(f"port {PORT} is already in use: stop what listens there")
        if kind == "spdk":
            cmd = [f"{SPDK}/build/bin/nvmf_tgt", "-m", "0x1", "--json", f"{OUTDIR}/nvmf_tgt.json",
                   "-r", f"{OUTDIR}/spdk.sock"]
        else:
            cmd = [exe, "serve", "--ns", "mem:1G", "--allow-any-host", "--listen",
                   f"127.0.0.1:{PORT}", "--discovery-port", "0", "--cpus", str(TGT_CPU),
                   "--queue-depth", "256"] + (["--poll"] if kind == "numio-poll" else [])
        self.log = log
        self.proc = subprocess.Popen(["taskset", "-c", str(TGT_CPU)] + cmd,
                                     stdout=open(log, "w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not listening():
            if self.proc.poll() is not None:
                die(f"the {kind} target exited {self.proc.returncode}: {open(log).read()}")
            if time.monotonic() > deadline:
                self.stop()
                die(f"the {kind} target did not listen within 30 s: {log}")
            time.sleep(0.05)

    def stop(self):
        self.proc.send_signal(2)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        while listening():
            time.sleep(0.05)


HOSTNQN_FLAG = {}


def hostnqn_flag(exe):
    """`--hostnqn`, or `--tcp-hostnqn` for a numio from before issue 39 named it so."""
    if exe not in HOSTNQN_FLAG:
        text = subprocess.run([exe, "bench", "--help"], capture_output=True, text=True).stdout
        HOSTNQN_FLAG[exe] = "--hostnqn" if re.search(r"^\s*--hostnqn\b", text, re.M) else "--tcp-hostnqn"
    return HOSTNQN_FLAG[exe]


def numio_bench(nqn, rw, bs, qd, extra, out, exe=NUMIO):
    cmd = ["taskset", "-c", str(INI_CPU), exe, "bench", f"nvme-tcp://127.0.0.1:{PORT}/{nqn}/1",
           "--backend", "tcp", hostnqn_flag(exe), HOSTNQN, "--rw", rw, "--bs", str(bs),
           "--iodepth", str(qd), "--cpus", str(INI_CPU), "--no-progress"] + extra
    if "write" in rw:
        cmd.append("--force-write")
    return subprocess.Popen(cmd, stdout=open(out, "w"), stderr=subprocess.STDOUT)


def run_one(pair, rw, bs, qd, rep, writer):
    tgt, ini_side = pair.split("+")
    ini, ini_exe = side(ini_side)
    nqn = SPDK_NQN if tgt == "spdk" else NUMIO_NQN
    tag = f"{pair}-{rw}-{bs}-qd{qd}-r{rep}"
    t = Target(tgt, f"{OUTDIR}/{tag}.target.log")
    try:
        pre = numio_bench(nqn, "write", 131072, 16, ["--no-time-based"], f"{OUTDIR}/{tag}.pre.log")
        if pre.wait() != 0:
            die(f"preconditioning failed: {OUTDIR}/{tag}.pre.log")
        out = f"{OUTDIR}/{tag}.ini.out"
        if ini == "spdk":
            trid = (f"trtype:TCP adrfam:IPv4 traddr:127.0.0.1 trsvcid:{PORT} subnqn:{nqn} "
                    f"hostnqn:{HOSTNQN}")
            p = subprocess.Popen(["taskset", "-c", str(INI_CPU), f"{SPDK}/build/bin/spdk_nvme_perf",
                                  "-r", trid, "-q", str(qd), "-o", str(bs), "-w", rw,
                                  "-t", str(RUNTIME), "-c", hex(1 << INI_CPU), "-L"],
                                 stdout=open(out, "w"), stderr=subprocess.STDOUT)
        else:
            extra = ["--runtime", f"{RUNTIME}s", "--json"] + (["--poll"] if ini == "numio-poll" else [])
            p = numio_bench(nqn, rw, bs, qd, extra, out, ini_exe)
        time.sleep(WIN0)
        w0, tp0, ip0 = time.monotonic(), ticks(t.proc.pid), ticks(p.pid)
        time.sleep(max(0.5, RUNTIME - WIN0 - 0.5))
        w1, tp1, ip1 = time.monotonic(), ticks(t.proc.pid), ticks(p.pid)
        rc = p.wait()
    finally:
        t.stop()
    dt = w1 - w0
    tcpu = (tp1 - tp0) / HZ / dt if None not in (tp0, tp1) else None
    icpu = (ip1 - ip0) / HZ / dt if None not in (ip0, ip1) else None
    iops = p99 = None
    text = open(out).read()
    if rc != 0:
        print(f"  {tag}: initiator exited {rc}, see {out}", file=sys.stderr)
    elif ini == "spdk":
        m = re.search(r"^Total\s*:\s*([\d.]+)", text, re.M)
        iops = float(m.group(1)) if m else None
        m = re.search(r"^\s*99\.00000%\s*:\s*([\d.]+)us", text, re.M)
        p99 = float(m.group(1)) if m else None
    else:
        j = json.loads(text[text.index("{"):])
        iops = j["total"]["iops"]
        pct = j["total"]["latency"]["lat"]["percentiles"]
        p99 = next((x["latency_ns"] / 1e3 for x in pct if x["percentile"] == 99.0), None)
    row = dict(pair=pair, rw=rw, bs=bs, qd=qd, rep=rep, iops=iops, p99_us=p99,
               tgt_cpu=tcpu, ini_cpu=icpu, load1=os.getloadavg()[0])
    writer.writerow(row)

    def f(x, fmt):
        return fmt % x if x is not None else "-"
    print(f"  {tag:42s} IOPS {f(iops, '%9.0f')}  p99 {f(p99, '%8.1f')} us  "
          f"tgt cpu {f(tcpu, '%.2f')}  ini cpu {f(icpu, '%.2f')}", flush=True)
    return row


def kilo(x):
    return "-" if x is None else (f"{x / 1e3:.1f}k" if x >= 1e3 else f"{x:.0f}")


def summarize(rows):
    cells = {}
    for r in rows:
        cells.setdefault((r["rw"], r["bs"], r["qd"]), {}).setdefault(r["pair"], []).append(r)

    def med(rs, fn):
        v = [fn(r) for r in rs]
        v = [x for x in v if x is not None]
        return statistics.median(v) if v else None

    def eff(side):
        return lambda r: r["iops"] / r[side] if r["iops"] and r[side] else None

    print("\n## Every pairing: median IOPS [min-max], CPU busy per side (cores), IOPS per CPU-second")
    print("| workload | pairing | IOPS | p99 us | tgt CPU | ini CPU | IOPS/tgt CPU-s | IOPS/ini CPU-s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    meds = {}
    for (rw, bs, qd), by in cells.items():
        for pair in ALL_PAIRS:
            rs = by.get(pair)
            if not rs:
                continue
            iops = [r["iops"] for r in rs if r["iops"] is not None]
            m = {"iops": med(rs, lambda r: r["iops"]), "tgt_eff": med(rs, eff("tgt_cpu")),
                 "ini_eff": med(rs, eff("ini_cpu"))}
            meds[(rw, bs, qd, pair)] = m
            rng = f" [{kilo(min(iops))}-{kilo(max(iops))}]" if len(iops) > 1 else ""
            p99 = med(rs, lambda r: r["p99_us"])
            tc, ic = med(rs, lambda r: r["tgt_cpu"]), med(rs, lambda r: r["ini_cpu"])
            print(f"| {rw} {bs // 1024}k QD{qd} | {pair} | {kilo(m['iops'])}{rng} | "
                  f"{'-' if p99 is None else f'{p99:.1f}'} | {'-' if tc is None else f'{tc:.2f}'} | "
                  f"{'-' if ic is None else f'{ic:.2f}'} | {kilo(m['tgt_eff'])} | {kilo(m['ini_eff'])} |")

    def ratio(key, a, b, what):
        x, y = meds.get(key + (a,)), meds.get(key + (b,))
        if not x or not y or x[what] is None or not y[what]:
            return "-"
        return f"{x[what] / y[what]:.2f}"

    print("\n## The goal: numio / SPDK in the same role (medians; >= 1.00 is at or ahead of SPDK)")
    print("target: numio serve vs SPDK nvmf_tgt, both driven by spdk_nvme_perf; "
          "initiator: numio bench vs spdk_nvme_perf, both against SPDK nvmf_tgt.")
    print("| workload | tgt IOPS, --poll | tgt IOPS, sleeping | tgt IOPS/CPU-s, sleeping "
          "| ini IOPS, --poll | ini IOPS, sleeping | ini IOPS/CPU-s, sleeping | numio+numio --poll vs SPDK+SPDK |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for key in cells:
        rw, bs, qd = key
        print(f"| {rw} {bs // 1024}k QD{qd} | {ratio(key, 'numio-poll+spdk', 'spdk+spdk', 'iops')} | "
              f"{ratio(key, 'numio+spdk', 'spdk+spdk', 'iops')} | "
              f"{ratio(key, 'numio+spdk', 'spdk+spdk', 'tgt_eff')} | "
              f"{ratio(key, 'spdk+numio-poll', 'spdk+spdk', 'iops')} | "
              f"{ratio(key, 'spdk+numio', 'spdk+spdk', 'iops')} | "
              f"{ratio(key, 'spdk+numio', 'spdk+spdk', 'ini_eff')} | "
              f"{ratio(key, 'numio-poll+numio-poll', 'spdk+spdk', 'iops')} |")
    if any("@before" in p for (_, _, _, p) in meds):
        print("\n## Before and after: this numio / NUMIO_BEFORE in the same pairing (medians, IOPS)")
        print("| workload | " + " | ".join(p for p in ALL_PAIRS if "@" not in p and p != "spdk+spdk") + " |")
        print("|---|" + "---:|" * (len([p for p in ALL_PAIRS if "@" not in p]) - 1))
        for key in cells:
            rw, bs, qd = key
            row = [ratio(key, p, before(p), "iops") for p in ALL_PAIRS if "@" not in p and p != "spdk+spdk"]
            print(f"| {rw} {bs // 1024}k QD{qd} | " + " | ".join(row) + " |")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--summarize":
        rows = []
        for r in csv.DictReader(open(sys.argv[2])):
            for k in ("bs", "qd", "rep"):
                r[k] = int(r[k])
            for k in ("iops", "p99_us", "tgt_cpu", "ini_cpu"):
                r[k] = float(r[k]) if r[k] not in ("", None) else None
            rows.append(r)
        summarize(rows)
        return
    for exe in (f"{SPDK}/build/bin/nvmf_tgt", f"{SPDK}/build/bin/spdk_nvme_perf", NUMIO) + ((NUMIO_BEFORE,) if NUMIO_BEFORE else ()):
        if not os.access(exe, os.X_OK):
            die(f"{exe} is not an executable: run bench/nvmf-spdk.sh, which builds SPDK and numio")
    if os.cpu_count() < 2:
        die("needs two CPUs (target on CPU 0, initiator on CPU 1)")
    os.makedirs(OUTDIR, exist_ok=True)
    json.dump(SPDK_CONFIG, open(f"{OUTDIR}/nvmf_tgt.json", "w"), indent=1)
    with open(f"{OUTDIR}/env.txt", "w") as f:
        print(time.strftime("%FT%TZ", time.gmtime()), os.uname().release, file=f)
        print(subprocess.run([NUMIO, "--version"], capture_output=True, text=True).stdout.strip(), file=f)
        if NUMIO_BEFORE:
            print("before:", subprocess.run([NUMIO_BEFORE, "--version"], capture_output=True,
                                            text=True).stdout.strip(), file=f)
        print(f"RUNTIME={RUNTIME} REPEATS={REPEATS} QDS={QDS} WORKLOADS={WORKLOADS} PAIRS={PAIRS}", file=f)
    print(f"nvmf-spdk: results in {OUTDIR}", flush=True)
    rows = []
    fields = ["pair", "rw", "bs", "qd", "rep", "iops", "p99_us", "tgt_cpu", "ini_cpu", "load1"]
    with open(f"{OUTDIR}/runs.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        for rw, bs in WORKLOADS:
            for qd in QDS:
                for rep in range(1, REPEATS + 1):
                    for pair in PAIRS:
                        rows.append(run_one(pair, rw, bs, qd, rep, writer))
                        f.flush()
    summarize(rows)


if __name__ == "__main__":
    main()
