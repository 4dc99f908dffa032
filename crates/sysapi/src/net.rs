//! Network interfaces: which interface holds a local address
//! (getifaddrs(3)), so a connection's local end can be mapped to its
//! interface and, through `topology`, to the interface's NUMA node.

use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The name of the interface that holds local address `ip`, `None` when
/// none does (or getifaddrs fails).
pub fn interface_of(ip: IpAddr) -> Option<String> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list it allocated to `head`; freed below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return None;
    }
    let mut found = None;
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, alive
        // until freeifaddrs; its fields are valid per getifaddrs(3).
        let ifa = unsafe { &*cur };
        // SAFETY: as above; ifa_addr is NULL or a sockaddr of its family.
        if let Some(addr) = unsafe { address(ifa.ifa_addr) } {
            if addr == ip && !ifa.ifa_name.is_null() {
                // SAFETY: ifa_name is a NUL-terminated string of the list.
                let name = unsafe { CStr::from_ptr(ifa.ifa_name) };
                found = Some(name.to_string_lossy().into_owned());
                break;
            }
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    found
}

/// The IP address of a sockaddr, `None` for other families.
///
/// # Safety
///
/// `sa` is NULL or points at a sockaddr whose family field says its type.
unsafe fn address(sa: *const libc::sockaddr) -> Option<IpAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: the caller's promise.
    match i32::from(unsafe { (*sa).sa_family }) {
        libc::AF_INET => {
            // SAFETY: family AF_INET: a sockaddr_in.
            let v4 = unsafe { &*(sa as *const libc::sockaddr_in) };
            Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr))))
        }
        libc::AF_INET6 => {
            // SAFETY: family AF_INET6: a sockaddr_in6.
            let v6 = unsafe { &*(sa as *const libc::sockaddr_in6) };
            Some(IpAddr::V6(Ipv6Addr::from(v6.sin6_addr.s6_addr)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_on_lo_and_an_unheld_address_on_none() {
        assert_eq!(
            interface_of(IpAddr::V4(Ipv4Addr::LOCALHOST)).as_deref(),
            Some("lo")
        );
        assert_eq!(interface_of(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 77))), None);
    }
}
