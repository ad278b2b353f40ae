//! The peer of `swaplab bench sim`: libCacheSim through its Python package
//! (PyPI `libcachesim`), run on the same oracleGeneral file in the same
//! run. With `--peer` it is installed in a private venv first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use swaplab_lab::error::{Error, Result};

/// The peer's run, through its Python package: for each policy, reads the
/// oracleGeneral file and simulates (one pass, as its `cachesim` does).
/// Prints `policy seconds miss_ratio requests` per line, and `missing
/// policy` for a policy the package does not have.
pub const PEER_SCRIPT: &str = r#"
import sys, time
import libcachesim as lcs
path, mem = sys.argv[1], int(sys.argv[2])
P = {"lru": "LRU", "fifo": "FIFO", "arc": "ARC", "lirs": "LIRS", "sieve": "Sieve",
     "s3fifo": "S3FIFO", "clock": "Clock", "2q": "TwoQ", "lfu": "LFU", "opt": "Belady"}
for name in sys.argv[3].split(","):
    cls = getattr(lcs, P.get(name, ""), None)
    if cls is None:
        print("missing", name, flush=True)
        continue
    t0 = time.perf_counter()
    r = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE,
                        reader_init_params=lcs.ReaderInitParam(ignore_obj_size=True))
    mr, _ = cls(mem).process_trace(r)
    print(name, time.perf_counter() - t0, mr, r.get_num_of_req(), flush=True)
"#;

/// One policy's peer run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeerRow {
    pub seconds: f64,
    pub miss_ratio: f64,
    /// Requests the peer's reader counted.
    pub requests: u64,
}

/// What the peer gave: per policy, and the policies it does not have.
#[derive(Debug, Clone, Default)]
pub struct PeerOut {
    pub rows: HashMap<String, PeerRow>,
    pub missing: Vec<String>,
    /// The Python that ran it and the package's version.
    pub python: String,
    pub version: String,
}

/// Where `--peer` installs the peer: `$XDG_CACHE_HOME/swaplab/peer-venv`,
/// else `~/.cache/swaplab/peer-venv`, else under the build's `target/`.
pub fn venv_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SWAPLAB_PEER_VENV") {
        return PathBuf::from(d);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    match cache {
        Some(c) => c.join("swaplab").join("peer-venv"),
        None => PathBuf::from("target").join("swaplab-peer-venv"),
    }
}

fn has_package(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import libcachesim"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn version(python: &Path) -> String {
    Command::new(python)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('libcachesim'))",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or("?".into(), |o| {
            String::from_utf8_lossy(&o.stdout).trim().to_string()
        })
}

/// A Python with the peer's package: the private venv's (created and
/// filled with `pip install libcachesim` when `install`), else a
/// `python3` that has it. `say` gets what is done (for stderr).
pub fn find_python(install: bool, say: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let venv = venv_dir();
    let vpy = venv.join("bin").join("python");
    if vpy.exists() && has_package(&vpy) {
        say(&format!(
            "peer: libcachesim from the venv {}",
            venv.display()
        ));
        return Ok(vpy);
    }
    if !install {
        let sys = PathBuf::from("python3");
        if has_package(&sys) {
            return Ok(sys);
        }
        return Err(Error::Invalid(
            "the peer's Python package is not installed (`bench sim --peer` installs it in a private venv)"
                .into(),
        ));
    }
    say(&format!(
        "peer: installing libcachesim (PyPI) in the venv {} …",
        venv.display()
    ));
    let run = |cmd: &mut Command, what: &str| -> Result<()> {
        let out = cmd.output().map_err(|e| Error::Failed {
            what: what.into(),
            why: e.to_string(),
            fix: "install python3 with its venv module".into(),
        })?;
        if !out.status.success() {
            return Err(Error::Failed {
                what: what.into(),
                why: String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
                    .to_string(),
                fix: format!(
                    "remove {} and retry; pip needs to reach PyPI",
                    venv.display()
                ),
            });
        }
        Ok(())
    };
    if let Some(parent) = venv.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("creating", parent, e))?;
    }
    run(
        Command::new("python3").arg("-m").arg("venv").arg(&venv),
        "creating the peer's venv",
    )?;
    run(
        Command::new(&vpy).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "libcachesim",
        ]),
        "pip install libcachesim",
    )?;
    if !has_package(&vpy) {
        return Err(Error::Failed {
            what: "the peer's venv".into(),
            why: "libcachesim does not import after pip install".into(),
            fix: format!("remove {} and retry", venv.display()),
        });
    }
    Ok(vpy)
}

/// Runs the peer on `path` (oracleGeneral) at `mem` objects for each of
/// `policies` (swaplab's names), one after another.
pub fn run(python: &Path, path: &Path, mem: u64, policies: &[String]) -> Result<PeerOut> {
    let out = Command::new(python)
        .arg("-c")
        .arg(PEER_SCRIPT)
        .arg(path)
        .arg(mem.to_string())
        .arg(policies.join(","))
        .output()
        .map_err(|e| Error::Failed {
            what: "running the peer".into(),
            why: e.to_string(),
            fix: String::new(),
        })?;
    if !out.status.success() {
        return Err(Error::Failed {
            what: "the peer".into(),
            why: String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
                .to_string(),
            fix: String::new(),
        });
    }
    Ok(parse(
        &String::from_utf8_lossy(&out.stdout),
        python,
        version(python),
    ))
}

/// The script's output.
fn parse(stdout: &str, python: &Path, version: String) -> PeerOut {
    let mut p = PeerOut {
        python: python.display().to_string(),
        version,
        ..Default::default()
    };
    for l in stdout.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            ["missing", name] => p.missing.push(name.to_string()),
            [name, secs, mr, n] => {
                if let (Ok(seconds), Ok(miss_ratio), Ok(requests)) =
                    (secs.parse(), mr.parse(), n.parse())
                {
                    p.rows.insert(
                        name.to_string(),
                        PeerRow {
                            seconds,
                            miss_ratio,
                            requests,
                        },
                    );
                }
            }
            _ => {}
        }
    }
    p
}

impl PeerRow {
    /// Misses, from the miss ratio the package returns (a `double` of
    /// misses / requests: exact when rounded back for any request count
    /// below 2^52).
    pub fn misses(&self) -> u64 {
        (self.miss_ratio * self.requests as f64).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_script_output() {
        let p = parse(
            "lru 1.5 0.25 400\nmissing linux\nbad line\nfifo 2 0.5 400\n",
            Path::new("py"),
            "0.3.5".into(),
        );
        assert_eq!(p.rows.len(), 2);
        assert_eq!(p.rows["lru"].misses(), 100);
        assert_eq!(p.rows["fifo"].seconds, 2.0);
        assert_eq!(p.missing, vec!["linux"]);
    }
}
