//! Real programs with generated inputs, beside the built-in C workloads:
//! `swaplab-workload sqlite|sort|xz|pydict --size S [--seed N]` runs
//! SQLite, GNU sort, xz or a Python dict program on an input generated
//! from the seed, checks the output and prints one JSON line, as the C
//! workloads do (docs/programs.md).
//!
//! How a run goes. [`resolve`] (called by [`crate::workload::resolve_command`]
//! before the run, outside the run's cgroup) installs what the program
//! needs (apt-get, as root) and generates its input into the workload
//! cache directory, once per (program, size, seed); it returns the argv
//! `swaplab workload run NAME --size S --seed N`. In the run, that
//! command ([`main`], the driver) starts the real program on the cached
//! input, reads its output through a pipe, checks it against what the
//! generator recorded (`expect.json`) and prints the JSON line. The
//! driver stays in the run's cgroup (a few MB), and the check is part of
//! the run's time; the JSON line gives the program's own time
//! (`work_ns`) and the check's (`check_ns`) apart.
//!
//! `--size` is the program's working memory, roughly (its measured peak
//! is within about ±30 % of it, docs/programs.md): the input and the
//! program's parameters (sort's `-S`, xz's dictionary) are derived from
//! it.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Bumped whenever a generator's output changes, so cached inputs of an
/// older generator are not used.
pub const GENERATOR_VERSION: u32 = 2;
/// The default seed (as the C workloads').
pub const DEFAULT_SEED: u64 = 1;
/// Environment variable naming the swaplab executable that drives the
/// programs (default: this process's executable when it is `swaplab`,
/// else `swaplab` on PATH).
pub const EXE_ENV: &str = "SWAPLAB_EXE";

/// The Python program of `pydict`.
pub static PYDICT_SCRIPT: &str = include_str!("pydict.py");

/// A real program.
#[derive(Debug, Clone, Copy)]
pub struct Program {
    /// Its name in `swaplab-workload NAME`.
    pub name: &'static str,
    /// The unit of its work metric.
    pub work_unit: &'static str,
    /// What it does.
    pub description: &'static str,
    /// The smallest --size.
    pub min_size: u64,
    /// (executable, Debian package) it needs.
    pub needs: &'static [(&'static str, &'static str)],
}

/// The real programs.
pub const PROGRAMS: &[Program] = &[
    Program {
        name: "sqlite",
        work_unit: "rows",
        description:
            "sqlite3 CLI, in-memory database: imports generated rows (CSV), indexes them, \
                      probes the index, updates, groups and sorts; checks every query's answer",
        min_size: 1 << 20,
        needs: &[("sqlite3", "sqlite3")],
    },
    Program {
        name: "sort",
        work_unit: "lines",
        description: "GNU sort (LC_ALL=C, -S large enough to sort in memory, --parallel=1) of a \
                      generated text file; checks order, line count and a hash of the lines",
        min_size: 1 << 20,
        needs: &[("sort", "coreutils")],
    },
    Program {
        name: "xz",
        work_unit: "bytes",
        description: "xz -9 (dictionary size/11, one thread) of a generated semi-compressible \
                      text; checks the round trip (xz -d) by length and hash",
        min_size: 1 << 20,
        needs: &[("xz", "xz-utils")],
    },
    Program {
        name: "pydict",
        work_unit: "entries",
        description: "Python: builds a dict and a list of its keys from a generated file, probes \
                      it (half the keys absent), updates every value in a strided order; checks \
                      counts and sums",
        min_size: 1 << 20,
        needs: &[("python3", "python3")],
    },
];

/// The program called `name`, if it is one.
pub fn find(name: &str) -> Option<&'static Program> {
    PROGRAMS.iter().find(|p| p.name == name)
}

/// What the generator knows the program must output, and the parameters
/// it derived from the size (`expect.json` in the input directory).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expect {
    /// The program.
    pub program: String,
    /// --size.
    pub size: u64,
    /// --seed.
    pub seed: u64,
    /// Generator version.
    pub version: u32,
    /// Bytes of the main input file.
    pub input_bytes: u64,
    /// Units of work (rows, lines, bytes, entries).
    pub work: u64,
    /// sort: the sum of the lines' hashes; xz: the input's stream hash.
    pub hash: u64,
    /// sqlite, pydict: the exact output.
    pub text: String,
    /// sort: the -S buffer in bytes; xz: the dictionary in bytes; pydict:
    /// the stride.
    pub param: u64,
}

// ---- deterministic generation ----

/// splitmix64: the generator of every input.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` and a stream name (inputs of one program
    /// draw from separate streams).
    pub fn new(seed: u64, stream: &str) -> Rng {
        Rng(seed ^ fnv1a(0xcbf2_9ce4_8422_2325, stream.as_bytes()))
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
    /// Uniform in 0..n (n > 0; the bias of a 64-bit modulo is negligible).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// splitmix64's finalizer: a bijection on u64.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// A hash of one line (without its newline).
pub fn line_hash(line: &[u8]) -> u64 {
    mix(fnv1a(0xcbf2_9ce4_8422_2325, line))
}

/// A byte stream's hash (FNV-1a, independent of how the stream is cut).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamHash {
    /// The running hash.
    pub hash: u64,
    /// Bytes seen.
    pub bytes: u64,
}

impl Default for StreamHash {
    fn default() -> Self {
        StreamHash {
            hash: 0xcbf2_9ce4_8422_2325,
            bytes: 0,
        }
    }
}

impl StreamHash {
    /// Adds bytes.
    pub fn update(&mut self, b: &[u8]) {
        self.hash = fnv1a(self.hash, b);
        self.bytes += b.len() as u64;
    }
}

const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyz";

fn letters(rng: &mut Rng, out: &mut Vec<u8>, n: usize) {
    for _ in 0..n {
        out.push(LETTERS[rng.below(26) as usize]);
    }
}

/// A file written through a hashing buffer.
struct Out {
    w: BufWriter<std::fs::File>,
    path: PathBuf,
    hash: StreamHash,
}

impl Out {
    fn create(path: &Path) -> Result<Out> {
        let f = std::fs::File::create(path).map_err(|e| Error::io("creating", path, e))?;
        Ok(Out {
            w: BufWriter::with_capacity(1 << 20, f),
            path: path.to_path_buf(),
            hash: StreamHash::default(),
        })
    }
    fn put(&mut self, b: &[u8]) -> Result<()> {
        self.hash.update(b);
        self.w
            .write_all(b)
            .map_err(|e| Error::io("writing", &self.path, e))
    }
    fn finish(mut self) -> Result<StreamHash> {
        self.w
            .flush()
            .map_err(|e| Error::io("writing", &self.path, e))?;
        Ok(self.hash)
    }
}

/// Writes the input of `program` at `size` and `seed` into `dir` (which
/// exists and is empty) and returns what the program must output.
pub fn generate(program: &str, size: u64, seed: u64, dir: &Path) -> Result<Expect> {
    let mut e = Expect {
        program: program.to_string(),
        size,
        seed,
        version: GENERATOR_VERSION,
        input_bytes: 0,
        work: 0,
        hash: 0,
        text: String::new(),
        param: 0,
    };
    match program {
        "sort" => gen_sort(size, seed, dir, &mut e)?,
        "xz" => gen_xz(size, seed, dir, &mut e)?,
        "sqlite" => gen_sqlite(size, seed, dir, &mut e)?,
        "pydict" => gen_pydict(size, seed, dir, &mut e)?,
        other => return Err(Error::Invalid(format!("{other}: not a real program"))),
    }
    Ok(e)
}

/// sort: lines of a 16-hex-digit key, a space and 8..88 letters (about 65
/// bytes); input = size / 1.6 (sort holds the input and 32 bytes per
/// line).
fn gen_sort(size: u64, seed: u64, dir: &Path, e: &mut Expect) -> Result<()> {
    let target = size * 10 / 16;
    let mut rng = Rng::new(seed, "sort");
    let mut out = Out::create(&dir.join("input.txt"))?;
    let mut line = Vec::with_capacity(128);
    let (mut lines, mut sum) = (0u64, 0u64);
    while out.hash.bytes < target {
        line.clear();
        write!(line, "{:016x} ", rng.next_u64()).expect("a Vec");
        let n = 8 + rng.below(81) as usize;
        letters(&mut rng, &mut line, n);
        sum = sum.wrapping_add(line_hash(&line));
        line.push(b'\n');
        out.put(&line)?;
        lines += 1;
    }
    let h = out.finish()?;
    e.input_bytes = h.bytes;
    e.work = lines;
    e.hash = sum;
    // the input, 32 bytes per line and slack: enough to sort in memory
    e.param = h.bytes * 2 + lines * 32 + (8 << 20);
    Ok(())
}

/// xz: text of words from a generated vocabulary (a skewed choice), with
/// numbers now and then; the dictionary is size/11 (xz's bt4 match finder
/// takes about 10.5 times it), the input as large as the dictionary
/// (xz -9 is slow: about 1 MB/s here).
fn gen_xz(size: u64, seed: u64, dir: &Path, e: &mut Expect) -> Result<()> {
    let dict = (size / 11).max(256 << 10) & !0xfff;
    let target = dict;
    let mut rng = Rng::new(seed, "xz");
    let vocab: Vec<Vec<u8>> = (0..8192)
        .map(|_| {
            let mut w = Vec::new();
            let n = 2 + rng.below(9) as usize;
            letters(&mut rng, &mut w, n);
            w
        })
        .collect();
    let mut out = Out::create(&dir.join("input.txt"))?;
    let mut buf = Vec::with_capacity(1 << 16);
    while out.hash.bytes < target {
        buf.clear();
        for w in 0..(4 + rng.below(12)) {
            if w > 0 {
                buf.push(b' ');
            }
            if rng.below(8) == 0 {
                write!(buf, "{}", rng.below(1_000_000)).expect("a Vec");
            } else {
                // product of two uniforms: small indices are common
                let i = (rng.below(8192) * rng.below(8192)) >> 13;
                buf.extend_from_slice(&vocab[i as usize]);
            }
        }
        buf.push(b'\n');
        out.put(&buf)?;
    }
    let h = out.finish()?;
    e.input_bytes = h.bytes;
    e.work = h.bytes;
    e.hash = h.hash;
    e.param = dict;
    Ok(())
}

/// A row's key: a bijection of its id, so keys are distinct and keys of
/// ids past the last row are absent.
fn row_key(seed: u64, id: u64) -> i64 {
    mix(id ^ mix(seed)) as i64
}

/// sqlite: rows (id, k, v, s) as CSV, about 140 bytes of database,
/// index and sorter per row; probes: as many keys as rows, half of them present.
fn gen_sqlite(size: u64, seed: u64, dir: &Path, e: &mut Expect) -> Result<()> {
    let n = (size / 140).max(1000);
    let mut rng = Rng::new(seed, "sqlite");
    let mut rows = Out::create(&dir.join("rows.csv"))?;
    let mut vs = Vec::with_capacity(n as usize);
    let mut strs: Vec<(Vec<u8>, u64)> = Vec::with_capacity(n as usize);
    let (mut sum_v, mut sum_len) = (0i64, 0i64);
    let mut line = Vec::with_capacity(128);
    for id in 1..=n {
        let k = row_key(seed, id);
        let v = rng.below(1_000_000) as i64;
        let mut s = Vec::with_capacity(40);
        let len = 8 + rng.below(33) as usize;
        letters(&mut rng, &mut s, len);
        line.clear();
        write!(line, "{id},{k},{v},").expect("a Vec");
        line.extend_from_slice(&s);
        line.push(b'\n');
        rows.put(&line)?;
        sum_v += v;
        sum_len += len as i64;
        vs.push(v);
        strs.push((s, id));
    }
    let h = rows.finish()?;
    let present = put_probes(&mut rng, n, &dir.join("probes.csv"), |id| {
        row_key(seed, id).to_string()
    })?;
    let hits = present.len();
    let hit_v: i64 = present.iter().map(|&id| vs[id as usize - 1]).sum();
    // after UPDATE t SET v = v + 1 WHERE id % 3 = 0
    let mut groups = std::collections::BTreeMap::<i64, (i64, i64)>::new();
    for id in 1..=n {
        let v = vs[id as usize - 1] + i64::from(id % 3 == 0);
        let g = groups.entry(row_key(seed, id) % 8).or_default();
        g.0 += 1;
        g.1 += v;
    }
    strs.sort_unstable();
    let median = String::from_utf8(strs[(n / 2) as usize].0.clone()).expect("letters");
    let mut text = format!("{n}|{sum_v}|{sum_len}\n{hits}|{hit_v}\n");
    for (g, (c, s)) in &groups {
        text.push_str(&format!("{g}|{c}|{s}\n"));
    }
    text.push_str(&median);
    text.push('\n');
    let d = |f: &str| dir.join(f).display().to_string();
    let script = format!(
        "PRAGMA temp_store = MEMORY;\n\
         CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER NOT NULL, v INTEGER NOT NULL, s TEXT NOT NULL);\n\
         CREATE TABLE p(k INTEGER NOT NULL);\n\
         .import --csv {rows} t\n\
         .import --csv {probes} p\n\
         CREATE INDEX t_k ON t(k);\n\
         .mode list\n\
         SELECT count(*), sum(v), sum(length(s)) FROM t;\n\
         SELECT count(*), sum(t.v) FROM p JOIN t ON t.k = p.k;\n\
         UPDATE t SET v = v + 1 WHERE id % 3 = 0;\n\
         SELECT k % 8, count(*), sum(v) FROM t GROUP BY k % 8 ORDER BY 1;\n\
         SELECT s FROM t ORDER BY s, id LIMIT 1 OFFSET {off};\n",
        rows = sql_path(&d("rows.csv")),
        probes = sql_path(&d("probes.csv")),
        off = n / 2
    );
    std::fs::write(dir.join("script.sql"), script)
        .map_err(|e| Error::io("writing", &dir.join("script.sql"), e))?;
    e.input_bytes = h.bytes;
    e.work = n;
    e.text = text;
    Ok(())
}

/// `n` probes into `path`, a key a line: a random one of the `n` entries'
/// ids, or half the time an absent one (`n` + that id). The ids present.
fn put_probes(rng: &mut Rng, n: u64, path: &Path, key: impl Fn(u64) -> String) -> Result<Vec<u64>> {
    let mut probes = Out::create(path)?;
    let mut present = Vec::new();
    for _ in 0..n {
        let id = 1 + rng.below(n);
        let hit = rng.below(2) == 0;
        if hit {
            present.push(id);
        }
        probes.put(format!("{}\n", key(if hit { id } else { n + id })).as_bytes())?;
    }
    probes.finish()?;
    Ok(present)
}

/// A path as a dot-command argument of the sqlite3 shell (quoted).
fn sql_path(p: &str) -> String {
    format!("\"{}\"", p.replace('\\', "\\\\").replace('"', "\\\""))
}

/// pydict: `k<16 hex> <value>` lines, about 190 bytes of Python objects
/// per entry; probes: as many keys, half present; the stride of the
/// update walk is coprime with the entry count.
fn gen_pydict(size: u64, seed: u64, dir: &Path, e: &mut Expect) -> Result<()> {
    let n = (size / 190).max(1000);
    let mut rng = Rng::new(seed, "pydict");
    let key = |id: u64| format!("k{:016x}", row_key(seed, id) as u64);
    let mut rows = Out::create(&dir.join("rows.txt"))?;
    let mut vs = Vec::with_capacity(n as usize);
    let mut total_v = 0u64;
    for id in 1..=n {
        let v = rng.below(1 << 30);
        rows.put(format!("{} {v}\n", key(id)).as_bytes())?;
        vs.push(v);
        total_v += v;
    }
    let h = rows.finish()?;
    let present = put_probes(&mut rng, n, &dir.join("probes.txt"), key)?;
    let hits = present.len();
    let hit_v: u64 = present.iter().map(|&id| vs[id as usize - 1]).sum();
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let mut step = (n * 618 / 1000) | 1;
    while gcd(step, n) != 1 {
        step += 2;
    }
    e.input_bytes = h.bytes;
    e.work = n;
    e.param = step;
    e.text = format!("{n} {hits} {hit_v} {}\n", total_v + n);
    Ok(())
}

// ---- checks ----

/// What a check saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checked {
    /// Lines or bytes read.
    pub count: u64,
    /// Bytes read.
    pub bytes: u64,
    /// The hash compared.
    pub hash: u64,
}

fn bad(program: &str, why: String) -> Error {
    Error::failed(
        format!("{program}: checking the output"),
        why,
        "the program's output is wrong: report it with the program's version (docs/programs.md)",
    )
}

/// sort's output: every line at least the one before it (bytes, as
/// LC_ALL=C sorts), as many lines as the input, and the same lines (the
/// sum of their hashes).
pub fn check_sorted(out: impl Read, e: &Expect) -> Result<Checked> {
    let mut r = BufReader::with_capacity(1 << 20, out);
    let (mut prev, mut line) = (Vec::with_capacity(128), Vec::with_capacity(128));
    let mut c = Checked::default();
    let mut sum = 0u64;
    loop {
        line.clear();
        let n = r
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io("reading", Path::new("sort's output"), e))?;
        if n == 0 {
            break;
        }
        c.bytes += n as u64;
        if line.last() != Some(&b'\n') {
            return Err(bad("sort", "the last line has no newline".into()));
        }
        line.pop();
        if c.count > 0 && line < prev {
            return Err(bad(
                "sort",
                format!("line {} sorts before the line above it", c.count + 1),
            ));
        }
        sum = sum.wrapping_add(line_hash(&line));
        c.count += 1;
        std::mem::swap(&mut prev, &mut line);
    }
    c.hash = sum;
    if c.count != e.work {
        return Err(bad(
            "sort",
            format!("{} lines, the input has {}", c.count, e.work),
        ));
    }
    if c.bytes != e.input_bytes {
        return Err(bad(
            "sort",
            format!("{} bytes, the input has {}", c.bytes, e.input_bytes),
        ));
    }
    if sum != e.hash {
        return Err(bad(
            "sort",
            format!(
                "the lines are not the input's (hash sum {sum:#018x}, expected {:#018x})",
                e.hash
            ),
        ));
    }
    Ok(c)
}

/// xz's round trip: the decompressed stream is the input (length and hash).
pub fn check_stream(out: impl Read, e: &Expect) -> Result<Checked> {
    let mut r = out;
    let mut h = StreamHash::default();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = r
            .read(&mut buf)
            .map_err(|e| Error::io("reading", Path::new("xz -d's output"), e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    if h.bytes != e.input_bytes || h.hash != e.hash {
        return Err(bad(
            &e.program,
            format!(
                "the round trip gave {} bytes with hash {:#018x}; the input has {} bytes with hash {:#018x}",
                h.bytes, h.hash, e.input_bytes, e.hash
            ),
        ));
    }
    Ok(Checked {
        count: h.bytes,
        bytes: h.bytes,
        hash: h.hash,
    })
}

/// sqlite's and pydict's answers: exactly the generator's.
pub fn check_text(out: &str, e: &Expect) -> Result<Checked> {
    if out != e.text {
        let first = out
            .lines()
            .zip(e.text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| out.lines().count().min(e.text.lines().count()));
        return Err(bad(
            &e.program,
            format!(
                "answer line {} is {:?}, expected {:?}",
                first + 1,
                out.lines().nth(first).unwrap_or("(none)"),
                e.text.lines().nth(first).unwrap_or("(none)")
            ),
        ));
    }
    Ok(Checked {
        count: e.work,
        bytes: out.len() as u64,
        hash: line_hash(out.as_bytes()),
    })
}

// ---- the cache of inputs ----

/// The input directory of (program, size, seed) under `cache`.
pub fn input_dir(cache: &Path, program: &str, size: u64, seed: u64) -> PathBuf {
    cache
        .join("programs")
        .join(format!("{program}-{size}-s{seed}-v{GENERATOR_VERSION}"))
}

fn read_expect(dir: &Path) -> Option<Expect> {
    let s = std::fs::read(dir.join("expect.json")).ok()?;
    serde_json::from_slice(&s).ok()
}

/// The input of (program, size, seed) under `cache`, generated if it is
/// not there yet (into a temporary directory, renamed into place when
/// complete, so a killed generation leaves nothing that is used).
pub fn prepare_in(cache: &Path, program: &str, size: u64, seed: u64) -> Result<(PathBuf, Expect)> {
    let dir = input_dir(cache, program, size, seed);
    if let Some(e) = read_expect(&dir) {
        return Ok((dir, e));
    }
    let parent = dir.parent().expect("under programs/");
    crate::workload::ensure_private_dir(parent)?;
    let tmp = parent.join(format!(
        ".{}.{}.tmp",
        dir.file_name().expect("a name").to_string_lossy(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp).map_err(|e| Error::io("creating", &tmp, e))?;
    let r = generate(program, size, seed, &tmp).and_then(|e| {
        let j = serde_json::to_vec_pretty(&e).expect("serializable");
        std::fs::write(tmp.join("expect.json"), j)
            .map_err(|err| Error::io("writing", &tmp.join("expect.json"), err))?;
        Ok(e)
    });
    if let Err(err) = r {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(err);
    }
    // sqlite's script names the files by their final place
    if program == "sqlite" {
        let s = tmp.join("script.sql");
        let text = std::fs::read_to_string(&s).map_err(|err| Error::io("reading", &s, err))?;
        let text = text.replace(&tmp.display().to_string(), &dir.display().to_string());
        std::fs::write(&s, text).map_err(|err| Error::io("writing", &s, err))?;
    }
    if std::fs::rename(&tmp, &dir).is_err() {
        // another process made it first
        let _ = std::fs::remove_dir_all(&tmp);
    }
    let e = read_expect(&dir).ok_or_else(|| {
        Error::failed(
            format!("generating the input of {program}"),
            format!("{} has no readable expect.json", dir.display()),
            format!("remove {} and try again", dir.display()),
        )
    })?;
    Ok((dir, e))
}

/// [`prepare_in`] in the workload cache directory.
pub fn prepare(program: &str, size: u64, seed: u64) -> Result<(PathBuf, Expect)> {
    prepare_in(&crate::workload::cache_dir()?, program, size, seed)
}

// ---- what the programs need ----

fn on_path(exe: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            std::fs::metadata(d.join(exe)).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
        })
    })
}

/// The executables `p` needs that are not on PATH, with their packages.
pub fn missing(p: &Program) -> Vec<(&'static str, &'static str)> {
    p.needs
        .iter()
        .copied()
        .filter(|(exe, _)| !on_path(exe))
        .collect()
}

fn install_hint(p: &Program, miss: &[(&str, &str)]) -> Error {
    let pkgs: Vec<&str> = miss.iter().map(|m| m.1).collect();
    let exes: Vec<&str> = miss.iter().map(|m| m.0).collect();
    Error::failed(
        format!("{} needs {}", p.name, exes.join(", ")),
        "not found on PATH".to_string(),
        format!(
            "install it: apt-get install {} (Debian, Ubuntu; as root swaplab does it itself), or your distribution's package of {}",
            pkgs.join(" "),
            exes.join(", ")
        ),
    )
}

/// Installs what `p` needs with apt-get when root and missing (saying so
/// on stderr); else an error that says what to install.
pub fn ensure_installed(p: &Program) -> Result<()> {
    let miss = missing(p);
    if miss.is_empty() {
        return Ok(());
    }
    if !swaplab_host::util::is_root() || !on_path("apt-get") {
        return Err(install_hint(p, &miss));
    }
    let pkgs: Vec<&str> = miss.iter().map(|m| m.1).collect();
    eprintln!(
        "swaplab: {} needs {}: installing {} with apt-get",
        p.name,
        miss.iter().map(|m| m.0).collect::<Vec<_>>().join(", "),
        pkgs.join(" ")
    );
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    install.extend(&pkgs);
    if !apt(&install) {
        apt(&["update"]);
        apt(&install);
    }
    let still = missing(p);
    if still.is_empty() {
        Ok(())
    } else {
        Err(install_hint(p, &still))
    }
}

// ---- resolving and running ----

/// Arguments of `swaplab-workload NAME ...` for a program.
#[derive(Debug, Clone)]
pub struct ProgramArgs {
    /// The program.
    pub program: &'static Program,
    /// --size as given.
    pub size_text: String,
    /// --size in bytes.
    pub size: u64,
    /// --seed.
    pub seed: u64,
}

/// Parses `NAME --size S [--seed N]` (`args[0]` is the name).
pub fn parse_args(args: &[String]) -> Result<ProgramArgs> {
    let name = args.first().map(String::as_str).unwrap_or("");
    let program =
        find(name).ok_or_else(|| Error::Invalid(format!("{name:?}: not a real program")))?;
    let usage = || {
        Error::Invalid(format!(
            "swaplab-workload {name}: takes --size SIZE and optionally --seed N, got {:?}",
            &args[1..]
        ))
    };
    let (mut size, mut seed) = (None, DEFAULT_SEED);
    let mut i = 1;
    while i < args.len() {
        let (flag, inline) = match args[i].split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (args[i].as_str(), None),
        };
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i).cloned().ok_or_else(usage)?
            }
        };
        match flag {
            "--size" => size = Some(value),
            "--seed" => {
                seed = value
                    .parse()
                    .map_err(|_| Error::Invalid(format!("--seed {value}: not a number")))?
            }
            _ => return Err(usage()),
        }
        i += 1;
    }
    let size_text = size.ok_or_else(usage)?;
    let bytes = swaplab_host::util::parse_size(&size_text)?;
    if bytes < program.min_size {
        return Err(Error::Invalid(format!(
            "swaplab-workload {name} --size {size_text}: at least {} (its smallest input)",
            swaplab_host::util::format_size(program.min_size)
        )));
    }
    Ok(ProgramArgs {
        program,
        size_text,
        size: bytes,
        seed,
    })
}

/// The swaplab executable that drives the programs.
pub fn swaplab_exe() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(EXE_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    if let Ok(me) = std::env::current_exe() {
        // A binary replaced while it runs (a rebuild, an upgrade) reads
        // "swaplab (deleted)" in /proc/self/exe: the new one at the same
        // path drives the programs.
        let name = me.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let me = match name.strip_suffix(" (deleted)") {
            Some(n) => me.with_file_name(n),
            None => me,
        };
        if me.file_name().is_some_and(|n| n == "swaplab") && me.is_file() {
            return Ok(me);
        }
    }
    if let Some(p) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("swaplab"))
            .find(|f| f.is_file())
    }) {
        return Ok(p);
    }
    Err(Error::failed(
        "running a real program",
        "the programs are driven by the swaplab executable, which is neither this process nor on PATH",
        format!("set {EXE_ENV} to the swaplab binary"),
    ))
}

/// `swaplab-workload NAME ...` for a real program, before the run: what
/// it needs installed, its input generated; the argv that runs it
/// (`swaplab workload run NAME --size S --seed N`).
pub fn resolve(args: &[String]) -> Result<Vec<String>> {
    let a = parse_args(args)?;
    ensure_installed(a.program)?;
    prepare(a.program.name, a.size, a.seed)?;
    Ok(vec![
        swaplab_exe()?.to_string_lossy().into_owned(),
        "workload".into(),
        "run".into(),
        a.program.name.into(),
        "--size".into(),
        a.size_text,
        "--seed".into(),
        a.seed.to_string(),
    ])
}

/// The program itself on its prepared input, without the driver and its
/// check, for tools that must start the program directly (valgrind
/// lackey in `swaplab validate`): sort writes to /dev/null, xz next to
/// its input (`input.txt.validate.xz`, overwritten), sqlite's answers go
/// to /dev/null, pydict prints its one line. sort runs in the caller's
/// locale (no `env LC_ALL=C`: lackey would trace `env`).
pub fn direct_command(args: &[String]) -> Result<Vec<String>> {
    let a = parse_args(args)?;
    ensure_installed(a.program)?;
    let (dir, e) = prepare(a.program.name, a.size, a.seed)?;
    let path = |f: &str| dir.join(f).to_string_lossy().into_owned();
    let v: Vec<String> = match a.program.name {
        "sort" => vec![
            "sort".into(),
            "-S".into(),
            format!("{}K", e.param.div_ceil(1024)),
            "--parallel=1".into(),
            "-o".into(),
            "/dev/null".into(),
            path("input.txt"),
        ],
        "xz" => vec![
            "xz".into(),
            "-z".into(),
            "-k".into(),
            "-f".into(),
            "-T1".into(),
            format!("--lzma2=preset=9,dict={}", e.param),
            "--suffix=.validate.xz".into(),
            path("input.txt"),
        ],
        "sqlite" => vec![
            "sqlite3".into(),
            "-batch".into(),
            "-bail".into(),
            "-cmd".into(),
            ".output /dev/null".into(),
            ":memory:".into(),
            format!(".read {}", sql_path(&path("script.sql"))),
        ],
        _ => {
            let cache = crate::workload::cache_dir()?.join("programs");
            let script = crate::workload::extract_file(
                &cache,
                &format!(
                    "swaplab-pydict-{:016x}.py",
                    line_hash(PYDICT_SCRIPT.as_bytes())
                ),
                PYDICT_SCRIPT.as_bytes(),
                0o644,
            )?;
            vec![
                "python3".into(),
                script.to_string_lossy().into_owned(),
                path("rows.txt"),
                path("probes.txt"),
                e.param.to_string(),
            ]
        }
    };
    Ok(v)
}

/// What one run of a program did (its JSON line).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProgramResult {
    /// The program.
    pub workload: String,
    /// "program" (the C workloads have none).
    pub kind: String,
    /// --size.
    pub size: u64,
    /// --seed.
    pub seed: u64,
    /// Units of work.
    pub work: u64,
    /// Their unit.
    pub work_unit: String,
    /// The checked output's hash.
    pub checksum: String,
    /// "ok", or what was wrong.
    pub check: String,
    /// Driver start to end.
    pub elapsed_ns: u64,
    /// Finding the input (cached) and starting.
    pub setup_ns: u64,
    /// The program's own run.
    pub work_ns: u64,
    /// The check after it (xz: the decompression).
    pub check_ns: u64,
    /// Bytes of the main input.
    pub input_bytes: u64,
    /// The program's parameter (sort: -S bytes, xz: dictionary bytes,
    /// pydict: stride).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub param: Option<u64>,
    /// xz: compressed bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
    /// The command that ran.
    pub command: String,
}

fn ns(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}

fn wait_ok(child: &mut std::process::Child, what: &str) -> Result<()> {
    let st = child
        .wait()
        .map_err(|e| Error::io("waiting for", Path::new(what), e))?;
    if st.success() {
        Ok(())
    } else {
        Err(Error::failed(
            what.to_string(),
            format!("exited with {st}"),
            "its messages are above (stderr)",
        ))
    }
}

fn spawn(cmd: &mut Command, what: &str) -> Result<std::process::Child> {
    cmd.spawn()
        .map_err(|e| Error::io("starting", Path::new(what), e))
}

fn words(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs the program on its prepared input in `dir` and checks its output.
pub fn run_prepared(dir: &Path, e: &Expect, scratch: &Path) -> Result<ProgramResult> {
    let t0 = Instant::now();
    let mut r = ProgramResult {
        workload: e.program.clone(),
        kind: "program".into(),
        size: e.size,
        seed: e.seed,
        work: e.work,
        work_unit: find(&e.program).map_or("", |p| p.work_unit).into(),
        checksum: String::new(),
        check: String::new(),
        elapsed_ns: 0,
        setup_ns: 0,
        work_ns: 0,
        check_ns: 0,
        input_bytes: e.input_bytes,
        param: None,
        output_bytes: None,
        command: String::new(),
    };
    let checked = match e.program.as_str() {
        "sort" => {
            let mut cmd = Command::new("sort");
            cmd.env("LC_ALL", "C")
                .arg("-S")
                .arg(format!("{}K", e.param.div_ceil(1024)))
                .arg("--parallel=1")
                .arg("-T")
                .arg(scratch)
                .arg(dir.join("input.txt"))
                .stdout(Stdio::piped());
            r.command = words(&cmd);
            r.param = Some(e.param);
            r.setup_ns = ns(t0);
            let t = Instant::now();
            let mut child = spawn(&mut cmd, "sort")?;
            let c = check_sorted(child.stdout.take().expect("piped"), e);
            if c.is_err() {
                // the check's reason, not the SIGPIPE it leaves sort with
                let _ = child.kill();
                let _ = child.wait();
                return c.map(|_| r);
            }
            wait_ok(&mut child, "sort")?;
            // sort writes as it merges: reading is the run; the check
            // runs alongside it
            r.work_ns = ns(t);
            c?
        }
        "xz" => {
            let out = scratch.join("input.txt.xz");
            let f = std::fs::File::create(&out).map_err(|err| Error::io("creating", &out, err))?;
            let mut cmd = Command::new("xz");
            cmd.arg("-c")
                .arg("-T1")
                .arg(format!("--lzma2=preset=9,dict={}", e.param))
                .arg(dir.join("input.txt"))
                .stdout(Stdio::from(f));
            r.command = words(&cmd);
            r.param = Some(e.param);
            r.setup_ns = ns(t0);
            let t = Instant::now();
            let mut child = spawn(&mut cmd, "xz")?;
            wait_ok(&mut child, "xz")?;
            r.work_ns = ns(t);
            r.output_bytes = std::fs::metadata(&out).ok().map(|m| m.len());
            let t = Instant::now();
            let mut d = Command::new("xz");
            d.arg("-dc").arg(&out).stdout(Stdio::piped());
            let mut child = spawn(&mut d, "xz -d")?;
            let c = check_stream(child.stdout.take().expect("piped"), e);
            let w = wait_ok(&mut child, "xz -d");
            let _ = std::fs::remove_file(&out);
            r.check_ns = ns(t);
            let c = c?;
            w?;
            c
        }
        "sqlite" | "pydict" => {
            let mut cmd = if e.program == "sqlite" {
                let script = dir.join("script.sql");
                let f = std::fs::File::open(&script)
                    .map_err(|err| Error::io("opening", &script, err))?;
                let mut c = Command::new("sqlite3");
                c.args(["-batch", "-bail", ":memory:"])
                    .stdin(Stdio::from(f));
                c
            } else {
                let script = crate::workload::extract_file(
                    scratch.parent().unwrap_or(scratch),
                    &format!(
                        "swaplab-pydict-{:016x}.py",
                        line_hash(PYDICT_SCRIPT.as_bytes())
                    ),
                    PYDICT_SCRIPT.as_bytes(),
                    0o644,
                )?;
                let mut c = Command::new("python3");
                c.arg(script)
                    .arg(dir.join("rows.txt"))
                    .arg(dir.join("probes.txt"))
                    .arg(e.param.to_string());
                r.param = Some(e.param);
                c
            };
            cmd.stdout(Stdio::piped());
            r.command = words(&cmd);
            r.setup_ns = ns(t0);
            let t = Instant::now();
            let mut child = spawn(&mut cmd, &e.program)?;
            let mut out = String::new();
            child
                .stdout
                .take()
                .expect("piped")
                .read_to_string(&mut out)
                .map_err(|err| Error::io("reading", Path::new(&e.program), err))?;
            wait_ok(&mut child, &e.program)?;
            r.work_ns = ns(t);
            let t = Instant::now();
            let c = check_text(&out, e);
            r.check_ns = ns(t);
            c?
        }
        other => return Err(Error::Invalid(format!("{other}: not a real program"))),
    };
    r.checksum = format!("0x{:016x}", checked.hash);
    r.check = "ok".into();
    r.elapsed_ns = ns(t0);
    Ok(r)
}

/// A private scratch directory for one run (sort's -T, xz's output),
/// removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Removes the scratch directories (`run-PID-*`) of drivers that are gone:
/// a run killed at its timeout or by the OOM killer leaves its own (xz's
/// partial output among them).
fn remove_stale_scratch(programs: &Path) {
    let Ok(rd) = std::fs::read_dir(programs) else {
        return;
    };
    for d in rd.flatten() {
        let name = d.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("run-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(d.path());
        }
    }
}

/// `swaplab workload run NAME --size S [--seed N]` for a real program: the
/// driver. Prints the JSON line; an error when the program failed or its
/// output is wrong.
pub fn main(args: &[String]) -> Result<ProgramResult> {
    let a = parse_args(args)?;
    let miss = missing(a.program);
    if !miss.is_empty() {
        // installing is for resolve (outside the run); here, say what is missing
        ensure_installed(a.program)?;
    }
    let t0 = Instant::now();
    let (dir, e) = prepare(a.program.name, a.size, a.seed)?;
    let prep = ns(t0);
    let cache = crate::workload::cache_dir()?;
    remove_stale_scratch(&cache.join("programs"));
    let scratch = Scratch(cache.join("programs").join(format!(
        "run-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )));
    crate::workload::ensure_private_dir(&scratch.0)?;
    let mut r = run_prepared(&dir, &e, &scratch.0)?;
    r.setup_ns += prep;
    r.elapsed_ns += prep;
    println!("{}", serde_json::to_string(&r).expect("serializable"));
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_hash(d: &Path) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = std::fs::read_dir(d)
            .unwrap()
            .map(|f| {
                let f = f.unwrap();
                let mut h = StreamHash::default();
                h.update(&std::fs::read(f.path()).unwrap());
                (f.file_name().to_string_lossy().into_owned(), h.hash)
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let t = tempfile::tempdir().unwrap();
        for p in PROGRAMS {
            let gen = |seed: u64, sub: &str| {
                let d = t.path().join(format!("{}-{sub}", p.name));
                std::fs::create_dir(&d).unwrap();
                let e = generate(p.name, 1 << 20, seed, &d).unwrap();
                (e, dir_hash(&d))
            };
            let (e1, h1) = gen(7, "a");
            let (e2, h2) = gen(7, "b");
            let (e3, h3) = gen(8, "c");
            assert_eq!(e1, e2, "{}", p.name);
            assert_eq!(h1.len(), h2.len());
            for (x, y) in h1.iter().zip(&h2) {
                // sqlite's script names its directory; the data must match
                if x.0 != "script.sql" {
                    assert_eq!(x, y, "{}", p.name);
                }
            }
            assert_ne!(e1.input_bytes + e1.hash, 0);
            assert!(
                h1.iter()
                    .zip(&h3)
                    .any(|(x, y)| x.0 != "script.sql" && x != y),
                "{}: another seed, other bytes",
                p.name
            );
            assert_ne!((e1.hash, &e1.text), (e3.hash, &e3.text), "{}", p.name);
        }
    }

    #[test]
    fn the_checks_catch_a_corrupted_output() {
        let t = tempfile::tempdir().unwrap();
        let (dir, e) = prepare_in(t.path(), "sort", 1 << 20, 3).unwrap();
        assert!(e.work > 5_000, "{e:?}");
        let input = std::fs::read(dir.join("input.txt")).unwrap();
        let mut lines: Vec<&[u8]> = input.split_inclusive(|b| *b == b'\n').collect();
        assert!(check_sorted(&input[..], &e).is_err(), "unsorted input");
        lines.sort_unstable();
        let good = lines.concat();
        check_sorted(&good[..], &e).unwrap();
        let err = |b: &[u8]| check_sorted(b, &e).unwrap_err().to_string();
        // a byte changed (order kept: the last letter of the last line)
        let mut x = good.clone();
        let at = x.len() - 2;
        x[at] = if x[at] == b'z' { b'y' } else { b'z' };
        assert!(err(&x).contains("not the input's"), "{}", err(&x));
        // two lines swapped
        let mut sw = lines.clone();
        sw.swap(100, 101);
        assert!(err(&sw.concat()).contains("sorts before"));
        // a line lost, a line doubled
        assert!(err(&lines[1..].concat()).contains("lines"));
        let mut dup = lines.clone();
        dup[1] = dup[0];
        let m = err(&dup.concat());
        assert!(m.contains("not the input's") || m.contains("bytes"), "{m}");

        let (dir, e) = prepare_in(t.path(), "xz", 1 << 20, 3).unwrap();
        let input = std::fs::read(dir.join("input.txt")).unwrap();
        check_stream(&input[..], &e).unwrap();
        let mut x = input.clone();
        x[input.len() / 2] ^= 1;
        assert!(check_stream(&x[..], &e).is_err());
        assert!(check_stream(&input[1..], &e).is_err());

        let (_, e) = prepare_in(t.path(), "sqlite", 1 << 20, 3).unwrap();
        check_text(&e.text.clone(), &e).unwrap();
        let wrong = e.text.replacen('1', "2", 1);
        let m = check_text(&wrong, &e).unwrap_err().to_string();
        assert!(m.contains("answer line 1"), "{m}");
        assert!(check_text(&e.text[..e.text.len() - 1], &e).is_err());
        // a second prepare is the cached one
        let again = prepare_in(t.path(), "sqlite", 1 << 20, 3).unwrap();
        assert_eq!(again.1, e);
    }

    /// The real programs (when installed) give the answers the generator
    /// expects.
    #[test]
    fn the_real_programs_pass_their_checks() {
        let t = tempfile::tempdir().unwrap();
        let scratch = t.path().join("scratch");
        std::fs::create_dir(&scratch).unwrap();
        for p in PROGRAMS {
            if !missing(p).is_empty() {
                eprintln!("skipping {}: {:?} not installed", p.name, missing(p));
                continue;
            }
            let (dir, e) = prepare_in(t.path(), p.name, 2 << 20, 5).unwrap();
            let r =
                run_prepared(&dir, &e, &scratch).unwrap_or_else(|err| panic!("{}: {err}", p.name));
            assert_eq!(r.check, "ok");
            assert_eq!(r.work, e.work);
            let line = serde_json::to_string(&r).unwrap();
            let back: ProgramResult = serde_json::from_str(&line).unwrap();
            assert_eq!(back.workload, p.name);
        }
    }

    #[test]
    fn args_are_checked() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let a = parse_args(&s(&["sort", "--size", "8M", "--seed=4"])).unwrap();
        assert_eq!((a.size, a.seed, a.program.name), (8 << 20, 4, "sort"));
        assert_eq!(parse_args(&s(&["xz", "--size", "2M"])).unwrap().seed, 1);
        assert!(parse_args(&s(&["xz"])).is_err());
        assert!(parse_args(&s(&["xz", "--size", "1K"])).is_err());
        assert!(parse_args(&s(&["xz", "--size", "2M", "--passes", "3"])).is_err());
        assert!(parse_args(&s(&["qsort", "--size", "2M"])).is_err());
    }
}
