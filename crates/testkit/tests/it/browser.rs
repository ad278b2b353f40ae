//! The browser check of HTML reports (tests/browser/check-report.mjs) on a
//! hand-made fixture that follows the report contract, and on copies of it
//! with one thing broken each.

use std::path::{Path, PathBuf};

use swaplab_testkit::{browser, skip, Facility};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/report-contract.html"
);
/// The program name the fixture shows, escaped in its HTML.
const PROGRAM: &str = r#"<script>alert(1)</script> "q" 'x'"#;

fn browser_missing(test: &str) -> bool {
    match browser::missing() {
        Some(why) => {
            skip(test, Facility::Browser, why);
            true
        }
        None => false,
    }
}

/// A copy of the fixture with `from` (which must occur exactly once)
/// replaced by `to`.
fn broken(dir: &Path, name: &str, from: &str, to: &str) -> PathBuf {
    let html = std::fs::read_to_string(FIXTURE).unwrap();
    assert_eq!(html.matches(from).count(), 1, "{from:?} in the fixture");
    let p = dir.join(format!("{name}.html"));
    std::fs::write(&p, html.replacen(from, to, 1)).unwrap();
    p
}

/// Checks the broken copy and returns the error, which must name `wanted`.
fn fails_with(name: &str, from: &str, to: &str, wanted: &str) {
    let dir = tempfile::tempdir().unwrap();
    let html = broken(dir.path(), name, from, to);
    let shot = PathBuf::from(format!("broken-{name}.png"));
    let err = match browser::check_report(&html, &shot, &[PROGRAM]) {
        Ok(c) => panic!("{name}: the broken copy passed: {c:?}"),
        Err(e) => e,
    };
    assert!(err.contains("fails the browser check"), "{name}: {err}");
    assert!(err.contains(wanted), "{name}: no {wanted:?} in:\n{err}");
}

#[test]
fn fixture_passes_with_the_right_counts() {
    if browser_missing(&test_name!()) {
        return;
    }
    let c = browser::check_report(
        Path::new(FIXTURE),
        Path::new("report-contract.png"),
        &[PROGRAM, "Sweep: latency against the memory limit"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(c.errors.is_empty());
    assert_eq!(c.sections, 2);
    let ids: Vec<&str> = c.figures.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["fig-1", "fig-2", "fig-3"]);
    for f in &c.figures {
        assert_eq!(f.series_found, f.series_expected, "{}", f.id);
        assert!(f.drawing_elements > 0, "{}", f.id);
        assert!(f.width >= 320.0 && f.height >= 200.0, "{f:?}");
    }
    assert_eq!(c.figures[0].series_expected, ["rss", "swap"]);
    assert_eq!(
        c.figures[1].series_expected,
        ["p50 latency, µs", "p99 latency \"tail\""]
    );
    assert!(c.figures[2].series_expected.is_empty());
    assert_eq!(c.details_opened, 3);
    assert_eq!(c.csv_links_checked, 4, "three figures and one table");
    assert_eq!(c.svg_links_checked, 3);
    let shot = c.screenshot.expect("a screenshot");
    assert!(shot.starts_with(browser::screenshot_dir().unwrap()));
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000);
}

#[test]
fn an_injected_script_fails() {
    if browser_missing(&test_name!()) {
        return;
    }
    fails_with(
        "script",
        "<h1>swaplab report</h1>",
        "<h1>swaplab report</h1><script>document.title = 'x'</script>",
        r#"script <script> "document.title = 'x'": only <script id="swaplab-js"> is allowed"#,
    );
}

#[test]
fn a_wrong_csv_row_count_fails() {
    if browser_missing(&test_name!()) {
        return;
    }
    fails_with(
        "rows",
        r#"data-rows="12""#,
        r#"data-rows="13""#,
        r#"a.dl-csv[download="fig-1.csv"]: data-rows="13" but the CSV has 12 data rows"#,
    );
}

#[test]
fn a_series_missing_from_the_legend_fails() {
    if browser_missing(&test_name!()) {
        return;
    }
    fails_with(
        "legend",
        r#"data-series='["rss","swap"]'"#,
        r#"data-series='["rss","swap","cache"]'"#,
        r#"figure#fig-1: declared series "cache" is not a <text> of its SVG legend"#,
    );
}

#[test]
fn a_network_image_fails() {
    if browser_missing(&test_name!()) {
        return;
    }
    fails_with(
        "network",
        "<h1>swaplab report</h1>",
        r#"<h1>swaplab report</h1><img src="https://example.com/x.png">"#,
        "network: request to https://example.com/x.png (image)",
    );
}
