//! Keeping traffic on our links: the `unreachable` guard route over the
//! address range, and the route check a load generator makes before
//! sending.

use std::net::Ipv4Addr;

use super::{Ip, Ipv4Net, NetError, NetRecord};

/// Metric of the guard route: the highest, so every real route of ours (even
/// a connected route of the same prefix) wins over it.
pub(super) const GUARD_METRIC: u32 = u32::MAX;

/// Fails unless traffic to `addr` would leave the root namespace as plain
/// unicast through a link of ours (a name starting with `tp`): call it in a
/// load generator before sending to an instance address. Loopback and local
/// addresses are refused (`lo` is not ours), and so is every address of a
/// guarded range that no instance serves on a veth host (the `unreachable`
/// route answers). On the shared kinds every address of the range passes:
/// the whole range is our segment, and an address nobody holds just gets no
/// ARP answer, so nothing leaves the machine. Returns the output device.
/// Asks the kernel for its route to `addr` (what `ip route get ADDR` shows).
pub fn check_route(addr: Ipv4Addr) -> Result<String, NetError> {
    Ip::default().check_route(addr)
}

/// The guard route for `range` in `ip route`'s words, as records keep it.
pub(super) fn guard_route(range: Ipv4Net) -> String {
    format!("unreachable {range} metric {GUARD_METRIC}")
}

/// Removes the `unreachable` guard route for `range` if present.
pub fn remove_guard_route(range: Ipv4Net) -> Result<(), NetError> {
    NetRecord {
        routes: vec![guard_route(range)],
        ..NetRecord::default()
    }
    .cleanup()
}
