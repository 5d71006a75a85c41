//! The host-name rule is one rule: what the fleet file accepts as a host's
//! name is exactly what the network layer accepts to prefix its links.

use std::path::Path;

use tickpack_fleet::FleetFile;
use tickpack_host::fleet::{FleetConfig, FleetError};
use tickpack_host::netpath::validate_host_name;

fn resolve(name: &str) -> Result<FleetConfig, FleetError> {
    FleetFile::from_toml(
        &format!("name = {name:?}\ninstances = 250\n"),
        Path::new("host.toml"),
    )?
    .resolve(Path::new("/run/tickpack"))
}

#[test]
fn fleet_and_network_accept_the_same_host_names() {
    for name in ["h", "h1", "abcd", "abcde", "abcdefgh"] {
        assert!(resolve(name).is_ok(), "{name:?} refused by the fleet");
        assert!(
            validate_host_name(name).is_ok(),
            "{name:?} refused by netpath"
        );
    }
    for name in ["", "abcdefghi", "H1", "h-1", "h 1", "h/1"] {
        let e = resolve(name).unwrap_err().to_string();
        assert!(e.contains("1-8 characters"), "{name:?}: {e}");
        assert!(
            validate_host_name(name).is_err(),
            "{name:?} accepted by netpath"
        );
    }
}
