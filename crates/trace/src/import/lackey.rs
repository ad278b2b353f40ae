//! valgrind lackey memory traces (`valgrind --tool=lackey --trace-mem=yes`).
//!
//! Lines look like
//!
//! ```text
//! I  0023C790,2
//!  S BE80199C,4
//!  L BE801950,4
//!  M 0025747C,1
//! ```
//!
//! (kind, hex address, size in bytes). Mapping to page references, with
//! `page = address / page_size`:
//!
//! * `L` (load) → a read; `S` (store) → a write.
//! * `M` (modify: a load and a store of the same bytes by one instruction) →
//!   **one write**: the two accesses hit the same page back to back, so a
//!   second reference would change no replacement decision, only counts.
//! * `I` (instruction fetch) → skipped unless `include_instructions` is set,
//!   then a read. Skipped by default because a data-footprint study usually
//!   wants data pages, and fetches are most of lackey's lines.
//! * An access whose last byte (`address + size - 1`) lies in a later page
//!   touches every page from the first to the last, one reference each in
//!   address order.
//! * Consecutive references to the same page are all kept.
//! * Lines starting with `==` (valgrind's own messages) and `SB` lines
//!   (`--trace-superblocks=yes`) are skipped, as are blank lines; anything
//!   else is an error naming the line.
use super::{parse_hex, shorten, Format, ImportOptions, Lines};
use crate::{Error, RefBatch, RefSource, Result, Source};
use std::io::BufRead;

/// Largest access size accepted, in bytes (real ones are at most a few KiB,
/// e.g. XSAVE areas); larger values mean the input is not a lackey trace.
pub const MAX_ACCESS: u64 = 1 << 20;

/// Streams references from lackey output.
pub struct LackeyReader<R> {
    lines: Lines<R>,
    name: String,
    opts: ImportOptions,
    /// Pages of the current access still to yield: (next, last, write).
    pending: Option<(u64, u64, bool)>,
    done: bool,
}

impl<R: BufRead> LackeyReader<R> {
    pub fn new(inner: R, name: &str, opts: &ImportOptions) -> Result<Self> {
        opts.check()?;
        Ok(LackeyReader {
            lines: Lines::new(inner, name),
            name: name.to_string(),
            opts: opts.clone(),
            pending: None,
            done: false,
        })
    }
}

/// One parsed access: `None` for lines to skip.
fn parse_line(
    line: &str,
    page_size: u64,
    include_instructions: bool,
) -> std::result::Result<Option<(u64, u64, bool)>, String> {
    if line.starts_with("==") {
        return Ok(None);
    }
    let t = line.trim();
    if t.is_empty() || t.starts_with("SB ") {
        return Ok(None);
    }
    let mut it = t.splitn(2, char::is_whitespace);
    let kind = it.next().unwrap_or("");
    let rest = it.next().unwrap_or("").trim();
    let write = match kind {
        "I" => {
            if !include_instructions {
                return Ok(None);
            }
            false
        }
        "L" => false,
        "S" | "M" => true,
        _ => {
            return Err(format!(
                "'{}' is not a lackey access (expected I, L, S or M, then address,size)",
                shorten(t)
            ))
        }
    };
    let Some((addr, size)) = rest.split_once(',') else {
        return Err(format!(
            "expected 'address,size' after '{kind}', found '{}'",
            shorten(rest)
        ));
    };
    let addr =
        parse_hex(addr.trim()).map_err(|why| format!("bad address '{}': {why}", shorten(addr)))?;
    let size: u64 = size.trim().parse().map_err(|_| {
        format!(
            "bad size '{}': expected a decimal byte count",
            shorten(size)
        )
    })?;
    if size > MAX_ACCESS {
        return Err(format!(
            "access size {size} is implausible (more than {MAX_ACCESS} bytes)"
        ));
    }
    let first = addr / page_size;
    let end = addr.saturating_add(size.max(1) - 1);
    let last = end / page_size;
    Ok(Some((first, last, write)))
}

impl<R: BufRead> RefSource for LackeyReader<R> {
    fn next_batch(&mut self, batch: &mut RefBatch, max: usize) -> Result<bool> {
        batch.clear();
        let max = max.max(1);
        loop {
            while let Some((next, last, write)) = self.pending {
                if batch.len() >= max {
                    break;
                }
                batch.page.push(next);
                batch.write.push(write);
                self.pending = if next >= last {
                    None
                } else {
                    Some((next + 1, last, write))
                };
            }
            if self.done || batch.len() >= max {
                break;
            }
            let line = match self.lines.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => {
                    self.done = true;
                    break;
                }
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            };
            match parse_line(line, self.opts.page_size, self.opts.include_instructions) {
                Ok(None) => {}
                Ok(Some(access)) => self.pending = Some(access),
                Err(why) => {
                    self.done = true;
                    return Err(Error::parse(
                        "bad lackey line",
                        format!("line {}", self.lines.line),
                        why,
                    ));
                }
            }
        }
        batch.check()?;
        Ok(!batch.is_empty())
    }

    fn source(&self) -> Source {
        self.opts.source(&self.name, Format::Lackey)
    }

    fn page_size(&self) -> u64 {
        self.opts.page_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(input: &str, opts: &ImportOptions, max: usize) -> Result<Vec<(u64, bool)>> {
        let mut r = LackeyReader::new(input.as_bytes(), "lackey.log", opts)?;
        let mut out = vec![];
        let mut b = RefBatch::default();
        while r.next_batch(&mut b, max)? {
            assert!(b.len() <= max);
            out.extend(b.page.iter().copied().zip(b.write.iter().copied()));
        }
        Ok(out)
    }

    const SAMPLE: &str = "==123== Lackey, an example Valgrind tool\n\
I  0023C790,2\n \
S BE80199C,4\n \
L BE801950,4\n \
M 0025747C,1\n \
L 00001FFE,4\n\
\n \
S 00003000,1\n \
S 00003000,1\n\
==123== Exit code: 0\n";

    #[test]
    fn maps_kinds_and_splits_page_crossings() {
        let want = vec![
            (0xBE801, true),  // S
            (0xBE801, false), // L
            (0x257, true),    // M → one write
            (0x1, false),     // L 0x1FFE..0x2001 crosses into page 2
            (0x2, false),
            (0x3, true), // repeated references are kept
            (0x3, true),
        ];
        for max in [1, 2, 3, 100] {
            assert_eq!(
                read_all(SAMPLE, &ImportOptions::default(), max).unwrap(),
                want
            );
        }
        let with_i = ImportOptions {
            include_instructions: true,
            ..Default::default()
        };
        let got = read_all(SAMPLE, &with_i, 100).unwrap();
        assert_eq!(got[0], (0x23C, false));
        assert_eq!(&got[1..], &want[..]);
    }

    #[test]
    fn other_page_sizes() {
        let big = ImportOptions {
            page_size: 2 << 20,
            ..Default::default()
        };
        // 0xBE80199C / 2 MiB = 0x5F4.
        let got = read_all(" L BE80199C,4\n L 001FFFFF,2\n", &big, 10).unwrap();
        assert_eq!(got, vec![(0x5F4, false), (0, false), (1, false)]);
    }

    #[test]
    fn errors_name_the_line() {
        let o = ImportOptions::default();
        let e = read_all(" L 10,4\n X 10,4\n", &o, 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
        let e = read_all(" L 1G,4\n", &o, 10).unwrap_err().to_string();
        assert!(
            e.contains("line 1") && e.contains("bad address '1G'"),
            "{e}"
        );
        let e = read_all("\n L 10\n", &o, 10).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("address,size"), "{e}");
        let e = read_all(" S 10,x\n", &o, 10).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("bad size"), "{e}");
        let e = read_all(" S 10,99999999999\n", &o, 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains("implausible"), "{e}");
    }

    #[test]
    fn access_at_top_of_address_space_does_not_overflow() {
        let got = read_all(" S FFFFFFFFFFFFFFFF,8\n", &ImportOptions::default(), 10).unwrap();
        assert_eq!(got, vec![(u64::MAX / 4096, true)]);
    }
}
