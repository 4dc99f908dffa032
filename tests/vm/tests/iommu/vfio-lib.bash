# shellcheck shell=bash
# Helpers of the VFIO lab checks (sourced after ../lib.sh).

# Prints the PCI address of the controller with serial $1 (0000:00:04.0).
pci_of_serial() {
  local c
  for c in /sys/class/nvme/nvme*; do
    [ "$(tr -d ' ' <"$c/serial" 2>/dev/null)" = "$1" ] || continue
    basename "$(readlink -f "$c/device")"
    return 0
  done
  return 1
}

# Prints the driver of PCI function $1, "none" when unbound.
driver_of() {
  local d=/sys/bus/pci/devices/$1/driver
  if [ -e "$d" ]; then basename "$(readlink -f "$d")"; else echo none; fi
}

# Prints the namespace block device of PCI function $1 (nvme0n1).
namespace_of() {
  local n
  for n in /sys/bus/pci/devices/"$1"/nvme/nvme*/nvme*n1; do
    [ -e "$n" ] && { basename "$n"; return 0; }
  done
  return 1
}

# Polls (10 s at most) until `nvme list` shows serial $1 ("yes") or not ("no").
wait_nvme_list() {
  local want=$1 serial=$2 _
  for _ in $(seq 100); do
    if nvme list 2>/dev/null | grep -q "$serial"; then [ "$want" = yes ] && return 0
    else [ "$want" = no ] && return 0; fi
    sleep 0.1
  done
  return 1
}
