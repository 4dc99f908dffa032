#!/usr/bin/env bash
# numio vs SPDK over NVMe/TCP, side by side in one run (issue #21): builds SPDK once outside
# the repository from its public sources, builds numio, reserves hugepages, then runs
# bench/nvmf-spdk.py (the pairings, interleaved, and the table with the ratios).
# A benchmark, not a CI test: about 40 minutes for the full matrix on 2 CPUs.
#
#   bench/nvmf-spdk.sh                        # everything (RUNTIME=10 REPEATS=3)
#   RUNTIME=5 REPEATS=5 bench/nvmf-spdk.sh    # shorter runs, more of them
#   QDS=1 WORKLOADS=randread:4096 PAIRS="spdk+spdk numio-poll+spdk" bench/nvmf-spdk.sh
#   bench/nvmf-spdk.py --summarize DIR/runs.csv   # the tables again from a run's CSV
#
# SPDK: built under SPDK_DIR (default /var/tmp/spdk/src; reused when its binaries are there)
# from git repositories of spdk/spdk, DPDK/dpdk and intel/isa-l: SPDK_GIT, DPDK_GIT and
# ISAL_GIT name local copies (bare or not), else they are cloned from GitHub into
# SPDK_CACHE (default /var/tmp/spdk/git). Revisions: SPDK master of 2026-08-21, DPDK v26.03
# (SPDK needs DPDK >= 24.03; Debian 12 ships 22.11) and the ISA-L commit SPDK pins.
# Needs root (hugepages, Debian packages); the hugepage reservation and mount it makes are undone
# at exit. NUMIO=PATH measures that binary instead of building; NUMIO_BEFORE=PATH runs every
# pairing with a numio side with that binary too, interleaved, and prints this / that per cell:
#   NUMIO_BEFORE=/tmp/old/numio QDS="1 32" WORKLOADS="randread:4096 randwrite:4096" \
#     PAIRS="spdk+spdk numio+spdk spdk+numio numio+numio" RUNTIME=5 bench/nvmf-spdk.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SPDK_DIR=${SPDK_DIR:-/var/tmp/spdk/src}
SPDK_CACHE=${SPDK_CACHE:-/var/tmp/spdk/git}
SPDK_REV=${SPDK_REV:-3230130e6a4114a97991d7e27cecd5ab64b696c3}
DPDK_REV=${DPDK_REV:-v26.03}
ISAL_REV=${ISAL_REV:-7c3479e0a9dac17f448603ec1ad64c7c625f530c}

die() { echo "nvmf-spdk: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root: SPDK needs hugepages, and the build needs Debian packages"
[ "$(nproc)" -ge 2 ] || die "needs two CPUs (target on CPU 0, initiator on CPU 1)"

repo() { # NAME VAR URL -> path of a git repository
	local name=$1 given=$2 url=$3
	if [ -n "$given" ]; then
		git -C "$given" rev-parse --git-dir > /dev/null 2>&1 || die "$given is not a git repository ($name)"
		echo "$given"
		return
	fi
	local dir="$SPDK_CACHE/$name.git"
	[ -d "$dir" ] || git clone -q --bare "$url" "$dir" >&2 || die "cannot clone $url: give a local copy as ${name^^}_GIT"
	echo "$dir"
}

build_spdk() {
	if [ -x "$SPDK_DIR/build/bin/nvmf_tgt" ] && [ -x "$SPDK_DIR/build/bin/spdk_nvme_perf" ]; then
		echo "==> SPDK already built in $SPDK_DIR" >&2
		return
	fi
	echo "==> building SPDK in $SPDK_DIR (a few minutes)" >&2
	local spdk dpdk isal
	spdk=$(repo spdk "${SPDK_GIT:-}" https://github.com/spdk/spdk)
	dpdk=$(repo dpdk "${DPDK_GIT:-}" https://github.com/DPDK/dpdk)
	isal=$(repo isal "${ISAL_GIT:-}" https://github.com/intel/isa-l)
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		meson ninja-build python3-pyelftools libnuma-dev uuid-dev libssl-dev libaio-dev libjson-c-dev \
		libcunit1-dev libkeyutils-dev libncurses-dev python3-dev pkgconf nasm autoconf automake libtool \
		patchelf python3-tabulate python3-yaml python3-jinja2 > /dev/null
	rm -rf "$SPDK_DIR" && mkdir -p "$SPDK_DIR"
	git -C "$spdk" archive "$SPDK_REV" | tar -x -C "$SPDK_DIR"
	git -C "$dpdk" archive "$DPDK_REV" | tar -x -C "$SPDK_DIR/dpdk"
	git -C "$isal" archive "$ISAL_REV" | tar -x -C "$SPDK_DIR/isa-l"
	# SPDK's build runs scripts/genrpc.py with python3: Debian's, with tabulate, yaml, jinja2.
	(cd "$SPDK_DIR" && export PATH=/usr/bin:$PATH &&
		./configure --disable-unit-tests --disable-tests \
			--without-isal-crypto --without-crypto --without-vhost --without-virtio --without-fsdev \
			--without-ocf --without-rdma --without-fio --without-xnvme --without-vfio-user \
			--without-nvme-cuse --without-uring --without-usdt --without-idxd --without-iscsi-initiator \
			--without-rbd --without-daos --without-avahi --without-golang --without-sma \
			--without-aio-fsdev --without-vmd --max-lcores=8 > /dev/null &&
		make -j"$(nproc)" > "$SPDK_DIR/build.log" 2>&1) ||
		die "SPDK's build failed: $SPDK_DIR/build.log"
}

HUGEPAGES_BEFORE=""
MOUNTED_HUGETLBFS=""
# Gives back what hugepages() changed: the reservation and the mount.
restore() {
	if [ -n "$MOUNTED_HUGETLBFS" ]; then umount /dev/hugepages 2> /dev/null || true; fi
	if [ -n "$HUGEPAGES_BEFORE" ]; then echo "$HUGEPAGES_BEFORE" > /proc/sys/vm/nr_hugepages; fi
}
trap restore EXIT

hugepages() {
	# SPDK's target and perf take their memory from 2 MiB hugepages; numio's mem: namespace
	# uses them too when enough are reserved, so both sides run on the same kind of page.
	# Both changes are undone at exit (restore).
	local want=1100 now
	now=$(cat /proc/sys/vm/nr_hugepages)
	if [ "$now" -lt $want ]; then
		HUGEPAGES_BEFORE=$now
		echo $want > /proc/sys/vm/nr_hugepages
	fi
	if ! mountpoint -q /dev/hugepages; then
		mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages && MOUNTED_HUGETLBFS=1
	fi
	[ "$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)" -ge 700 ] ||
		die "fewer than 700 free 2 MiB hugepages (vm.nr_hugepages): free memory and try again"
}

build_spdk
if [ -z "${NUMIO:-}" ]; then
	echo "==> building numio (release)" >&2
	(cd "$ROOT" && cargo build --release -p numio >&2)
	NUMIO="$ROOT/target/release/numio"
fi
hugepages
export SPDK="$SPDK_DIR" NUMIO
python3 "$ROOT/bench/nvmf-spdk.py"
