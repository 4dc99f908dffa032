//! rdma-core's two libraries, opened when RDMA is first asked for, and the
//! verbs `<infiniband/verbs.h>` defines inline (no library exports them).

use std::ffi::c_int;
use std::sync::OnceLock;

use super::ffi;
use crate::dylib::{Library, LibraryError, Spec};

/// libibverbs (the verbs; it loads the device's provider, `rxe` for
/// soft-RoCE, from ibverbs-providers).
const LIBIBVERBS: Spec = Spec {
    feature: "NVMe over RDMA",
    sonames: &[c"libibverbs.so.1"],
    debian: "libibverbs1 ibverbs-providers",
    rpm: "libibverbs",
};

/// librdmacm (the RDMA connection manager).
const LIBRDMACM: Spec = Spec {
    feature: "NVMe over RDMA",
    sonames: &[c"librdmacm.so.1"],
    debian: "librdmacm1",
    rpm: "librdmacm",
};

/// The calls of both libraries.
#[derive(Debug)]
pub(super) struct Libs {
    /// libibverbs'.
    pub verbs: ffi::Verbs,
    /// librdmacm's.
    pub cm: ffi::Rdmacm,
}

/// Both libraries' calls, opened on first use (and the error, each time,
/// when they cannot be: the first library missing, with its packages).
pub(super) fn libs() -> Result<&'static Libs, LibraryError> {
    static LIBS: OnceLock<Result<Libs, LibraryError>> = OnceLock::new();
    LIBS.get_or_init(|| {
        let verbs = Library::open(&LIBIBVERBS)?;
        // SAFETY: ffi::Verbs holds bindgen's prototypes of verbs.h (the
        // rdma::layout test compares them with the installed header); the
        // library is never closed. ibv_reg_mr is the exported one, which
        // verbs.h's macro calls for access flags without
        // IBV_ACCESS_OPTIONAL_RANGE bits (numio's).
        let verbs = unsafe { ffi::Verbs::load(&verbs) }?;
        let cm = Library::open(&LIBRDMACM)?;
        // SAFETY: as above, for rdma_cma.h and librdmacm.
        let cm = unsafe { ffi::Rdmacm::load(&cm) }?;
        Ok(Libs { verbs, cm })
    })
    .as_ref()
    .map_err(Clone::clone)
}

// The header-inline verbs: verbs.h calls the provider's function from the
// device context's ops table, and so do these. A provider that left the
// entry empty (C would jump to null) gets the error the verb reports for
// what the device does not support.

/// verbs.h's `ibv_post_send`: `qp->context->ops.post_send(qp, wr, bad_wr)`.
///
/// # Safety
/// `qp` is a live queue pair; `wr` a valid list of work requests whose
/// buffers stay registered until completion; `bad_wr` writable.
pub(super) unsafe fn ibv_post_send(
    qp: *mut ffi::ibv_qp,
    wr: *mut ffi::ibv_send_wr,
    bad_wr: *mut *mut ffi::ibv_send_wr,
) -> c_int {
    // SAFETY: a live QP points to its live device context (caller).
    match unsafe { (*(*qp).context).ops.post_send } {
        // SAFETY: the provider's post_send for this QP, with the caller's
        // valid arguments.
        Some(f) => unsafe { f(qp, wr, bad_wr) },
        None => libc::EOPNOTSUPP,
    }
}

/// verbs.h's `ibv_post_recv`: `qp->context->ops.post_recv(qp, wr, bad_wr)`.
///
/// # Safety
/// As [`ibv_post_send`], for receive work requests.
pub(super) unsafe fn ibv_post_recv(
    qp: *mut ffi::ibv_qp,
    wr: *mut ffi::ibv_recv_wr,
    bad_wr: *mut *mut ffi::ibv_recv_wr,
) -> c_int {
    // SAFETY: a live QP points to its live device context (caller).
    match unsafe { (*(*qp).context).ops.post_recv } {
        // SAFETY: the provider's post_recv for this QP, with the caller's
        // valid arguments.
        Some(f) => unsafe { f(qp, wr, bad_wr) },
        None => libc::EOPNOTSUPP,
    }
}

/// verbs.h's `ibv_poll_cq`: `cq->context->ops.poll_cq(cq, num_entries,
/// wc)`; negative on error.
///
/// # Safety
/// `cq` is a live completion queue; `wc` holds `num_entries` entries.
pub(super) unsafe fn ibv_poll_cq(
    cq: *mut ffi::ibv_cq,
    num_entries: c_int,
    wc: *mut ffi::ibv_wc,
) -> c_int {
    // SAFETY: a live CQ points to its live device context (caller).
    match unsafe { (*(*cq).context).ops.poll_cq } {
        // SAFETY: the provider's poll_cq for this CQ; wc has room for
        // num_entries (caller).
        Some(f) => unsafe { f(cq, num_entries, wc) },
        None => -1,
    }
}

/// verbs.h's `ibv_req_notify_cq`: `cq->context->ops.req_notify_cq(cq,
/// solicited_only)`; 0 or an errno.
///
/// # Safety
/// `cq` is a live completion queue.
pub(super) unsafe fn ibv_req_notify_cq(cq: *mut ffi::ibv_cq, solicited_only: c_int) -> c_int {
    // SAFETY: a live CQ points to its live device context (caller).
    match unsafe { (*(*cq).context).ops.req_notify_cq } {
        // SAFETY: the provider's req_notify_cq for this CQ.
        Some(f) => unsafe { f(cq, solicited_only) },
        None => libc::EOPNOTSUPP,
    }
}
