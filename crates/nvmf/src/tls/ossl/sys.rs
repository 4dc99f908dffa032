//! OpenSSL's libssl, opened at run time, and the few safe types numio
//! builds over it: this crate's only unsafe TLS code.
//!
//! libssl 3 (`libssl.so.3`) is opened with `dlopen` the first time TLS is
//! asked for ([`libssl`], through [`sysapi::dylib`]): numio builds without
//! OpenSSL's headers and starts without libssl. Every function below is
//! resolved when it is opened, so a libssl that lacks one is refused then,
//! by name. libcrypto's functions (`ERR_*`) are found through libssl's
//! handle, which depends on it.
//!
//! OpenSSL 1.1.1 (`libssl.so.1.1`) is not tried: its `SSL_CTX_set_options`
//! takes and returns `unsigned long`, 3's `uint64_t`, and
//! `ERR_get_error_all` is new in 3.
//!
//! Several of OpenSSL's calls are macros over `SSL_CTX_ctrl`/`BIO_ctrl`
//! with a command number; those numbers and the flags are copied from
//! OpenSSL 3's headers under the macro's own name, and a test compares each
//! with the installed headers.
//!
//! - [`Ctx`]: an `SSL_CTX`, TLS 1.3 only, external PSKs only (the server's
//!   lookup or the client's offer through OpenSSL's PSK session callbacks).
//! - [`Ssl`]: an `SSL` over two memory BIOs (the target's session, fed and
//!   drained by the reactor) or over a socket (the host's).

use std::ffi::{c_char, c_int, c_long, c_uchar, c_ulong, c_void, CStr};
use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::{Arc, OnceLock};

use sysapi::dylib::{Library, LibraryError, Spec};
use zeroize::Zeroizing;

use super::{Identity, PskHash, PskLookup, PskRefusal, SessionError, SetupError};

/// libssl 3, by its ABI name.
pub(super) const LIBSSL: Spec = Spec {
    feature: "NVMe/TCP TLS",
    sonames: &[c"libssl.so.3"],
    debian: "libssl3 (libssl3t64 on Debian 13 and Ubuntu 24.04)",
    rpm: "openssl-libs",
};

// The constants below are OpenSSL 3's, each named as its header names it
// (`constants_match_the_installed_headers` checks them).

/// ssl.h `SSL_CTRL_MODE` (`SSL_CTX_set_mode`).
const SSL_CTRL_MODE: c_int = 33;
/// ssl.h `SSL_CTRL_SET_GROUPS_LIST` (`SSL_CTX_set1_groups_list`).
const SSL_CTRL_SET_GROUPS_LIST: c_int = 92;
/// ssl.h `SSL_CTRL_SET_MIN_PROTO_VERSION` (`SSL_CTX_set_min_proto_version`).
const SSL_CTRL_SET_MIN_PROTO_VERSION: c_int = 123;
/// ssl.h `SSL_CTRL_SET_MAX_PROTO_VERSION` (`SSL_CTX_set_max_proto_version`).
const SSL_CTRL_SET_MAX_PROTO_VERSION: c_int = 124;
/// prov_ssl.h (through tls1.h) `TLS1_3_VERSION`.
const TLS1_3_VERSION: c_int = 0x0304;
/// ssl.h `SSL_OP_NO_TICKET` (`SSL_OP_BIT(14)`).
const SSL_OP_NO_TICKET: u64 = 1 << 14;
/// ssl.h `SSL_MODE_ENABLE_PARTIAL_WRITE`.
const SSL_MODE_ENABLE_PARTIAL_WRITE: c_long = 0x1;
/// ssl.h `SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER`.
const SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER: c_long = 0x2;
/// ssl.h `SSL_VERIFY_NONE`.
const SSL_VERIFY_NONE: c_int = 0;
/// ssl.h `SSL_ERROR_SSL`.
const SSL_ERROR_SSL: c_int = 1;
/// ssl.h `SSL_ERROR_WANT_READ`.
const SSL_ERROR_WANT_READ: c_int = 2;
/// ssl.h `SSL_ERROR_WANT_WRITE`.
const SSL_ERROR_WANT_WRITE: c_int = 3;
/// ssl.h `SSL_ERROR_SYSCALL`.
const SSL_ERROR_SYSCALL: c_int = 5;
/// ssl.h `SSL_ERROR_ZERO_RETURN`.
const SSL_ERROR_ZERO_RETURN: c_int = 6;
/// bio.h `BIO_C_SET_BUF_MEM_EOF_RETURN` (`BIO_set_mem_eof_return`).
const BIO_C_SET_BUF_MEM_EOF_RETURN: c_int = 130;
/// err.h `ERR_TXT_STRING`: the error's data is text.
const ERR_TXT_STRING: c_int = 0x02;
/// The ex_data index of ssl.h's `SSL_set_app_data`/`SSL_CTX_set_app_data`
/// (0, which OpenSSL reserves for the application).
const APP_DATA: c_int = 0;

/// Opaque OpenSSL types (pointers only).
macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        struct $name {
            _private: [u8; 0],
        }
    )*};
}
opaque!(
    RawMethod,
    RawCtx,
    RawSsl,
    RawSession,
    RawCipher,
    RawMd,
    RawBio,
    RawBioMethod
);

/// `SSL_psk_find_session_cb_func`.
type FindSession =
    unsafe extern "C" fn(*mut RawSsl, *const c_uchar, usize, *mut *mut RawSession) -> c_int;
/// `SSL_psk_use_session_cb_func`.
type UseSession = unsafe extern "C" fn(
    *mut RawSsl,
    *const RawMd,
    *mut *const c_uchar,
    *mut usize,
    *mut *mut RawSession,
) -> c_int;
/// `SSL_verify_cb` (its `X509_STORE_CTX *` as an untyped pointer: numio
/// passes none).
type VerifyCb = unsafe extern "C" fn(c_int, *mut c_void) -> c_int;

sysapi::functions! {
    /// The libssl (and libcrypto) calls numio makes, as OpenSSL 3's
    /// headers declare them.
    pub(super) struct Fns {
        fn TLS_server_method() -> *const RawMethod;
        fn TLS_client_method() -> *const RawMethod;
        fn SSL_CTX_new(method: *const RawMethod) -> *mut RawCtx;
        fn SSL_CTX_free(ctx: *mut RawCtx);
        fn SSL_CTX_ctrl(ctx: *mut RawCtx, cmd: c_int, larg: c_long, parg: *mut c_void) -> c_long;
        fn SSL_CTX_set_ciphersuites(ctx: *mut RawCtx, s: *const c_char) -> c_int;
        fn SSL_CTX_set_options(ctx: *mut RawCtx, op: u64) -> u64;
        fn SSL_CTX_set_num_tickets(ctx: *mut RawCtx, n: usize) -> c_int;
        fn SSL_CTX_set_verify(ctx: *mut RawCtx, mode: c_int, cb: Option<VerifyCb>);
        fn SSL_CTX_set_ex_data(ctx: *mut RawCtx, idx: c_int, data: *mut c_void) -> c_int;
        fn SSL_CTX_get_ex_data(ctx: *const RawCtx, idx: c_int) -> *mut c_void;
        fn SSL_CTX_set_psk_find_session_callback(ctx: *mut RawCtx, cb: Option<FindSession>);
        fn SSL_CTX_set_psk_use_session_callback(ctx: *mut RawCtx, cb: Option<UseSession>);
        fn SSL_new(ctx: *mut RawCtx) -> *mut RawSsl;
        fn SSL_free(ssl: *mut RawSsl);
        fn SSL_set_bio(ssl: *mut RawSsl, rbio: *mut RawBio, wbio: *mut RawBio);
        fn SSL_set_fd(ssl: *mut RawSsl, fd: c_int) -> c_int;
        fn SSL_set_ex_data(ssl: *mut RawSsl, idx: c_int, data: *mut c_void) -> c_int;
        fn SSL_get_ex_data(ssl: *const RawSsl, idx: c_int) -> *mut c_void;
        fn SSL_get_SSL_CTX(ssl: *const RawSsl) -> *mut RawCtx;
        fn SSL_accept(ssl: *mut RawSsl) -> c_int;
        fn SSL_connect(ssl: *mut RawSsl) -> c_int;
        fn SSL_read_ex(ssl: *mut RawSsl, buf: *mut c_void, num: usize, read: *mut usize) -> c_int;
        fn SSL_write_ex(
            ssl: *mut RawSsl,
            buf: *const c_void,
            num: usize,
            written: *mut usize,
        ) -> c_int;
        fn SSL_pending(ssl: *const RawSsl) -> c_int;
        fn SSL_get_error(ssl: *const RawSsl, ret: c_int) -> c_int;
        fn SSL_shutdown(ssl: *mut RawSsl) -> c_int;
        fn SSL_get_current_cipher(ssl: *const RawSsl) -> *const RawCipher;
        fn SSL_CIPHER_standard_name(cipher: *const RawCipher) -> *const c_char;
        fn SSL_CIPHER_find(ssl: *mut RawSsl, id: *const c_uchar) -> *const RawCipher;
        fn SSL_SESSION_new() -> *mut RawSession;
        fn SSL_SESSION_free(s: *mut RawSession);
        fn SSL_SESSION_set1_master_key(s: *mut RawSession, key: *const c_uchar, len: usize) -> c_int;
        fn SSL_SESSION_set_cipher(s: *mut RawSession, cipher: *const RawCipher) -> c_int;
        fn SSL_SESSION_set_protocol_version(s: *mut RawSession, version: c_int) -> c_int;
        fn BIO_s_mem() -> *const RawBioMethod;
        fn BIO_new(method: *const RawBioMethod) -> *mut RawBio;
        fn BIO_free(b: *mut RawBio) -> c_int;
        fn BIO_ctrl(b: *mut RawBio, cmd: c_int, larg: c_long, parg: *mut c_void) -> c_long;
        fn BIO_write_ex(b: *mut RawBio, data: *const c_void, len: usize, written: *mut usize) -> c_int;
        fn BIO_read_ex(b: *mut RawBio, data: *mut c_void, len: usize, read: *mut usize) -> c_int;
        fn BIO_ctrl_pending(b: *mut RawBio) -> usize;
        fn ERR_get_error_all(
            file: *mut *const c_char,
            line: *mut c_int,
            func: *mut *const c_char,
            data: *mut *const c_char,
            flags: *mut c_int,
        ) -> c_ulong;
        fn ERR_error_string_n(e: c_ulong, buf: *mut c_char, len: usize);
        fn ERR_clear_error();
    }
}

/// Opens the library `spec` names as libssl and resolves every function
/// numio calls ([`libssl`]'s, factored out so a test can name a library
/// that is absent).
pub(super) fn load(spec: &Spec) -> Result<Fns, LibraryError> {
    let lib = Library::open(spec)?;
    // SAFETY: the prototypes in `Fns` are OpenSSL 3's (ssl.h, bio.h,
    // err.h), the ABI of libssl.so.3; the library is never closed.
    unsafe { Fns::load(&lib) }
}

static LIB: OnceLock<Result<Fns, LibraryError>> = OnceLock::new();

/// libssl, opened when first asked for (the error, each time, when it
/// cannot be).
#[derive(Debug, Clone, Copy)]
pub(super) struct Lib(&'static Fns);

/// libssl's calls, opened on first use.
pub(super) fn libssl() -> Result<Lib, LibraryError> {
    LIB.get_or_init(|| load(&LIBSSL))
        .as_ref()
        .map(Lib)
        .map_err(Clone::clone)
}

/// The table the callbacks use: there is an SSL to call them for only
/// once [`libssl`] opened it.
fn loaded() -> Option<&'static Fns> {
    LIB.get().and_then(|r| r.as_ref().ok())
}

/// The thread's OpenSSL error queue as text (emptied), `None` when empty.
fn error_queue(f: &Fns) -> Option<String> {
    let mut all = Vec::new();
    loop {
        let mut data: *const c_char = ptr::null();
        let mut flags: c_int = 0;
        // SAFETY: the out pointers are writable (file, line and func may
        // be null); `data` then points at the entry's text, which stays in
        // the thread's queue slot until the next error is recorded: it is
        // copied before any other OpenSSL call.
        let code = unsafe {
            (f.ERR_get_error_all)(
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                &mut data,
                &mut flags,
            )
        };
        if code == 0 {
            break;
        }
        let detail = if flags & ERR_TXT_STRING != 0 && !data.is_null() {
            // SAFETY: non-null, NUL-terminated (ERR_TXT_STRING), see above.
            let d = unsafe { CStr::from_ptr(data) }.to_string_lossy();
            (!d.is_empty()).then(|| d.into_owned())
        } else {
            None
        };
        let mut buf = [0 as c_char; 256];
        // SAFETY: `buf` holds `buf.len()` bytes; OpenSSL writes a
        // NUL-terminated text of at most that many.
        unsafe { (f.ERR_error_string_n)(code, buf.as_mut_ptr(), buf.len()) };
        // SAFETY: NUL-terminated by ERR_error_string_n.
        let mut text = unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        if let Some(d) = detail {
            text.push_str(&format!(" ({d})"));
        }
        all.push(text);
    }
    (!all.is_empty()).then(|| all.join("; "))
}

/// Clears the thread's error queue, so that the next call's errors are
/// its own (`SSL_get_error` reads it).
fn clear_errors(f: &Fns) {
    // SAFETY: no arguments; touches only this thread's queue.
    unsafe { (f.ERR_clear_error)() }
}

/// The thread's OpenSSL error queue as text for an error (emptied; `no
/// reason given` when it was empty).
fn queue_text(f: &Fns) -> String {
    error_queue(f).unwrap_or_else(|| "no reason given".into())
}

/// Why an `SSL_*` call did not complete.
#[derive(Debug, thiserror::Error)]
pub enum SslError {
    /// It needs bytes from the peer first (`SSL_ERROR_WANT_READ`).
    #[error("it waits for the peer (SSL_ERROR_WANT_READ)")]
    WantRead,
    /// It needs the socket to take bytes first (`SSL_ERROR_WANT_WRITE`).
    #[error("it waits for the socket (SSL_ERROR_WANT_WRITE)")]
    WantWrite,
    /// The peer closed the TLS session (close_notify).
    #[error("the peer closed the TLS session")]
    ZeroReturn,
    /// The socket failed (`SSL_ERROR_SYSCALL`); `None`: it closed.
    #[error("{}", match .0 { Some(e) => e.to_string(), None => "the connection closed (unexpected EOF)".into() })]
    Io(Option<io::Error>),
    /// OpenSSL's error queue, as text.
    #[error("{0}")]
    Ssl(String),
}

impl SslError {
    /// As an I/O error: WouldBlock for the wants (a non-blocking socket's
    /// or a receive timeout's EAGAIN).
    pub(super) fn into_io(self) -> io::Error {
        match self {
            SslError::WantRead | SslError::WantWrite => io::ErrorKind::WouldBlock.into(),
            SslError::Io(Some(e)) => e,
            SslError::Io(None) | SslError::ZeroReturn => {
                io::Error::new(io::ErrorKind::UnexpectedEof, self.to_string())
            }
            SslError::Ssl(text) => io::Error::other(format!("TLS: {text}")),
        }
    }
}

/// What a server context keeps for its PSK callback (its app data).
struct CtxData {
    lookup: Arc<dyn PskLookup>,
}

/// An `SSL_CTX`: TLS 1.3 only, PSKs only.
pub(super) struct Ctx {
    f: &'static Fns,
    ptr: NonNull<RawCtx>,
    /// The server's lookup, attached as the context's app data; freed
    /// after the context.
    data: Option<NonNull<CtxData>>,
}

// SAFETY: an SSL_CTX that is no longer configured may be used to make
// SSLs from any thread at once (OpenSSL locks its shared state and counts
// references atomically); its app data is an Arc<dyn PskLookup>, Send and
// Sync, only read.
unsafe impl Send for Ctx {}
// SAFETY: as above.
unsafe impl Sync for Ctx {}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: the context came from SSL_CTX_new and is released once,
        // here (SSLs made from it hold an Arc of this Ctx, so none is
        // left); its app data is dropped after, once no callback can run.
        unsafe {
            (self.f.SSL_CTX_free)(self.ptr.as_ptr());
            if let Some(d) = self.data {
                drop(Box::from_raw(d.as_ptr()));
            }
        }
    }
}

impl Ctx {
    fn new(lib: Lib, server: bool, suites: &CStr, groups: &CStr) -> Result<Self, SetupError> {
        let f = lib.0;
        clear_errors(f);
        // SAFETY: TLS_*_method return static method tables; SSL_CTX_new
        // returns a new context (ours to free) or null.
        let raw = unsafe {
            (f.SSL_CTX_new)(if server {
                (f.TLS_server_method)()
            } else {
                (f.TLS_client_method)()
            })
        };
        let ptr = NonNull::new(raw).ok_or_else(|| SetupError::Context {
            call: "SSL_CTX_new",
            queue: queue_text(f),
        })?;
        let ctx = Self { f, ptr, data: None };
        let c = ptr.as_ptr();
        let ctrl = |cmd: c_int, larg: c_long, parg: *const c_char| {
            // SAFETY: `c` is the live context; each command is one whose
            // `larg`/`parg` are as given (a version, a mode, a C string
            // that outlives the call).
            unsafe { (f.SSL_CTX_ctrl)(c, cmd, larg, parg as *mut c_void) }
        };
        for (cmd, call) in [
            (
                SSL_CTRL_SET_MIN_PROTO_VERSION,
                "SSL_CTX_set_min_proto_version",
            ),
            (
                SSL_CTRL_SET_MAX_PROTO_VERSION,
                "SSL_CTX_set_max_proto_version",
            ),
        ] {
            if ctrl(cmd, TLS1_3_VERSION as c_long, ptr::null()) != 1 {
                return Err(SetupError::Version {
                    call,
                    queue: queue_text(f),
                });
            }
        }
        // SAFETY: `c` is live; `suites` is NUL-terminated and copied.
        if unsafe { (f.SSL_CTX_set_ciphersuites)(c, suites.as_ptr()) } != 1 {
            return Err(SetupError::Suites {
                call: "SSL_CTX_set_ciphersuites",
                suites: suites.to_string_lossy().into_owned(),
                queue: queue_text(f),
            });
        }
        if ctrl(SSL_CTRL_SET_GROUPS_LIST, 0, groups.as_ptr()) != 1 {
            return Err(SetupError::Groups {
                call: "SSL_CTX_set1_groups_list",
                groups: groups.to_string_lossy().into_owned(),
                queue: queue_text(f),
            });
        }
        let mode = SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
        if ctrl(SSL_CTRL_MODE, mode, ptr::null()) & mode != mode {
            return Err(SetupError::WriteMode {
                call: "SSL_CTX_set_mode",
                queue: queue_text(f),
            });
        }
        // SAFETY: `c` is live; these set flags and counts on it.
        let tickets = unsafe {
            (f.SSL_CTX_set_options)(c, SSL_OP_NO_TICKET);
            (f.SSL_CTX_set_verify)(c, SSL_VERIFY_NONE, None);
            (f.SSL_CTX_set_num_tickets)(c, 0)
        };
        if tickets != 1 {
            return Err(SetupError::Tickets {
                call: "SSL_CTX_set_num_tickets",
                queue: queue_text(f),
            });
        }
        Ok(ctx)
    }

    /// The target's context: `suites` (colon-separated), key exchange over
    /// `groups`, each host's PSK found by `lookup`.
    pub(super) fn server(
        lib: Lib,
        lookup: Arc<dyn PskLookup>,
        suites: &CStr,
        groups: &CStr,
    ) -> Result<Self, SetupError> {
        let mut ctx = Self::new(lib, true, suites, groups)?;
        let data = NonNull::from(Box::leak(Box::new(CtxData { lookup })));
        ctx.data = Some(data);
        let f = ctx.f;
        // SAFETY: the context is live; its app data points at `data`,
        // which lives until after SSL_CTX_free (Drop); the callback reads
        // it as a CtxData.
        let ok = unsafe {
            (f.SSL_CTX_set_psk_find_session_callback)(ctx.ptr.as_ptr(), Some(find_session));
            (f.SSL_CTX_set_ex_data)(ctx.ptr.as_ptr(), APP_DATA, data.as_ptr().cast())
        };
        if ok != 1 {
            return Err(SetupError::PskLookup {
                call: "SSL_CTX_set_ex_data",
                queue: queue_text(f),
            });
        }
        Ok(ctx)
    }

    /// A host's context: one cipher `suite`, key exchange over `groups`,
    /// the PSK each [`Ssl`] made from it carries ([`ClientPsk`]).
    pub(super) fn client(lib: Lib, suite: &CStr, groups: &CStr) -> Result<Self, SetupError> {
        let ctx = Self::new(lib, false, suite, groups)?;
        // SAFETY: the context is live; the callback reads each SSL's app
        // data, which Ssl::client sets.
        unsafe {
            (ctx.f.SSL_CTX_set_psk_use_session_callback)(ctx.ptr.as_ptr(), Some(use_session))
        };
        Ok(ctx)
    }
}

/// The PSK a host offers (its identity text must outlive the handshake:
/// OpenSSL reads it after the callback returns).
pub(super) struct ClientPsk {
    /// The PSK identity.
    pub identity: String,
    /// Its hash (the cipher suite's).
    pub hash: PskHash,
    /// The TLS PSK.
    pub key: Zeroizing<Vec<u8>>,
}

/// What an SSL keeps for the callbacks (its app data).
struct SslData {
    /// The server's: the identity the host presented, or why it was
    /// refused.
    peer: Option<Result<Identity, PskRefusal>>,
    /// The client's offer.
    offer: Option<ClientPsk>,
}

/// The two memory BIOs of a session the caller feeds and drains (owned by
/// the SSL, freed with it).
pub(super) struct MemBios {
    rbio: NonNull<RawBio>,
    wbio: NonNull<RawBio>,
}

// SAFETY: the BIOs belong to one SSL and are used only through it, by the
// thread that holds the Ssl.
unsafe impl Send for MemBios {}

/// An `SSL` over `T`: [`MemBios`] or a [`TcpStream`].
pub(super) struct Ssl<T> {
    f: &'static Fns,
    ptr: NonNull<RawSsl>,
    /// The callbacks' data, attached as the SSL's app data; freed after
    /// the SSL.
    data: NonNull<SslData>,
    io: T,
    /// The context's Rust side lives as long as its SSLs.
    _ctx: Arc<Ctx>,
}

// SAFETY: an SSL may be used from any thread, one at a time (`&mut self`
// for every call that drives it); its data (identities, a key) is Send.
unsafe impl<T: Send> Send for Ssl<T> {}

impl<T> Drop for Ssl<T> {
    fn drop(&mut self) {
        // SAFETY: the SSL came from SSL_new and is freed once, here (with
        // its BIOs; a socket's descriptor is not closed by OpenSSL, and
        // `io` is dropped after); its data is freed after it, once no
        // callback can run.
        unsafe {
            (self.f.SSL_free)(self.ptr.as_ptr());
            drop(Box::from_raw(self.data.as_ptr()));
        }
    }
}

/// A new SSL of `ctx` with `data` attached; `attach` then gives it its I/O
/// (freeing what it made if it fails).
fn new_ssl<T>(
    ctx: &Arc<Ctx>,
    data: SslData,
    attach: impl FnOnce(&'static Fns, *mut RawSsl) -> Result<T, SetupError>,
) -> Result<Ssl<T>, SetupError> {
    let f = ctx.f;
    clear_errors(f);
    // SAFETY: the context is live; SSL_new returns a new SSL (ours to
    // free, holding a reference on the context) or null.
    let raw = unsafe { (f.SSL_new)(ctx.ptr.as_ptr()) };
    let ptr = NonNull::new(raw).ok_or_else(|| SetupError::Session {
        call: "SSL_new",
        queue: queue_text(f),
    })?;
    let io = match attach(f, raw) {
        Ok(io) => io,
        Err(e) => {
            // SAFETY: the SSL just made, freed once.
            unsafe { (f.SSL_free)(raw) };
            return Err(e);
        }
    };
    let data = NonNull::from(Box::leak(Box::new(data)));
    let ssl = Ssl {
        f,
        ptr,
        data,
        io,
        _ctx: ctx.clone(),
    };
    // SAFETY: the SSL is live; its app data points at `data`, freed only
    // after SSL_free (Drop); the callbacks read it as an SslData.
    if unsafe { (f.SSL_set_ex_data)(raw, APP_DATA, data.as_ptr().cast()) } != 1 {
        return Err(SetupError::SessionData {
            call: "SSL_set_ex_data",
            queue: queue_text(f),
        });
    }
    Ok(ssl)
}

impl Ssl<MemBios> {
    /// A server session over two memory BIOs: [`Ssl::feed`] what the
    /// socket received, [`Ssl::take_output`] what to send.
    pub(super) fn server(ctx: &Arc<Ctx>) -> Result<Self, SetupError> {
        let data = SslData {
            peer: None,
            offer: None,
        };
        new_ssl(ctx, data, |f, raw| {
            // SAFETY: BIO_s_mem returns a static method; BIO_new returns a
            // new BIO or null; each is freed here if not handed over.
            let (r, w) = unsafe { ((f.BIO_new)((f.BIO_s_mem)()), (f.BIO_new)((f.BIO_s_mem)())) };
            let (Some(rbio), Some(wbio)) = (NonNull::new(r), NonNull::new(w)) else {
                // SAFETY: each non-null one is ours, freed once.
                unsafe {
                    for b in [r, w] {
                        if !b.is_null() {
                            (f.BIO_free)(b);
                        }
                    }
                }
                return Err(SetupError::Buffers {
                    call: "BIO_new",
                    queue: queue_text(f),
                });
            };
            // SAFETY: both BIOs are live: an empty read BIO says "retry"
            // (-1), not EOF; SSL_set_bio hands both to the SSL, which
            // frees them with itself.
            unsafe {
                (f.BIO_ctrl)(
                    rbio.as_ptr(),
                    BIO_C_SET_BUF_MEM_EOF_RETURN,
                    -1,
                    ptr::null_mut(),
                );
                (f.SSL_set_bio)(raw, rbio.as_ptr(), wbio.as_ptr());
            }
            Ok(MemBios { rbio, wbio })
        })
    }

    /// Adds bytes the peer sent.
    pub(super) fn feed(&mut self, bytes: &[u8]) -> Result<(), SessionError> {
        if bytes.is_empty() {
            return Ok(());
        }
        let mut written = 0usize;
        // SAFETY: the read BIO is live (owned by the live SSL); `bytes` is
        // readable for its length; a memory BIO copies them.
        let ok = unsafe {
            (self.f.BIO_write_ex)(
                self.io.rbio.as_ptr(),
                bytes.as_ptr().cast(),
                bytes.len(),
                &mut written,
            )
        };
        if ok != 1 || written != bytes.len() {
            return Err(SessionError::Buffer {
                call: "BIO_write_ex",
                queue: queue_text(self.f),
            });
        }
        Ok(())
    }

    /// Whether there are bytes to send.
    pub(super) fn has_output(&self) -> bool {
        // SAFETY: the write BIO is live (owned by the live SSL).
        unsafe { (self.f.BIO_ctrl_pending)(self.io.wbio.as_ptr()) > 0 }
    }

    /// Appends the bytes to send to `out`.
    pub(super) fn take_output(&mut self, out: &mut Vec<u8>) {
        loop {
            // SAFETY: the write BIO is live.
            let n = unsafe { (self.f.BIO_ctrl_pending)(self.io.wbio.as_ptr()) };
            if n == 0 {
                return;
            }
            out.reserve(n);
            let spare = out.spare_capacity_mut();
            let mut got = 0usize;
            // SAFETY: `spare` is writable for its length (at least n); the
            // BIO writes `got` bytes at its start, which are then
            // initialized.
            unsafe {
                if (self.f.BIO_read_ex)(
                    self.io.wbio.as_ptr(),
                    spare.as_mut_ptr().cast(),
                    spare.len(),
                    &mut got,
                ) != 1
                {
                    return;
                }
                out.set_len(out.len() + got);
            }
        }
    }

    /// The server's handshake, as far as the bytes fed allow.
    pub(super) fn accept(&mut self) -> Result<(), SslError> {
        let f = self.f;
        // SAFETY: the SSL is live; the callback it runs reaches only the
        // context's and this SSL's data, not borrowed meanwhile.
        self.call(1, |s| unsafe { (f.SSL_accept)(s) }).map(drop)
    }

    /// The identity the host presented, or why it was refused (set by the
    /// PSK lookup during [`Ssl::accept`]).
    pub(super) fn peer(&self) -> Option<&Result<Identity, PskRefusal>> {
        // SAFETY: the data lives as long as self; OpenSSL writes it only
        // during calls that take `&mut self`.
        unsafe { self.data.as_ref() }.peer.as_ref()
    }
}

impl Ssl<TcpStream> {
    /// A client session over `tcp` offering `offer`.
    pub(super) fn client(
        ctx: &Arc<Ctx>,
        offer: ClientPsk,
        tcp: TcpStream,
    ) -> Result<Self, SetupError> {
        let data = SslData {
            peer: None,
            offer: Some(offer),
        };
        new_ssl(ctx, data, |f, raw| {
            // SAFETY: the SSL is live; SSL_set_fd makes a socket BIO that
            // does not close the descriptor; `tcp` keeps it open until
            // after SSL_free (Ssl's Drop).
            if unsafe { (f.SSL_set_fd)(raw, tcp.as_raw_fd()) } != 1 {
                return Err(SetupError::Socket {
                    call: "SSL_set_fd",
                    queue: queue_text(f),
                });
            }
            Ok(tcp)
        })
    }

    /// The socket.
    pub(super) fn socket(&self) -> &TcpStream {
        &self.io
    }

    /// The client's handshake (blocking within the socket's timeouts).
    pub(super) fn connect(&mut self) -> Result<(), SslError> {
        let f = self.f;
        // SAFETY: the SSL is live; the callback it runs reaches only this
        // SSL's data, not borrowed meanwhile.
        self.call(1, |s| unsafe { (f.SSL_connect)(s) }).map(drop)
    }

    /// Sends close_notify.
    pub(super) fn shutdown(&mut self) -> Result<(), SslError> {
        let f = self.f;
        // SAFETY: the SSL is live. 0 (sent, the peer's not yet seen) is
        // success here: numio does not wait for the peer's.
        self.call(0, |s| unsafe { (f.SSL_shutdown)(s) }).map(drop)
    }
}

impl<T> Ssl<T> {
    /// Runs `op` on the SSL: its result when at least `ok` (1 for most
    /// calls), or why not.
    fn call(
        &mut self,
        ok: c_int,
        op: impl FnOnce(*mut RawSsl) -> c_int,
    ) -> Result<c_int, SslError> {
        let f = self.f;
        clear_errors(f);
        // SAFETY: errno is this thread's; cleared so that a socket error is
        // told from an EOF.
        unsafe { *libc::__errno_location() = 0 };
        let ret = op(self.ptr.as_ptr());
        if ret >= ok {
            return Ok(ret);
        }
        let errno = io::Error::last_os_error();
        // SAFETY: the SSL is live; `ret` is the failed call's result.
        let code = unsafe { (f.SSL_get_error)(self.ptr.as_ptr(), ret) };
        let queue = error_queue(f);
        Err(match (code, queue) {
            (SSL_ERROR_WANT_READ, _) => SslError::WantRead,
            (SSL_ERROR_WANT_WRITE, _) => SslError::WantWrite,
            (SSL_ERROR_ZERO_RETURN, _) => SslError::ZeroReturn,
            (_, Some(text)) => SslError::Ssl(text),
            (SSL_ERROR_SYSCALL, None) => {
                SslError::Io((errno.raw_os_error() != Some(0)).then_some(errno))
            }
            (SSL_ERROR_SSL, None) => SslError::Ssl("an OpenSSL error without a reason".into()),
            (code, None) => SslError::Ssl(format!("OpenSSL error code {code}")),
        })
    }

    /// Decrypts into `buf` (not empty).
    pub(super) fn read(&mut self, buf: &mut [u8]) -> Result<usize, SslError> {
        let f = self.f;
        let mut n = 0usize;
        // SAFETY: the SSL is live; `buf` is writable for its length and
        // OpenSSL reports in `n` how much it wrote.
        self.call(1, |s| unsafe {
            (f.SSL_read_ex)(s, buf.as_mut_ptr().cast(), buf.len(), &mut n)
        })?;
        Ok(n)
    }

    /// Encrypts (some of) `buf` (not empty) and sends it.
    pub(super) fn write(&mut self, buf: &[u8]) -> Result<usize, SslError> {
        let f = self.f;
        let mut n = 0usize;
        // SAFETY: the SSL is live; `buf` is readable for its length.
        self.call(1, |s| unsafe {
            (f.SSL_write_ex)(s, buf.as_ptr().cast(), buf.len(), &mut n)
        })?;
        Ok(n)
    }

    /// Decrypted bytes buffered, not yet read.
    pub(super) fn pending(&self) -> usize {
        // SAFETY: the SSL is live.
        let n = unsafe { (self.f.SSL_pending)(self.ptr.as_ptr()) };
        n.max(0) as usize
    }

    /// The cipher suite agreed, by its standard name
    /// (`TLS_AES_128_GCM_SHA256`).
    pub(super) fn cipher(&self) -> Option<String> {
        // SAFETY: the SSL is live; the cipher and its name are OpenSSL's
        // static tables (null before a handshake).
        unsafe {
            let c = (self.f.SSL_get_current_cipher)(self.ptr.as_ptr());
            if c.is_null() {
                return None;
            }
            let name = (self.f.SSL_CIPHER_standard_name)(c);
            (!name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy().into_owned())
        }
    }
}

/// A TLS 1.3 session resuming `key` with the suite of `hash`; null on
/// failure. The caller (OpenSSL, through a callback's out parameter) owns
/// it.
///
/// # Safety
/// `ssl` is a live SSL.
unsafe fn psk_session(f: &Fns, ssl: *mut RawSsl, hash: PskHash, key: &[u8]) -> *mut RawSession {
    let id: [c_uchar; 2] = [0x13, hash.id()];
    // SAFETY: ssl is live (the caller's contract); id is two readable
    // bytes, as SSL_CIPHER_find reads.
    let cipher = unsafe { (f.SSL_CIPHER_find)(ssl, id.as_ptr()) };
    if cipher.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: a new session, owned here until returned or freed; the
    // setters copy the key and keep the cipher, one of OpenSSL's static
    // tables.
    unsafe {
        let s = (f.SSL_SESSION_new)();
        if s.is_null() {
            return s;
        }
        if (f.SSL_SESSION_set1_master_key)(s, key.as_ptr(), key.len()) != 1
            || (f.SSL_SESSION_set_cipher)(s, cipher) != 1
            || (f.SSL_SESSION_set_protocol_version)(s, TLS1_3_VERSION) != 1
        {
            (f.SSL_SESSION_free)(s);
            return ptr::null_mut();
        }
        s
    }
}

/// The server's lookup: the identity → its TLS PSK, through the context's
/// [`PskLookup`]; what it found (or why not) is kept on the session for
/// [`Ssl::peer`].
unsafe extern "C" fn find_session(
    ssl: *mut RawSsl,
    identity: *const c_uchar,
    len: usize,
    sess: *mut *mut RawSession,
) -> c_int {
    let Some(f) = loaded() else {
        return 0;
    };
    let identity = if identity.is_null() {
        &[][..]
    } else {
        // SAFETY: OpenSSL passes `len` readable bytes at `identity`, for
        // this call.
        unsafe { std::slice::from_raw_parts(identity, len) }
    };
    // SAFETY: ssl is OpenSSL's live SSL, made by `Ssl::server` from a
    // `Ctx::server`: the context's app data is its CtxData (only read),
    // the SSL's its SslData, which nothing else borrows while OpenSSL runs
    // the handshake (Ssl::accept holds `&mut`).
    let (ctx_data, data) = unsafe {
        let c = (f.SSL_CTX_get_ex_data)((f.SSL_get_SSL_CTX)(ssl), APP_DATA) as *const CtxData;
        let d = (f.SSL_get_ex_data)(ssl, APP_DATA) as *mut SslData;
        if c.is_null() || d.is_null() {
            return 0;
        }
        (&*c, &mut *d)
    };
    let found = catch_unwind(AssertUnwindSafe(|| {
        let text = std::str::from_utf8(identity).map_err(|_| PskRefusal::NotText)?;
        let id = Identity::parse(text)?;
        let psk = ctx_data.lookup.tls_psk(&id)?;
        Ok((id, psk))
    }))
    .unwrap_or(Err(PskRefusal::Panic));
    match found {
        Ok((id, psk)) => {
            // SAFETY: ssl is live for this call.
            let session = unsafe { psk_session(f, ssl, id.hash, &psk) };
            if session.is_null() {
                return 0;
            }
            data.peer = Some(Ok(id));
            // SAFETY: sess is OpenSSL's writable out parameter; it takes
            // the session's ownership.
            unsafe { *sess = session };
            1
        }
        Err(why) => {
            data.peer = Some(Err(why));
            0
        }
    }
}

/// The client's offer: the identity and PSK set on the session by
/// [`Ssl::client`].
unsafe extern "C" fn use_session(
    ssl: *mut RawSsl,
    _md: *const RawMd,
    id: *mut *const c_uchar,
    idlen: *mut usize,
    sess: *mut *mut RawSession,
) -> c_int {
    let Some(f) = loaded() else {
        return 0;
    };
    // SAFETY: ssl is OpenSSL's live SSL, made by `Ssl::client`: its app
    // data is its SslData, only read here.
    let data = unsafe { ((f.SSL_get_ex_data)(ssl, APP_DATA) as *const SslData).as_ref() };
    let Some(psk) = data.and_then(|d| d.offer.as_ref()) else {
        // SAFETY: writable out pointer; no PSK to offer.
        unsafe { *sess = ptr::null_mut() };
        return 1;
    };
    // SAFETY: ssl is live for this call.
    let session = unsafe { psk_session(f, ssl, psk.hash, &psk.key) };
    if session.is_null() {
        return 0;
    }
    // SAFETY: writable out pointers; the identity's bytes live in the
    // SSL's data, which outlives the handshake; OpenSSL takes the
    // session's ownership.
    unsafe {
        *id = psk.identity.as_ptr();
        *idlen = psk.identity.len();
        *sess = session;
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every constant above against the installed OpenSSL 3 headers: a C
    /// program prints each macro's value (cc and libssl-dev; skipped,
    /// saying why, where either is missing).
    #[test]
    fn constants_match_the_installed_headers() {
        macro_rules! named {
            ($($name:ident),* $(,)?) => {
                [$((stringify!($name), $name as i128)),*]
            };
        }
        let ours = named![
            SSL_CTRL_MODE,
            SSL_CTRL_SET_GROUPS_LIST,
            SSL_CTRL_SET_MIN_PROTO_VERSION,
            SSL_CTRL_SET_MAX_PROTO_VERSION,
            TLS1_3_VERSION,
            SSL_OP_NO_TICKET,
            SSL_MODE_ENABLE_PARTIAL_WRITE,
            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER,
            SSL_VERIFY_NONE,
            SSL_ERROR_SSL,
            SSL_ERROR_WANT_READ,
            SSL_ERROR_WANT_WRITE,
            SSL_ERROR_SYSCALL,
            SSL_ERROR_ZERO_RETURN,
            BIO_C_SET_BUF_MEM_EOF_RETURN,
            ERR_TXT_STRING,
        ];
        if !std::path::Path::new("/usr/include/openssl/ssl.h").exists() {
            eprintln!(
                "skipped: OpenSSL's headers are not installed (/usr/include/openssl/ssl.h; \
                 Debian/Ubuntu: apt install libssl-dev, Fedora/RHEL: dnf install openssl-devel)"
            );
            return;
        }
        let dir = std::env::temp_dir().join(format!("nvmf-ossl-consts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = String::from(
            "#include <stdio.h>\n#include <openssl/ssl.h>\n#include <openssl/bio.h>\n\
             #include <openssl/err.h>\n\
             #if OPENSSL_VERSION_MAJOR != 3\n#error \"not OpenSSL 3\"\n#endif\n\
             int main(void) {\n",
        );
        for (name, _) in &ours {
            c.push_str(&format!(
                "    printf(\"{name} %lld\\n\", (long long)({name}));\n"
            ));
        }
        c.push_str("    return 0;\n}\n");
        let src = dir.join("consts.c");
        let exe = dir.join("consts");
        std::fs::write(&src, c).unwrap();
        let cc = std::process::Command::new("cc")
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .output();
        let out = match cc {
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                eprintln!("skipped: no C compiler (cc: {e}); apt install build-essential");
                return;
            }
            Ok(out) => out,
        };
        assert!(
            out.status.success(),
            "cc: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run = std::process::Command::new(&exe).output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let text = String::from_utf8(run.stdout).unwrap();
        let mut seen = 0;
        for line in text.lines() {
            let (name, value) = line.split_once(' ').unwrap();
            let (_, ours) = ours.iter().find(|(n, _)| *n == name).unwrap();
            assert_eq!(value.parse::<i128>().unwrap(), *ours, "{name}");
            seen += 1;
        }
        assert_eq!(seen, ours.len(), "{text}");
    }

    /// The app data index is the one ssl.h's `SSL_set_app_data` uses.
    #[test]
    fn app_data_is_index_zero_in_the_headers() {
        let Ok(h) = std::fs::read_to_string("/usr/include/openssl/ssl.h") else {
            eprintln!("skipped: OpenSSL's headers are not installed (apt install libssl-dev)");
            return;
        };
        let squeezed: String = h.split_whitespace().collect();
        for m in ["SSL_set_app_data(s,arg)", "SSL_CTX_set_app_data(ctx,arg)"] {
            let at = squeezed.find(&format!("define{m}")).expect(m);
            let body = &squeezed[at..at + 80];
            assert!(body.contains("_set_ex_data("), "{body}");
            assert!(body.contains(&format!(",{APP_DATA},")), "{m}: {body}");
        }
    }

    /// Without libssl, the refusal names the packages that bring it.
    #[test]
    fn a_missing_libssl_names_its_packages() {
        let absent = Spec {
            sonames: &[c"libssl-numio-absent.so.3"],
            ..LIBSSL
        };
        let e = load(&absent).unwrap_err().to_string();
        assert!(
            e.starts_with("NVMe/TCP TLS needs libssl-numio-absent.so.3, which cannot be loaded"),
            "{e}"
        );
        assert!(
            e.contains("apt install libssl3 (libssl3t64 on Debian 13 and Ubuntu 24.04)"),
            "{e}"
        );
        assert!(e.contains("dnf install openssl-libs"), "{e}");
    }
}
