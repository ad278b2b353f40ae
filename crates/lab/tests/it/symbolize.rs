//! [`Symbolizer`] on this test binary (Rust, DWARF), on small C programs
//! compiled here (PIE and non-PIE, static functions, a static name defined
//! twice), and on the embedded workload executable.

use std::path::{Path, PathBuf};
use std::process::Command;

use swaplab_analysis::symbolize::Symbolizer;

const TARGET_LINE: u32 = line!() + 2;
#[inline(never)]
fn symbolize_me_target(x: u64) -> u64 {
    // No calls that could be inlined at the start: the first instruction
    // must be this function's own line.
    let mut acc = x;
    let mut i = 0;
    while i < x {
        acc = acc.wrapping_mul(31).wrapping_add(i);
        i += 1;
    }
    acc ^ 7
}
const TARGET_END: u32 = line!() - 1;

/// (module path, offset = address − dli_fbase) of a code address in this
/// process.
fn module_offset(addr: usize) -> (PathBuf, u64) {
    // SAFETY: dladdr only reads the loader's tables; info is plain data.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let rc = unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) };
    assert_ne!(rc, 0, "dladdr found no module for {addr:#x}");
    let base = info.dli_fbase as usize;
    // The main program's dli_fname is argv[0]-like; use its real path.
    (std::env::current_exe().unwrap(), (addr - base) as u64)
}

#[test]
fn rust_function_in_this_binary() {
    assert_eq!(symbolize_me_target(std::hint::black_box(1)), 31 ^ 7);
    let addr = symbolize_me_target as *const () as usize;
    let (exe, fn_off) = module_offset(addr);
    let mut s = Symbolizer::new();
    // As a return address 1 byte into the function: the lookup probes its
    // first instruction.
    let off = fn_off + 1;
    let f = s.symbolize(&exe, off);
    eprintln!("{f:?}");
    let exe_name = exe.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(f.module, exe_name);
    let function = f.function.as_deref().expect("function");
    assert!(function.contains("symbolize_me_target"), "{function}");
    let symbol = f.symbol.as_deref().expect("symbol");
    assert!(symbol.contains("symbolize_me_target"), "{symbol}");
    assert_eq!(f.sym_offset, 1);
    assert_eq!(f.key, format!("{exe_name}!{symbol}+0x1"));
    let file = f.file.as_deref().expect("file (DWARF)");
    assert!(file.ends_with("tests/it/symbolize.rs"), "{file}");
    let line = f.line.expect("line");
    assert!(
        (TARGET_LINE..=TARGET_END).contains(&line),
        "line {line}, function at {TARGET_LINE}..={TARGET_END}"
    );
    assert_eq!(s.resolve_key(&exe, &f.key), Some(off));

    // The exact variant at the function's own address gives the same.
    let g = s.symbolize_exact(&exe, fn_off);
    assert_eq!(g.symbol, f.symbol);
    assert_eq!(g.sym_offset, 0);
    assert_eq!(s.resolve_key(&exe, &g.key), Some(fn_off));
    // As a return address at the function's start, the call was in the
    // code before it: not this function.
    let h = s.symbolize(&exe, fn_off);
    assert_ne!(h.symbol, f.symbol);
    assert_eq!(s.resolve_key(&exe, &h.key), Some(fn_off));
}

#[test]
fn unknown_modules_and_keys() {
    let mut s = Symbolizer::new();
    let missing = Path::new("/nonexistent/libnothing.so");
    let f = s.symbolize(missing, 0x1234);
    assert_eq!(f.key, "libnothing.so+0x1234");
    assert_eq!(
        (f.function, f.symbol, f.file, f.line),
        (None, None, None, None)
    );
    assert_eq!(s.resolve_key(missing, "libnothing.so+0x1234"), Some(0x1234));
    assert_eq!(s.resolve_key(missing, "libnothing.so!f+0x0"), None);
    let exe = std::env::current_exe().unwrap();
    assert_eq!(s.resolve_key(&exe, "other-module+0x10"), None);
    assert_eq!(s.resolve_key(&exe, "garbage"), None);
    let name = exe.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        s.resolve_key(&exe, &format!("{name}!no_such_symbol_xyz+0x0")),
        None
    );
    // Far past the code: no symbol, the plain key, which resolves back.
    let f = s.symbolize(&exe, 0x7fff_0000);
    assert_eq!(f.key, format!("{name}+0x7fff0000"));
    assert_eq!(s.resolve_key(&exe, &f.key), Some(0x7fff_0000));
}

const PROG_C: &str = r#"#include <stdio.h>

int known_function(int x)
{
    int y = x * 3;
    return y + 1;
}

static __attribute__((noinline)) int private_helper(int x)
{
    return known_function(x) * 2;
}

int other_unit(int x);

int main(int argc, char **argv)
{
    (void)argv;
    printf("%d %d\n", private_helper(argc), other_unit(argc));
    return 0;
}
"#;

const OTHER_C: &str = r#"static __attribute__((noinline)) int private_helper(int x)
{
    return x + 5;
}

int other_unit(int x)
{
    return private_helper(x);
}
"#;

/// `nm` addresses of the defined text symbols named `name`.
fn nm(exe: &Path, name: &str) -> Vec<u64> {
    let out = Command::new("nm").arg(exe).output().expect("nm");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[2] == name && f[1].eq_ignore_ascii_case("t"))
                .then(|| u64::from_str_radix(f[0], 16).unwrap())
        })
        .collect()
}

/// The test program built with `cc EXTRA`: `None` (a counted skip of
/// `test`) when cc is missing or cannot build it so.
fn compile(test: &str, dir: &Path, out: &str, extra: &[&str]) -> Option<PathBuf> {
    std::fs::write(dir.join("prog.c"), PROG_C).unwrap();
    std::fs::write(dir.join("other.c"), OTHER_C).unwrap();
    let exe = dir.join(out);
    let st = Command::new("cc")
        .args(["-O0", "-g"])
        .args(extra)
        .arg("-o")
        .arg(&exe)
        .arg(dir.join("prog.c"))
        .arg(dir.join("other.c"))
        .status();
    match st {
        Ok(s) if s.success() => Some(exe),
        other => {
            swaplab_testkit::skip(
                test,
                swaplab_testkit::Facility::Program("cc"),
                format!("cc {extra:?} failed: {other:?}"),
            );
            None
        }
    }
}

fn check_c_program(exe: &Path, base: u64) {
    let mut s = Symbolizer::new();
    let name = exe.file_name().unwrap().to_string_lossy().into_owned();
    let known = nm(exe, "known_function");
    assert_eq!(known.len(), 1);
    // 4 bytes into known_function: inside its prologue, line 4 ("{" is 4,
    // the signature 3).
    let off = known[0] - base + 4;
    let f = s.symbolize(exe, off);
    eprintln!("{f:?}");
    assert_eq!(f.function.as_deref(), Some("known_function"));
    assert_eq!(f.symbol.as_deref(), Some("known_function"));
    assert_eq!(f.key, format!("{name}!known_function+0x4"));
    assert!(f.file.as_deref().unwrap().ends_with("prog.c"), "{f:?}");
    assert!(matches!(f.line, Some(3..=5)), "{f:?}");
    assert_eq!(s.resolve_key(exe, &f.key), Some(off));
    assert_eq!(
        s.resolve_key(exe, &format!("{name}!known_function+0x0")),
        Some(known[0] - base)
    );

    // The body line: the instruction of `return y + 1;` is after the
    // multiplication; find it with the exact lookup over the function.
    let lines: Vec<u32> = (0..40)
        .filter_map(|k| s.symbolize_exact(exe, known[0] - base + k).line)
        .collect();
    assert!(lines.contains(&5) && lines.contains(&6), "{lines:?}");

    // Static functions (.symtab only), one name in two files: ~1 and ~2 by
    // address, each resolving to its own address.
    let mut helpers = nm(exe, "private_helper");
    helpers.sort_unstable();
    assert_eq!(helpers.len(), 2);
    for (i, &a) in helpers.iter().enumerate() {
        let f = s.symbolize(exe, a - base + 1);
        assert_eq!(f.symbol.as_deref(), Some("private_helper"));
        assert_eq!(f.function.as_deref(), Some("private_helper"));
        assert_eq!(f.key, format!("{name}!private_helper~{}+0x1", i + 1));
        assert_eq!(s.resolve_key(exe, &f.key), Some(a - base + 1));
        // Linked in command-line order: prog.c's copy comes first.
        let file = f.file.unwrap();
        assert!(file.ends_with(["prog.c", "other.c"][i]), "{file}");
    }
}

#[test]
fn c_program_pie() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = compile(&test_name!(), dir.path(), "prog-pie", &["-fPIE", "-pie"]) else {
        return;
    };
    check_c_program(&exe, 0);
}

#[test]
fn c_program_non_pie() {
    if !cfg!(target_arch = "x86_64") {
        return swaplab_testkit::skip(
            &test_name!(),
            swaplab_testkit::Facility::Arch,
            "the 0x400000 base is x86-64's",
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = compile(
        &test_name!(),
        dir.path(),
        "prog-nopie",
        &["-fno-pie", "-no-pie"],
    ) else {
        return;
    };
    // dli_fbase of a non-PIE x86-64 executable is 0x400000: offsets are
    // virtual addresses minus that.
    check_c_program(&exe, 0x400000);
}

#[test]
fn workload_executable() {
    let exe = swaplab_lab::workload::executable().expect("workload executable");
    let name = exe.file_name().unwrap().to_string_lossy().into_owned();
    let mut s = Symbolizer::new();
    let off = s
        .resolve_key(&exe, &format!("{name}!run_traverse+0x0"))
        .expect("run_traverse in the workload's symbol table");
    let f = s.symbolize(&exe, off + 1);
    eprintln!("{f:?}");
    assert_eq!(f.function.as_deref(), Some("run_traverse"));
    assert_eq!(f.symbol.as_deref(), Some("run_traverse"));
    assert_eq!(f.key, format!("{name}!run_traverse+0x1"));
    assert_eq!(s.resolve_key(&exe, &f.key), Some(off + 1));
}
