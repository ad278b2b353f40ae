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
use swaplab_trace::RefBatch;

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
