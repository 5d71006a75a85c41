//! `tickpack agones fleet`: a real bench result in, a manifest valid against
//! Agones' CRD schemas out; bad input refused with one line, exit 2 and
//! nothing written; the Dockerfiles build what the manifest runs.

mod support;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;
use support::{run, text};
use tickpack_agones_fleet::TICKPACK_IN_IMAGE;
use tickpack_testkit::agones_crds::{yaml_documents, AgonesCrds};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tp-agones-fleet-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Removes a test's directory when the test ends, passed or failed.
struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The result of one real `bench --quick` run (shared by the tests of this
/// file; its directory is removed when the first test using it is done,
/// the JSON kept in memory).
fn real_result() -> &'static Value {
    static RESULT: OnceLock<Value> = OnceLock::new();
    RESULT.get_or_init(|| {
        let dir = Dir(tmp("bench"));
        let out = run(&[
            "bench",
            "--quick",
            "--cost",
            "light",
            "--out",
            dir.0.to_str().unwrap(),
        ]);
        let path = dir.0.join("result.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("no result.json ({e}): {}", text(&out)));
        serde_json::from_str(&text).unwrap()
    })
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
    p
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `agones fleet --from FROM --out DIR/fleet.yaml EXTRA...`.
fn fleet(from: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "agones",
        "fleet",
        "--from",
        from.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// Exit 2 with one line on stderr, and `out` not written (nor a temp file).
fn refused(o: &std::process::Output, out: &Path, words: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(o));
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(words), "{err}");
    assert!(!out.exists(), "nothing written");
    let dir = out.parent().unwrap();
    assert!(
        names(dir).iter().all(|n| !n.contains(".tmp")),
        "no temp file: {:?}",
        names(dir)
    );
}

#[test]
fn a_real_bench_result_records_each_servers_peak_memory() {
    let r = real_result();
    let steps = r["ladders"][0]["steps"].as_array().unwrap();
    assert!(!steps.is_empty(), "{r}");
    for s in steps {
        let rss = s["server_peak_rss_bytes"].as_u64().unwrap_or(0);
        // A running tickpack server maps at least a megabyte.
        assert!(rss > 1 << 20, "peak RSS recorded: {s}");
    }
}

#[test]
fn a_real_result_sizes_a_fleet_valid_against_the_agones_crds() {
    let dir = Dir(tmp("valid"));
    let mut r = real_result().clone();
    // The quick ladder on a busy machine may recommend nothing; this test
    // asks for a fleet from its real measurements at a density of 3.
    r["recommended_servers"] = 3.into();
    let from = write(&dir.0, "result.json", &r);
    let out = dir.0.join("fleet.yaml");
    let o = fleet(&from, &out, &["--buffer", "1", "--replicas", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let yaml = std::fs::read_to_string(&out).unwrap();
    let docs = yaml_documents(&yaml).unwrap();
    assert_eq!(docs.len(), 2, "{yaml}");
    let c = &docs[0]["spec"]["template"]["spec"]["template"]["spec"]["containers"][0];
    // The memory follows the measured peak: x 3/2, rounded up, at least 32 MiB.
    let peak = r["ladders"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["server_peak_rss_bytes"].as_u64())
        .max()
        .unwrap();
    let mib = (peak * 3).div_ceil(2 << 20).max(32);
    assert_eq!(c["resources"]["limits"]["memory"], format!("{mib}Mi"));
    assert_eq!(docs[1]["spec"]["policy"]["buffer"]["bufferSize"], 1);
    assert_eq!(names(&dir.0), ["fleet.yaml", "result.json"]);
    let Some(crds) =
        AgonesCrds::load_or_skip("a_real_result_sizes_a_fleet_valid_against_the_agones_crds")
    else {
        return;
    };
    for d in &docs {
        let errors = crds.errors(d);
        assert!(errors.is_empty(), "{errors:#?}\n{yaml}");
    }
}

#[test]
fn a_result_without_a_recommended_density_exits_2_and_writes_nothing() {
    let dir = Dir(tmp("no-density"));
    let mut r = real_result().clone();
    r["recommended_servers"] = Value::Null;
    let from = write(&dir.0, "result.json", &r);
    let out = dir.0.join("fleet.yaml");
    // An existing file is left as it was, too.
    let kept = dir.0.join("kept.yaml");
    std::fs::write(&kept, "old").unwrap();
    refused(&fleet(&from, &out, &[]), &out, "no recommended density");
    let o = fleet(&from, &kept, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "old");
}

#[test]
fn a_result_without_measured_memory_needs_memory_mib() {
    let dir = Dir(tmp("no-memory"));
    let mut r = real_result().clone();
    r["recommended_servers"] = 2.into();
    for l in r["ladders"].as_array_mut().unwrap() {
        for s in l["steps"].as_array_mut().unwrap() {
            s.as_object_mut().unwrap().remove("server_peak_rss_bytes");
        }
    }
    let from = write(&dir.0, "result.json", &r);
    let out = dir.0.join("fleet.yaml");
    refused(&fleet(&from, &out, &[]), &out, "--memory-mib");
    let o = fleet(&from, &out, &["--memory-mib", "300"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let yaml = std::fs::read_to_string(&out).unwrap();
    assert!(yaml.contains("memory: \"300Mi\""), "{yaml}");
    assert!(yaml.contains("as given (--memory-mib)"), "{yaml}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = Dir(tmp("bad"));
    let out = dir.0.join("fleet.yaml");
    let not_json = dir.0.join("notes.txt");
    std::fs::write(&not_json, "hello").unwrap();
    refused(&fleet(&not_json, &out, &[]), &out, "is not JSON");
    let other = write(&dir.0, "other.json", &serde_json::json!({"schema": "x/1"}));
    refused(&fleet(&other, &out, &[]), &out, "has schema");
    refused(
        &fleet(&dir.0.join("missing.json"), &out, &[]),
        &out,
        "missing.json",
    );
    let mut r = real_result().clone();
    r["recommended_servers"] = 2.into();
    let from = write(&dir.0, "result.json", &r);
    refused(&fleet(&from, &out, &["--buffer", "0"]), &out, "--buffer");
    refused(&fleet(&from, &out, &["--name", "No_Caps"]), &out, "--name");
}

#[test]
fn without_out_the_manifest_goes_to_stdout() {
    let dir = Dir(tmp("stdout"));
    let mut r = real_result().clone();
    r["recommended_servers"] = 2.into();
    let from = write(&dir.0, "result.json", &r);
    let o = run(&["agones", "fleet", "--from", from.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let yaml = String::from_utf8(o.stdout).unwrap();
    assert_eq!(yaml_documents(&yaml).unwrap().len(), 2, "{yaml}");
    assert_eq!(names(&dir.0), ["result.json"]);
}

#[test]
fn help_teaches_the_fleet_command() {
    let o = run(&["agones", "fleet", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let h = String::from_utf8_lossy(&o.stdout);
    for words in [
        "--from",
        "--out",
        "--buffer",
        "--replicas",
        "--memory-mib",
        "Guaranteed",
        "Exit codes",
    ] {
        assert!(h.contains(words), "{words}: {h}");
    }
}

/// The instructions of a Dockerfile (comments and blank lines dropped).
fn instructions(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .fold(Vec::<String>::new(), |mut v, l| {
            // Continuation lines belong to the instruction before.
            match v.last_mut() {
                Some(prev) if prev.ends_with('\\') => {
                    prev.pop();
                    prev.push(' ');
                    prev.push_str(l);
                }
                _ => v.push(l.to_string()),
            }
            v
        })
        .into_iter()
        .map(|l| {
            let (op, rest) = l.split_once(' ').unwrap_or((&l, ""));
            (op.to_string(), rest.trim().to_string())
        })
        .collect()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_dockerfiles_build_the_binary_the_manifests_run() {
    let known = [
        "FROM", "WORKDIR", "COPY", "RUN", "USER", "ENV", "EXPOSE", "CMD",
    ];
    for (file, port) in [
        ("tickpack-server.Dockerfile", 27015),
        ("openarena.Dockerfile", 27960),
    ] {
        let path = repo_root().join("deploy/docker").join(file);
        let ins = instructions(&path);
        for (op, _) in &ins {
            assert!(
                known.contains(&op.as_str()),
                "{file}: unknown instruction {op}"
            );
        }
        let froms: Vec<&str> = ins
            .iter()
            .filter(|(o, _)| o == "FROM")
            .map(|(_, r)| r.as_str())
            .collect();
        assert_eq!(
            froms,
            ["rust:1-bookworm AS build", "debian:bookworm-slim"],
            "{file}: Debian 12 stages"
        );
        assert!(
            ins.contains(&(
                "RUN".into(),
                "cargo build --release --locked -p tickpack --bin tickpack".into()
            )),
            "{file}: builds the tickpack binary"
        );
        assert!(
            ins.contains(&(
                "COPY".into(),
                format!("--from=build /src/target/release/tickpack {TICKPACK_IN_IMAGE}")
            )),
            "{file}: the binary where the manifest runs it"
        );
        assert!(
            ins.contains(&("EXPOSE".into(), format!("{port}/udp"))),
            "{file}"
        );
        let cmd = &ins.iter().rfind(|(o, _)| o == "CMD").expect("a CMD").1;
        let argv: Vec<String> = serde_json::from_str(cmd)
            .unwrap_or_else(|e| panic!("{file}: CMD is not exec form: {e}"));
        assert!(argv[0].starts_with('/'), "{file}: {argv:?}");
    }
    // What the builder builds is this workspace's binary of that name.
    let cli = std::fs::read_to_string(repo_root().join("crates/cli/Cargo.toml")).unwrap();
    assert!(
        cli.contains("name = \"tickpack\"\npath = \"src/main.rs\""),
        "{cli}"
    );
    assert!(
        repo_root().join("Cargo.lock").exists(),
        "--locked needs the lock file"
    );
    let ignore = std::fs::read_to_string(repo_root().join(".dockerignore")).unwrap();
    assert!(
        ignore.lines().any(|l| l == "target/"),
        "the build context leaves target/ out"
    );
    // The OpenArena image: the server the host launches, and the home the
    // manifest writes the config under.
    let oa = instructions(&repo_root().join("deploy/docker/openarena.Dockerfile"));
    let (oa_def, _) = tickpack_game::registry::find("openarena").unwrap();
    let oa_home = &oa_def.agones.as_ref().expect("an [agones] table").dir;
    let run_all: String = oa
        .iter()
        .filter(|(o, _)| o == "RUN")
        .map(|(_, r)| r.as_str())
        .collect();
    assert!(run_all.contains("apt-get install -y --no-install-recommends openarena-server"));
    assert!(run_all.contains(&format!("--home-dir {oa_home}")));
    assert!(oa.contains(&("ENV".into(), format!("HOME={oa_home}"))));
    let cmd: Vec<String> =
        serde_json::from_str(&oa.iter().rfind(|(o, _)| o == "CMD").unwrap().1).unwrap();
    assert_eq!(cmd[0], oa_def.program());
    for k in 1..=5 {
        let master = format!("sv_master{k}");
        assert!(
            cmd.windows(2).any(|w| w[0] == master && w[1] == "\"\""),
            "{master} empty: {cmd:?}"
        );
    }
}
