//! The network interface that holds an address: getifaddrs(3), the one
//! call rustix has no wrapper for that numio needs to place a listener's or
//! a connection's work on its NIC's NUMA node (the node itself is
//! `topology`'s to read).

use std::ffi::CStr;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The name of the interface that has address `ip` (e.g. `lo` for
/// 127.0.0.1, `ens1f0` for its address). `None` for an address no
/// interface holds, and for the unspecified address (0.0.0.0, ::), which
/// every interface serves.
pub fn interface_of(ip: IpAddr) -> io::Result<Option<String>> {
    if ip.is_unspecified() {
        return Ok(None);
    }
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list it allocated into `head`; on success
    // it is released by the freeifaddrs below, on every path.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut found = None;
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not yet
        // freed; its fields are valid for reading until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        // SAFETY: a non-null ifa_addr points to a sockaddr of the family
        // it names, as getifaddrs documents.
        let addr = unsafe { sockaddr_ip(ifa.ifa_addr) };
        if addr == Some(ip) && !ifa.ifa_name.is_null() {
            // SAFETY: ifa_name is a NUL-terminated string of the list.
            let name = unsafe { CStr::from_ptr(ifa.ifa_name) };
            found = Some(name.to_string_lossy().into_owned());
            break;
        }
    }
    // SAFETY: `head` came from getifaddrs above and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(found)
}

/// The IP address of a `sockaddr` of family AF_INET or AF_INET6.
///
/// # Safety
/// `sa` is null or points to a valid sockaddr of the family it names.
unsafe fn sockaddr_ip(sa: *const libc::sockaddr) -> Option<IpAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: the caller's contract: a valid sockaddr whose family field
    // says which structure it is.
    unsafe {
        match i32::from((*sa).sa_family) {
            libc::AF_INET => {
                let v4 = &*(sa as *const libc::sockaddr_in);
                Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr))))
            }
            libc::AF_INET6 => {
                let v6 = &*(sa as *const libc::sockaddr_in6);
                Some(IpAddr::V6(Ipv6Addr::from(v6.sin6_addr.s6_addr)))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_on_lo_and_unheld_addresses_on_none() {
        let lo = interface_of(IpAddr::V4(Ipv4Addr::LOCALHOST)).unwrap();
        assert_eq!(lo.as_deref(), Some("lo"));
        assert_eq!(interface_of("0.0.0.0".parse().unwrap()).unwrap(), None);
        // TEST-NET-3: documentation only, never configured.
        assert_eq!(interface_of("203.0.113.77".parse().unwrap()).unwrap(), None);
    }
}
