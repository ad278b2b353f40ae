//! The built-in C workloads (native/workloads), compiled by build.rs and
//! embedded in the swaplab binary. On first use the executable is written
//! to a cache directory (atomically, keyed by a content hash), so a fresh
//! checkout needs nothing but `cargo run`.
//!
//! Cache directory: `$SWAPLAB_CACHE_DIR`, else `/var/cache/swaplab` for
//! root, else `$XDG_CACHE_HOME/swaplab` or `~/.cache/swaplab`; without a
//! home, a fresh private directory under the temp dir, one per process
//! (never a predictable path there).
//!
//! Nothing in the cache is executed or preloaded unless the directory is
//! private: created 0700 if missing, and found to be a real directory (not
//! a symlink) owned by the effective user and not writable by group or
//! others, below ancestors that only root or the user can change (a group-
//! or world-writable ancestor must be sticky, like /tmp). Otherwise
//! extraction fails with an error that says how to fix it. A cached file is
//! used only if it is a regular file owned by the user, not group- or
//! world-writable, and holds exactly the embedded bytes; else it is
//! rewritten (atomically).

use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub mod programs;

/// The embedded executable.
pub static WORKLOAD_EXE: &[u8] = include_bytes!(env!("SWAPLAB_WORKLOAD_EXE"));
/// Content hash of [`WORKLOAD_EXE`] (hex, from build.rs).
pub const WORKLOAD_HASH: &str = env!("SWAPLAB_WORKLOAD_HASH");
/// The program name that commands may use for the embedded binary:
/// `swaplab run -- swaplab-workload qsort --size 64M`.
pub const WORKLOAD_PROGRAM: &str = "swaplab-workload";
/// Environment variable overriding the cache directory.
pub const CACHE_DIR_ENV: &str = "SWAPLAB_CACHE_DIR";

/// The cache directory (see the module docs), created if needed and
/// checked to be private.
pub fn cache_dir() -> Result<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    match default_cache_dir(
        var(CACHE_DIR_ENV),
        swaplab_host::util::is_root(),
        var("XDG_CACHE_HOME"),
        var("HOME"),
    ) {
        Some(d) => {
            ensure_private_dir(&d)?;
            Ok(d)
        }
        None => private_temp_dir(),
    }
}

/// Where the cache lives, from the environment; None = no home: a fresh
/// private temp directory.
fn default_cache_dir(
    explicit: Option<std::ffi::OsString>,
    root: bool,
    xdg: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    if let Some(d) = explicit {
        return Some(PathBuf::from(d));
    }
    if root {
        return Some(PathBuf::from("/var/cache/swaplab"));
    }
    if let Some(d) = xdg {
        return Some(PathBuf::from(d).join("swaplab"));
    }
    home.map(|h| PathBuf::from(h).join(".cache/swaplab"))
}

/// This process's private cache under the temp dir (mkdtemp: 0700, a
/// name nobody can guess or claim first), made once.
fn private_temp_dir() -> Result<PathBuf> {
    static DIR: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut g = DIR.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(d) = g.as_ref() {
        return Ok(d.clone());
    }
    let template = std::env::temp_dir().join("swaplab-cache-XXXXXX");
    let mut buf = std::ffi::CString::new(template.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::Invalid(format!("{}: a NUL in the temp dir", template.display())))?
        .into_bytes_with_nul();
    // SAFETY: buf is a writable NUL-terminated template.
    let r = unsafe { libc::mkdtemp(buf.as_mut_ptr().cast()) };
    if r.is_null() {
        return Err(Error::io(
            "creating a private cache directory",
            &template,
            std::io::Error::last_os_error(),
        ));
    }
    buf.pop();
    let d = PathBuf::from(std::ffi::OsStr::from_bytes(&buf));
    ensure_private_dir(&d)?;
    *g = Some(d.clone());
    Ok(d)
}

fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

fn not_private(dir: &Path, why: String) -> Error {
    Error::failed(
        format!("cache directory {}", dir.display()),
        format!("{why}; swaplab does not run or preload binaries from a directory others can change"),
        format!(
            "make it yours and private (chown {} {d} && chmod 700 {d}), or set {CACHE_DIR_ENV} to a private directory",
            euid(),
            d = dir.display()
        ),
    )
}

/// Creates `dir` (0700) if missing and checks it is private (module docs).
pub(crate) fn ensure_private_dir(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::io("creating cache directory", dir, e))?;
    let md = std::fs::symlink_metadata(dir)
        .map_err(|e| Error::io("checking cache directory", dir, e))?;
    if md.file_type().is_symlink() {
        return Err(not_private(dir, "it is a symbolic link".into()));
    }
    if !md.is_dir() {
        return Err(not_private(dir, "it is not a directory".into()));
    }
    if md.uid() != euid() {
        return Err(not_private(
            dir,
            format!(
                "it is owned by uid {}, not by us (uid {})",
                md.uid(),
                euid()
            ),
        ));
    }
    if md.mode() & 0o022 != 0 {
        return Err(not_private(
            dir,
            format!(
                "its mode {:04o} lets group or others write",
                md.mode() & 0o7777
            ),
        ));
    }
    let real = std::fs::canonicalize(dir).map_err(|e| Error::io("resolving", dir, e))?;
    for a in real.ancestors().skip(1) {
        let m = std::fs::metadata(a).map_err(|e| Error::io("checking", a, e))?;
        if m.uid() != 0 && m.uid() != euid() {
            return Err(not_private(
                dir,
                format!("its ancestor {} is owned by uid {}", a.display(), m.uid()),
            ));
        }
        if m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0 {
            return Err(not_private(
                dir,
                format!(
                    "its ancestor {} (mode {:04o}) lets group or others replace it",
                    a.display(),
                    m.mode() & 0o7777
                ),
            ));
        }
    }
    Ok(())
}

/// The cached file at path if it can be trusted: a regular file (not a
/// symlink) of ours, not group- or world-writable, holding exactly bytes.
fn trusted_copy(path: &Path, bytes: &[u8]) -> bool {
    let Ok(mut f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    else {
        return false;
    };
    let Ok(md) = f.metadata() else {
        return false;
    };
    if !md.is_file() || md.uid() != euid() || md.mode() & 0o022 != 0 {
        return false;
    }
    if md.len() != bytes.len() as u64 {
        return false;
    }
    let mut existing = Vec::with_capacity(bytes.len());
    f.read_to_end(&mut existing).is_ok() && existing == bytes
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
    let dir = cache_dir()?;
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

/// Writes `bytes` to `dir/name` with permissions `mode` unless a trusted
/// copy is there (see the module docs), creating `dir` (0700) if needed
/// and refusing a directory that is not private. Atomic: a
/// temporary file in `dir` (unique per process and call), synced, then
/// renamed into place, so concurrent extractions never see a torn file.
/// Used for every embedded file (the workload executable, the preload
/// library).
pub(crate) fn extract_file(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> Result<PathBuf> {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    ensure_private_dir(dir)?;
    let path = dir.join(name);
    if trusted_copy(&path, bytes) {
        return Ok(path);
    }
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{seq}.tmp", std::process::id()));
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
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

/// Replaces a leading `swaplab-workload` (no slash) by the embedded binary;
/// `swaplab-workload NAME ...` of a real program (sqlite, sort, xz, pydict:
/// [`programs`]) by the command that runs it, after installing what
/// it needs and generating its input (cached).
pub fn resolve_command(argv: &[String]) -> Result<Vec<String>> {
    let mut v = argv.to_vec();
    if v.first().map(String::as_str) == Some(WORKLOAD_PROGRAM) {
        if v.get(1).is_some_and(|n| programs::find(n).is_some()) {
            return programs::resolve(&v[1..]);
        }
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
    /// `built-in` (the C workloads) or `program` (a real program, [`programs`]).
    #[serde(default = "builtin_kind")]
    pub kind: String,
}

fn builtin_kind() -> String {
    "built-in".into()
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
    let mut l: Vec<WorkloadInfo> = serde_json::from_slice(&out.stdout).map_err(|e| {
        Error::failed(
            "reading the workload list",
            format!("not the expected JSON: {e}"),
            "rebuild swaplab so the embedded workloads match",
        )
    })?;
    l.extend(programs::PROGRAMS.iter().map(|p| WorkloadInfo {
        name: p.name.into(),
        work_unit: p.work_unit.into(),
        description: p.description.into(),
        min_size: p.min_size,
        options: vec![],
        kind: "program".into(),
    }));
    Ok(l)
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
        for w in ["sqlite", "sort", "xz", "pydict"] {
            let i = l.iter().find(|i| i.name == w).expect(w);
            assert_eq!(i.kind, "program");
        }
        assert_eq!(l[0].kind, "built-in");
    }

    fn mode_of(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
    }

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn refusal(dir: &Path) -> String {
        let e = extract_into(dir).unwrap_err().to_string();
        assert!(
            e.contains("does not run or preload binaries") && e.contains(CACHE_DIR_ENV),
            "{e}"
        );
        e
    }

    #[test]
    fn cache_dir_is_created_private() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("a/b/swaplab");
        let p = extract_into(&d).unwrap();
        assert_eq!(mode_of(&d), 0o700);
        assert_eq!(mode_of(&t.path().join("a")), 0o700);
        assert_eq!(mode_of(&p), 0o755);
        assert_eq!(std::fs::symlink_metadata(&d).unwrap().uid(), euid());
    }

    #[test]
    fn writable_cache_dir_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("c");
        std::fs::create_dir(&d).unwrap();
        chmod(&d, 0o777);
        let e = refusal(&d);
        assert!(e.contains("mode 0777") && e.contains("chmod 700"), "{e}");
        chmod(&d, 0o770);
        refusal(&d);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0, "nothing written");
        chmod(&d, 0o755); // readable by others is fine
        extract_into(&d).unwrap();
    }

    #[test]
    fn cache_dir_below_a_writable_ancestor_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let open = t.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let e = refusal(&open.join("swaplab"));
        assert!(e.contains("ancestor"), "{e}");
        chmod(&open, 0o1777); // sticky, like /tmp: others cannot replace it
        extract_into(&open.join("swaplab")).unwrap();
    }

    #[test]
    fn symlinked_cache_dir_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        std::fs::create_dir(&real).unwrap();
        chmod(&real, 0o700);
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = refusal(&link);
        assert!(e.contains("symbolic link"), "{e}");
    }

    #[test]
    fn cache_dir_of_another_user_is_refused() {
        if euid() != 0 {
            eprintln!("skipping: chown to another user needs root");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("theirs");
        std::fs::create_dir(&d).unwrap();
        chmod(&d, 0o700);
        std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
        let e = refusal(&d);
        assert!(e.contains("owned by uid 65534"), "{e}");
    }

    #[test]
    fn untrusted_cached_file_is_replaced() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("c");
        let p = extract_into(&d).unwrap();
        // the right bytes, but writable by others: rewritten 0755
        chmod(&p, 0o666);
        assert_eq!(extract_into(&d).unwrap(), p);
        assert_eq!(mode_of(&p), 0o755);
        // a symlink in its place (to the right bytes): replaced by a file,
        // its target untouched
        let elsewhere = t.path().join("elsewhere");
        std::fs::write(&elsewhere, WORKLOAD_EXE).unwrap();
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &p).unwrap();
        extract_into(&d).unwrap();
        assert!(std::fs::symlink_metadata(&p).unwrap().is_file());
        assert_eq!(std::fs::read(&elsewhere).unwrap(), WORKLOAD_EXE);
        // other bytes: rewritten
        std::fs::write(&p, b"#!/bin/sh\necho owned\n").unwrap();
        extract_into(&d).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), WORKLOAD_EXE);
        if euid() == 0 {
            // not ours: rewritten as ours
            std::os::unix::fs::chown(&p, Some(65534), None).unwrap();
            extract_into(&d).unwrap();
            assert_eq!(std::fs::metadata(&p).unwrap().uid(), 0);
        }
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            1,
            "no temp files left"
        );
    }

    #[test]
    fn without_a_home_the_cache_is_a_fresh_private_temp_dir() {
        let os = |s: &str| Some(std::ffi::OsString::from(s));
        assert_eq!(
            default_cache_dir(os("/x"), true, os("/y"), os("/h")),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(
            default_cache_dir(None, true, os("/y"), os("/h")),
            Some(PathBuf::from("/var/cache/swaplab"))
        );
        assert_eq!(
            default_cache_dir(None, false, os("/y"), os("/h")),
            Some(PathBuf::from("/y/swaplab"))
        );
        assert_eq!(
            default_cache_dir(None, false, None, os("/h")),
            Some(PathBuf::from("/h/.cache/swaplab"))
        );
        assert_eq!(default_cache_dir(None, false, None, None), None);
        let d = private_temp_dir().unwrap();
        assert_eq!(private_temp_dir().unwrap(), d, "one per process");
        assert_eq!(mode_of(&d), 0o700);
        assert_eq!(std::fs::metadata(&d).unwrap().uid(), euid());
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("swaplab-cache-"), "{name}");
        assert_ne!(name, format!("swaplab-cache-{}", euid()), "not predictable");
        let p = extract_into(&d).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), WORKLOAD_EXE);
        std::fs::remove_dir_all(&d).unwrap();
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
