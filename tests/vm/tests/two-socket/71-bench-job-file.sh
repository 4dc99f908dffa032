#!/usr/bin/env bash
# `numio bench JOB.fio` on real NVMe: a vendor-style job file, one section per
# single-path namespace with cpus_allowed = its controller's local_cpulist
# (the hand-written layout of a tuning guide), runs end to end; fio accepts the
# same file; every job ran on one of its section's CPUs; the block layer
# counted reads on every namespace.
# vm-lab: timeout=180
. "$(dirname "$0")/../lib.sh"

job=$CHECK_OUT/vendor.fio
printf '[global]\nioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\niodepth=8\nruntime=1s\ntime_based\nnuma_mem_policy=local\n' >"$job"
declare -A want before
for b in /sys/block/nvme*n*; do
  dev=${b##*/}
  [[ $dev =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
  [[ $(readlink -f "$b/device") == */nvme-subsys* ]] && continue
  cpus=$(cat "$b/device/device/local_cpulist")
  want[/dev/$dev]=$(expand_list "$cpus")
  before[$dev]=$(reads_completed "$dev")
  printf '\n[%s]\nfilename=/dev/%s\ncpus_allowed=%s\n' "$dev" "$dev" "$cpus" >>"$job"
done
[ ${#want[@]} -ge 2 ] || { not_ok "fewer than two single-path namespaces"; finish; }
note "$(tr '\n' ' ' <"$job")"
fio --parse-only "$job" >/dev/null 2>&1
expect_eq "fio --parse-only accepts the job file" 0 $?
run_numio bench "$job" --json
expect_eq "numio bench JOB.fio exit status" 0 "$NUMIO_RC"
[ "$NUMIO_RC" -eq 0 ] || note "numio said: $(tail -n 5 <<<"$NUMIO_ERR")"
printf '%s\n' "$NUMIO_OUT" >"$CHECK_OUT/bench.json"
for path in "${!want[@]}"; do
  got=$(jq -r --arg p "$path" '.targets[] | select(.path == $p) | .workers[].cpu' <<<"$NUMIO_OUT" | sort -u | tr '\n' ' ')
  inside=yes
  [ -n "$got" ] || inside=no
  for c in $got; do [[ " ${want[$path]} " == *" $c "* ]] || inside=no; done
  expect_eq "$path jobs ran on its section's CPUs (${want[$path]}; got $got)" yes "$inside"
  dev=${path#/dev/}
  expect_eq "$dev: block layer counted numio's reads" yes \
    "$([ "$(reads_completed "$dev")" -gt "${before[$dev]}" ] && echo yes || echo no)"
done
finish
