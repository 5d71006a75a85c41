//! The datagrams in tests/fixtures/oa_dm1 and the config of the client
//! that received them.

#![allow(dead_code)]

use tickpack_q3::ClientConfig;

/// The captured datagrams, in arrival order.
pub fn captured() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oa_dm1");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// The config the capturing client had.
pub fn capture_config() -> ClientConfig {
    ClientConfig::new("tp_alpha", 1000, 5000)
}
