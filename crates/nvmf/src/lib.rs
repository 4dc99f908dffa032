//! NVMe over TCP: a thread-per-core target (`numio serve`) and an initiator.
#![deny(missing_docs)]
