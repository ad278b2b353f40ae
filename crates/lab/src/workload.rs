//! The built-in C workloads (native/workloads), compiled by build.rs and
//! embedded in the swaplab binary. On first use the executable is written
//! to a cache directory (atomically, keyed by a content hash), so a fresh
//! checkout needs nothing but `cargo run`.
//!
//! Cache directory: `$SWAPLAB_CACHE_DIR`, else `/var/cache/swaplab` for
//! root, else `$XDG_CACHE_HOME/swaplab` or `~/.cache/swaplab`.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The embedded executable.
pub static WORKLOAD_EXE: &[u8] = include_bytes!(env!("SWAPLAB_WORKLOAD_EXE"));
/// Content hash of [`WORKLOAD_EXE`] (hex, from build.rs).
pub const WORKLOAD_HASH: &str = env!("SWAPLAB_WORKLOAD_HASH");
/// The program name that commands may use for the embedded binary:
/// `swaplab run -- swaplab-workload qsort --size 64M`.
pub const WORKLOAD_PROGRAM: &str = "swaplab-workload";
/// Environment variable overriding the cache directory.
pub const CACHE_DIR_ENV: &str = "SWAPLAB_CACHE_DIR";

/// The cache directory (see the module docs).
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(CACHE_DIR_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(d);
    }
    if swaplab_host::util::is_root() {
        return PathBuf::from("/var/cache/swaplab");
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(d).join("swaplab");
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(h) => PathBuf::from(h).join(".cache/swaplab"),
        None => {
            // SAFETY: geteuid cannot fail and touches no memory.
            let uid = unsafe { libc::geteuid() };
            std::env::temp_dir().join(format!("swaplab-cache-{uid}"))
        }
    }
}

static EXTRACT: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Path of the workload executable, extracting it on first use.
pub fn executable() -> Result<PathBuf> {
    let mut guard = EXTRACT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = guard.as_ref() {
        if p.exists() {
            return Ok(p.clone());
        }
    }
    let dir = cache_dir();
    let p = extract_into(&dir)?;
    *guard = Some(p.clone());
    Ok(p)
}

fn extract_into(dir: &Path) -> Result<PathBuf> {
    extract_file(
        dir,
        &format!("swaplab-workload-{WORKLOAD_HASH}"),
        WORKLOAD_EXE,
        0o755,
    )
}

/// Writes `bytes` to `dir/name` with permissions `mode` unless the file
/// already holds exactly them, creating `dir` (0755) if needed. Atomic: a
/// temporary file in `dir` (unique per process and call), synced, then
/// renamed into place, so concurrent extractions never see a torn file.
/// Used for every embedded file (the workload executable, the preload
/// library).
pub(crate) fn extract_file(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> Result<PathBuf> {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .map_err(|e| Error::io("creating cache directory", dir, e))?;
    let path = dir.join(name);
    if let Ok(existing) = std::fs::read(&path) {
        if existing == bytes {
            return Ok(path);
        }
    }
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{seq}.tmp", std::process::id()));
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)
            .map_err(|e| Error::io("creating", &tmp, e))?;
        f.write_all(bytes)
            .map_err(|e| Error::io("writing", &tmp, e))?;
        f.sync_all().map_err(|e| Error::io("syncing", &tmp, e))?;
    }
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))
        .map_err(|e| Error::io("chmod", &tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| Error::io("renaming into place", &path, e))?;
    Ok(path)
}

/// Replaces a leading `swaplab-workload` (no slash) by the embedded binary.
pub fn resolve_command(argv: &[String]) -> Result<Vec<String>> {
    let mut v = argv.to_vec();
    if v.first().map(String::as_str) == Some(WORKLOAD_PROGRAM) {
        v[0] = executable()?.to_string_lossy().into_owned();
    }
    Ok(v)
}

/// The argv that runs workload `name` with `--size size` and extra args.
pub fn command(name: &str, size: &str, seed: Option<u64>, extra: &[String]) -> Vec<String> {
    let mut v = vec![
        WORKLOAD_PROGRAM.to_string(),
        name.to_string(),
        "--size".into(),
        size.to_string(),
    ];
    if let Some(s) = seed {
        v.push("--seed".into());
        v.push(s.to_string());
    }
    v.extend(extra.iter().cloned());
    v
}

/// One workload as `swaplab-workload list --json` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadInfo {
    /// Its name.
    pub name: String,
    /// The unit of its work metric.
    pub work_unit: String,
    /// What it does.
    pub description: String,
    /// The smallest --size it accepts.
    pub min_size: u64,
    /// Options it takes besides --size and --seed.
    pub options: Vec<String>,
}

/// The built-in workloads.
pub fn list() -> Result<Vec<WorkloadInfo>> {
    let exe = executable()?;
    let out = spawn_retrying(
        Command::new(&exe)
            .args(["list", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .and_then(|c| c.wait_with_output())
    .map_err(|e| Error::io("running", &exe, e))?;
    if !out.status.success() {
        return Err(Error::failed(
            format!("{} list --json", exe.display()),
            format!(
                "exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            "rebuild swaplab (cargo build) so the embedded workloads match",
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        Error::failed(
            "reading the workload list",
            format!("not the expected JSON: {e}"),
            "rebuild swaplab so the embedded workloads match",
        )
    })
}

/// Spawns, retrying while the kernel answers ETXTBSY: another thread of
/// this process may have forked while the freshly written executable was
/// still open for writing (the child holds that descriptor until its exec).
pub fn spawn_retrying(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_once_and_lists() {
        let dir = tempfile::tempdir().unwrap();
        let p = extract_into(dir.path()).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), WORKLOAD_EXE);
        let again = extract_into(dir.path()).unwrap();
        assert_eq!(p, again);
        let n = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(n, 1, "no temp files left");
        let l = list().unwrap();
        let names: Vec<&str> = l.iter().map(|w| w.name.as_str()).collect();
        for w in ["qsort", "genome", "traverse", "chase", "kv"] {
            assert!(names.contains(&w), "{names:?}");
        }
    }

    #[test]
    fn resolves_the_program_name() {
        let v = resolve_command(&command("qsort", "1M", Some(3), &[])).unwrap();
        assert!(v[0].contains("swaplab-workload-"), "{v:?}");
        assert_eq!(&v[1..], ["qsort", "--size", "1M", "--seed", "3"]);
        let other = vec!["./swaplab-workload".to_string()];
        assert_eq!(resolve_command(&other).unwrap(), other);
    }
}
