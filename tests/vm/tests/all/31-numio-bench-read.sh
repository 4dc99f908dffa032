#!/usr/bin/env bash
# Smoke test: `numio bench` reads an NVMe namespace in the guest for 2 s
# through the real nvme driver; it exits 0, prints a result, and the block
# layer counted its reads (so it really did I/O to the device).
# The I/O path this checks does not depend on the machine's NUMA shape: it
# runs in one-node and in two-socket (the NUMA case), not in every topology.
# vm-lab: topologies=one-node two-socket
. "$(dirname "$0")/../lib.sh"

dev=$(first_private_namespace) || { not_ok "no NVMe namespace in the guest"; finish; }
note "reading /dev/$dev"
before=$(reads_completed "$dev")
run_numio bench "/dev/$dev" --runtime 2
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/bench.out"
expect_eq "numio bench exit status" 0 "$NUMIO_RC"
[ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 5 <<<"$NUMIO_ERR")"
expect_eq "numio bench printed a result" yes "$([ -n "$NUMIO_OUT" ] && echo yes || echo no)"
after=$(reads_completed "$dev")
expect_eq "block layer counted numio's reads" yes "$([ "$after" -gt "$before" ] && echo yes || echo no)"
finish
