//! Plain-text traces: one reference per line.
//!
//! A line is `id [op]`: the page/object id in decimal or `0x`-hex, then
//! optionally `r`/`read` or `w`/`write` (case-insensitive; default read),
//! separated by white space or a comma. Blank lines and `#` comments (a whole
//! line, or the rest of a line) are skipped.
use super::{shorten, Format, ImportOptions, Lines};
use crate::{Error, RefBatch, RefSource, Result, Source};
use std::io::BufRead;

/// Streams references from a text file of ids.
pub struct TxtReader<R> {
    lines: Lines<R>,
    name: String,
    opts: ImportOptions,
    done: bool,
}

impl<R: BufRead> TxtReader<R> {
    pub fn new(inner: R, name: &str, opts: &ImportOptions) -> Result<Self> {
        opts.check()?;
        Ok(TxtReader {
            lines: Lines::new(inner, name),
            name: name.to_string(),
            opts: opts.clone(),
            done: false,
        })
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
