//! The browser check of an HTML report: runs
//! `tests/browser/check-report.mjs` (playwright-core driving Debian's
//! headless Chromium), which opens the report as a person would (clicks
//! every `<details>` summary and every download link, takes a full-page
//! screenshot) and checks the report contract written at the top of that
//! script.
//!
//! ```no_run
//! use std::path::Path;
//! use swaplab_testkit::{browser, require};
//!
//! # fn report_shows_in_a_browser(html: &Path) {
//! // Skips (counted; fails on CI) unless chromium, node and playwright-core
//! // are here: `Facility::Browser`, whose probe is `browser::missing()`.
//! require!(Browser);
//! // The screenshot lands in target/report-screenshots/report.png.
//! let c = browser::check_report(html, Path::new("report.png"), &["prog <&> \"q\""])
//!     .unwrap_or_else(|e| panic!("{e}"));
//! assert_eq!(c.figures.len(), 3);
//! # }
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

/// Chromium used unless `SWAPLAB_CHROMIUM` names another (the script reads
/// the same variable).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// How long one check may take before it is killed (it takes 5–10 s).
pub const TIMEOUT: Duration = Duration::from_secs(180);

/// The script's JSON summary.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BrowserCheck {
    /// The report checked (absolute).
    pub report: PathBuf,
    /// The full-page screenshot, taken after every `<details>` was opened.
    pub screenshot: Option<PathBuf>,
    /// `section.report-section` elements.
    pub sections: usize,
    /// One entry per `figure.fig`, in document order.
    pub figures: Vec<FigureCheck>,
    /// `<details>` that opened on a click and showed their content.
    pub details_opened: usize,
    /// `a.dl-csv` links whose download matched data-columns and data-rows.
    pub csv_links_checked: usize,
    /// `a.dl-svg` links whose download parsed as an SVG document.
    pub svg_links_checked: usize,
    /// Empty when the report passed.
    pub errors: Vec<String>,
}

/// One figure as the browser rendered it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FigureCheck {
    pub id: String,
    /// The series names declared in data-series.
    pub series_expected: Vec<String>,
    /// Those of them found as `<text>` in the figure's SVG.
    pub series_found: Vec<String>,
    /// Drawing elements with a non-empty box, background rect excluded.
    pub drawing_elements: usize,
    /// Rendered size of the SVG, CSS pixels.
    pub width: f64,
    pub height: f64,
}

/// The checkout's root (holding `tests/browser/`).
pub fn repo_root() -> PathBuf {
    crate::checkout_root(env!("CARGO_MANIFEST_DIR"))
}

/// The Chromium binary the script will run.
pub fn chromium() -> PathBuf {
    std::env::var_os("SWAPLAB_CHROMIUM")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(CHROMIUM))
}

/// `Some(what is missing)` when the check cannot run here: Chromium, node
/// (>= 20, as playwright-core needs) or tests/browser/node_modules.
pub fn missing() -> Option<String> {
    let chromium = chromium();
    if !chromium.is_file() {
        return Some(format!(
            "{} is missing (apt-get install chromium; scripts/setup.sh does it as root)",
            chromium.display()
        ));
    }
    let Some(node) = crate::find_program("node") else {
        return Some("node is not on PATH (Node.js >= 20)".into());
    };
    let version = Command::new(&node)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let major: u32 = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major < 20 {
        return Some(format!(
            "node {version:?} is older than 20 (playwright-core needs >= 20)"
        ));
    }
    let pw = repo_root().join("tests/browser/node_modules/playwright-core/package.json");
    if !pw.is_file() {
        return Some(format!(
            "{} is missing (npm ci --prefix tests/browser; scripts/setup.sh does it)",
            pw.display()
        ));
    }
    None
}

/// `target/report-screenshots/` of the workspace (under `CARGO_TARGET_DIR`
/// when set), created.
pub fn screenshot_dir() -> Result<PathBuf, String> {
    let target = match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(t) => repo_root().join(t), // join keeps an absolute path as is
        None => repo_root().join("target"),
    };
    let dir = target.join("report-screenshots");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

/// Checks `html` in headless Chromium. A relative `screenshot` is put under
/// [`screenshot_dir`]; each of `expect_text` must appear literally in the
/// page's visible text. `Ok` when the report passes every check; `Err`
/// with one line per problem (each naming the element) when it does not,
/// or saying why the check could not run.
pub fn check_report(
    html: &Path,
    screenshot: &Path,
    expect_text: &[&str],
) -> Result<BrowserCheck, String> {
    if let Some(why) = missing() {
        return Err(format!(
            "cannot check {} in a browser: {why}",
            html.display()
        ));
    }
    let screenshot = if screenshot.is_absolute() {
        screenshot.to_path_buf()
    } else {
        screenshot_dir()?.join(screenshot)
    };
    let script = repo_root().join("tests/browser/check-report.mjs");
    let node = crate::find_program("node").ok_or("node is not on PATH")?;
    let mut cmd = Command::new(node);
    cmd.arg(&script)
        .arg(html)
        .arg("--screenshot")
        .arg(&screenshot)
        .arg("--json");
    for t in expect_text {
        cmd.arg("--expect-text").arg(t);
    }
    let (code, stdout, stderr) = run(cmd, TIMEOUT)?;
    let what = format!("node {} {}", script.display(), html.display());
    match code {
        Some(0) | Some(1) => {
            let check: BrowserCheck = serde_json::from_str(stdout.trim()).map_err(|e| {
                format!("{what}: its output is not the JSON summary ({e}): {stdout}{stderr}")
            })?;
            if code == Some(0) && check.errors.is_empty() {
                Ok(check)
            } else {
                let mut msg = format!(
                    "{} fails the browser check ({} errors):",
                    html.display(),
                    check.errors.len()
                );
                for e in &check.errors {
                    msg.push_str("\n  - ");
                    msg.push_str(e);
                }
                Err(msg)
            }
        }
        _ => Err(format!(
            "{what} could not run (exit {code:?}): {}",
            stderr.trim()
        )),
    }
}

/// Runs `cmd` to its end or until `timeout` (then kills it): exit code,
/// stdout, stderr.
fn run(mut cmd: Command, timeout: Duration) -> Result<(Option<i32>, String, String), String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run node: {e}"))?;
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = reader(Box::new(child.stdout.take().expect("piped stdout")));
    let err = reader(Box::new(child.stderr.take().expect("piped stderr")));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the browser check took over {timeout:?}: killed"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("waiting for node: {e}")),
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Ok((status.code(), stdout, stderr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_parses() {
        let j = r#"{"report":"/r.html","screenshot":null,"sections":2,
            "figures":[{"id":"fig-1","series_expected":["a"],"series_found":[],
            "drawing_elements":3,"width":320,"height":200.5}],
            "details_opened":1,"csv_links_checked":2,"svg_links_checked":1,
            "errors":["figure#fig-1: declared series \"a\" is not a <text>"]}"#;
        let c: BrowserCheck = serde_json::from_str(j).unwrap();
        assert_eq!(c.figures[0].height, 200.5);
        assert_eq!(c.errors.len(), 1);
    }

    #[test]
    fn the_script_is_in_the_checkout() {
        assert!(repo_root().join("tests/browser/check-report.mjs").is_file());
        assert!(repo_root()
            .join("tests/browser/package-lock.json")
            .is_file());
    }
}
