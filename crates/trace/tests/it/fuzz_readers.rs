//! A stable-Rust randomized fuzz test of every importer: random bytes and
//! mutations of valid inputs (hand-written and the real fixtures in
//! tests/data/) must give references or errors, never a panic, and every
//! batch must keep the `RefSource` contract. Deterministic (fixed seeds and
//! iteration counts), about a second in all. The libFuzzer targets in
//! `fuzz/` explore the same readers for longer.
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::path::Path;
use swaplab_trace::import::{self, Column, Format, ImportOptions};
use swaplab_trace::{DenseTrace, RefBatch};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name),
    )
    .unwrap_or_default()
}

fn oracle_record(clock: u32, id: u64, size: u32, next: i64) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&clock.to_le_bytes());
    v.extend_from_slice(&id.to_le_bytes());
    v.extend_from_slice(&size.to_le_bytes());
    v.extend_from_slice(&next.to_le_bytes());
    v
}

fn seeds(format: Format) -> Vec<Vec<u8>> {
    match format {
        Format::OracleGeneral => {
            let mut a = oracle_record(1, 42, 512, 3);
            a.extend(oracle_record(2, u64::MAX, 0, -1));
            a.extend(oracle_record(u32::MAX, 42, 4096, -1));
            vec![a, vec![]]
        }
        Format::Csv => vec![
            b"version,time,op,size,lbn\n1,5633898,2a,512,42932745\n1,5633899.5,28,512,0x10\n".to_vec(),
            b"1,r\n2,w\n0x3,R\n".to_vec(),
            b"\"a\",\"1\"\n\"b\",\"2\"\n".to_vec(),
        ],
        Format::Text => vec![
            b"# c\n1\n0x10 w\n\n2 r # x\n3,write\r\n".to_vec(),
            b"18446744073709551615\n0\n".to_vec(),
        ],
        Format::Lackey => vec![
            b"==1== x\nI  0023C790,2\n S BE80199C,4\n L 00001FFE,4\n M 0025747C,1\n".to_vec(),
            fixture("lackey-true.txt"),
        ],
        Format::PerfScript => vec![
            b"ls 7 1.000001: page-faults: 2000\nls 8/9 [001] 2.5: 1 major-faults: 0x3000 ffff sym+0x1 (dso)\n".to_vec(),
            fixture("perf-script.txt"),
            fixture("perf-script-default.txt"),
            fixture("perf-script-tracepoint.txt"),
        ],
    }
}

fn option_sets(format: Format) -> Vec<ImportOptions> {
    let d = ImportOptions::default();
    match format {
        Format::Csv => vec![
            d.clone(),
            ImportOptions {
                id_column: Column::Name("lbn".into()),
                has_header: true,
                op_column: Some(Column::Name("op".into())),
                time_column: Some(Column::Index(1)),
                time_unit_ns: 7,
                ..d.clone()
            },
            ImportOptions {
                id_column: Column::Index(1),
                op_column: Some(Column::Index(1)),
                delimiter: b';',
                ..d.clone()
            },
        ],
        Format::Lackey => vec![
            d.clone(),
            ImportOptions {
                include_instructions: true,
                page_size: 512,
                ..d.clone()
            },
        ],
        _ => vec![
            d.clone(),
            ImportOptions {
                page_size: 1,
                ..d.clone()
            },
        ],
    }
}

const TOKENS: &[&[u8]] = &[
    b",",
    b";",
    b"\n",
    b"\r\n",
    b" ",
    b"\t",
    b"#",
    b"0x",
    b"0X",
    b":",
    b"==",
    b"I ",
    b" L ",
    b" S ",
    b" M ",
    b"w",
    b"r",
    b"2a",
    b"28",
    b"\"",
    b"page-faults:",
    b"1.5:",
    b"address=0x",
    b"error_code=0x",
    b"[001]",
    b"/",
    b"ffffffffffffffffff",
    b"99999999999999999999",
    b"-1",
    b".",
    b"\xff\xfe",
    b"\0",
    b"+0x1",
    b"(dso)",
    b"1048576",
    b"4294967296",
];

fn mutate(rng: &mut Pcg64, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    let rounds = rng.random_range(1..=8);
    for _ in 0..rounds {
        let at = if v.is_empty() {
            0
        } else {
            rng.random_range(0..=v.len())
        };
        match rng.random_range(0..7) {
            0 if !v.is_empty() => {
                let i = at.min(v.len() - 1);
                v[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !v.is_empty() => {
                let i = at.min(v.len() - 1);
                v[i] = rng.random();
            }
            2 => {
                let t = TOKENS[rng.random_range(0..TOKENS.len())];
                v.splice(at..at, t.iter().copied());
            }
            3 if at < v.len() => {
                let end = (at + rng.random_range(1..16)).min(v.len());
                v.drain(at..end);
            }
            4 => v.truncate(at),
            5 if !input.is_empty() => {
                // Splice in a piece of the original elsewhere (duplicates lines).
                let s = rng.random_range(0..input.len());
                let e = (s + rng.random_range(1..64)).min(input.len());
                v.splice(at..at, input[s..e].iter().copied());
            }
            _ => {
                let n = rng.random_range(1..8);
                for _ in 0..n {
                    v.insert(
                        at.min(v.len()),
                        b"0123456789abcdefABCDEF"[rng.random_range(0..22)],
                    );
                }
            }
        }
    }
    v
}

/// Reads everything, checking the batch contract; returns refs read.
fn drain(format: Format, opts: &ImportOptions, data: &[u8], rng: &mut Pcg64) -> usize {
    let mut src = match import::from_reader(data, "fuzz", format, opts) {
        Ok(s) => s,
        Err(_) => return 0,
    };
    let mut b = RefBatch::default();
    let mut total = 0;
    // Every call consumes at least one line or record, or yields max refs,
    // and a lackey line yields at most 2^20 / 512 + 1 pages.
    let limit = data.len() * 2100 + 10;
    for _ in 0..limit {
        let max = rng.random_range(1..200);
        match src.next_batch(&mut b, max) {
            Ok(true) => {
                assert!(
                    !b.is_empty() && b.len() <= max,
                    "batch of {} for max {max}",
                    b.len()
                );
                b.check().expect("batch invariant");
                total += b.len();
            }
            Ok(false) => {
                assert!(b.is_empty());
                return total;
            }
            Err(e) => {
                // Errors say where (byte offset or line) or are I/O/usage errors.
                let s = e.to_string();
                assert!(!s.is_empty());
                return total;
            }
        }
    }
    panic!("{format} reader did not finish within {limit} batches");
}

#[test]
fn importers_survive_random_and_mutated_input() {
    let mut rng = Pcg64::seed_from_u64(0x5eed_5a9a_1ab0);
    let mut accepted = 0usize;
    for format in import::Format::ALL {
        let seeds = seeds(format);
        let opts = option_sets(format);
        for i in 0..6000 {
            let o = &opts[i % opts.len()];
            let data = if i % 5 == 0 {
                let n = rng.random_range(0..256);
                (0..n).map(|_| rng.random()).collect()
            } else {
                let s = &seeds[rng.random_range(0..seeds.len())];
                mutate(&mut rng, s)
            };
            accepted += drain(format, o, &data, &mut rng);
        }
    }
    // Mutations keep many inputs (partly) valid: the fuzzing reached past
    // the first error path.
    assert!(accepted > 1000, "only {accepted} references accepted");
}

#[test]
fn valid_seeds_are_accepted() {
    let mut rng = Pcg64::seed_from_u64(1);
    for format in Format::ALL {
        for s in seeds(format) {
            if s.is_empty() {
                continue;
            }
            let opts = if format == Format::Csv && s.starts_with(b"version") {
                option_sets(Format::Csv)[1].clone()
            } else if format == Format::Csv && s.starts_with(b"1,r") {
                ImportOptions {
                    op_column: Some(Column::Index(1)),
                    ..Default::default()
                }
            } else if format == Format::Csv {
                ImportOptions {
                    id_column: Column::Index(1),
                    ..Default::default()
                }
            } else {
                ImportOptions::default()
            };
            let mut src = import::from_reader(&s[..], "seed", format, &opts).unwrap();
            let mut b = RefBatch::default();
            let mut n = 0;
            loop {
                match src.next_batch(&mut b, rng.random_range(1..50)) {
                    Ok(true) => n += b.len(),
                    Ok(false) => break,
                    Err(e) => {
                        // Only the deliberately bad fixture may fail.
                        assert!(
                            format == Format::PerfScript
                                && e.to_string().contains("default output"),
                            "{format} seed failed: {e}"
                        );
                        n = usize::MAX;
                        break;
                    }
                }
            }
            assert!(n > 0, "{format} seed yielded nothing");
        }
    }
}

/// A whole input read batch by batch (the sequential readers), as a dense
/// trace and the references' times (empty without), or the error.
fn by_batches(
    format: Format,
    opts: &ImportOptions,
    data: &[u8],
) -> Result<(DenseTrace, Vec<u64>), String> {
    let mut src = import::from_reader(data, "fuzz", format, opts).map_err(|e| e.to_string())?;
    let (mut pages, mut writes, mut times) = (Vec::new(), Vec::new(), Vec::new());
    let mut b = RefBatch::default();
    while src.next_batch(&mut b, 777).map_err(|e| e.to_string())? {
        pages.extend_from_slice(&b.page);
        writes.extend_from_slice(&b.write);
        times.extend_from_slice(&b.time_ns);
    }
    let t = DenseTrace::from_arrays(&pages, Some(&writes), src.page_size(), src.source())
        .map_err(|e| e.to_string())?;
    Ok((t, times))
}

/// The same input through the dense loader (parallel for csv and txt).
fn by_loader(format: Format, opts: &ImportOptions, data: &[u8]) -> Result<DenseTrace, String> {
    let mut src = import::from_reader(data, "fuzz", format, opts).map_err(|e| e.to_string())?;
    DenseTrace::load(src.as_mut()).map_err(|e| e.to_string())
}

/// The same input through `feed_all` (csv and txt: the loader's parallel
/// parser handing over its batches in order, as `import` and a streamed
/// trace's first pass take them), or None where a source has no such path.
fn by_feed(
    format: Format,
    opts: &ImportOptions,
    data: &[u8],
) -> Option<Result<(DenseTrace, Vec<u64>), String>> {
    let mut src = match import::from_reader(data, "fuzz", format, opts) {
        Ok(s) => s,
        Err(e) => return Some(Err(e.to_string())),
    };
    let (mut pages, mut writes, mut times) = (Vec::new(), Vec::new(), Vec::new());
    let fed = src.feed_all(
        &mut |p: &[u64], w: &[bool], t: &[u64]| {
            pages.extend_from_slice(p);
            writes.extend_from_slice(w);
            writes.resize(pages.len(), false);
            times.extend_from_slice(t);
            Ok(())
        },
        &mut |_| {},
    )?;
    Some(fed.map_err(|e| e.to_string()).and_then(|()| {
        let t = DenseTrace::from_arrays(&pages, Some(&writes), src.page_size(), src.source())
            .map_err(|e| e.to_string())?;
        Ok((t, times))
    }))
}

/// Every way gives the same trace, or the same error: the batches, the
/// dense loader and, where there is one, `feed_all`.
fn same_both_ways(format: Format, opts: &ImportOptions, data: &[u8]) -> bool {
    let batched = by_batches(format, opts, data);
    let a = batched
        .as_ref()
        .map(|(t, _)| t.clone())
        .map_err(Clone::clone);
    let loaded = agree(format, data, &a, &by_loader(format, opts, data));
    if let Some(fed) = by_feed(format, opts, data) {
        // and the same times, where the input has them
        if let (Ok((_, want)), Ok((_, got))) = (&batched, &fed) {
            assert_eq!(want, got, "{format}: times differ");
        }
        let fed = fed.map(|(t, _)| t);
        assert_eq!(agree(format, data, &a, &fed), loaded);
    }
    loaded
}

/// Two ways gave the same trace (true), or the same error (false). For
/// CSV the line of an error may differ where empty rows come before it:
/// the csv crate numbers a row from where the previous one ended, the
/// parallel loader from where it starts; there only the rest of the
/// message must agree.
fn agree(
    format: Format,
    data: &[u8],
    a: &Result<DenseTrace, String>,
    b: &Result<DenseTrace, String>,
) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => {
            assert_eq!(
                a.ids,
                b.ids,
                "{format}: ids differ on {:?}",
                String::from_utf8_lossy(data)
            );
            assert_eq!(a.pages, b.pages, "{format}: pages differ");
            assert_eq!(a.write_bits(), b.write_bits(), "{format}: writes differ");
            assert_eq!(a.page_size, b.page_size);
            assert_eq!(a.source, b.source);
            true
        }
        (Err(x), Err(y)) => {
            let blank_rows = data.windows(2).any(|w| w == b"\n\n" || w[0] == b'\r')
                || data.first().is_some_and(|&c| c == b'\n' || c == b'\r');
            if format == Format::Csv && blank_rows {
                let strip = |s: &str| {
                    s.replace(" (if the first row is a header, say so)", "")
                        .split_whitespace()
                        .filter(|w| {
                            !w.trim_end_matches([',', ':'])
                                .bytes()
                                .all(|c| c.is_ascii_digit())
                        })
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                assert_eq!(
                    strip(x),
                    strip(y),
                    "{format} on {:?}",
                    String::from_utf8_lossy(data)
                );
            } else {
                assert_eq!(x, y, "{format} on {:?}", String::from_utf8_lossy(data));
            }
            false
        }
        _ => panic!(
            "{format}: batches {:?} but loader {:?} on {:?}",
            a.as_ref().map(|t| t.len()),
            b.as_ref().map(|t| t.len()),
            String::from_utf8_lossy(data)
        ),
    }
}

/// The dense loaders (csv and txt on all cores, oracleGeneral on two
/// threads) equal the batch readers on the fuzzer's mutated inputs.
#[test]
fn dense_loaders_equal_the_batch_readers_on_mutated_input() {
    let mut rng = Pcg64::seed_from_u64(0xde75e);
    let mut ok = 0;
    for format in [Format::Csv, Format::Text, Format::OracleGeneral] {
        let seeds = seeds(format);
        let opts = option_sets(format);
        for i in 0..3000 {
            let o = &opts[i % opts.len()];
            let data = if i % 5 == 0 {
                let n = rng.random_range(0..256);
                (0..n).map(|_| rng.random()).collect()
            } else {
                let s = &seeds[rng.random_range(0..seeds.len())];
                mutate(&mut rng, s)
            };
            ok += usize::from(same_both_ways(format, o, &data));
        }
    }
    assert!(ok > 500, "only {ok} inputs loaded");
}

/// Inputs of many chunks (the parallel loader cuts at 1 MiB), valid and
/// with an error far in: the same trace, the same error and line.
#[test]
fn dense_loaders_equal_the_batch_readers_over_many_chunks() {
    let mut rng = Pcg64::seed_from_u64(29);
    let lines = 600_000;
    let id = |rng: &mut Pcg64| -> u64 {
        if rng.random_bool(0.5) {
            rng.random_range(0..5000)
        } else {
            rng.random_range(0..1u64 << 40)
        }
    };
    // Text: ids in decimal and hex, ops, comments, blank lines, CRLF.
    let mut txt = Vec::new();
    for i in 0..lines {
        let p = id(&mut rng);
        let l = match i % 7 {
            0 => format!("{p}\n"),
            1 => format!("0x{p:x} w\n"),
            2 => format!("{p},read # c\r\n"),
            3 => "# comment\n".to_string(),
            4 => "\n".to_string(),
            5 => format!("  {p}\tW\n"),
            _ => format!("{p} r\n"),
        };
        txt.extend_from_slice(l.as_bytes());
    }
    let d = ImportOptions::default();
    assert!(same_both_ways(Format::Text, &d, &txt));
    for at in [5, txt.len() / 2, txt.len() - 3] {
        let mut bad = txt.clone();
        bad.splice(at..at, b"\n0xZ1\n".iter().copied());
        assert!(!same_both_ways(Format::Text, &d, &bad));
        let line = 2 + bad[..at].iter().filter(|&&b| b == b'\n').count();
        let e = by_loader(Format::Text, &d, &bad).unwrap_err();
        assert!(e.contains(&format!("line {line}:")), "{e}");
    }
    // CSV with a header: times, ops, ids.
    let mut csv = b"version,time,op,size,lbn\n".to_vec();
    for i in 0..lines {
        let op = ["28", "2a", "r", "W"][i % 4];
        csv.extend_from_slice(
            format!("1,{}.{},{op},512,{}\n", i / 10, i % 10, id(&mut rng)).as_bytes(),
        );
    }
    let o = option_sets(Format::Csv)[1].clone();
    assert!(same_both_ways(Format::Csv, &o, &csv));
    let t = by_loader(Format::Csv, &o, &csv).unwrap();
    assert_eq!(t.len(), lines);
    assert_eq!(t.write_count() as usize, lines / 2);
    for (at, bad_row) in [
        (csv.len() / 3, "1,5,28,512,0xZZ\n"),
        (csv.len() / 2, "1,5,xx,512,7\n"),
        (csv.len() - 1, "\n1,5,28,512\n"),
    ] {
        let at = at + csv[at..].iter().position(|&b| b == b'\n').unwrap_or(0) + 1;
        let mut bad = csv.clone();
        bad.splice(at..at, bad_row.bytes());
        assert!(!same_both_ways(Format::Csv, &o, &bad));
        let line = 1
            + bad[..at].iter().filter(|&&b| b == b'\n').count()
            + usize::from(bad_row.starts_with('\n'));
        let e = by_loader(Format::Csv, &o, &bad).unwrap_err();
        assert!(
            e.contains(&format!("line {line}")),
            "{e} (want line {line})"
        );
    }
    // A quoted field far in: read by the csv crate from that chunk on.
    let mut quoted = csv.clone();
    let at = quoted.len() / 2;
    let at = at + quoted[at..].iter().position(|&b| b == b'\n').unwrap() + 1;
    quoted.splice(at..at, b"1,\"7\",28,512,\"4\n2\"\n".iter().copied());
    assert!(
        !same_both_ways(Format::Csv, &o, &quoted),
        "a newline in an id is an error"
    );
    let mut quoted = csv.clone();
    quoted.splice(at..at, b"1,\"7\",28,\"5\n12\",\"42\"\n".iter().copied());
    assert!(same_both_ways(Format::Csv, &o, &quoted));
    // Without a header, a time column in other units, semicolons.
    let semi: Vec<u8> = String::from_utf8(csv[25..].to_vec())
        .unwrap()
        .replace(',', ";")
        .into_bytes();
    let o = ImportOptions {
        id_column: Column::Index(4),
        op_column: Some(Column::Index(2)),
        time_column: Some(Column::Index(1)),
        time_unit_ns: 1000,
        delimiter: b';',
        ..Default::default()
    };
    assert!(same_both_ways(Format::Csv, &o, &semi));
    // `feed_all` gives the times too (`import` writes them): row i's is
    // i / 10 + (i % 10) / 10 µs.
    let (_, times) = by_feed(Format::Csv, &o, &semi).unwrap().unwrap();
    assert_eq!(times.len(), lines);
    for (i, &t) in times.iter().enumerate() {
        let i = i as u64;
        assert_eq!(t, i / 10 * 1000 + i % 10 * 100, "row {i}");
    }
}

/// The edges of a file, every format: empty, header only, CRLF, a last
/// line without its newline, the largest ids (and one past them): the
/// dense loaders give the serial reference's trace, or its error with the
/// same line; a `.zst` file loads like the plain one.
#[test]
fn dense_loaders_equal_the_batch_readers_at_the_edges() {
    let max = u64::MAX;
    let txt_ok: [(&[u8], &[u64]); 7] = [
        (b"", &[]),
        (b"\n\n", &[]),
        (b"1\r\n2 w\r\n3", &[1, 2, 3]),
        (b"7 r\n7", &[7, 7]),
        (
            b"18446744073709551615\n0xffffffffffffffff w\n0\n",
            &[max, max, 0],
        ),
        (b"# only a comment", &[]),
        (b"00042,W\r\n42\t r", &[42, 42]),
    ];
    let d = ImportOptions::default();
    for (input, want) in txt_ok {
        assert!(same_both_ways(Format::Text, &d, input));
        let t = by_loader(Format::Text, &d, input).unwrap();
        let pages: Vec<u64> = t.ids.iter().map(|&i| t.pages[i as usize]).collect();
        assert_eq!(pages, want, "{:?}", String::from_utf8_lossy(input));
    }
    for (input, line) in [
        (&b"1\n18446744073709551616\n"[..], 2),
        (b"1\r\n2\r\n0x10000000000000000", 3),
        (b"5 x\n", 1),
        (b"5 r w\n", 1),
    ] {
        assert!(!same_both_ways(Format::Text, &d, input));
        let e = by_loader(Format::Text, &d, input).unwrap_err();
        assert!(e.contains(&format!("line {line}:")), "{e}");
    }
    let o = ImportOptions {
        has_header: true,
        id_column: Column::Name("id".into()),
        op_column: Some(Column::Name("op".into())),
        ..Default::default()
    };
    let csv_ok: [(&[u8], &[u64]); 6] = [
        (b"id,op\n", &[]),
        (b"id,op", &[]),
        (b"id,op\r\n1,r\r\n2,w\r\n3,r", &[1, 2, 3]),
        (
            b"id,op\n18446744073709551615,W\n0xffffffffffffffff,28\n",
            &[max, max],
        ),
        (b"id,op\n\n5,r\n\r\n6,w\r7,r\n", &[5, 6, 7]),
        (b"id,op\n 8 ,r\n8,read", &[8, 8]),
    ];
    for (input, want) in csv_ok {
        assert!(same_both_ways(Format::Csv, &o, input));
        let t = by_loader(Format::Csv, &o, input).unwrap();
        let pages: Vec<u64> = t.ids.iter().map(|&i| t.pages[i as usize]).collect();
        assert_eq!(pages, want, "{:?}", String::from_utf8_lossy(input));
    }
    for (input, line) in [
        (&b"id,op\n1,r\n18446744073709551616,r\n"[..], 3),
        (b"id,op\n1,r\r\n2,r,3\r\n", 3),
        (b"id,op\n1,x", 2),
        (b"id,op\n1", 2),
    ] {
        assert!(!same_both_ways(Format::Csv, &o, input));
        let e = by_loader(Format::Csv, &o, input).unwrap_err();
        assert!(e.contains(&format!("line {line}")), "{e}");
    }
    // oracleGeneral: empty, the largest ids, a truncated record; and .zst.
    let mut bin = Vec::new();
    for id in [max, 0, max, 1 << 63, 0] {
        bin.extend(oracle_record(1, id, 1, -1));
    }
    let og = ImportOptions::default();
    assert!(same_both_ways(Format::OracleGeneral, &og, &[]));
    assert!(same_both_ways(Format::OracleGeneral, &og, &bin));
    let t = by_loader(Format::OracleGeneral, &og, &bin).unwrap();
    assert_eq!(t.ids, [0, 1, 0, 2, 1]);
    assert_eq!(t.pages, [max, 0, 1 << 63]);
    let mut cut = bin.clone();
    cut.truncate(bin.len() - 7);
    assert!(!same_both_ways(Format::OracleGeneral, &og, &cut));
    let dir = tempfile::tempdir().unwrap();
    for (name, data) in [("a.bin", &bin), ("b.bin", &Vec::new()), ("c.bin", &cut)] {
        let plain = dir.path().join(name);
        let zst = dir.path().join(format!("{name}.zst"));
        std::fs::write(&plain, data).unwrap();
        std::fs::write(&zst, zstd::encode_all(&data[..], 3).unwrap()).unwrap();
        let load = |p: &Path| {
            let mut s = import::open(p, Format::OracleGeneral, &og).unwrap();
            DenseTrace::load(s.as_mut()).map_err(|e| e.to_string())
        };
        match (load(&plain), load(&zst)) {
            (Ok(a), Ok(b)) => {
                assert_eq!((a.ids, a.pages), (b.ids, b.pages));
            }
            (Err(a), Err(b)) => {
                assert_eq!(a, b);
                assert!(a.contains("byte offset 96"), "{a}");
            }
            (a, b) => panic!(
                "{name}: {:?} vs {:?}",
                a.map(|t| t.len()),
                b.map(|t| t.len())
            ),
        }
    }
}
