//! RDMA verbs and the RDMA connection manager, for NVMe over RDMA.
//!
//! The system's rdma-core (libibverbs, librdmacm and a provider such as
//! `rxe` for soft-RoCE) through `rdma-mummy-sys`: bindgen's bindings of
//! rdma-core's headers plus the header-inline calls (`ibv_post_send`,
//! `ibv_poll_cq`, ...), with the libraries opened at run time. numio
//! therefore starts without rdma-core, and [`check_libraries`] names what
//! to install when it is missing.
//!
//! One connected queue is an [`Endpoint`]: its RDMA CM id with its own
//! event channel, a protection domain, one completion queue (send and
//! receive) with a completion channel, a reliable-connected queue pair and
//! one registered [`Region`] that every local buffer of the queue lies in.
//! Work requests name offsets into that region, so nothing posted can point
//! at memory the endpoint does not own; the queue pair is destroyed before
//! the region is deregistered and unmapped.

use std::ffi::CStr;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::ptr::{self, NonNull};
use std::time::{Duration, Instant};

use rdma_mummy_sys as ffi;

/// What went wrong, naming the fix where there is one.
#[derive(Debug)]
pub struct RdmaError(pub String);

impl std::fmt::Display for RdmaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RdmaError {}

fn err(what: &str) -> RdmaError {
    RdmaError(format!("{what}: {}", io::Error::last_os_error()))
}

/// Checks that rdma-core's libraries load, naming the Debian packages to
/// install when they do not.
pub fn check_libraries() -> Result<(), RdmaError> {
    for (lib, pkg) in [
        (c"libibverbs.so.1", "libibverbs1 ibverbs-providers"),
        (c"librdmacm.so.1", "librdmacm1"),
    ] {
        // SAFETY: dlopen of a shared library by name; RTLD_NOLOAD is not
        // used, so it loads (and runs the library's constructors, as the
        // bindings' own loader does next); the handle is kept (never
        // closed), as the bindings keep theirs.
        let h = unsafe { libc::dlopen(lib.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
        if h.is_null() {
            return Err(RdmaError(format!(
                "rdma-core's {} cannot be loaded: install rdma-core's libraries (Debian: apt install {pkg} rdma-core)",
                lib.to_string_lossy()
            )));
        }
    }
    Ok(())
}

/// Names of the RDMA devices the system has (`rxe0`, `mlx5_0`, ...).
pub fn devices() -> Result<Vec<String>, RdmaError> {
    check_libraries()?;
    let mut n = 0;
    // SAFETY: n outlives the call; the list is freed below.
    let list = unsafe { ffi::ibv_get_device_list(&mut n) };
    if list.is_null() {
        // libibverbs answers null (ENOSYS) where the kernel has no RDMA
        // subsystem at all: no devices.
        return Ok(Vec::new());
    }
    let mut names = Vec::new();
    for i in 0..n.max(0) as usize {
        // SAFETY: the list holds n device pointers (ibv_get_device_list).
        let dev = unsafe { *list.add(i) };
        // SAFETY: dev is a device of the list; its name is a C string the
        // library owns until the list is freed.
        let name = unsafe { ffi::ibv_get_device_name(dev) };
        if !name.is_null() {
            // SAFETY: non-null, NUL-terminated (ibv_get_device_name).
            names.push(
                unsafe { CStr::from_ptr(name) }
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    // SAFETY: the list came from ibv_get_device_list and is freed once.
    unsafe { ffi::ibv_free_device_list(list) };
    Ok(names)
}

/// The error to give when no RDMA device can reach `addr`.
pub fn no_device_hint() -> &'static str {
    "no RDMA device: load a driver for the NIC, or for soft-RoCE `modprobe rdma_rxe` and `rdma link add rxe0 type rxe netdev IFACE` on the interface that holds the address"
}

/// An RDMA CM event, copied out and acknowledged.
#[derive(Debug)]
pub struct CmEvent {
    /// `RDMA_CM_EVENT_*`.
    pub kind: u32,
    /// Its status (an errno, negative, for failures; the reject reason for
    /// `REJECTED`).
    pub status: i32,
    /// The peer's private data (the connect request's or the accept's or
    /// reject's).
    pub private_data: Vec<u8>,
    /// The peer's responder resources (connect request).
    pub responder_resources: u8,
    /// The peer's initiator depth (connect request).
    pub initiator_depth: u8,
    /// For a connect request: the new id, owned by the receiver.
    pub new_id: Option<CmId>,
    /// For a connect request: the listening id it came through
    /// ([`CmId::token`]).
    pub listen_token: usize,
}

/// `RDMA_CM_EVENT_*` values.
pub mod event {
    use rdma_mummy_sys::rdma_cm_event_type as t;
    /// Address resolved.
    pub const ADDR_RESOLVED: u32 = t::RDMA_CM_EVENT_ADDR_RESOLVED;
    /// Address resolution failed.
    pub const ADDR_ERROR: u32 = t::RDMA_CM_EVENT_ADDR_ERROR;
    /// Route resolved.
    pub const ROUTE_RESOLVED: u32 = t::RDMA_CM_EVENT_ROUTE_RESOLVED;
    /// Route resolution failed.
    pub const ROUTE_ERROR: u32 = t::RDMA_CM_EVENT_ROUTE_ERROR;
    /// A connect request on a listening id.
    pub const CONNECT_REQUEST: u32 = t::RDMA_CM_EVENT_CONNECT_REQUEST;
    /// Connection failed.
    pub const CONNECT_ERROR: u32 = t::RDMA_CM_EVENT_CONNECT_ERROR;
    /// No reply from the peer.
    pub const UNREACHABLE: u32 = t::RDMA_CM_EVENT_UNREACHABLE;
    /// The peer rejected the connection.
    pub const REJECTED: u32 = t::RDMA_CM_EVENT_REJECTED;
    /// Connected.
    pub const ESTABLISHED: u32 = t::RDMA_CM_EVENT_ESTABLISHED;
    /// Disconnected.
    pub const DISCONNECTED: u32 = t::RDMA_CM_EVENT_DISCONNECTED;
    /// The device went away.
    pub const DEVICE_REMOVAL: u32 = t::RDMA_CM_EVENT_DEVICE_REMOVAL;
    /// The connection's timewait ended.
    pub const TIMEWAIT_EXIT: u32 = t::RDMA_CM_EVENT_TIMEWAIT_EXIT;
    /// The address changed.
    pub const ADDR_CHANGE: u32 = t::RDMA_CM_EVENT_ADDR_CHANGE;
}

/// librdmacm's name of an event kind.
pub fn event_name(kind: u32) -> String {
    // SAFETY: rdma_event_str returns a static string for any value.
    let s = unsafe { ffi::rdma_event_str(kind) };
    if s.is_null() {
        return format!("event {kind}");
    }
    // SAFETY: non-null static NUL-terminated string.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// An RDMA CM event channel: its fd is readable when an event waits.
#[derive(Debug)]
pub struct EventChannel {
    ch: NonNull<ffi::rdma_event_channel>,
}

// SAFETY: an event channel is a file descriptor wrapper librdmacm lets any
// thread use; numio uses each from one thread at a time (&mut for events).
unsafe impl Send for EventChannel {}

impl EventChannel {
    /// A new channel, non-blocking.
    pub fn new() -> Result<Self, RdmaError> {
        check_libraries()?;
        // SAFETY: no arguments; null on failure.
        let ch = unsafe { ffi::rdma_create_event_channel() };
        let ch = NonNull::new(ch).ok_or_else(|| err("rdma_create_event_channel"))?;
        let me = Self { ch };
        set_nonblocking(me.fd())?;
        Ok(me)
    }

    /// The channel's file descriptor (poll it for readability).
    pub fn fd(&self) -> RawFd {
        // SAFETY: ch is a live channel.
        unsafe { self.ch.as_ref().fd }
    }

    /// The next event, if one waits.
    pub fn try_event(&mut self) -> Result<Option<CmEvent>, RdmaError> {
        let mut ev: *mut ffi::rdma_cm_event = ptr::null_mut();
        // SAFETY: ch is live; ev receives an event we acknowledge below.
        let rc = unsafe { ffi::rdma_get_cm_event(self.ch.as_ptr(), &mut ev) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(None);
            }
            return Err(RdmaError(format!("rdma_get_cm_event: {e}")));
        }
        // SAFETY: rc == 0: ev is a valid event until acknowledged.
        let e = unsafe { &*ev };
        // SAFETY: for connection events the conn member is the one
        // librdmacm fills (ud is for UD port spaces, which numio never
        // creates).
        let conn = unsafe { e.param.conn };
        let private_data = if conn.private_data.is_null() {
            Vec::new()
        } else {
            // SAFETY: private_data_len bytes at private_data, valid until
            // the event is acknowledged.
            unsafe {
                std::slice::from_raw_parts(
                    conn.private_data as *const u8,
                    conn.private_data_len as usize,
                )
            }
            .to_vec()
        };
        let new_id = if e.event == event::CONNECT_REQUEST {
            NonNull::new(e.id).map(|id| CmId { id, qp: false })
        } else {
            None
        };
        let out = CmEvent {
            kind: e.event,
            status: e.status,
            private_data,
            responder_resources: conn.responder_resources,
            initiator_depth: conn.initiator_depth,
            new_id,
            listen_token: e.listen_id as usize,
        };
        // SAFETY: ev came from rdma_get_cm_event and is acknowledged once;
        // nothing of it is used after (the private data was copied).
        unsafe { ffi::rdma_ack_cm_event(ev) };
        Ok(Some(out))
    }

    /// Waits up to `timeout` for the next event.
    pub fn wait_event(&mut self, timeout: Duration) -> Result<Option<CmEvent>, RdmaError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(e) = self.try_event()? {
                return Ok(Some(e));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            poll_in(&[self.fd()], left)?;
        }
    }
}

impl Drop for EventChannel {
    fn drop(&mut self) {
        // SAFETY: created by rdma_create_event_channel; every id on it was
        // destroyed or migrated first (ids hold no reference to it after).
        unsafe { ffi::rdma_destroy_event_channel(self.ch.as_ptr()) };
    }
}

fn set_nonblocking(fd: RawFd) -> Result<(), RdmaError> {
    // SAFETY: fcntl on a descriptor the caller owns.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if fl < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) } < 0 {
        return Err(err("fcntl O_NONBLOCK"));
    }
    Ok(())
}

/// Waits until one of `fds` is readable or `timeout` passes; returns which
/// were readable.
pub fn poll_in(fds: &[RawFd], timeout: Duration) -> Result<Vec<bool>, RdmaError> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: p holds p.len() pollfds for the call's duration.
    let rc = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(RdmaError(format!("poll: {e}")));
    }
    Ok(p.iter().map(|x| x.revents != 0).collect())
}

fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage.
            unsafe { ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            (ss, std::mem::size_of::<libc::sockaddr_in>() as _)
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_in6 fits in sockaddr_storage.
            unsafe { ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            (ss, std::mem::size_of::<libc::sockaddr_in6>() as _)
        }
    }
}

fn from_storage(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: the family says it is a sockaddr_in.
            let sin = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::from((
                sin.sin_addr.s_addr.to_ne_bytes(),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says it is a sockaddr_in6.
            let sin6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::from((
                sin6.sin6_addr.s6_addr,
                u16::from_be(sin6.sin6_port),
            )))
        }
        _ => None,
    }
}

fn resolve_err(call: &str, dst: SocketAddr) -> RdmaError {
    let e = io::Error::last_os_error();
    let hint = match e.raw_os_error() {
        Some(libc::ENODEV) | Some(libc::EADDRNOTAVAIL) | Some(libc::ENETUNREACH) => {
            format!(
                ": the route to {dst} leaves through no RDMA device; {}",
                no_device_hint()
            )
        }
        _ => String::new(),
    };
    RdmaError(format!("{call} {dst}: {e}{hint}"))
}

/// An RDMA CM id (a listener, or one side of a connection before its
/// endpoint is built).
#[derive(Debug)]
pub struct CmId {
    id: NonNull<ffi::rdma_cm_id>,
    qp: bool,
}

// SAFETY: an rdma_cm_id may be used from any thread; numio uses each from
// one thread at a time.
unsafe impl Send for CmId {}

/// Connection parameters beside the private data.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnParams {
    /// RDMA READs the peer may have outstanding against us.
    pub responder_resources: u8,
    /// RDMA READs we may have outstanding against the peer.
    pub initiator_depth: u8,
    /// Retries of a send the peer has no receive posted for (7: for ever;
    /// a target uses a finite count, so a host that never posts receives
    /// fails the queue rather than stalls it).
    pub rnr_retry: u8,
}

fn conn_param(private: &[u8], p: ConnParams) -> ffi::rdma_conn_param {
    ffi::rdma_conn_param {
        private_data: private.as_ptr() as *const _,
        private_data_len: private.len().min(255) as u8,
        responder_resources: p.responder_resources,
        initiator_depth: p.initiator_depth,
        flow_control: 1,
        retry_count: 7,
        rnr_retry_count: p.rnr_retry.min(7),
        srq: 0,
        qp_num: 0,
    }
}

impl CmId {
    /// A new id (reliable connected, TCP port space) on `ch`.
    pub fn new(ch: &EventChannel) -> Result<Self, RdmaError> {
        let mut id = ptr::null_mut();
        // SAFETY: ch is live; id receives the new id.
        let rc = unsafe {
            ffi::rdma_create_id(
                ch.ch.as_ptr(),
                &mut id,
                ptr::null_mut(),
                ffi::rdma_port_space::RDMA_PS_TCP,
            )
        };
        if rc != 0 {
            return Err(err("rdma_create_id"));
        }
        let id = NonNull::new(id).ok_or_else(|| err("rdma_create_id"))?;
        Ok(Self { id, qp: false })
    }

    /// Binds to `addr` and listens.
    pub fn listen(&self, addr: SocketAddr, backlog: i32) -> Result<(), RdmaError> {
        let (mut ss, _) = sockaddr(addr);
        // SAFETY: id is live; ss is a sockaddr of the right family.
        if unsafe {
            ffi::rdma_bind_addr(self.id.as_ptr(), &mut ss as *mut _ as *mut libc::sockaddr)
        } != 0
        {
            let e = io::Error::last_os_error();
            let hint = if e.raw_os_error() == Some(libc::ENODEV)
                || e.raw_os_error() == Some(libc::EADDRNOTAVAIL)
            {
                format!(" ({})", no_device_hint())
            } else {
                String::new()
            };
            return Err(RdmaError(format!(
                "cannot bind RDMA listener to {addr}: {e}{hint}"
            )));
        }
        if self.verbs().is_null() && !addr.ip().is_unspecified() {
            return Err(RdmaError(format!(
                "{addr} is on no RDMA device: {}",
                no_device_hint()
            )));
        }
        // SAFETY: id is bound.
        if unsafe { ffi::rdma_listen(self.id.as_ptr(), backlog) } != 0 {
            return Err(err(&format!("rdma_listen on {addr}")));
        }
        Ok(())
    }

    /// A value naming this id in [`CmEvent::listen_token`].
    pub fn token(&self) -> usize {
        self.id.as_ptr() as usize
    }

    /// The peer's address (a connect request's or a connected id's).
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        // SAFETY: id is live; route.addr holds the destination sockaddr
        // (the peer, for a connect request's id).
        let ss = unsafe { &self.id.as_ref().route.addr.dst_addr_union.dst_storage };
        from_storage(ss)
    }

    /// The port the id is bound to (what librdmacm's rdma_get_src_port
    /// reads: the bound source address).
    pub fn local_port(&self) -> u16 {
        // SAFETY: id is live; route.addr holds the bound source sockaddr.
        let ss = unsafe { &self.id.as_ref().route.addr.src_addr_union.src_storage };
        from_storage(ss).map_or(0, |a| a.port())
    }

    fn verbs(&self) -> *mut ffi::ibv_context {
        // SAFETY: id is live.
        unsafe { self.id.as_ref().verbs }
    }

    /// Resolves `dst`'s address and route (client side), waiting on `ch`.
    pub fn resolve(
        &self,
        ch: &mut EventChannel,
        dst: SocketAddr,
        timeout: Duration,
    ) -> Result<(), RdmaError> {
        let (mut ss, _) = sockaddr(dst);
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: id is live; ss is a sockaddr of dst's family.
        if unsafe {
            ffi::rdma_resolve_addr(
                self.id.as_ptr(),
                ptr::null_mut(),
                &mut ss as *mut _ as *mut libc::sockaddr,
                ms,
            )
        } != 0
        {
            return Err(resolve_err("rdma_resolve_addr", dst));
        }
        self.expect(
            ch,
            event::ADDR_RESOLVED,
            timeout,
            &format!("resolving {dst}"),
        )?;
        // SAFETY: the address is resolved.
        if unsafe { ffi::rdma_resolve_route(self.id.as_ptr(), ms) } != 0 {
            return Err(resolve_err("rdma_resolve_route", dst));
        }
        self.expect(
            ch,
            event::ROUTE_RESOLVED,
            timeout,
            &format!("route to {dst}"),
        )?;
        Ok(())
    }

    fn expect(
        &self,
        ch: &mut EventChannel,
        want: u32,
        timeout: Duration,
        what: &str,
    ) -> Result<CmEvent, RdmaError> {
        match ch.wait_event(timeout)? {
            Some(e) if e.kind == want => Ok(e),
            Some(e) => Err(RdmaError(format!(
                "{what}: {} (status {}){}",
                event_name(e.kind),
                e.status,
                if e.kind == event::ADDR_ERROR || e.kind == event::ROUTE_ERROR {
                    format!("; {}", no_device_hint())
                } else {
                    String::new()
                }
            ))),
            None => Err(RdmaError(format!("{what}: no answer within {timeout:?}"))),
        }
    }

    /// Moves the id's events to `ch`.
    pub fn migrate(&self, ch: &EventChannel) -> Result<(), RdmaError> {
        // SAFETY: both live; no event of this id is unacknowledged (events
        // are acknowledged as they are read).
        if unsafe { ffi::rdma_migrate_id(self.id.as_ptr(), ch.ch.as_ptr()) } != 0 {
            return Err(err("rdma_migrate_id"));
        }
        Ok(())
    }

    /// Rejects a connect request with `private` data.
    pub fn reject(self, private: &[u8]) -> Result<(), RdmaError> {
        // SAFETY: a connect request's id; private outlives the call.
        let rc = unsafe {
            ffi::rdma_reject(
                self.id.as_ptr(),
                private.as_ptr() as *const _,
                private.len().min(255) as u8,
            )
        };
        if rc != 0 {
            return Err(err("rdma_reject"));
        }
        Ok(())
    }

    /// The device's most outstanding RDMA READs as initiator.
    pub fn max_rd_atom(&self) -> u8 {
        let ctx = self.verbs();
        if ctx.is_null() {
            return 0;
        }
        // SAFETY: all-zero is a valid ibv_device_attr to be filled.
        let mut attr: ffi::ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: ctx is the id's live device context.
        if unsafe { ffi::ibv_query_device(ctx, &mut attr) } != 0 {
            return 1;
        }
        attr.max_qp_init_rd_atom.clamp(1, 255) as u8
    }
}

impl Drop for CmId {
    fn drop(&mut self) {
        if self.qp {
            // SAFETY: the id has a QP made by rdma_create_qp.
            unsafe { ffi::rdma_destroy_qp(self.id.as_ptr()) };
        }
        // SAFETY: the id's events are all acknowledged; destroyed once.
        unsafe { ffi::rdma_destroy_id(self.id.as_ptr()) };
    }
}

/// Page-aligned memory registered with the endpoint's protection domain.
#[derive(Debug)]
pub struct Region {
    ptr: NonNull<u8>,
    len: usize,
    mr: *mut ffi::ibv_mr,
}

impl Region {
    fn new(pd: *mut ffi::ibv_pd, len: usize, node: Option<u32>) -> Result<Self, RdmaError> {
        let len = len.max(4096).div_ceil(4096) * 4096;
        // SAFETY: a fresh private anonymous mapping.
        let p = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(err(&format!("mmap of {len} bytes for RDMA buffers")));
        }
        let ptr = NonNull::new(p as *mut u8).expect("mmap returned non-null");
        if let Some(node) = node {
            // SAFETY: our fresh mapping; nothing faulted in yet. Failure
            // only loses placement.
            let _ = unsafe { crate::memory::mbind(ptr.as_ptr(), len, node) };
        }
        let access = ffi::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0
            | ffi::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0
            | ffi::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0;
        // SAFETY: pd is live; the range is our mapping, deregistered before
        // it is unmapped (Drop).
        let mr = unsafe { ffi::ibv_reg_mr(pd, p, len, access as i32) };
        if mr.is_null() {
            let e = err(&format!("ibv_reg_mr of {len} bytes (raise `ulimit -l`?)"));
            // SAFETY: our mapping, unused.
            unsafe { libc::munmap(p, len) };
            return Err(e);
        }
        Ok(Self { ptr, len, mr })
    }

    /// Its bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: len bytes mapped and owned for self's life.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Its bytes, to fill.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as bytes(), exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Its address as the peer names it (keyed SGLs).
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// Its remote key.
    pub fn rkey(&self) -> u32 {
        // SAFETY: mr is live for self's life.
        unsafe { (*self.mr).rkey }
    }

    fn lkey(&self) -> u32 {
        // SAFETY: as rkey().
        unsafe { (*self.mr).lkey }
    }

    /// Its length, bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never empty.
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: registered once; the QP that could use it is gone
        // (Endpoint's drop order).
        unsafe { ffi::ibv_dereg_mr(self.mr) };
        // SAFETY: our mapping, unmapped once.
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut _, self.len) };
    }
}

/// Sizes of an endpoint's queue pair.
#[derive(Debug, Clone, Copy)]
pub struct QueueSizes {
    /// Send work requests outstanding at most.
    pub send: u32,
    /// Receive work requests posted at most.
    pub recv: u32,
    /// Registered buffer bytes.
    pub region_bytes: usize,
    /// NUMA node for the buffers, where known.
    pub node: Option<u32>,
}

/// One work completion.
#[derive(Debug, Clone, Copy, Default)]
pub struct Completion {
    /// The work request's id.
    pub wr_id: u64,
    /// `IBV_WC_SUCCESS` (0) or an error.
    pub status: u32,
    /// `IBV_WC_*` opcode (valid on success).
    pub opcode: u32,
    /// Bytes received (receives).
    pub byte_len: u32,
}

impl Completion {
    /// Whether it succeeded.
    pub fn ok(&self) -> bool {
        self.status == ffi::ibv_wc_status::IBV_WC_SUCCESS
    }

    /// Whether it is a receive.
    pub fn is_recv(&self) -> bool {
        self.opcode & ffi::ibv_wc_opcode::IBV_WC_RECV != 0
    }

    /// libibverbs' name of its status.
    pub fn status_name(&self) -> String {
        // SAFETY: returns a static string for any value.
        let s = unsafe { ffi::ibv_wc_status_str(self.status) };
        if s.is_null() {
            return format!("status {}", self.status);
        }
        // SAFETY: non-null static string.
        unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
    }
}

/// One connected queue: CM id, protection domain, completion queue and
/// channel, queue pair, registered region and the id's own event channel.
pub struct Endpoint {
    // Drop order: the id (and its QP) first, then the region, CQ, channel
    // and PD (Drop below), the event channel last.
    id: Option<CmId>,
    region: Option<Region>,
    cq: *mut ffi::ibv_cq,
    comp: *mut ffi::ibv_comp_channel,
    pd: *mut ffi::ibv_pd,
    events: EventChannel,
    armed: bool,
    wc: Vec<ffi::ibv_wc>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("region", &self.region)
            .field("armed", &self.armed)
            .finish_non_exhaustive()
    }
}

// SAFETY: verbs objects may be used from any thread; an endpoint is used
// by one thread at a time (&mut for everything that posts or polls).
unsafe impl Send for Endpoint {}

impl Endpoint {
    /// Builds the verbs resources on `id` (a connect request's id, or a
    /// client id with its route resolved) and moves its events to a channel
    /// of its own.
    pub fn new(id: CmId, sizes: QueueSizes) -> Result<Self, RdmaError> {
        let events = EventChannel::new()?;
        id.migrate(&events)?;
        let ctx = id.verbs();
        if ctx.is_null() {
            return Err(RdmaError(format!(
                "the connection has no RDMA device: {}",
                no_device_hint()
            )));
        }
        let mut ep = Self {
            id: Some(id),
            region: None,
            cq: ptr::null_mut(),
            comp: ptr::null_mut(),
            pd: ptr::null_mut(),
            events,
            armed: false,
            wc: Vec::new(),
        };
        // SAFETY: ctx is the id's live device context.
        ep.pd = unsafe { ffi::ibv_alloc_pd(ctx) };
        if ep.pd.is_null() {
            return Err(err("ibv_alloc_pd"));
        }
        // SAFETY: ctx is live.
        ep.comp = unsafe { ffi::ibv_create_comp_channel(ctx) };
        if ep.comp.is_null() {
            return Err(err("ibv_create_comp_channel"));
        }
        // SAFETY: comp is live.
        set_nonblocking(unsafe { (*ep.comp).fd })?;
        let cqe = (sizes.send + sizes.recv) as i32;
        // SAFETY: ctx and comp are live.
        ep.cq = unsafe { ffi::ibv_create_cq(ctx, cqe, ptr::null_mut(), ep.comp, 0) };
        if ep.cq.is_null() {
            return Err(err(&format!("ibv_create_cq of {cqe} entries")));
        }
        ep.region = Some(Region::new(ep.pd, sizes.region_bytes, sizes.node)?);
        // SAFETY: all-zero is a valid init attr, filled below.
        let mut attr: ffi::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        attr.send_cq = ep.cq;
        attr.recv_cq = ep.cq;
        attr.qp_type = ffi::ibv_qp_type::IBV_QPT_RC;
        attr.cap.max_send_wr = sizes.send;
        attr.cap.max_recv_wr = sizes.recv;
        attr.cap.max_send_sge = 1;
        attr.cap.max_recv_sge = 1;
        attr.cap.max_inline_data = 64;
        // SAFETY: id has a device; pd and cq are live; attr outlives the
        // call.
        if unsafe { ffi::rdma_create_qp(ep.idp(), ep.pd, &mut attr) } != 0 {
            return Err(err(&format!(
                "rdma_create_qp ({} send, {} receive work requests)",
                sizes.send, sizes.recv
            )));
        }
        ep.id.as_mut().expect("endpoint has its id").qp = true;
        ep.wc = vec![
            // SAFETY: all-zero is a valid ibv_wc (filled by polling).
            unsafe { std::mem::zeroed() };
            64
        ];
        Ok(ep)
    }

    fn idp(&self) -> *mut ffi::rdma_cm_id {
        self.id.as_ref().expect("endpoint has its id").id.as_ptr()
    }

    fn qp(&self) -> *mut ffi::ibv_qp {
        // SAFETY: the id is live and has its QP (new()).
        unsafe { (*self.idp()).qp }
    }

    /// The registered buffers.
    pub fn region(&self) -> &Region {
        self.region.as_ref().expect("endpoint has its region")
    }

    /// The registered buffers, to fill.
    pub fn region_mut(&mut self) -> &mut Region {
        self.region.as_mut().expect("endpoint has its region")
    }

    /// Accepts the connect request this endpoint was built on.
    pub fn accept(&self, private: &[u8], p: ConnParams) -> Result<(), RdmaError> {
        let mut cp = conn_param(private, p);
        // SAFETY: a connect request's id with its QP; cp and private
        // outlive the call.
        if unsafe { ffi::rdma_accept(self.idp(), &mut cp) } != 0 {
            return Err(err("rdma_accept"));
        }
        Ok(())
    }

    /// Connects (client side) with `private` data and waits for the
    /// peer's answer.
    pub fn connect(
        &mut self,
        private: &[u8],
        p: ConnParams,
        timeout: Duration,
    ) -> Result<Answer, RdmaError> {
        let mut cp = conn_param(private, p);
        // SAFETY: a resolved id with its QP; cp and private outlive it.
        if unsafe { ffi::rdma_connect(self.idp(), &mut cp) } != 0 {
            return Err(err("rdma_connect"));
        }
        match self.events.wait_event(timeout)? {
            Some(e) if e.kind == event::ESTABLISHED => Ok(Answer::Accepted(e.private_data)),
            Some(e) if e.kind == event::CONNECT_ERROR || e.kind == event::UNREACHABLE => Err(RdmaError(format!(
                "connecting: {} (status {}): nothing answers there over RDMA (is the target listening with RDMA on that address and port?)",
                event_name(e.kind),
                e.status
            ))),
            Some(e) if e.kind == event::REJECTED => Ok(Answer::Rejected {
                status: e.status,
                private_data: e.private_data,
            }),
            Some(e) => Err(RdmaError(format!(
                "connecting: {} (status {})",
                event_name(e.kind),
                e.status
            ))),
            None => Err(RdmaError(format!(
                "connecting: no answer within {timeout:?}"
            ))),
        }
    }

    /// The next connection event (ESTABLISHED, DISCONNECTED, ...), if one
    /// waits.
    pub fn try_event(&mut self) -> Result<Option<CmEvent>, RdmaError> {
        self.events.try_event()
    }

    /// Disconnects (both directions flush).
    pub fn disconnect(&self) {
        // SAFETY: id is live; a second call fails harmlessly.
        unsafe { ffi::rdma_disconnect(self.idp()) };
    }

    /// The fds to poll: completions, connection events.
    pub fn fds(&self) -> [RawFd; 2] {
        // SAFETY: comp is live.
        [unsafe { (*self.comp).fd }, self.events.fd()]
    }

    fn check_range(&self, off: usize, len: u32) -> Result<(), RdmaError> {
        if off
            .checked_add(len as usize)
            .is_none_or(|e| e > self.region().len())
        {
            return Err(RdmaError(format!(
                "buffer {off}+{len} outside the registered {} bytes",
                self.region().len()
            )));
        }
        Ok(())
    }

    /// Posts a receive into `off..off+len` of the region.
    pub fn post_recv(&self, wr_id: u64, off: usize, len: u32) -> Result<(), RdmaError> {
        self.check_range(off, len)?;
        let r = self.region();
        let mut sge = ffi::ibv_sge {
            addr: r.addr() + off as u64,
            length: len,
            lkey: r.lkey(),
        };
        let mut wr = ffi::ibv_recv_wr {
            wr_id,
            next: ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: 1,
        };
        let mut bad = ptr::null_mut();
        // SAFETY: the QP is live; sge names registered memory of this
        // endpoint (checked), which outlives the QP.
        let rc = unsafe { ffi::ibv_post_recv(self.qp(), &mut wr, &mut bad) };
        if rc != 0 {
            return Err(RdmaError(format!(
                "ibv_post_recv: {}",
                io::Error::from_raw_os_error(rc)
            )));
        }
        Ok(())
    }

    fn post(
        &self,
        wr_id: u64,
        off: usize,
        len: u32,
        op: Op,
        signaled: bool,
    ) -> Result<(), RdmaError> {
        self.check_range(off, len)?;
        let r = self.region();
        let mut sge = ffi::ibv_sge {
            addr: r.addr() + off as u64,
            length: len,
            lkey: r.lkey(),
        };
        // SAFETY: all-zero is a valid send WR, filled below.
        let mut wr: ffi::ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.wr_id = wr_id;
        wr.sg_list = &mut sge;
        wr.num_sge = if len == 0 { 0 } else { 1 };
        let mut flags = 0;
        if signaled {
            flags |= ffi::ibv_send_flags::IBV_SEND_SIGNALED.0;
        }
        match op {
            Op::Send { invalidate } => {
                if let Some(rkey) = invalidate {
                    wr.opcode = ffi::ibv_wr_opcode::IBV_WR_SEND_WITH_INV;
                    wr.imm_data_invalidated_rkey_union.invalidated_rkey = rkey;
                } else {
                    wr.opcode = ffi::ibv_wr_opcode::IBV_WR_SEND;
                }
            }
            Op::Read { raddr, rkey } => {
                wr.opcode = ffi::ibv_wr_opcode::IBV_WR_RDMA_READ;
                wr.wr.rdma = ffi::rdma_t {
                    remote_addr: raddr,
                    rkey,
                };
            }
            Op::Write { raddr, rkey } => {
                wr.opcode = ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE;
                wr.wr.rdma = ffi::rdma_t {
                    remote_addr: raddr,
                    rkey,
                };
            }
        }
        wr.send_flags = flags;
        let mut bad = ptr::null_mut();
        // SAFETY: the QP is live; sge names registered memory of this
        // endpoint (checked); remote addresses are the peer's to check.
        let rc = unsafe { ffi::ibv_post_send(self.qp(), &mut wr, &mut bad) };
        if rc != 0 {
            return Err(RdmaError(format!(
                "ibv_post_send: {}",
                io::Error::from_raw_os_error(rc)
            )));
        }
        Ok(())
    }

    /// Posts a SEND of `off..off+len`, optionally invalidating the peer's
    /// `rkey`.
    pub fn post_send(
        &self,
        wr_id: u64,
        off: usize,
        len: u32,
        invalidate: Option<u32>,
        signaled: bool,
    ) -> Result<(), RdmaError> {
        self.post(wr_id, off, len, Op::Send { invalidate }, signaled)
    }

    /// Posts an RDMA READ of the peer's `raddr` (key `rkey`) into
    /// `off..off+len` (always signaled).
    pub fn post_read(
        &self,
        wr_id: u64,
        off: usize,
        len: u32,
        raddr: u64,
        rkey: u32,
    ) -> Result<(), RdmaError> {
        self.post(wr_id, off, len, Op::Read { raddr, rkey }, true)
    }

    /// Posts an RDMA WRITE of `off..off+len` to the peer's `raddr`.
    pub fn post_write(
        &self,
        wr_id: u64,
        off: usize,
        len: u32,
        raddr: u64,
        rkey: u32,
        signaled: bool,
    ) -> Result<(), RdmaError> {
        self.post(wr_id, off, len, Op::Write { raddr, rkey }, signaled)
    }

    /// Takes up to `out.len()` completions without waiting.
    pub fn poll(&mut self, out: &mut Vec<Completion>) -> Result<usize, RdmaError> {
        out.clear();
        let n = self.wc.len() as i32;
        // SAFETY: cq is live; wc holds n entries.
        let got = unsafe { ffi::ibv_poll_cq(self.cq, n, self.wc.as_mut_ptr()) };
        if got < 0 {
            return Err(RdmaError("ibv_poll_cq failed".into()));
        }
        for w in &self.wc[..got as usize] {
            out.push(Completion {
                wr_id: w.wr_id,
                status: w.status,
                opcode: w.opcode,
                byte_len: w.byte_len,
            });
        }
        Ok(got as usize)
    }

    /// Asks for a completion event, then polls once more: when this returns
    /// zero completions the completion fd wakes on the next one. Consumes
    /// a pending completion event first.
    pub fn arm(&mut self, out: &mut Vec<Completion>) -> Result<usize, RdmaError> {
        self.ack_event();
        if !self.armed {
            // SAFETY: cq is live.
            if unsafe { ffi::ibv_req_notify_cq(self.cq, 0) } != 0 {
                return Err(err("ibv_req_notify_cq"));
            }
            self.armed = true;
        }
        self.poll(out)
    }

    fn ack_event(&mut self) {
        let mut cq = ptr::null_mut();
        let mut ctx = ptr::null_mut();
        // SAFETY: comp is live and non-blocking; an event names our cq.
        if unsafe { ffi::ibv_get_cq_event(self.comp, &mut cq, &mut ctx) } == 0 {
            // SAFETY: one event got, one acknowledged.
            unsafe { ffi::ibv_ack_cq_events(cq, 1) };
            self.armed = false;
        }
    }
}

/// The peer's answer to a connect.
#[derive(Debug)]
pub enum Answer {
    /// Accepted, with its private data.
    Accepted(Vec<u8>),
    /// Rejected: the CM's reason and the peer's private data.
    Rejected {
        /// The reject reason (IB CM reject code; 28 is a consumer reject).
        status: i32,
        /// The peer's private data.
        private_data: Vec<u8>,
    },
}

enum Op {
    Send { invalidate: Option<u32> },
    Read { raddr: u64, rkey: u32 },
    Write { raddr: u64, rkey: u32 },
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.ack_event();
        // The QP and id go first: nothing can then reach the region.
        drop(self.id.take());
        drop(self.region.take());
        // SAFETY: each created once in new(), destroyed once; the QP using
        // the CQ is gone.
        unsafe {
            if !self.cq.is_null() {
                ffi::ibv_destroy_cq(self.cq);
            }
            if !self.comp.is_null() {
                ffi::ibv_destroy_comp_channel(self.comp);
            }
            if !self.pd.is_null() {
                ffi::ibv_dealloc_pd(self.pd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockaddr_v4_port_is_big_endian() {
        let (ss, len) = sockaddr("10.1.2.3:4420".parse().unwrap());
        assert_eq!(len as usize, std::mem::size_of::<libc::sockaddr_in>());
        // SAFETY: sockaddr() wrote a sockaddr_in.
        let sin = unsafe { &*(&ss as *const _ as *const libc::sockaddr_in) };
        assert_eq!(u16::from_be(sin.sin_port), 4420);
        assert_eq!(sin.sin_addr.s_addr.to_ne_bytes(), [10, 1, 2, 3]);
    }

    #[test]
    fn libraries_load_or_name_the_packages() {
        match check_libraries() {
            Ok(()) => {
                // This machine has rdma-core; devices() answers (maybe none).
                devices().unwrap();
            }
            Err(e) => assert!(e.0.contains("apt install"), "{e}"),
        }
    }
}
