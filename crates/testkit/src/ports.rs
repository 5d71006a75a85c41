//! Free ports on 127.0.0.1 (a fixed port may be taken on the machine
//! running the tests).

use std::net::{TcpListener, UdpSocket};

/// The first of `n` consecutive UDP ports on 127.0.0.1 that are free now.
pub fn free_udp_ports(n: u16) -> u16 {
    for _ in 0..100 {
        let base = UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if base.checked_add(n).is_none() {
            continue;
        }
        let held: Vec<_> = (0..n)
            .map_while(|i| UdpSocket::bind(("127.0.0.1", base + i)).ok())
            .collect();
        if held.len() == usize::from(n) {
            return base;
        }
    }
    panic!("no {n} consecutive free UDP ports on 127.0.0.1");
}

/// A TCP port on 127.0.0.1 that is free now (bound, then closed).
pub fn free_tcp_port() -> u16 {
    let [port] = free_tcp_ports::<1>();
    port
}

/// `N` distinct TCP ports on 127.0.0.1 that are free now (all bound at
/// once, then closed).
pub fn free_tcp_ports<const N: usize>() -> [u16; N] {
    let held: Vec<TcpListener> = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    std::array::from_fn(|i| held[i].local_addr().unwrap().port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_free_udp_ports_can_be_bound_together() {
        let base = free_udp_ports(3);
        let held: Vec<UdpSocket> = (0..3)
            .map(|i| UdpSocket::bind(("127.0.0.1", base + i)).unwrap())
            .collect();
        assert_eq!(held.len(), 3);
    }
}
