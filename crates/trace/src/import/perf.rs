//! `perf script` output of page-fault samples.
//!
//! Record with the data address (`-d`) and print it:
//!
//! ```text
//! perf record -e page-faults -c 1 -d -- prog        # or -e major-faults, minor-faults
//! perf script -F comm,tid,time,event,addr           # ip, sym, dso may follow
//! ```
//!
//! which prints lines like
//!
//! ```text
//!             true 10449  2254.497627: page-faults:     55e9861b01e0 ffffffff81752b6a
//! ```
//!
//! Each sample becomes one reference to page `addr / page_size`, a read (a
//! fault sample does not say whether the access was a write), with
//! `time_ns` and `tid` when the line has them. The reader is tolerant of the
//! field selection, because `perf script` labels no fields:
//!
//! * The **event** is the first token ending in `:` after the time
//!   (`seconds.fraction:`), e.g. `page-faults:`, `major-faults:`,
//!   `exceptions:page_fault_user:`. Every event counts as a fault.
//! * The **tid** is the last integer token before the time (`pid/tid` gives
//!   the tid; a `[cpu]` token is skipped).
//! * The **address** is the first token after the event when it is hex
//!   (perf prints `addr` before `ip`), or the value of an `address=`/`addr=`
//!   token (the `exceptions:page_fault_user` tracepoint; its `error_code`
//!   bit 1 — x86's "write access" — then makes the reference a write).
//! * perf's default output (no `-F`) shows a period column and the sample
//!   *ip* where `-F …,addr` would show the address. A line with a period and
//!   only one bare hex value after the event is taken to be that layout and
//!   rejected with advice, rather than importing instruction addresses. (The
//!   cost: `-F …,period,event,addr` without `ip` is rejected too; leave out
//!   `period`.)
//! * Blank lines, `#` comments (`perf script --header`) and callchain lines
//!   (starting with a hex ip, from `perf record -g`) are skipped.
//!
//! Every sample must show the same optional fields (time, tid) as the
//! first; errors name the line.
use super::{parse_decimal_time, parse_hex, shorten, Format, ImportOptions, Lines, Shape};
use crate::{Error, RefBatch, RefSource, Result, Source};
use std::io::BufRead;

/// Streams page-fault references from `perf script` output.
pub struct PerfScriptReader<R> {
    lines: Lines<R>,
    name: String,
    opts: ImportOptions,
    shape: Shape,
    done: bool,
}

impl<R: BufRead> PerfScriptReader<R> {
    pub fn new(inner: R, name: &str, opts: &ImportOptions) -> Result<Self> {
        opts.check()?;
        Ok(PerfScriptReader {
            lines: Lines::new(inner, name),
            name: name.to_string(),
            opts: opts.clone(),
            shape: Shape::default(),
            done: false,
        })
    }
}

/// One parsed sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sample {
    pub addr: u64,
    pub write: bool,
    pub time_ns: Option<u64>,
    pub tid: Option<u32>,
}

const ADVICE: &str =
    "record with `perf record -d` and print with `perf script -F comm,tid,time,event,addr`";

fn is_time(t: &str) -> bool {
    let Some(body) = t.strip_suffix(':') else {
        return false;
    };
    let Some((a, b)) = body.split_once('.') else {
        return false;
    };
    !a.is_empty()
        && !b.is_empty()
        && a.bytes().all(|c| c.is_ascii_digit())
        && b.bytes().all(|c| c.is_ascii_digit())
}

fn is_hex(t: &str) -> bool {
    let h = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    !h.is_empty() && h.bytes().all(|c| c.is_ascii_hexdigit())
}

fn hex_value(t: &str) -> std::result::Result<u64, String> {
    let h = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    parse_hex(h).map_err(|why| format!("bad address '{}': {why}", shorten(t)))
}

fn is_digits(t: &str) -> bool {
    !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit())
}

/// Parses one line: `None` for lines without a sample.
pub(crate) fn parse_line(line: &str) -> std::result::Result<Option<Sample>, String> {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(None);
    }
    let tokens: Vec<&str> = trimmed.split_whitespace().collect();
    let time_idx = tokens.iter().position(|t| is_time(t));
    let start = time_idx.map_or(0, |i| i + 1);
    let event_idx = tokens
        .iter()
        .enumerate()
        .skip(start)
        .find(|(_, t)| t.len() > 1 && t.ends_with(':') && !is_time(t))
        .map(|(i, _)| i);
    let Some(event_idx) = event_idx else {
        if time_idx.is_none() && is_hex(tokens[0]) {
            return Ok(None); // a callchain line
        }
        return Err(
            "no event name (a token ending in ':', such as 'page-faults:'); is this `perf script` output?"
                .to_string(),
        );
    };
    // A period column sits between the time and the event.
    let period = time_idx.is_some() && event_idx > start && is_digits(tokens[event_idx - 1]);

    let time_ns = match time_idx {
        Some(i) => {
            let t = tokens[i].trim_end_matches(':');
            Some(parse_decimal_time(t, 1_000_000_000)?)
        }
        None => None,
    };
    let head_end = time_idx.unwrap_or(if period { event_idx - 1 } else { event_idx });
    let mut tid = None;
    for t in tokens[..head_end].iter().rev() {
        if t.starts_with('[') && t.ends_with(']') {
            continue; // cpu
        }
        let last = t.rsplit('/').next().unwrap_or(t);
        let is_id = is_digits(last) && t.split('/').all(is_digits) && t.split('/').count() <= 2;
        if is_id {
            tid = Some(
                last.parse::<u32>()
                    .map_err(|_| format!("bad tid '{}': does not fit in 32 bits", shorten(t)))?,
            );
        }
        break;
    }

    let after = &tokens[event_idx + 1..];
    let mut write = false;
    let mut addr = None;
    for t in after {
        if let Some(v) = t
            .strip_prefix("address=")
            .or_else(|| t.strip_prefix("addr="))
        {
            addr = Some(hex_value(v)?);
        } else if let Some(v) = t.strip_prefix("error_code=") {
            write = hex_value(v).map_err(|_| format!("bad error_code '{}'", shorten(v)))? & 2 != 0;
        }
    }
    let addr = match addr {
        Some(a) => a,
        None => {
            let first = after.first().copied().unwrap_or("");
            if !is_hex(first) {
                return Err(format!("no data address after the event name: {ADVICE}"));
            }
            if period {
                let bare = after
                    .iter()
                    .filter(|t| is_hex(t) && !t.starts_with('('))
                    .count();
                if bare < 2 {
                    return Err(format!(
                        "this looks like perf script's default output, which shows the instruction address (ip), not the data address: {ADVICE}"
                    ));
                }
            }
            hex_value(first)?
        }
    };
    Ok(Some(Sample {
        addr,
        write,
        time_ns,
        tid,
    }))
}

impl<R: BufRead> RefSource for PerfScriptReader<R> {
    fn next_batch(&mut self, batch: &mut RefBatch, max: usize) -> Result<bool> {
        batch.clear();
        while !self.done && batch.len() < max.max(1) {
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
            let parsed = parse_line(line);
            let n = self.lines.line;
            let sample = match parsed {
                Ok(Some(s)) => s,
                Ok(None) => continue,
                Err(why) => {
                    self.done = true;
                    return Err(Error::parse(
                        "bad perf script line",
                        format!("line {n}"),
                        why,
                    ));
                }
            };
            if let Err(e) = self
                .shape
                .check(sample.time_ns.is_some(), sample.tid.is_some(), || {
                    format!("line {n}")
                })
            {
                self.done = true;
                return Err(e);
            }
            batch.page.push(sample.addr / self.opts.page_size);
            batch.write.push(sample.write);
            if let Some(t) = sample.time_ns {
                batch.time_ns.push(t);
            }
            if let Some(t) = sample.tid {
                batch.tid.push(t);
            }
        }
        batch.check()?;
        Ok(!batch.is_empty())
    }

    fn source(&self) -> Source {
        self.opts.source(&self.name, Format::PerfScript)
    }

    fn page_size(&self) -> u64 {
        self.opts.page_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(addr: u64, time_ns: Option<u64>, tid: Option<u32>) -> Sample {
        Sample {
            addr,
            write: false,
            time_ns,
            tid,
        }
    }

    #[test]
    fn field_selections() {
        // -F comm,tid,time,event,addr,ip
        assert_eq!(
            parse_line("            true 10449  2254.497627: page-faults:     55e9861b01e0 ffffffff81752b6a"),
            Ok(Some(s(0x55e9861b01e0, Some(2_254_497_627_000), Some(10449))))
        );
        // -F tid,time,event,addr,ip,sym
        assert_eq!(
            parse_line(" 9263   813.504732: page-faults:     556b828bd5c0 __progname ffffffff81752b6a elf_load"),
            Ok(Some(s(0x556b828bd5c0, Some(813_504_732_000), Some(9263))))
        );
        // pid/tid, cpu, nanosecond time, comm with a space.
        assert_eq!(
            parse_line("Web Content 100/101 [003] 12.000000001: major-faults: 7f0000001000"),
            Ok(Some(s(0x7f0000001000, Some(12_000_000_001), Some(101))))
        );
        // +addr on the default layout: period, addr, sym, dso, ip, sym, dso.
        assert_eq!(
            parse_line("ls  9263   813.504732:          1 page-faults:     556b828bd5c0 __progname+0x0 (/usr/bin/ls) ffffffff81752b6a elf_load+0x28a ([kernel.kallsyms])"),
            Ok(Some(s(0x556b828bd5c0, Some(813_504_732_000), Some(9263))))
        );
        // No time, no comm.
        assert_eq!(
            parse_line("42 page-faults: 0x1000"),
            Ok(Some(s(0x1000, None, Some(42))))
        );
        // Tracepoint with error_code: bit 1 set = write.
        let tp = "ls  9296 [000]   826.401405: exceptions:page_fault_user: address=0x7f3b81c04e06 ip=0x7f3b81bec7ad error_code=0x6";
        assert_eq!(
            parse_line(tp),
            Ok(Some(Sample {
                addr: 0x7f3b81c04e06,
                write: true,
                time_ns: Some(826_401_405_000),
                tid: Some(9296)
            }))
        );
        // Skipped lines.
        assert_eq!(parse_line(""), Ok(None));
        assert_eq!(parse_line("# ========"), Ok(None));
        assert_eq!(
            parse_line("\t    7f3b81bec7ad _dl_start+0x59 (/lib/ld.so)"),
            Ok(None)
        );
    }

    #[test]
    fn rejects_lines_without_a_data_address() {
        // perf's default output: the hex value is the ip.
        let e = parse_line("ls  9263   813.504732:          1 page-faults:  ffffffff81752b6a elf_load+0x28a ([kernel.kallsyms])").unwrap_err();
        assert!(e.contains("perf record -d") && e.contains("-F"), "{e}");
        let e = parse_line("ls 1 1.0: page-faults:").unwrap_err();
        assert!(e.contains("no data address"), "{e}");
        let e = parse_line("ls 1 1.0: page-faults: [unknown]").unwrap_err();
        assert!(e.contains("no data address"), "{e}");
        assert!(parse_line("hello world")
            .unwrap_err()
            .contains("no event name"));
        assert!(parse_line("ls 1 1.0: page-faults: 123456789abcdef01").is_err());
        assert!(parse_line("ls 99999999999 1.0: page-faults: 10").is_err());
    }

    #[test]
    fn reader_pages_and_errors_with_line_numbers() {
        let input = "# header\nls 7 1.000001: page-faults: 2000\nls 7 1.000002: page-faults: 2fff\nls 8 1.5: page-faults: 0x5000\n";
        let mut r =
            PerfScriptReader::new(input.as_bytes(), "p.txt", &ImportOptions::default()).unwrap();
        let mut b = RefBatch::default();
        assert!(r.next_batch(&mut b, 10).unwrap());
        assert_eq!(b.page, vec![2, 2, 5]);
        assert_eq!(b.write, vec![false; 3]);
        assert_eq!(b.time_ns, vec![1_000_001_000, 1_000_002_000, 1_500_000_000]);
        assert_eq!(b.tid, vec![7, 7, 8]);
        assert!(!r.next_batch(&mut b, 10).unwrap());

        let bad = "ls 7 1.0: page-faults: 2000\n\nls 7 1.0: page-faults: zz\n";
        let mut r =
            PerfScriptReader::new(bad.as_bytes(), "p.txt", &ImportOptions::default()).unwrap();
        let e = r.next_batch(&mut b, 10).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("-d"), "{e}");

        // Optional fields must not come and go.
        let mixed = "ls 7 1.0: page-faults: 2000\npage-faults: 3000\n";
        let mut r =
            PerfScriptReader::new(mixed.as_bytes(), "p.txt", &ImportOptions::default()).unwrap();
        let e = r.next_batch(&mut b, 10).unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
    }
}
