//! Plain-text traces: one reference per line.
//!
//! A line is `id [op]`: the page/object id in decimal or `0x`-hex, then
//! optionally `r`/`read` or `w`/`write` (case-insensitive; default read),
//! separated by white space or a comma. Blank lines and `#` comments (a whole
//! line, or the rest of a line) are skipped.
use super::par::{self, decimal_prefix, fast_id, LineError, Parsed};
use super::{shorten, Format, ImportOptions, Lines, MAX_LINE};
use crate::{DenseTrace, Error, RefBatch, RefSource, Result, Source};
use std::io::BufRead;

/// Streams references from a text file of ids.
pub struct TxtReader<R> {
    lines: Lines<R>,
    name: String,
    opts: ImportOptions,
    done: bool,
    /// The input's size in bytes, when known (a plain file): its two
    /// halves are then mapped on two threads ([`par::load`]).
    size: Option<u64>,
}

impl<R: BufRead> TxtReader<R> {
    pub fn new(inner: R, name: &str, opts: &ImportOptions) -> Result<Self> {
        opts.check()?;
        Ok(TxtReader {
            lines: Lines::new(inner, name),
            name: name.to_string(),
            opts: opts.clone(),
            done: false,
            size: None,
        })
    }

    /// Notes the input's size in bytes (a plain file's).
    pub(crate) fn with_size(mut self, size: Option<u64>) -> Self {
        self.size = size;
        self
    }
}

/// Parses one line: `None` for a blank or comment line.
fn parse_line(line: &str) -> std::result::Result<Option<(u64, bool)>, String> {
    let line = line.split_once('#').map_or(line, |(a, _)| a);
    let mut tokens = line
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty());
    let Some(id) = tokens.next() else {
        return Ok(None);
    };
    let page = super::parse_id(id)?;
    let write = match tokens.next() {
        None => false,
        Some(op) => match op.to_ascii_lowercase().as_str() {
            "r" | "read" => false,
            "w" | "write" => true,
            _ => {
                return Err(format!(
                    "bad op '{}': expected r or w after the id",
                    shorten(op)
                ))
            }
        },
    };
    if let Some(extra) = tokens.next() {
        return Err(format!(
            "unexpected '{}': a line is 'id [r|w]'",
            shorten(extra)
        ));
    }
    Ok(Some((page, write)))
}

/// White space as `char::is_whitespace` has it in ASCII, or a comma: what
/// separates the tokens of a line.
#[inline]
fn is_sep(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b',')
}

/// The common line, `id [r|w]` in ASCII, as [`parse_line`] reads it;
/// `None`: anything else (let `parse_line` decide).
#[inline]
fn fast_line(line: &[u8]) -> Option<Option<(u64, bool)>> {
    let mut rest = line;
    if let Some(i) = rest.iter().position(|&b| b == b'#' || b >= 0x80) {
        if rest[i] >= 0x80 {
            return None;
        }
        rest = &rest[..i];
    }
    let mut tokens = rest.split(|&b| is_sep(b)).filter(|t| !t.is_empty());
    let Some(id) = tokens.next() else {
        return Some(None);
    };
    let page = fast_id(id)?;
    let write = match tokens.next() {
        None => false,
        Some(op) if op.eq_ignore_ascii_case(b"r") || op.eq_ignore_ascii_case(b"read") => false,
        Some(op) if op.eq_ignore_ascii_case(b"w") || op.eq_ignore_ascii_case(b"write") => true,
        Some(_) => return None,
    };
    if tokens.next().is_some() {
        return None;
    }
    Some(Some((page, write)))
}

/// The commonest line in one pass: an id in decimal or `0x`-hex, then
/// optionally one space, tab or comma and `r`/`w` (either case), then
/// `\n`, `\r\n` or the end of the chunk. `(page, write, bytes consumed)`;
/// `None`: anything else, for [`fast_line`] and [`parse_line`] to decide
/// (they give the same result for what this accepts).
#[inline]
fn fast_simple(b: &[u8]) -> Option<(u64, bool, usize)> {
    let end = |c: Option<&u8>| matches!(c, None | Some(b' ' | b'\t' | b',' | b'\n' | b'\r'));
    let (page, i) = match decimal_prefix(b) {
        Some((v, i)) if end(b.get(i)) => (v, i),
        _ => {
            let mut i = 0;
            while !end(b.get(i)) {
                i += 1;
            }
            (fast_id(&b[..i])?, i)
        }
    };
    let (write, i) = match b.get(i) {
        Some(b' ' | b'\t' | b',') => match b.get(i + 1) {
            Some(b'r' | b'R') => (false, i + 2),
            Some(b'w' | b'W') => (true, i + 2),
            _ => return None,
        },
        _ => (false, i),
    };
    match b.get(i) {
        None => Some((page, write, i)),
        Some(b'\n') => Some((page, write, i + 1)),
        Some(b'\r') if b.get(i + 1) == Some(&b'\n') => Some((page, write, i + 2)),
        _ => None,
    }
}

/// Parses a chunk of whole lines (the parallel loader's worker).
fn parse_chunk(bytes: &[u8]) -> Parsed {
    let mut p = Parsed::default();
    p.keys.reserve(bytes.len() / 8);
    let mut at = 0;
    let mut line = 0u64;
    while at < bytes.len() {
        line += 1;
        if let Some((page, write, used)) = fast_simple(&bytes[at..]) {
            p.push(page, write);
            at += used;
            continue;
        }
        let rest = &bytes[at..];
        let (mut l, len) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], i + 1),
            None => (rest, rest.len()),
        };
        at += len;
        if len > MAX_LINE + 2 {
            p.err = Some(LineError {
                line,
                what: "over-long line",
                column: String::new(),
                why: format!(
                    "longer than {MAX_LINE} bytes; is this a text file of the right format?"
                ),
                line1_hint: "",
            });
            break;
        }
        if let [head @ .., b'\r'] = l {
            l = head;
        }
        let r = match fast_line(l) {
            Some(r) => Ok(r),
            None => parse_line(&String::from_utf8_lossy(l)),
        };
        match r {
            Ok(None) => {}
            Ok(Some((page, write))) => p.push(page, write),
            Err(why) => {
                p.err = Some(LineError {
                    line,
                    what: "bad text trace line",
                    column: String::new(),
                    why,
                    line1_hint: "",
                });
                break;
            }
        }
    }
    // Lines end at newlines: all of them, but an unterminated last one.
    p.lines = line - u64::from(bytes.last().is_some_and(|&b| b != b'\n'));
    p
}

impl<R: BufRead> TxtReader<R> {
    /// The parallel loader (see [`par`]): chunks of lines parsed on every
    /// core, ids mapped on one more thread.
    fn load_dense_par(&mut self, progress: &mut dyn FnMut(u64)) -> Result<DenseTrace> {
        let (size, page_size, source) = (self.size, self.opts.page_size, self.source());
        par::load(size, page_size, source, |a, b| self.run_par(a, b, progress))
    }

    /// Runs [`par::run`] over the rest of the input into `first` (and
    /// `second`, from its offset on).
    fn run_par<S: par::Sink>(
        &mut self,
        first: S,
        second: Option<(u64, S)>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(S, Option<S>)> {
        self.done = true;
        let name = self.name.clone();
        let first_line = self.lines.line + 1;
        let inner = self.lines.inner_mut();
        par::run(
            parse_chunk,
            |feed| {
                par::chunk_lines(
                    inner,
                    &name,
                    Vec::new(),
                    Some(MAX_LINE + 2),
                    &|_| false,
                    &mut |c| {
                        let more = feed.chunk(c);
                        progress(feed.mapped());
                        more
                    },
                )?;
                Ok(())
            },
            first_line,
            first,
            second,
        )
    }
}

impl<R: BufRead> RefSource for TxtReader<R> {
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
            match parse_line(line) {
                Ok(None) => {}
                Ok(Some((page, write))) => {
                    batch.page.push(page);
                    batch.write.push(write);
                }
                Err(why) => {
                    self.done = true;
                    return Err(Error::parse(
                        "bad text trace line",
                        format!("line {}", self.lines.line),
                        why,
                    ));
                }
            }
        }
        batch.check()?;
        Ok(!batch.is_empty())
    }

    /// Straight to the dense form on all cores, before any batch was read.
    fn load_dense(&mut self, progress: &mut dyn FnMut(u64)) -> Option<Result<DenseTrace>> {
        if self.done || self.lines.line != 0 {
            return None;
        }
        Some(self.load_dense_par(progress))
    }

    /// Parsed on every core, before any batch was read.
    fn feed_all(
        &mut self,
        sink: &mut crate::RefSink<'_>,
        progress: &mut dyn FnMut(u64),
    ) -> Option<Result<()>> {
        if self.done || self.lines.line != 0 {
            return None;
        }
        Some(self.run_par(sink, None, progress).map(|_| ()))
    }

    fn source(&self) -> Source {
        self.opts.source(&self.name, Format::Text)
    }

    fn page_size(&self) -> u64 {
        self.opts.page_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(input: &str) -> Result<(Vec<u64>, Vec<bool>)> {
        let mut r = TxtReader::new(input.as_bytes(), "t.txt", &ImportOptions::default())?;
        let (mut p, mut w) = (vec![], vec![]);
        let mut b = RefBatch::default();
        while r.next_batch(&mut b, 3)? {
            p.extend_from_slice(&b.page);
            w.extend_from_slice(&b.write);
            assert!(b.time_ns.is_empty() && b.tid.is_empty());
        }
        Ok((p, w))
    }

    #[test]
    fn ids_ops_comments_and_blanks() {
        let input = "# a trace\n1\n\n0x10 w\n  2   R  # trailing comment\n3,write\r\n0XfF\n";
        let (p, w) = read_all(input).unwrap();
        assert_eq!(p, vec![1, 16, 2, 3, 255]);
        assert_eq!(w, vec![false, true, false, true, false]);
    }

    #[test]
    fn errors_name_the_line() {
        let e = read_all("1\n2\n0xg1\n").unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("0xg1"), "{e}");
        let e = read_all("1\n2 x\n").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("bad op 'x'"), "{e}");
        let e = read_all("1 r extra\n").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("extra"), "{e}");
        let e = read_all("-5\n").unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn empty_input() {
        assert_eq!(read_all("").unwrap(), (vec![], vec![]));
        assert_eq!(read_all("\n# only comments\n\n").unwrap(), (vec![], vec![]));
    }
}
