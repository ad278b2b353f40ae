//! `swaplab report` on simulations, as a person would look at it: the page
//! is opened in headless Chromium (tests/browser/check-report.mjs), every
//! figure must be drawn with its series, every collapsible must open and
//! every data link must decode to its table; the numbers on the page must
//! be the ones `swaplab sim --json` prints. Runs, sweeps and traces are
//! tested the same way in system.rs (they need root).
use std::path::Path;
use std::process::Command;

use swaplab_testkit::{browser, skip, Facility};

fn swaplab(dir: &Path, args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_swaplab"))
        .args(args)
        .current_dir(dir)
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "swaplab {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The CSV behind the figure `fig` of `html` (its `data:` link), parsed.
fn figure_csv(html: &str, fig: &str) -> Vec<csv::StringRecord> {
    let at = html
        .find(&format!("id=\"{fig}\""))
        .unwrap_or_else(|| panic!("no {fig}"));
    let rest = &html[at..];
    let prefix = "href=\"data:text/csv;charset=utf-8;base64,";
    let start = rest.find(prefix).expect("a CSV link") + prefix.len();
    let b64 = &rest[start..start + rest[start..].find('"').unwrap()];
    let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b64).unwrap();
    csv::Reader::from_reader(bytes.as_slice())
        .records()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn sim_and_mrc_reports_hold_the_simulated_numbers_and_open_in_a_browser() {
    let test = &test_name!();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    swaplab(
        d,
        &[
            "gen",
            "zipf:pages=5000",
            "loop:pages=800:base=9000",
            "--interleave",
            "-n",
            "100k",
            "-o",
            "t.parquet",
        ],
    );
    let policies = ["lru", "clock", "arc", "opt"];
    let json: serde_json::Value = serde_json::from_str(&swaplab(
        d,
        &[
            "sim",
            "t.parquet",
            "--policy",
            "lru,clock,arc,opt",
            "--mem",
            "5%,10%,25%,50%",
            "--json",
            "--save",
            "sim.json",
            "--report",
            "sim.html",
        ],
    ))
    .unwrap();
    swaplab(
        d,
        &[
            "mrc",
            "t.parquet",
            "--shards",
            "0.1",
            "--policy",
            "arc",
            "--save",
            "mrc.json",
            "--report",
            "mrc.html",
        ],
    );
    swaplab(
        d,
        &[
            "report",
            "sim.json",
            "mrc.json",
            "-o",
            "both.html",
            "--title",
            "<b>sims</b> & \"curves\"",
        ],
    );
    for f in ["sim.json", "mrc.json", "sim.html", "mrc.html", "both.html"] {
        assert!(d.join(f).is_file(), "{f} was not written");
    }
    // The figure's data are the simulated numbers, miss for miss.
    let html = std::fs::read_to_string(d.join("both.html")).unwrap();
    let rows = figure_csv(&html, "fig-1");
    let results = json.as_array().unwrap();
    assert_eq!(rows.len(), results.len());
    for (row, r) in rows.iter().zip(results) {
        assert_eq!(&row[0], r["policy"].as_str().unwrap());
        assert_eq!(
            row[1].parse::<u64>().unwrap(),
            r["capacity"].as_u64().unwrap()
        );
        let misses = r["minor_faults"].as_u64().unwrap() + r["major_faults"].as_u64().unwrap();
        assert_eq!(row[4].parse::<u64>().unwrap(), misses);
    }
    // `compare` reads saved simulations: the pairs they share.
    swaplab(
        d,
        &[
            "sim",
            "t.parquet",
            "--policy",
            "lru",
            "--mem",
            "10%,75%",
            "--save",
            "lru.json",
        ],
    );
    let pairs: serde_json::Value =
        serde_json::from_str(&swaplab(d, &["compare", "sim.json", "lru.json", "--json"])).unwrap();
    let pairs = pairs.as_array().unwrap();
    assert_eq!(pairs.len(), 1, "only lru at 10% is in both: {pairs:?}");
    let lru10 = &results[1];
    assert_eq!(lru10["policy"], "lru");
    assert_eq!(pairs[0]["mem_pages"], lru10["capacity"]);
    assert_eq!(pairs[0]["misses_a"], pairs[0]["misses_b"]);
    assert_eq!(
        pairs[0]["misses_a"].as_u64().unwrap(),
        lru10["minor_faults"].as_u64().unwrap() + lru10["major_faults"].as_u64().unwrap()
    );
    // ... and as CSV: the same pair, numbers without separators.
    let csv = swaplab(d, &["compare", "sim.json", "lru.json", "--csv"]);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "policy,mem_pages,misses A,misses B,ratio,miss ratio A,miss ratio B"
    );
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(row[0], "lru");
    assert_eq!(row[1], lru10["capacity"].to_string());
    assert_eq!(row[2], pairs[0]["misses_a"].to_string());
    assert_eq!(lines.next(), None);
    // The title is text, not markup.
    assert!(
        html.contains("&#60;b&#62;sims&#60;/b&#62;"),
        "title not escaped"
    );
    if let Some(why) = browser::missing() {
        return skip(test, Facility::Browser, why);
    }
    let c = browser::check_report(
        &d.join("both.html"),
        Path::new("sim-and-mrc.png"),
        &["<b>sims</b> & \"curves\""],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.sections, 2);
    assert_eq!(c.figures.len(), 2);
    assert_eq!(
        c.figures[0].series_found,
        policies.map(String::from).to_vec()
    );
    assert_eq!(
        c.figures[1].series_found,
        ["lru (exact)", "shards rate=0.1", "arc"]
            .map(String::from)
            .to_vec()
    );
    assert_eq!(
        c.details_opened, 6,
        "Schema, Linux config and Data of two sections"
    );
    // 2 figure CSVs + the sim table + the mrc summary table.
    assert_eq!(c.csv_links_checked, 4);
    assert_eq!(c.svg_links_checked, 2);
}

/// A benchmark's saved result is a report source like the others: its
/// speed bars hold the benchmark's own numbers.
#[test]
fn a_benchmark_report_holds_its_numbers_and_opens_in_a_browser() {
    let test = &test_name!();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = swaplab(
        d,
        &[
            "bench",
            "sim",
            "--refs",
            "200k",
            "--pages",
            "50k",
            "--mem",
            "5k",
            "--policy",
            "fifo,lru",
            "--json",
            "--save",
            "bench.json",
        ],
    );
    let printed: serde_json::Value = serde_json::from_str(&out).unwrap();
    swaplab(d, &["report", "bench.json", "-o", "bench.html"]);
    let html = std::fs::read_to_string(d.join("bench.html")).unwrap();
    let rows = figure_csv(&html, "fig-1");
    for name in ["fifo", "lru"] {
        let row = rows.iter().find(|r| &r[0] == name).expect(name);
        let want = printed["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["what"] == name)
            .unwrap()["mrefs_per_s"]
            .as_f64()
            .unwrap();
        assert_eq!(row[2].parse::<f64>().unwrap(), want, "{name}");
    }
    if let Some(why) = browser::missing() {
        return skip(test, Facility::Browser, why);
    }
    let c = browser::check_report(&d.join("bench.html"), Path::new("bench.png"), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.sections, 1);
    assert_eq!(c.figures[0].series_found, ["swaplab", "target"]);
}
