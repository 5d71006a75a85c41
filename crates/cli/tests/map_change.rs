//! A map change in the middle of a run (`tickpack host change-map`): the
//! host sends the instance's definition-declared console command (Quake III
//! rcon with a password it made for that start) and the real server loads
//! the next level, which its own log and its own query answer show.
//! OpenArena (ioquake3) and, where its data is installed, Nexuiz
//! (DarkPlaces) run in network namespaces these tests create; a game
//! without a console refuses the request.
//!
//! Tests named `root_` need root (namespaces, cgroups, links; CI runs them
//! as root). Every host is taken down by its guard, pass or fail, and
//! nothing named `tp<name>` may be left.

mod support;

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use tickpack_testkit::q3_server;

use support::host::{instance, Host};
use support::{children, exe, require_root, serial, Leftovers};

/// What the root tests need root for.
const ROOT: &str = "namespaces, cgroups, links";

/// `tickpack host change-map` for instance `id` of `host`; its stdout.
fn change_map(host: &Host, id: u32) -> String {
    let out = Command::new(exe())
        .args(["host", "change-map", "--name", &host.name, "--run-dir"])
        .arg(&host.run_dir)
        .args(["--instance", &id.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "change-map failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The last finished console command of instance 1, if its number of map
/// changes is `n` and the last is over.
fn answered(s: &Value, n: u64) -> Option<Value> {
    let c = &instance(s, 1)["console"];
    (c["map_changes"] == n && c["waiting"].is_null() && !c["last"].is_null())
        .then(|| c["last"].clone())
}

/// The value of `set NAME "VALUE"` in a config file's text.
fn cvar(cfg: &str, name: &str) -> String {
    cfg.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} \"")))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no {name} in {cfg}"))
        .to_string()
}

/// Sends `rcon PASSWORD map MAP` to `addr` from the host side, as a
/// stranger would; the text of the answer within 3 s, if any.
fn stranger_rcon(addr: SocketAddr, password: &str, map: &str) -> Option<String> {
    let s = UdpSocket::bind("0.0.0.0:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let d = tickpack_q3::rcon::request(password, &format!("map {map}")).unwrap();
    s.send_to(&d, addr).unwrap();
    let mut buf = [0u8; 2048];
    let (n, _) = s.recv_from(&mut buf).ok()?;
    tickpack_q3::rcon::reply_text(&buf[..n]).map(|t| String::from_utf8_lossy(t).into_owned())
}

/// The host's records a stranger could look at: the status, `state.json`,
/// the instance's log.
fn records(host: &Host) -> String {
    format!(
        "{}\n{}\n{}",
        host.status().unwrap(),
        std::fs::read_to_string(host.run_dir.join("state.json")).unwrap(),
        host.log(1)
    )
}

#[test]
fn root_openarena_loads_the_next_map_when_the_host_asks_in_the_middle_of_a_run() {
    let _g = serial();
    require_root(ROOT);
    if !q3_server::Q3Server::available("map change on openarena") {
        return;
    }
    let mut host = Host::up_in_temp(
        "map-change",
        "mc1",
        &[
            "--game",
            "openarena",
            "--set",
            "map=oa_dm1,oa_dm4",
            "--bots",
            "2",
            "--instances",
            "1",
            "--backend",
            "netns",
            "--net",
            "veth",
            "--range",
            "198.19.178.0/24",
        ],
    );
    host.wait_for(
        |s| instance(s, 1)["map"] == "oa_dm1",
        "the instance on oa_dm1",
    );
    let cfg_path = host.instance_dir(1).join(".openarena/baseoa/tickpack.cfg");
    let password = cvar(
        &std::fs::read_to_string(&cfg_path).unwrap(),
        "set rconpassword",
    );
    assert_eq!(password.len(), 32, "a fresh 128-bit secret: {password}");

    // The change, from the host, through the instance's firewall.
    let said = change_map(&host, 1);
    assert!(said.contains("changing the map to oa_dm4"), "{said}");
    let st = host.wait_for(
        |s| answered(s, 1).is_some() && instance(s, 1)["map"] == "oa_dm4",
        "the answer to the map change, and the server on oa_dm4",
    );
    let last = answered(&st, 1).unwrap();
    assert_eq!(last["answer"], "answered", "{last:#}");
    assert_eq!(last["sent"]["command"], "map oa_dm4", "{last:#}");
    // ioquake3 sends what a console command prints to the asker: the new
    // level's load lines are in the answer.
    let text = last["text"].as_str().unwrap();
    assert!(text.contains("InitGame:"), "{text}");
    assert!(text.contains("mapname\\oa_dm4"), "{text}");
    eprintln!(
        "openarena map change: {} datagrams, {} bytes, last {} ms after the command",
        last["datagrams"], last["bytes"], last["last_ms"]
    );
    // The server's own log has the host's command (what it printed while
    // running it went to the asker, above, not to its console).
    let log = host.wait_log(1, "Rcon from");
    let after = &log[log.find("Rcon from").unwrap()..];
    assert!(
        after.lines().next().unwrap().ends_with(": map oa_dm4"),
        "{after}"
    );

    // A stranger without the password changes nothing.
    let addr: SocketAddr = instance(&st, 1)["address"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let refused = stranger_rcon(addr, "guessed0password", "oa_dm1");
    assert_eq!(refused.as_deref(), Some("Bad rconpassword.\n"));
    host.wait_log(1, "Bad rcon from");
    // The secret is in no record of the host's.
    assert!(!records(&host).contains(&password), "the password leaked");

    // The rotation goes round: the second change loads oa_dm1.
    change_map(&host, 1);
    host.wait_for(
        |s| {
            answered(s, 2).is_some_and(|l| l["sent"]["map"] == "oa_dm1")
                && instance(s, 1)["map"] == "oa_dm1"
        },
        "the second change, back to oa_dm1",
    );

    // A new start makes a new secret; the host changes the map with it,
    // and the old one opens nothing.
    let init = instance(&host.status().unwrap(), 1)["pid"]
        .as_u64()
        .unwrap();
    let server = children(init);
    assert_eq!(server.len(), 1, "{server:?}");
    host.track_server(server[0] as u32);
    assert!(Command::new("kill")
        .args(["-9", &server[0].to_string()])
        .status()
        .unwrap()
        .success());
    host.wait_for(
        |s| instance(s, 1)["restarts"] == 1 && instance(s, 1)["map"] == "oa_dm1",
        "instance 1 restarted on oa_dm1",
    );
    let again = cvar(
        &std::fs::read_to_string(&cfg_path).unwrap(),
        "set rconpassword",
    );
    assert_ne!(again, password, "a new secret at every start");
    assert_eq!(
        stranger_rcon(addr, &password, "oa_dm4").as_deref(),
        Some("Bad rconpassword.\n"),
        "the last start's password"
    );
    change_map(&host, 1);
    // The count starts again with the start: the first change of this run
    // goes to the rotation's second map.
    host.wait_for(
        |s| {
            answered(s, 1)
                .is_some_and(|l| l["answer"] == "answered" && l["sent"]["map"] == "oa_dm4")
                && instance(s, 1)["map"] == "oa_dm4"
        },
        "a map change after the restart",
    );

    let out = host.down();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left = Leftovers::of("tpmc1").scan();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn root_nexuiz_loads_its_map_again_when_the_host_asks_in_the_middle_of_a_run() {
    let _g = serial();
    require_root(ROOT);
    if !Path::new("/usr/games/nexuiz-server").exists() {
        tickpack_testkit::skip_unless_ci(
            "map change on nexuiz",
            "/usr/games/nexuiz-server is missing (apt-get install nexuiz-server nexuiz-data, or scripts/setup.sh)",
        );
        return;
    }
    let mut host = Host::up_in_temp(
        "map-change",
        "mc2",
        &[
            "--game",
            "nexuiz",
            "--bots",
            "2",
            "--instances",
            "1",
            "--backend",
            "netns",
            "--net",
            "veth",
            "--range",
            "198.19.179.0/24",
        ],
    );
    host.wait_for(
        |s| instance(s, 1)["map"] == "ruiner",
        "the instance on ruiner",
    );
    let before = host.log(1).matches("Server listening on address").count();
    assert!(before >= 1, "{}", host.log(1));
    let said = change_map(&host, 1);
    assert!(said.contains("changing the map to ruiner"), "{said}");
    let st = host.wait_for(|s| answered(s, 1).is_some(), "the answer to the map change");
    let last = answered(&st, 1).unwrap();
    assert_eq!(last["answer"], "answered", "{last:#}");
    eprintln!(
        "nexuiz map change: {} datagrams, {} bytes, last {} ms after the command",
        last["datagrams"], last["bytes"], last["last_ms"]
    );
    // DarkPlaces prints to its own console as well: the command, then the
    // level loaded again (its server socket opened anew).
    let log = host.wait_log(1, "server received rcon command");
    let at = log.find("server received rcon command").unwrap();
    assert!(
        log[at..].lines().next().unwrap().contains("map ruiner"),
        "{log}"
    );
    support::wait_until(Duration::from_secs(20), Duration::from_millis(100), || {
        let log = host.log(1);
        let at = log.find("server received rcon command")?;
        log[at..]
            .contains("Server listening on address")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("no level load after the command: {}", host.log(1)));
    host.wait_for(
        |s| instance(s, 1)["map"] == "ruiner" && instance(s, 1)["state"] == "running",
        "the server on ruiner again",
    );
    let out = host.down();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left = Leftovers::of("tpmc2").scan();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_game_without_a_console_refuses_a_map_change_in_one_line() {
    let _g = serial();
    let (mut host, _) = Host::up_on_free_ports("map-change", "mc3", 1, &[]);
    let out = Command::new(exe())
        .args(["host", "change-map", "--name", "mc3", "--run-dir"])
        .arg(&host.run_dir)
        .args(["--instance", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("has no [rcon]"), "{err}");
    let out = Command::new(exe())
        .args(["host", "change-map", "--name", "mc3", "--run-dir"])
        .arg(&host.run_dir)
        .args(["--instance", "5"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no instance 5 (this host has instances 1-1)"),
        "{err}"
    );
    let st = host.wait_for(|s| s["instances"][0]["state"] == "running", "running");
    assert!(instance(&st, 1)["console"].is_null(), "{st:#}");
}
