//! The report as a user sees it: rendered by headless Chromium in a
//! 1280x1000 window, every table that sits in a sideways-scrolling box must
//! fit it (no horizontal scroll bar). The widths are read by a script added
//! to a copy of the page (the report itself carries no script).

use std::path::{Path, PathBuf};
use std::process::Command;

use tickpack_report::bench::BenchResult;
use tickpack_report::html;

const CHROMIUM: &str = "/usr/bin/chromium";

/// The result of a real run, read from a fixture.
fn fixture(name: &str) -> BenchResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// For every `.scroll` box of `page` as Chromium lays it out at 1280x1000:
/// (its table's class, the box's scroll width, its client width).
fn scroll_boxes(page: &str, dir: &Path) -> Vec<(String, u64, u64)> {
    let probe = "<script>document.body.setAttribute('data-widths', JSON.stringify(\
        Array.from(document.querySelectorAll('.scroll')).map(d => \
        [d.querySelector('table').className, d.scrollWidth, d.clientWidth])));</script></body>";
    let file = dir.join("report.html");
    std::fs::write(&file, page.replace("</body>", probe)).unwrap();
    let profile = dir.join("profile");
    let out = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("data-widths=\"").unwrap_or_else(|| {
        panic!(
            "no widths in chromium's page: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    }) + "data-widths=\"".len();
    let json = dom[start..start + dom[start..].find('"').unwrap()].replace("&quot;", "\"");
    serde_json::from_str(&json).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tickpack-browser-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Regression: the steps table of a default run scrolled sideways by 6
/// pixels in a 1280-pixel window ("Snapshots lost", "Reconnects" and
/// "Watts (modeled)" wider than their fixed columns), and by 16 with the
/// batch columns of `--compare guard` ("Outages", "Tick lateness").
#[test]
fn the_steps_table_scrolled_sideways_by_its_longest_headings_in_a_1280_pixel_window() {
    if !Path::new(CHROMIUM).exists() {
        tickpack_testkit::skip::skip_unless_ci(
            "the_steps_table_scrolled_sideways_by_its_longest_headings_in_a_1280_pixel_window",
            "no /usr/bin/chromium (scripts/setup.sh installs it)",
        );
        return;
    }
    for name in [
        "result-default-run.json",
        "result-guard-compare.json",
        "result-idle-run.json",
    ] {
        let dir = temp_dir(name.trim_end_matches(".json"));
        let page = html::render(&[("result.json".into(), fixture(name))]);
        let boxes = scroll_boxes(&page, &dir);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            boxes.iter().any(|(class, _, _)| class == "steps"),
            "{name}: no steps table found: {boxes:?}"
        );
        for (class, scroll, client) in &boxes {
            if class == "steps" {
                assert!(
                    scroll <= client,
                    "{name}: a steps table is {scroll} px wide in a {client} px box: {boxes:?}"
                );
            }
        }
    }
}
