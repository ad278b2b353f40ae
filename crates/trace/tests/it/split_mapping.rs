//! The two-thread id mapping of plain files (oracleGeneral, csv, txt: the
//! input cut in two halves, each mapped into its own table, then merged)
//! against the one-thread mapping and against a numbering computed here
//! with a std HashMap: the same ids, pages, writes and errors, with pages
//! only in the first half, only in the second, in both, with empty halves,
//! one reference, many chunks, and errors in either half.
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use swaplab_trace::dense::with_split_mapping;
use swaplab_trace::import::{self, Column, Format, ImportOptions};
use swaplab_trace::{DenseTrace, RefBatch};

/// Pages numbered in order of first reference, as the loaders must:
/// (ids, pages).
fn numbering(refs: &[(u64, bool)]) -> (Vec<u32>, Vec<u64>) {
    let mut seen = HashMap::new();
    let (mut ids, mut pages) = (Vec::new(), Vec::new());
    for &(p, _) in refs {
        let id = *seen.entry(p).or_insert_with(|| {
            pages.push(p);
            pages.len() as u32 - 1
        });
        ids.push(id);
    }
    (ids, pages)
}

/// `path` loaded to the dense form with the split mapping on or off.
fn load(
    path: &Path,
    format: Format,
    opts: &ImportOptions,
    split: bool,
) -> Result<DenseTrace, String> {
    with_split_mapping(split, || {
        let mut src = import::open(path, format, opts).map_err(|e| e.to_string())?;
        DenseTrace::load(src.as_mut()).map_err(|e| e.to_string())
    })
}

/// Both mappings of `path` give the trace of `refs` (numbered here).
fn both_give(path: &Path, format: Format, opts: &ImportOptions, refs: &[(u64, bool)]) {
    let (ids, pages) = numbering(refs);
    for split in [true, false] {
        let t = load(path, format, opts, split).unwrap();
        let what = format!("{} with split {split}", path.display());
        assert_eq!(t.ids, ids, "{what}");
        assert_eq!(t.pages, pages, "{what}");
        assert_eq!(t.write_bits().len(), refs.len().div_ceil(64), "{what}");
        let writes: Vec<bool> = (0..t.len()).map(|i| t.is_write(i)).collect();
        let want: Vec<bool> = refs.iter().map(|r| r.1).collect();
        assert_eq!(writes, want, "{what}");
    }
}

/// Both mappings of `path` fail with an error containing `want`.
fn both_fail(path: &Path, format: Format, opts: &ImportOptions, want: &str) {
    for split in [true, false] {
        let e = load(path, format, opts, split).unwrap_err();
        assert!(e.contains(want), "split {split}: {e} (want {want})");
    }
}

fn record(id: u64) -> [u8; 24] {
    let mut r = [0u8; 24];
    r[0..4].copy_from_slice(&7u32.to_le_bytes());
    r[4..12].copy_from_slice(&id.to_le_bytes());
    r[12..16].copy_from_slice(&4096u32.to_le_bytes());
    r[16..24].copy_from_slice(&(-1i64).to_le_bytes());
    r
}

/// Inputs whose halves share pages or not: (first half's page, second's)
/// drawn from `a` and `b`.
fn halves(rng: &mut Pcg64, n: usize, a: u64, b: u64, shared: u64) -> Vec<u64> {
    (0..n)
        .map(|i| {
            if shared > 0 && rng.random_bool(0.3) {
                rng.random_range(0..shared)
            } else if i < n / 2 {
                a + rng.random_range(0..1000)
            } else {
                b + rng.random_range(0..1000)
            }
        })
        .collect()
}

#[test]
fn oracle_general_split_equals_a_hash_map_numbering() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Pcg64::seed_from_u64(0x29);
    let og = ImportOptions::default();
    let mut inputs: Vec<(&str, Vec<u64>)> = vec![
        ("empty", vec![]),
        ("one", vec![u64::MAX]),
        ("two", vec![5, 5]),
        ("three", vec![3, 1, 3]),
        // Every page first seen in the second half.
        ("only-b", {
            let mut v = vec![1; 50];
            v.extend(100..150);
            v
        }),
    ];
    inputs.push(("disjoint", halves(&mut rng, 10_001, 1 << 40, 2 << 40, 0)));
    inputs.push(("shared", halves(&mut rng, 10_000, 1 << 40, 2 << 40, 500)));
    // Only the first half's pages, in the second half in another order.
    let a: Vec<u64> = (0..5000).map(|_| rng.random()).collect();
    let mut both = a.clone();
    both.extend(a.iter().rev());
    inputs.push(("only-a", both));
    // Several blocks of 64 Ki records a half, Zipf-like reuse.
    let many: Vec<u64> = (0..400_003)
        .map(|_| {
            let r: f64 = rng.random();
            (r * r * r * 200_000.0) as u64 * 7919
        })
        .collect();
    inputs.push(("many", many));
    for (name, pages) in &inputs {
        let path = dir.path().join(format!("{name}.bin"));
        let bytes: Vec<u8> = pages.iter().flat_map(|&p| record(p)).collect();
        std::fs::write(&path, &bytes).unwrap();
        let refs: Vec<(u64, bool)> = pages.iter().map(|&p| (p, false)).collect();
        both_give(&path, Format::OracleGeneral, &og, &refs);
        // A truncated last record: the error names its offset.
        for extra in [1, 23] {
            let cut = dir.path().join(format!("{name}-{extra}.bin"));
            let mut b = bytes.clone();
            b.extend(std::iter::repeat_n(9u8, extra));
            std::fs::write(&cut, &b).unwrap();
            let want = format!(
                "truncated record at byte offset {}: {extra} of 24 bytes",
                bytes.len()
            );
            both_fail(&cut, Format::OracleGeneral, &og, &want);
        }
    }
}

/// A text trace of `refs`, lines in several shapes; `bad` lines (none
/// when empty) inserted before the given references.
fn txt_of(refs: &[(u64, bool)], bad: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, &(p, w)) in refs.iter().enumerate() {
        if bad.contains(&i) {
            out.extend_from_slice(b"0xZ1\n");
        }
        let op = if w { "w" } else { "r" };
        let l = match i % 5 {
            0 => format!("{p} {op}\n"),
            1 => format!("0x{p:x}\t{op}\n"),
            2 => format!("{p},{op} # c\r\n"),
            3 => format!("# comment\n\n{p} {op}\n"),
            _ => format!("  {p} {}\n", op.to_uppercase()),
        };
        out.extend_from_slice(l.as_bytes());
    }
    out
}

fn csv_of(refs: &[(u64, bool)], bad: &[usize]) -> Vec<u8> {
    let mut out = b"id,op,size\n".to_vec();
    for (i, &(p, w)) in refs.iter().enumerate() {
        if bad.contains(&i) {
            out.extend_from_slice(b"12,x,1\n");
        }
        let op = ["r", "w"][usize::from(w)];
        out.extend_from_slice(format!("{p},{op},{i}\n").as_bytes());
    }
    out
}

fn csv_opts() -> ImportOptions {
    ImportOptions {
        has_header: true,
        id_column: Column::Name("id".into()),
        op_column: Some(Column::Name("op".into())),
        ..Default::default()
    }
}

/// The 1-based line of the first byte of `bytes` at `at`.
fn line_at(bytes: &[u8], at: usize) -> usize {
    1 + bytes[..at].iter().filter(|&&b| b == b'\n').count()
}

#[test]
fn csv_and_txt_split_equal_a_hash_map_numbering() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Pcg64::seed_from_u64(0x2929);
    let mut inputs: Vec<(&str, Vec<u64>)> = vec![
        ("empty", vec![]),
        ("one", vec![42]),
        ("three", vec![3, 1, 3]),
    ];
    // Many chunks of 1 MiB: pages only in the first half, only in the
    // second, and in both.
    inputs.push(("disjoint", halves(&mut rng, 400_000, 1 << 40, 2 << 40, 0)));
    inputs.push(("shared", halves(&mut rng, 400_000, 1 << 40, 2 << 40, 3000)));
    let a: Vec<u64> = (0..200_000).map(|_| rng.random_range(0..1 << 50)).collect();
    let mut only_a = a.clone();
    only_a.extend(a.iter().rev());
    inputs.push(("only-a", only_a));
    let d = ImportOptions::default();
    let c = csv_opts();
    for (name, pages) in &inputs {
        let refs: Vec<(u64, bool)> = pages.iter().map(|&p| (p, rng.random_bool(0.4))).collect();
        let txt = dir.path().join(format!("{name}.txt"));
        let csv = dir.path().join(format!("{name}.csv"));
        std::fs::write(&txt, txt_of(&refs, &[])).unwrap();
        std::fs::write(&csv, csv_of(&refs, &[])).unwrap();
        both_give(&txt, Format::Text, &d, &refs);
        both_give(&csv, Format::Csv, &c, &refs);
        if refs.len() < 1000 {
            continue;
        }
        // An error in the first half, in the second, in both (the first
        // is reported), on the line counted here.
        let n = refs.len();
        for bad in [
            vec![n / 4],
            vec![3 * n / 4],
            vec![n / 3, 2 * n / 3],
            vec![n - 1],
        ] {
            for (format, bytes, opts, marker) in [
                (Format::Text, txt_of(&refs, &bad), &d, &b"0xZ1\n"[..]),
                (Format::Csv, csv_of(&refs, &bad), &c, &b"12,x,1\n"[..]),
            ] {
                let at = bytes
                    .windows(marker.len())
                    .position(|w| w == marker)
                    .unwrap();
                let path = dir.path().join(format!("{name}-bad-{}.{format}", bad[0]));
                std::fs::write(&path, &bytes).unwrap();
                both_fail(
                    &path,
                    format,
                    opts,
                    &format!("line {}", line_at(&bytes, at)),
                );
                let (s, o) = (
                    load(&path, format, opts, true).unwrap_err(),
                    load(&path, format, opts, false).unwrap_err(),
                );
                assert_eq!(s, o);
            }
        }
    }
    // One reference in a file of one byte: the first half is empty.
    let one = dir.path().join("byte.txt");
    std::fs::write(&one, b"7").unwrap();
    both_give(&one, Format::Text, &d, &[(7, false)]);
}

/// The shared cloudPhysicsIO files, decompressed to plain files (so that
/// they are split): both mappings give the batch reader's references
/// numbered here.
#[test]
fn cloudphysics_split_equals_a_hash_map_numbering() {
    let test = "cloudphysics_split_equals_a_hash_map_numbering";
    let data = swaplab_testkit::shared_data(env!("CARGO_MANIFEST_DIR"));
    let Some(data) = data.filter(|d| d.join("cloudPhysicsIO.csv.zst").exists()) else {
        swaplab_testkit::skip(
            test,
            swaplab_testkit::Facility::SharedData,
            "cloudPhysicsIO files not found in ../shared/data".to_string(),
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let csv_opts = ImportOptions {
        id_column: Column::Name("lbn".into()),
        op_column: Some(Column::Name("op".into())),
        has_header: true,
        ..Default::default()
    };
    for (zst, plain, format, opts) in [
        (
            "cloudPhysicsIO.oracleGeneral.bin.zst",
            "cp.bin",
            Format::OracleGeneral,
            ImportOptions::default(),
        ),
        ("cloudPhysicsIO.csv.zst", "cp.csv", Format::Csv, csv_opts),
    ] {
        let mut bytes = Vec::new();
        zstd::stream::read::Decoder::new(std::fs::File::open(data.join(zst)).unwrap())
            .unwrap()
            .read_to_end(&mut bytes)
            .unwrap();
        let path = dir.path().join(plain);
        std::fs::write(&path, &bytes).unwrap();
        let mut src = import::open(&path, format, &opts).unwrap();
        let mut refs = Vec::new();
        let mut b = RefBatch::default();
        while src.next_batch(&mut b, 4096).unwrap() {
            refs.extend(b.page.iter().copied().zip(b.write.iter().copied()));
        }
        assert_eq!(refs.len(), 113_872);
        both_give(&path, format, &opts, &refs);
    }
}
