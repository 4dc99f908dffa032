# The lab QEMU's devices (tests/vm/qemu/build: --without-default-devices
# --with-devices-x86_64=numio-lab): what tests/vm/run and the topology
# helpers of tests/vm/lib.sh put on the command line, and what those need.
CONFIG_Q35=y
# pxb-pcie expander bridges (topo_bridge); QEMU 7.2's pxb code calls into
# CXL (pxb-cxl), so it does not link without these two.
CONFIG_PXB=y
CONFIG_CXL=y
CONFIG_CXL_MEM_DEVICE=y
# pcie-root-port (topo_controller), nvme / nvme-ns / nvme-subsys
CONFIG_PCIE_PORT=y
CONFIG_NVME_PCI=y
# virtio-9p-pci: the host's root, the kernel modules, the job directory
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_9P=y
