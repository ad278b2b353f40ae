//! End-to-end tests of the `swaplab` binary's trace and simulation commands.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn swaplab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_swaplab"))
        .args(args)
        .env("CI", "1")
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = swaplab(args);
    assert!(
        o.status.success(),
        "swaplab {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn fails(args: &[&str], needle: &str) {
    let o = swaplab(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(1),
        "swaplab {args:?} should fail cleanly: {err}"
    );
    assert!(
        err.contains(needle),
        "swaplab {args:?}: expected '{needle}' in: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

fn shared(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(name);
    p.exists().then_some(p)
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap()
}

#[test]
fn gen_then_info_counts_what_was_generated() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("loop.parquet");
    let t = t.to_str().unwrap();
    // 100-page loop, 1000 references, half of them (by pattern) in a second phase of writes.
    ok(&[
        "gen",
        "loop:pages=100:count=600",
        "seq:pages=50:base=1000:count=400:writes=1",
        "-o",
        t,
    ]);
    let v = json(&ok(&["info", t, "--json"]));
    assert_eq!(v["references"], 1000);
    assert_eq!(v["distinct_pages"], 150);
    assert_eq!(v["writes"], 400);
    // A loop of 100 pages re-references each page at stack distance 100; the
    // 50-page sequential loop at distance 50.
    assert_eq!(v["stack_distance"]["max"], 100);
    // LRU with 99 pages: every reference of the 100-page loop misses (LRU's
    // worst case: 600), then the 50-page phase fits and misses only its 50 cold references.
    let s = json(&ok(&[
        "sim", t, "--policy", "lru,opt", "--mem", "99", "--json",
    ]));
    let lru = &s[0];
    assert_eq!(lru["policy"], "lru");
    assert_eq!(
        lru["minor_faults"].as_u64().unwrap() + lru["major_faults"].as_u64().unwrap(),
        650
    );
    // OPT keeps 98 loop pages resident and misses far less than LRU on the loop.
    assert!(s[1]["major_faults"].as_u64().unwrap() < lru["major_faults"].as_u64().unwrap());
}

/// `sim --stream --save/--report` saves what the in-memory simulation
/// saves: the same faults, policy by policy and size by size (OPT's next
/// uses computed in the backward pass), and the trace's absolute path; its
/// saved file renders through `swaplab report` like any other.
#[test]
fn streamed_sim_saves_and_reports_like_the_in_memory_one() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    let t = p("z.parquet");
    ok(&["gen", "zipf:pages=3000:alpha=0.8", "-n", "40000", "-o", &t]);
    let args = ["--policy", "lru,clock,opt", "--mem", "5%,20%"];
    let (m, s, h) = (p("m.json"), p("s.json"), p("s.html"));
    ok(&[&["sim", &t][..], &args, &["--save", &m]].concat());
    // From another directory, through a relative path.
    let o = Command::new(env!("CARGO_BIN_EXE_swaplab"))
        .current_dir(d.path())
        .args(
            [
                &["sim", "z.parquet", "--stream"][..],
                &args,
                &["--save", &s, "--report", &h],
            ]
            .concat(),
        )
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let read = |f: &str| json(&std::fs::read_to_string(f).unwrap());
    let (m, s) = (read(&m), read(&s));
    assert_eq!(s["kind"], m["kind"]);
    let key = |r: &serde_json::Value| {
        (
            r["policy"].as_str().unwrap().to_string(),
            r["capacity"].as_u64().unwrap(),
            r["major_faults"].as_u64().unwrap(),
            r["minor_faults"].as_u64().unwrap(),
        )
    };
    let rows = |v: &serde_json::Value| {
        let mut r: Vec<_> = v["results"].as_array().unwrap().iter().map(key).collect();
        r.sort();
        r
    };
    assert_eq!(rows(&s), rows(&m));
    assert_eq!(rows(&s).len(), 6);
    // At each size OPT misses least (its next uses came from the stream's
    // backward pass, not from a trace in memory).
    let rs = rows(&s);
    for (pol, cap, maj, _) in &rs {
        let opt = rs.iter().find(|r| r.0 == "opt" && r.1 == *cap).unwrap();
        assert!(opt.2 <= *maj, "opt {} > {pol} {maj} at {cap} pages", opt.2);
    }
    let trace = std::fs::canonicalize(&t).unwrap();
    assert_eq!(s["trace"]["path"].as_str().map(PathBuf::from), Some(trace));
    assert_eq!(s["trace"]["references"], 40000);
    assert_eq!(s["trace"]["distinct_pages"], m["trace"]["distinct_pages"]);
    let html = std::fs::read_to_string(&h).unwrap();
    assert!(
        html.contains("<svg") && html.contains("clock"),
        "{}",
        &html[..html.len().min(400)]
    );
    let r = p("r.html");
    ok(&["report", &p("s.json"), &p("m.json"), "-o", &r]);
    assert!(std::fs::metadata(&r).unwrap().len() > 1000);
}

/// `mrc --stream` and `info --stream` print what the in-memory commands
/// print, byte for byte: the exact curve, both SHARDS curves with their
/// errors and the policies over one read (and with `--full`, the
/// policies at the exact curve's steps over a second); LRU's simulated
/// curve equals the exact one (the stack property); a CSV, whose columns
/// need naming, is refused with the way to convert it.
#[test]
fn streamed_mrc_and_info_print_what_the_in_memory_ones_print() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    let t = p("z.parquet");
    ok(&["gen", "zipf:pages=4000:alpha=0.8", "-n", "60000", "-o", &t]);
    for args in [
        &[
            "mrc",
            &t,
            "--points",
            "6",
            "--shards",
            "0.2",
            "--shards-size",
            "300",
            "--policy",
            "lru,clock,opt",
        ][..],
        &["mrc", &t, "--mem", "1%,10%,50%", "--policy", "fifo"][..],
        &["mrc", &t, "--full", "--policy", "lru"][..],
        &["info", &t][..],
    ] {
        let mem = ok(&[args, &["--json"]].concat());
        let streamed = ok(&[args, &["--stream", "--json"]].concat());
        assert_eq!(streamed, mem, "{args:?}");
        if args.contains(&"lru,clock,opt") || args.contains(&"--full") {
            let v = json(&mem);
            let curve = |name: &str| {
                v["curves"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["name"] == name)
                    .unwrap_or_else(|| panic!("no {name} curve: {v}"))["miss_ratio"]
                    .clone()
            };
            let (exact, lru) = (curve("lru (exact)"), curve("lru"));
            for (e, l) in exact
                .as_array()
                .unwrap()
                .iter()
                .zip(lru.as_array().unwrap())
            {
                assert!(
                    (e.as_f64().unwrap() - l.as_f64().unwrap()).abs() < 1e-12,
                    "{exact} {lru}"
                );
            }
        }
    }
    let csv = p("t.csv");
    std::fs::write(&csv, "id,op\n1,r\n2,w\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_swaplab"))
        .args(["mrc", &csv, "--stream"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("swaplab import"), "{e}");
}

#[test]
fn peer_numbers_through_the_cli_csv_import_and_export_roundtrip() {
    let (Some(bin), Some(csv)) = (
        shared("cloudPhysicsIO.oracleGeneral.bin.zst"),
        shared("cloudPhysicsIO.csv.zst"),
    ) else {
        // Fails instead on CI, which must have ../shared/data.
        return swaplab_testkit::skip(
            &test_name!(),
            swaplab_testkit::Facility::SharedData,
            "../shared/data not found beside the checkout",
        );
    };
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("cp.parquet");
    let t = t.to_str().unwrap();
    ok(&[
        "import",
        csv.to_str().unwrap(),
        "--header",
        "--id-column",
        "lbn",
        "--op-column",
        "op",
        "-o",
        t,
    ]);
    let v = json(&ok(&["info", t, "--json"]));
    // 66,898 writes (SCSI 0x2a) counted independently with Python's csv module.
    assert_eq!(
        (
            v["references"].as_u64(),
            v["distinct_pages"].as_u64(),
            v["writes"].as_u64()
        ),
        (Some(113_872), Some(48_974), Some(66_898))
    );
    // libCacheSim's LRU misses at 1024 and 10000 pages (shared/data/README.md), via CSV output.
    let lru_misses = |trace: &str, extra: &[&str]| {
        let out = ok(&[
            &[
                "sim",
                trace,
                "--policy",
                "lru",
                "--mem",
                "1024,10000",
                "--csv",
            ][..],
            extra,
        ]
        .concat());
        out.lines()
            .skip(1)
            .map(|l| l.split(',').nth(4).unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(lru_misses(t, &[]), ["94816", "79438"]);
    // Export to oracleGeneral and simulate the exported file: same FIFO counts as the peer's.
    let e = d.path().join("cp.bin.zst");
    ok(&["export", t, "-o", e.to_str().unwrap()]);
    let s = json(&ok(&[
        "sim",
        e.to_str().unwrap(),
        "--policy",
        "fifo",
        "--mem",
        "128,40000",
        "--json",
    ]));
    let m =
        |i: usize| s[i]["minor_faults"].as_u64().unwrap() + s[i]["major_faults"].as_u64().unwrap();
    assert_eq!((m(0), m(1)), (100_831, 49_142));
    // The original binary file reads directly too.
    let s = json(&ok(&[
        "sim",
        bin.to_str().unwrap(),
        "--policy",
        "opt",
        "--mem",
        "5000",
        "--json",
    ]));
    assert_eq!(
        s[0]["minor_faults"].as_u64().unwrap() + s[0]["major_faults"].as_u64().unwrap(),
        71_311
    );
    // The peer's file streamed as it is (no import; its ids spilled in
    // a directory of the test's, not beside the shared file): the peer's
    // LRU misses, the same counts as `info`, the in-memory mrc, and OPT's
    // misses as loaded whole (above: 71,311).
    let b = bin.to_str().unwrap();
    let spill = d.path().to_str().unwrap();
    let stream: &[&str] = &["--stream", "--spill-dir", spill];
    assert_eq!(lru_misses(b, stream), ["94816", "79438"]);
    let v = json(&ok(&[&["info", b, "--json"][..], stream].concat()));
    assert_eq!(
        (v["references"].as_u64(), v["distinct_pages"].as_u64()),
        (Some(113_872), Some(48_974))
    );
    let mrc = |extra: &[&str]| {
        ok(&[
            &["mrc", b, "--points", "5", "--policy", "clock,arc", "--json"][..],
            extra,
        ]
        .concat())
    };
    assert_eq!(mrc(stream), mrc(&[]));
    let s = json(&ok(&[
        "sim",
        b,
        "--stream",
        "--policy",
        "opt",
        "--mem",
        "5000",
        "--json",
        "--spill-dir",
        d.path().to_str().unwrap(),
    ]));
    assert_eq!(
        s[0]["minor_faults"].as_u64().unwrap() + s[0]["major_faults"].as_u64().unwrap(),
        71_311
    );
    // MRC: SHARDS at 10 % stays close to the exact curve on this trace.
    let m = json(&ok(&["mrc", t, "--shards", "0.1", "--json"]));
    assert!(
        m["curves"][1]["mae"].as_f64().unwrap() < 0.05,
        "{}",
        m["curves"][1]
    );
}

#[test]
fn bad_input_gets_clear_errors() {
    let d = tempfile::tempdir().unwrap();
    let junk = d.path().join("junk.parquet");
    std::fs::write(&junk, b"PAR1 this is not really parquet").unwrap();
    let junk = junk.to_str().unwrap();
    fails(&["sim", "/nonexistent/t.parquet"], "no such file");
    fails(&["info", junk], "not a swaplab trace");
    let t = d.path().join("t.parquet");
    let t = t.to_str().unwrap();
    ok(&["gen", "seq:pages=10", "-n", "100", "-o", t]);
    fails(&["sim", t, "--policy", "lruu"], "unknown policy 'lruu'");
    fails(&["sim", t, "--policy", "clock:bits=99"], "bits=99");
    fails(&["sim", t, "--mem", "12Q"], "bad memory size '12Q'");
    fails(&["gen", "zipf", "-n", "10", "-o", t], "zipf needs pages=N");
    let csv = d.path().join("x.csv");
    std::fs::write(&csv, "a,b\n1,2\n").unwrap();
    fails(&["sim", csv.to_str().unwrap()], "--id-column");
    let txt = d.path().join("x.txt");
    std::fs::write(&txt, "1\n2\nzz\n").unwrap();
    fails(&["sim", txt.to_str().unwrap()], "line 3");
    fails(&["sim", txt.to_str().unwrap(), "--stream"], "line 3");
    // Streamed, each error names the file once, whether the trace crate's
    // message names it (a damaged native trace) or not (a parse error).
    for (path, args) in [
        (junk, ["sim", junk, "--stream"]),
        (
            txt.to_str().unwrap(),
            ["sim", txt.to_str().unwrap(), "--stream"],
        ),
    ] {
        let e = String::from_utf8_lossy(&swaplab(&args).stderr).into_owned();
        assert_eq!(e.matches(path).count(), 1, "{e}");
    }
    // The failed commands left the good trace intact.
    assert_eq!(json(&ok(&["info", t, "--json"]))["references"], 100);
}

/// Every subcommand at every depth, as clap's command tree has them (so a
/// new subcommand cannot be forgotten): `[["demo"], ["bench", "sim"], …]`.
fn subcommand_paths() -> Vec<Vec<String>> {
    use clap::CommandFactory;
    fn walk(c: &clap::Command, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        for s in c.get_subcommands() {
            path.push(s.get_name().to_string());
            out.push(path.clone());
            walk(s, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(&swaplab::Cli::command(), &mut Vec::new(), &mut out);
    out
}

#[test]
fn every_subcommand_has_help() {
    let paths = subcommand_paths();
    assert!(paths.len() >= 19 + 5, "{paths:?}");
    for p in &paths {
        let mut args: Vec<&str> = p.iter().map(String::as_str).collect();
        args.push("--help");
        let out = ok(&args);
        assert!(out.contains("Usage: swaplab"), "{p:?}: {out}");
        // A one-line description besides the usage and the options.
        let about = out.lines().next().unwrap_or("");
        assert!(
            !about.starts_with("Usage") && about.len() > 10,
            "{p:?} has no description: {out}"
        );
    }
}

/// The docs whose `swaplab ...` lines are tests: the README and the command
/// tour (paths from the checkout's root).
const DOCS: [&str; 2] = ["README.md", "docs/usage.md"];

fn read_doc(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The command tour says which commands print tables (and the README, if it
/// says so too); each has `--json` and `--csv`, and the two exclude each other.
#[test]
fn every_table_command_has_json_and_csv() {
    const SAYS: &str = "also have `--csv`";
    let mut statements = Vec::new();
    for name in DOCS {
        let text = read_doc(name);
        for (at, _) in text.match_indices(SAYS) {
            // The rest of that sentence: up to a full stop before a space or the end.
            let rest = &text[at + SAYS.len()..];
            let end = rest
                .find(". ")
                .into_iter()
                .chain(rest.find(".\n"))
                .min()
                .unwrap_or(rest.len());
            statements.push((name, rest[..end].to_string()));
        }
    }
    assert!(
        statements.iter().any(|(name, _)| *name == "docs/usage.md"),
        "docs/usage.md says which commands have --csv"
    );
    for (name, sentence) in &statements {
        let listed: Vec<&str> = sentence
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|w| !w.starts_with("--"))
            .collect();
        for cmd in [
            "info", "sim", "mrc", "runs", "show", "compare", "run", "sweep",
        ] {
            assert!(
                listed.contains(&cmd),
                "{name} does not list {cmd}: {sentence}"
            );
        }
    }
    for cmd in [
        "info", "sim", "mrc", "runs", "show", "compare", "run", "sweep",
    ] {
        let help = ok(&[cmd, "--help"]);
        assert!(
            help.contains("--json") && help.contains("--csv"),
            "{cmd}: {help}"
        );
    }
    // A usage error: clap's status 2 and its message.
    let o = swaplab(&["runs", "--json", "--csv"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot be used with"));
}

#[test]
fn a_closed_pipe_ends_output_quietly_with_status_0() {
    use std::process::Stdio;
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t.parquet");
    let t = t.to_str().unwrap();
    ok(&["gen", "seq:pages=10", "-n", "100", "-o", t]);
    // The reader is gone before the first write (as with `| head -1` once head has its line).
    for args in [
        vec!["sim", "--list-policies"],
        vec!["sim", t, "--policy", "lru", "--mem", "5"],
        vec!["info", t],
        vec!["workload", "list"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_swaplab"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn an_empty_trace_file_is_called_empty() {
    let d = tempfile::tempdir().unwrap();
    let e = d.path().join("e.parquet");
    std::fs::write(&e, b"").unwrap();
    fails(
        &["info", e.to_str().unwrap()],
        "the file is empty (0 bytes)",
    );
}

/// The `swaplab ...` example lines of a doc's ```sh blocks (one of
/// [`DOCS`]), continuation lines joined, comments dropped, `a; b` split.
fn doc_examples(name: &str) -> Vec<Vec<String>> {
    let text = read_doc(name);
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let code = line.split("  #").next().unwrap().trim_end();
        if let Some(c) = code.strip_suffix('\\') {
            pending.push_str(c);
            continue;
        }
        pending.push_str(code);
        let full = std::mem::take(&mut pending);
        for cmd in full.split("; ") {
            let cmd = cmd.trim();
            if cmd.starts_with("swaplab ") {
                out.push(shlex::split(cmd).unwrap_or_else(|| panic!("{name}: cannot split {cmd}")));
            }
        }
    }
    out
}

/// Every example of a doc runs or parses: at least `min_examples` of them,
/// `min_ran` run. Run here (in a temporary directory of its own per doc, with
/// the files they name made first, in the doc's order): the trace-file ones
/// (gen, import of the shared libCacheSim samples, export, info, sim, mrc,
/// report of saved files)
/// and the quick read-only ones (workload list, doctor, restore with an
/// empty state directory). Only parsed with clap's `try_parse_from`
/// (they need root and minutes, a run id or a program the reader has):
/// demo, bench, run, sweep, trace, analyze, advise, runs, show, compare,
/// and imports of files that are not here (lackey, perf script).
fn every_example_runs_or_parses(name: &str, min_examples: usize, min_ran: usize) {
    use clap::Parser;
    let examples = doc_examples(name);
    assert!(examples.len() >= min_examples, "{name}: {examples:?}");
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let state = dir.join("state");
    let home = dir.join("home");
    // The files the examples read.
    let data = shared("cloudPhysicsIO.oracleGeneral.bin.zst").zip(shared("cloudPhysicsIO.csv.zst"));
    if let Some((bin, csv)) = &data {
        std::fs::copy(bin, dir.join("trace.oracleGeneral.bin.zst")).unwrap();
        std::fs::copy(csv, dir.join("blocks.csv.zst")).unwrap();
    }
    let mut ran = 0;
    let mut parsed = 0;
    for ex in &examples {
        let args: Vec<&str> = ex[1..].iter().map(String::as_str).collect();
        if let Err(e) = swaplab::Cli::try_parse_from(ex) {
            panic!("{name} example does not parse: {}\n{e}", ex.join(" "));
        }
        let runnable = match args[0] {
            "gen" | "export" | "info" | "sim" | "mrc" | "doctor" | "restore" => true,
            // Reports of saved files run; of run or sweep ids only parse.
            "report" => args.iter().all(|a| {
                let id = a.strip_prefix('s').unwrap_or(a);
                id.parse::<u64>().is_err()
            }),
            "workload" => args.get(1) == Some(&"list"),
            "import" => data.is_some() && !args.contains(&"lackey") && !args.contains(&"perf"),
            _ => false,
        };
        if !runnable {
            parsed += 1;
            continue;
        }
        let o = Command::new(env!("CARGO_BIN_EXE_swaplab"))
            .args(&args)
            .current_dir(dir)
            .env("CI", "1")
            .env("SWAPLAB_STATE_DIR", &state)
            .env("SWAPLAB_HOME", &home)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{name} example failed: {}\n{}",
            ex.join(" "),
            String::from_utf8_lossy(&o.stderr)
        );
        ran += 1;
        // `info t.parquet` and later examples read t.parquet, which the imports
        // write; without the shared samples, the small generated mix stands in.
        if dir.join("mix.parquet").exists() && !dir.join("t.parquet").exists() {
            std::fs::copy(dir.join("mix.parquet"), dir.join("t.parquet")).unwrap();
        }
    }
    eprintln!("{name} examples: {ran} run, {parsed} parsed only");
    assert!(ran >= min_ran, "{name}: only {ran} examples ran");
}

/// The README's three scenarios: the simulation one runs whole, doctor and
/// workload list run, the root ones parse.
#[test]
fn every_readme_example_runs_or_parses() {
    every_example_runs_or_parses("README.md", 15, 7);
}

/// The command tour (docs/usage.md): every command line of it.
#[test]
fn every_usage_example_runs_or_parses() {
    every_example_runs_or_parses("docs/usage.md", 25, 8);
}

#[test]
fn sim_prefetch_and_range_hints() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("seq.parquet");
    let t = t.to_str().unwrap();
    // Pages 0..7 twice (seq wraps after 8 pages).
    ok(&["gen", "seq:pages=8", "-n", "16", "-o", t]);
    let v = json(&ok(&[
        "sim",
        t,
        "--policy",
        "lru",
        "--mem",
        "4",
        "--prefetch",
        "none,next:n=2,vma,leap",
        "--json",
    ]));
    let got: Vec<(String, u64, u64, u64, u64)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap();
            (
                r["prefetch"].as_str().unwrap().to_string(),
                n("major_faults"),
                n("prefetch_reads"),
                n("prefetch_used"),
                n("prefetch_unused"),
            )
        })
        .collect();
    // Worked by hand in crates/sim/src/prefetch/{next,vma,leap}.rs: the
    // second pass faults 8 times without readahead.
    let want = [
        ("none", 8, 0, 0, 0),
        ("next:n=2", 3, 5, 5, 0),
        ("vma", 4, 4, 4, 0),
        ("leap", 4, 4, 4, 0),
    ];
    assert_eq!(got, want.map(|(p, a, b, c, e)| (p.to_string(), a, b, c, e)));
    // accuracy = used / reads, coverage = used / (used + major).
    assert_eq!(v[1]["accuracy"], 1.0);
    assert_eq!(v[1]["coverage"], 5.0 / 8.0);
    // The table has the readahead columns.
    let table = ok(&[
        "sim",
        t,
        "--policy",
        "lru",
        "--mem",
        "4",
        "--prefetch",
        "cluster",
    ]);
    assert!(
        table.contains("pf_reads") && table.contains("cluster"),
        "{table}"
    );

    // A willneed range hint over pages 0..7 with a 2-page window reads like next:n=2;
    // an mlock hint pins page 0 (one of the 4 pages): 0 never faults again.
    let h = d.path().join("h.toml");
    std::fs::write(
        &h,
        "version = 1\nmlock_budget = 4096\n\n[[hint]]\nrange = [\"0x0\", \"0x8000\"]\n\
         action = \"willneed\"\nwindow = 8192\n",
    )
    .unwrap();
    let hs = h.to_str().unwrap();
    let v = json(&ok(&[
        "sim", t, "--policy", "lru", "--mem", "4", "--hints", hs, "--json",
    ]));
    assert_eq!(
        (
            v[0]["major_faults"].as_u64(),
            v[0]["prefetch_reads"].as_u64()
        ),
        (Some(3), Some(5))
    );
    std::fs::write(
        &h,
        "version = 1\nmlock_budget = 4096\n\n[[hint]]\nrange = [\"0x0\", \"0x1000\"]\n\
         action = \"mlock\"\nbytes = 0\n",
    )
    .unwrap();
    let v = json(&ok(&[
        "sim", t, "--policy", "lru", "--mem", "4", "--hints", hs, "--json",
    ]));
    // Pages 1..7 cycle through 3 frames: all 7 refault; 0 hits.
    assert_eq!(
        (v[0]["major_faults"].as_u64(), v[0]["hits"].as_u64()),
        (Some(7), Some(1))
    );

    // Errors.
    fails(
        &["sim", t, "--prefetch", "clustr"],
        "unknown prefetcher 'clustr'",
    );
    fails(&["sim", t, "--prefetch", "cluster:pc=99"], "pc=99");
    std::fs::write(
        &h,
        "version = 1\n\n[[hint]]\nsite = [\"w!f+0x1\"]\naction = \"cold\"\ndelay_ms = 1\n",
    )
    .unwrap();
    fails(
        &["sim", t, "--hints", hs],
        "this trace has no allocation sites; use range hints",
    );
    std::fs::write(
        &h,
        "version = 1\n\n[[hint]]\nrange = [\"0x0\", \"0x1000\"]\naction = \"pageout\"\ndelay_ms = 1\n",
    )
    .unwrap();
    fails(
        &["sim", t, "--policy", "arc", "--hints", hs],
        "pageout hints",
    );
    std::fs::write(
        &h,
        "version = 1\n\n[[hint]]\nrange = [\"0x10\"]\naction = \"cold\"\n",
    )
    .unwrap();
    fails(&["sim", t, "--hints", hs], "h.toml:4: range has 1 values");
    fails(
        &["sim", t, "--hints", "/nonexistent/h.toml"],
        "cannot read hint file",
    );
    let l = ok(&["sim", "--list-prefetchers"]);
    for n in ["none", "next", "cluster", "vma", "leap"] {
        assert!(l.contains(n), "{l}");
    }
}

#[test]
fn sim_with_devices_and_fault_paths() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("seq.parquet");
    let t = t.to_str().unwrap();
    // Pages 0..7 twice, reads only; LRU with 4 pages. First pass: 8 minor
    // faults, 0..3 evicted dirty (4 writes). Second pass: 8 majors; 0..3
    // each evict a dirty page (4..7: 4 more writes), 4..7 evict clean ones.
    ok(&["gen", "seq:pages=8", "-n", "16", "-o", t]);
    let v = json(&ok(&[
        "sim",
        t,
        "--policy",
        "lru",
        "--mem",
        "4",
        "--device",
        "remote:rtt_us=10:gbit=8,hybrid:ssd+hdd:run=2:batch=4",
        "--fault-path",
        "kernel,pfa",
        "--base-time",
        "1",
        "--json",
    ]));
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 4);
    let cost = |i: usize| &rows[i]["cost"];
    let us = |i: usize, k: &str| cost(i)[k].as_f64().unwrap() * 1e6;
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
    assert_eq!(cost(0)["device"], "remote:gbit=8:rtt_us=10");
    assert_eq!(cost(1)["fault_path"], "pfa");
    // remote: rtt 10 µs + 4.096 µs a page. 1 s over 16 references: no
    // queueing between faults. A major that evicts a dirty page issues the
    // write at t and the read after 2 µs of reclaim: done max(t + 16.096,
    // t + 14.096 + 4.096): wait 16.192; without a write, 14.096. Kernel
    // path: + trap 0.1 + kernel 1.1 + io 3 each.
    let major = 4.0 * (4.2 + 16.192) + 4.0 * (4.2 + 14.096);
    assert!(close(us(0, "major_time_s"), major), "{}", cost(0));
    assert!(close(us(0, "minor_time_s"), 8.0 * 0.5));
    assert!(close(us(0, "reclaim_time_s"), 8.0 * 2.0));
    let fault = major + 4.0 + 16.0;
    assert!(close(us(0, "fault_time_s"), fault));
    assert!(close(
        cost(0)["predicted_time_s"].as_f64().unwrap(),
        1.0 + fault / 1e6
    ));
    // pfa: the waits only, and one drain of the 8 fetched pages at the
    // end: trap 0.1 + 8 × 0.3.
    let pfa = 4.0 * 16.192 + 4.0 * 14.096 + 0.1 + 8.0 * 0.3;
    assert!(close(us(1, "major_time_s"), pfa), "{}", cost(1));
    let dev = &cost(0)["devices"][0];
    assert_eq!(dev["bytes_written"], 8 * 4096);
    assert_eq!(dev["reads"], 8);
    // The hybrid: every batch of 4 evicted pages is one run: all 8 writes
    // go to the disk, none to the SSD.
    let h = &cost(2)["hybrid"];
    assert_eq!(
        (h["fast_writes"].as_u64(), h["disk_writes"].as_u64()),
        (Some(0), Some(8))
    );
    assert_eq!(h["fast_writes_saved"], 1.0);
    assert_eq!(cost(2)["devices"][0]["bytes_written"], 0);
    assert_eq!(cost(2)["devices"][1]["bytes_written"], 8 * 4096);
    // The table: device columns, the speedup against the first row.
    let table = ok(&[
        "sim",
        t,
        "--policy",
        "lru",
        "--mem",
        "4",
        "--device",
        "ssd,hdd",
        "--base-time",
        "1",
    ]);
    for col in [
        "device",
        "fault_s",
        "MB_written",
        "predicted_s",
        "speedup",
        "1.000",
    ] {
        assert!(table.contains(col), "{col} missing: {table}");
    }
    // The report draws the time of each device against memory size.
    let html = d.path().join("r.html");
    ok(&[
        "sim",
        t,
        "--policy",
        "lru",
        "--mem",
        "2,4",
        "--device",
        "ssd,hdd",
        "--report",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Time in faults against memory size"));
    assert!(page.contains("lru + none on hdd (kernel)"));
    // `compare A.json B.json` pairs results by policy, device and fault
    // path: B lists the devices in the other order and has a longer base.
    let (sa, sb) = (d.path().join("a.json"), d.path().join("b.json"));
    for (path, devices, base) in [(&sa, "ssd,hdd", "1"), (&sb, "hdd,ssd", "2")] {
        ok(&[
            "sim",
            t,
            "--policy",
            "lru",
            "--mem",
            "4",
            "--device",
            devices,
            "--base-time",
            base,
            "--save",
            path.to_str().unwrap(),
        ]);
    }
    let pairs = json(&ok(&[
        "compare",
        sa.to_str().unwrap(),
        sb.to_str().unwrap(),
        "--json",
    ]));
    let pairs = pairs.as_array().unwrap();
    assert_eq!(pairs.len(), 2, "{pairs:?}");
    for p in pairs {
        let (ta, tb) = (
            p["predicted_time_s_a"].as_f64().unwrap(),
            p["predicted_time_s_b"].as_f64().unwrap(),
        );
        // Same device, same faults: B's prediction is A's plus one second.
        assert!((tb - ta - 1.0).abs() < 1e-9, "{p}");
        assert_eq!(p["ratio"], 1.0, "{p}");
    }
    let list = ok(&["sim", "--list-devices"]);
    for name in ["ssd", "hdd", "zram", "remote", "hybrid", "file", "pfa"] {
        assert!(list.contains(name), "{name} missing: {list}");
    }
    // Bad input: clear errors.
    fails(&["sim", t, "--device", "sdd"], "unknown device 'sdd'");
    fails(&["sim", t, "--base-time", "3"], "add --device");
    fails(
        &["sim", t, "--device", "ssd", "--fault-path", "fast"],
        "unknown fault path",
    );
    let bad = d.path().join("bad.toml");
    std::fs::write(&bad, "kind = \"file\"\n").unwrap();
    fails(
        &["sim", t, "--device", bad.to_str().unwrap()],
        "missing field",
    );
    // A profile from the contract's example is a device.
    let good = d.path().join("p.toml");
    std::fs::write(
        &good,
        "kind = \"file\"\nname = \"file:/swapfile\"\nkernel = \"6.18.0\"\n\
         measured = \"2026-11-25T20:00:00Z\"\nread_seq_us = 9.5\nread_rand_us = 110.0\n\
         read_rand_p99_us = 900.0\nwrite_us = 6.0\nread_mb_s = 400.0\nfault_path_us = 1.2\n\
         minor_fault_us = 0.4\ncompress_ratio = 1.0\n",
    )
    .unwrap();
    let v = json(&ok(&[
        "sim",
        t,
        "--policy",
        "lru",
        "--mem",
        "4",
        "--device",
        good.to_str().unwrap(),
        "--json",
    ]));
    // Minor faults cost the profile's 0.4 µs, swap-outs its 6 µs.
    let c = &v[0]["cost"];
    assert!(close(c["minor_time_s"].as_f64().unwrap() * 1e6, 8.0 * 0.4));
    assert!(close(
        c["reclaim_time_s"].as_f64().unwrap() * 1e6,
        8.0 * 6.0
    ));
}
