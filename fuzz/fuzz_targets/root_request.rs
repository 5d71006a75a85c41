//! Run: `cargo +nightly fuzz run root_request` (from the repository root).
//! Any bytes as a message to a host's root process: decoding never panics,
//! and a request that decodes goes through its session's checks (the
//! sans-I/O part of `tickpack_root::service`) without panicking either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tickpack_root::netpath::NetRecord;
use tickpack_root::service::protocol::{Request, SCHEMA};
use tickpack_root::service::session::{Found, Session, WalledCommand};

fuzz_target!(|data: &[u8]| {
    let Ok(req) = serde_json::from_slice::<Request>(data) else {
        return;
    };
    let Ok(mut s) = Session::open(
        SCHEMA,
        "fz",
        std::path::Path::new("/run/fz"),
        0,
        &Found::default(),
    ) else {
        return;
    };
    s.set_uid_base(Some(201_000));
    match req {
        Request::Hello {
            schema,
            host,
            run_dir,
        } => {
            let _ = Session::open(&schema, &host, &run_dir, 61_234, &Found::default());
        }
        Request::NetUp {
            kind,
            range,
            source_addrs,
            instances,
        } => {
            let _ = s.net_up(kind, &range, source_addrs, &instances);
        }
        Request::RemoveLeftovers { record } => {
            let _ = s.remove(&record, &NetRecord::default());
        }
        Request::WriteFile {
            instance,
            path,
            contents,
        } => {
            let _ = s.net_up(
                tickpack_root::netpath::NetKind::Veth,
                "198.18.0.0/16",
                0,
                &[1],
            );
            let _ = s.write_file(instance, &path, &contents);
        }
        Request::Spawn { .. } => {
            let _ = s.net_up(
                tickpack_root::netpath::NetKind::Veth,
                "198.18.0.0/16",
                0,
                &[1],
            );
            let hierarchies = [std::path::PathBuf::from("/sys/fs/cgroup")];
            if let Some((walls, cmd)) = WalledCommand::of(&req) {
                let owners = vec![Some(0); cmd.cgroups.len()];
                let _ = s.spawn(walls, &cmd, &hierarchies, &owners);
            }
        }
        Request::TenantDir { walls, bytes } => {
            let _ = s.tenant_dir(walls, bytes);
        }
        Request::OpenFile { walls, name } => {
            let _ = s.open_file(walls, &name);
        }
        _ => {}
    }
});
