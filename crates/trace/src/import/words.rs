//! The built-in workloads' own recording of their page references
//! (`swaplab-workload NAME --refs-fd FD`, native/workloads/refs.c): a
//! stream of little-endian u64 words, `(page << 1) | write`, with no
//! header. Read from a pipe as the workload writes it.

use std::io::Read;
use std::path::PathBuf;

use crate::{Error, RefBatch, Result};

/// Decodes a workload's reference stream into batches.
pub struct WordRefs<R> {
    inner: R,
    buf: Vec<u8>,
    /// Bytes of `buf` not yet decoded (a word split across reads).
    have: usize,
    eof: bool,
}

impl<R: Read> WordRefs<R> {
    pub fn new(inner: R) -> Self {
        WordRefs {
            inner,
            buf: vec![0; 1 << 20],
            have: 0,
            eof: false,
        }
    }

    /// Fills `batch` (cleared) with up to `max` references; false at the
    /// end. A stream that ends inside a word is an error.
    pub fn next_batch(&mut self, batch: &mut RefBatch, max: usize) -> Result<bool> {
        batch.clear();
        while batch.len() < max {
            let whole = self.have / 8 * 8;
            let take = whole.min((max - batch.len()) * 8);
            for w in self.buf[..take].chunks_exact(8) {
                let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
                batch.page.push(v >> 1);
                batch.write.push(v & 1 == 1);
            }
            self.buf.copy_within(take..self.have, 0);
            self.have -= take;
            if batch.len() >= max {
                break;
            }
            if self.eof {
                if self.have != 0 {
                    return Err(Error::Invalid(format!(
                        "the workload's reference stream ended inside a word ({} stray bytes)",
                        self.have
                    )));
                }
                break;
            }
            let n = loop {
                match self.inner.read(&mut self.buf[self.have..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(Error::File {
                            op: "reading the workload's references from",
                            path: PathBuf::from("its pipe"),
                            source: e,
                        })
                    }
                }
            };
            if n == 0 {
                self.eof = true;
            }
            self.have += n;
        }
        Ok(!batch.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads one byte at a time, so words arrive split across reads.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let Some((&b, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            out[0] = b;
            self.0 = rest;
            Ok(1)
        }
    }

    fn words(refs: &[(u64, bool)]) -> Vec<u8> {
        refs.iter()
            .flat_map(|&(p, w)| ((p << 1) | w as u64).to_le_bytes())
            .collect()
    }

    #[test]
    fn words_decode_in_batches_across_split_reads() {
        let refs = [
            (7, false),
            (1 << 40, true),
            (0, true),
            (3, false),
            (7, true),
        ];
        let bytes = words(&refs);
        let mut r = WordRefs::new(Trickle(&bytes));
        let mut b = RefBatch::default();
        let mut got = Vec::new();
        while r.next_batch(&mut b, 2).unwrap() {
            assert!(b.len() <= 2);
            got.extend(b.page.iter().copied().zip(b.write.iter().copied()));
        }
        assert_eq!(got, refs);
        assert!(!r.next_batch(&mut b, 2).unwrap() && b.is_empty());
    }

    #[test]
    fn a_stream_ending_inside_a_word_is_an_error() {
        let mut bytes = words(&[(5, true)]);
        bytes.extend_from_slice(&[1, 2, 3]);
        let mut r = WordRefs::new(&bytes[..]);
        let mut b = RefBatch::default();
        let e = r.next_batch(&mut b, 10).unwrap_err().to_string();
        assert!(e.contains("ended inside a word (3 stray bytes)"), "{e}");
    }
}
