//! Compiles the native code the library embeds with `include_bytes!` and
//! extracts on first use:
//!
//! * the C workloads in native/workloads into one executable,
//!   `$OUT_DIR/swaplab-workload` (see `src/workload.rs`);
//! * the LD_PRELOAD allocation tracer native/preload into
//!   `$OUT_DIR/libswaplab-preload.so` (see `src/preload.rs`);
//! * the library's self-checking test program native/tests/preload_probe.c
//!   into `$OUT_DIR/swaplab-preload-probe`, for tests/it/preload.rs only (not
//!   embedded).
//!
//! The flags are native/Makefile's, read from native/cflags.mk
//! (CFLAGS_COMMON and CFLAGS_/LDLIBS_ WORKLOAD, PRELOAD, PROBE: -O2 -g, -g
//! for file:line symbolization of allocation sites, -Wall -Wextra -Werror),
//! plus -ffile-prefix-map (below).
//!
//! Exports SWAPLAB_WORKLOAD_EXE / SWAPLAB_WORKLOAD_HASH,
//! SWAPLAB_PRELOAD_SO / SWAPLAB_PRELOAD_HASH (path, content hash) and
//! SWAPLAB_PRELOAD_PROBE (path).

use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let native = manifest.join("../../native");
    // Debug info names sources `./native/workloads/traverse.c` (compiled
    // from the checkout's root with its path mapped to `.`), wherever the
    // checkout is: file:line in traces reads well and the embedded
    // binaries (and their content hashes) do not depend on the path.
    let native = native.canonicalize().unwrap_or(native);
    let root = native.parent().unwrap_or(&native).to_path_buf();
    let prefix_map = format!("-ffile-prefix-map={}=.", root.display());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let flags = CFlags::read(&native.join("cflags.mk"));

    let src_dir = native.join("workloads");
    let exe = out_dir.join("swaplab-workload");
    let sources = c_sources(&src_dir, "the C workloads live in native/workloads");
    let compiler = c_compiler(&prefix_map, &flags, "CFLAGS_WORKLOAD");
    let mut cmd: Command = compiler.to_command();
    cmd.current_dir(&root);
    cmd.arg("-o")
        .arg(&exe)
        .args(&sources)
        .arg("-I")
        .arg(&src_dir);
    cmd.args(flags.get("LDLIBS_WORKLOAD"));
    run_compiler(cmd, compiler.path(), "the C workloads");
    export(&exe, "SWAPLAB_WORKLOAD_EXE", "SWAPLAB_WORKLOAD_HASH");

    let pre_dir = native.join("preload");
    let so = out_dir.join("libswaplab-preload.so");
    let sources = c_sources(&pre_dir, "the preload library lives in native/preload");
    let compiler = c_compiler(&prefix_map, &flags, "CFLAGS_PRELOAD");
    let mut cmd: Command = compiler.to_command();
    cmd.current_dir(&root);
    cmd.arg("-o").arg(&so).args(&sources);
    cmd.args(flags.get("LDLIBS_PRELOAD"));
    run_compiler(cmd, compiler.path(), "the preload library");
    export(&so, "SWAPLAB_PRELOAD_SO", "SWAPLAB_PRELOAD_HASH");

    let probe_src = native.join("tests/preload_probe.c");
    println!("cargo:rerun-if-changed={}", probe_src.display());
    let probe = out_dir.join("swaplab-preload-probe");
    let compiler = c_compiler(&prefix_map, &flags, "CFLAGS_PROBE");
    let mut cmd: Command = compiler.to_command();
    cmd.current_dir(&root);
    cmd.arg("-o").arg(&probe).arg(&probe_src);
    cmd.args(flags.get("LDLIBS_PROBE"));
    run_compiler(cmd, compiler.path(), "the preload test probe");
    println!("cargo:rustc-env=SWAPLAB_PRELOAD_PROBE={}", probe.display());
}

/// The .c files of dir (sorted); registers dir and its files for reruns.
fn c_sources(dir: &Path, where_: &str) -> Vec<PathBuf> {
    println!("cargo:rerun-if-changed={}", dir.display());
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| {
        panic!(
            "swaplab-lab build: cannot list {}: {e} ({where_} of the swaplab checkout)",
            dir.display()
        )
    });
    let mut sources = Vec::new();
    for entry in entries.flatten() {
        let p = entry.path();
        println!("cargo:rerun-if-changed={}", p.display());
        if p.extension().is_some_and(|x| x == "c") {
            sources.push(p);
        }
    }
    sources.sort();
    if sources.is_empty() {
        panic!("swaplab-lab build: no .c files in {}", dir.display());
    }
    sources
}

fn run_compiler(mut cmd: Command, compiler: &Path, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| {
        panic!(
            "swaplab-lab build: cannot run the C compiler {compiler:?}: {e} (install gcc or clang, or set CC)"
        )
    });
    if !out.status.success() {
        panic!(
            "swaplab-lab build: compiling {what} failed ({:?}):\n{}{}",
            cmd,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in stderr.lines().filter(|l| l.contains("warning")) {
        println!("cargo:warning={line}");
    }
}

fn export(file: &Path, path_var: &str, hash_var: &str) {
    let bytes = std::fs::read(file).expect("the compiler wrote its output");
    println!("cargo:rustc-env={hash_var}={:016x}", hash(&bytes));
    println!("cargo:rustc-env={path_var}={}", file.display());
}

/// A content hash for the cache file name (not for security: the cache
/// directory is checked to be private to the user before anything in it
/// is trusted, and a cached file is compared byte for byte).
fn hash(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    h.write(bytes);
    h.finish()
}

/// The C compiler as every native build uses it: native/cflags.mk's
/// CFLAGS_COMMON (-O2 with debug info, which the symbolizer reads) and
/// `what` (e.g. CFLAGS_PRELOAD), with paths relative to the checkout.
fn c_compiler(prefix_map: &str, flags: &CFlags, what: &str) -> cc::Tool {
    let mut b = cc::Build::new();
    b.cargo_metadata(false).opt_level(2).debug(false);
    for f in flags.get("CFLAGS_COMMON").iter().chain(flags.get(what)) {
        b.flag(f);
    }
    b.flag(prefix_map);
    b.get_compiler()
}

/// native/cflags.mk: the C flags native/Makefile and this script share,
/// one `NAME = flags` line each (`#` comments, nothing else of make's).
struct CFlags {
    path: PathBuf,
    vars: Vec<(String, Vec<String>)>,
}

impl CFlags {
    fn read(path: &Path) -> CFlags {
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
            panic!(
                "swaplab-lab build: cannot read {}: {e} (the C flags of the swaplab checkout)",
                path.display()
            )
        });
        let mut vars = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((name, value)) = line.split_once('=') else {
                panic!(
                    "swaplab-lab build: {}:{}: expected `NAME = flags`, got {line:?}",
                    path.display(),
                    i + 1
                );
            };
            let value = value.split_whitespace().map(str::to_string).collect();
            vars.push((name.trim().to_string(), value));
        }
        CFlags {
            path: path.to_path_buf(),
            vars,
        }
    }

    fn get(&self, name: &str) -> &[String] {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
            .unwrap_or_else(|| panic!("swaplab-lab build: {} has no {name}", self.path.display()))
    }
}
