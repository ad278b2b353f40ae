//! Compiles the C workloads in native/workloads into one executable,
//! `$OUT_DIR/swaplab-workload`, which the library embeds with
//! `include_bytes!` and extracts on first use (see `src/workload.rs`).
//! Same flags as native/Makefile: -O2 -std=c11 -Wall -Wextra -pthread, -lm.

use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let src_dir = manifest.join("../../native/workloads");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let exe = out_dir.join("swaplab-workload");
    println!("cargo:rerun-if-changed={}", src_dir.display());
    let mut sources: Vec<PathBuf> = Vec::new();
    let entries = std::fs::read_dir(&src_dir).unwrap_or_else(|e| {
        panic!(
            "swaplab-lab build: cannot list {}: {e} (the C workloads live in native/workloads of the swaplab checkout)",
            src_dir.display()
        )
    });
    for entry in entries.flatten() {
        let p = entry.path();
        println!("cargo:rerun-if-changed={}", p.display());
        if p.extension().is_some_and(|x| x == "c") {
            sources.push(p);
        }
    }
    sources.sort();
    if sources.is_empty() {
        panic!("swaplab-lab build: no .c files in {}", src_dir.display());
    }
    // cc finds the compiler the way every -sys crate does (CC, target, …);
    // we ask it for the command and link an executable ourselves.
    let compiler = cc::Build::new()
        .cargo_metadata(false)
        .opt_level(2)
        .debug(false)
        .flag("-std=c11")
        .flag("-Wall")
        .flag("-Wextra")
        .flag("-pthread")
        .get_compiler();
    let mut cmd: Command = compiler.to_command();
    cmd.arg("-o")
        .arg(&exe)
        .args(&sources)
        .arg("-I")
        .arg(&src_dir);
    cmd.args(["-pthread", "-lm", "-lpthread"]);
    let out = cmd.output().unwrap_or_else(|e| {
        panic!(
            "swaplab-lab build: cannot run the C compiler {:?}: {e} (install gcc or clang, or set CC)",
            compiler.path()
        )
    });
    if !out.status.success() {
        panic!(
            "swaplab-lab build: compiling the C workloads failed ({:?}):\n{}{}",
            cmd,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in stderr.lines().filter(|l| l.contains("warning")) {
        println!("cargo:warning={line}");
    }
    let bytes = std::fs::read(&exe).expect("the compiler wrote the executable");
    println!(
        "cargo:rustc-env=SWAPLAB_WORKLOAD_HASH={:016x}",
        hash(&bytes)
    );
    println!("cargo:rustc-env=SWAPLAB_WORKLOAD_EXE={}", exe.display());
}

/// A content hash for the cache file name (not for security: the cache
/// directory is private to the user or root).
fn hash(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    h.write(bytes);
    h.finish()
}
