//! Command-line arguments as text, losslessly, even when they are not
//! UTF-8.
//!
//! A Linux argument is any string of non-NUL bytes; swaplab keeps commands
//! as `String`s (in records, the catalog, traces and reports). [`encode`]
//! maps every argument to a `String` from which [`decode`] gives back the
//! exact bytes to execute:
//!
//! * valid UTF-8 stays as it is, except the 128 private-use characters
//!   U+F780..=U+F7FF (which no text uses in practice);
//! * each byte 0x80..=0xFF that is not part of valid UTF-8, and each byte
//!   of the UTF-8 form of one of those 128 characters, becomes the
//!   character U+F700 + byte.
//!
//! So `decode(encode(x)) == x` for every byte string (tested on the edge
//! cases and 5,000 random byte strings), and an argument that is valid UTF-8
//! without those characters — every argument anyone types — is stored
//! unchanged. People see arguments through [`shell_word`]: an argument with
//! raw bytes is written in bash's `$'…'` form with `\xHH` escapes, which
//! reads correctly and pastes back into a shell as the same bytes.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// The first character of the escape range (U+F780 stands for byte 0x80).
const BASE: u32 = 0xF700;

fn is_escape(c: char) -> bool {
    (0xF780..=0xF7FF).contains(&u32::from(c))
}

fn escape(out: &mut String, byte: u8) {
    // In range by construction: BASE + 0x80..=0xFF is U+F780..=U+F7FF.
    out.push(char::from_u32(BASE + u32::from(byte)).unwrap_or('\u{FFFD}'));
}

/// The text form of an argument (see the module doc).
pub fn encode(arg: &OsStr) -> String {
    let mut out = String::with_capacity(arg.len());
    for chunk in arg.as_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            if is_escape(c) {
                let mut buf = [0u8; 4];
                for &b in c.encode_utf8(&mut buf).as_bytes() {
                    escape(&mut out, b);
                }
            } else {
                out.push(c);
            }
        }
        for &b in chunk.invalid() {
            escape(&mut out, b);
        }
    }
    out
}

/// The bytes an encoded argument stands for.
pub fn decode(text: &str) -> OsString {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        if is_escape(c) {
            out.push((u32::from(c) - BASE) as u8);
        } else {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    OsString::from_vec(out)
}

/// Whether an encoded argument holds bytes that are not plain text.
pub fn has_raw_bytes(text: &str) -> bool {
    text.chars().any(is_escape)
}

/// An encoded argument as a shell reads it back: shell quoting where
/// needed, and bash's `$'…'` with `\xHH` for raw bytes and control
/// characters.
pub fn shell_word(text: &str) -> String {
    if !has_raw_bytes(text) && !text.chars().any(char::is_control) {
        if let Ok(q) = shlex::try_quote(text) {
            return q.into_owned();
        }
    }
    let mut s = String::from("$'");
    for c in text.chars() {
        match c {
            c if is_escape(c) => s.push_str(&format!("\\x{:02x}", u32::from(c) - BASE)),
            '\\' => s.push_str("\\\\"),
            '\'' => s.push_str("\\'"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).as_bytes() {
                    s.push_str(&format!("\\x{b:02x}"));
                }
            }
            c => s.push(c),
        }
    }
    s.push('\'');
    s
}

/// A command line as a shell reads it back (see [`shell_word`]).
pub fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| shell_word(a))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(bytes: &[u8]) {
        let enc = encode(OsStr::from_bytes(bytes));
        assert_eq!(decode(&enc).as_bytes(), bytes, "{enc:?}");
    }

    #[test]
    fn text_is_kept_and_every_byte_string_comes_back() {
        for s in [
            "",
            "plain",
            "<script>alert(1)</script>",
            "café ☕",
            "a b 'c' \"d\"",
        ] {
            assert_eq!(encode(OsStr::new(s)), s);
            assert!(!has_raw_bytes(s));
        }
        round_trip(b"caf\xe9");
        round_trip(b"\xff\xfe\x80");
        round_trip(b"ok\xc3"); // a truncated sequence
        round_trip("\u{F780}\u{F7FF}x".as_bytes()); // the escape range itself
        round_trip(b"\xef\x9e\x80"); // = U+F780 as UTF-8
                                     // Random byte strings, ASCII-heavy and not.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for n in 0..5000 {
            let len = n % 23;
            let v: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let b = (x >> 24) as u8;
                    if n % 3 == 0 {
                        b & 0x7f
                    } else {
                        b
                    }
                })
                .filter(|&b| b != 0)
                .collect();
            round_trip(&v);
        }
    }

    #[test]
    fn people_see_what_a_shell_reads_back() {
        let raw = encode(OsStr::from_bytes(b"caf\xe9 'x'"));
        assert!(has_raw_bytes(&raw));
        assert_eq!(shell_word(&raw), r"$'caf\xe9 \'x\''");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("plain"), "plain");
        assert_eq!(shell_word("tab\there"), r"$'tab\x09here'");
        assert_eq!(
            shell_line(&["prog".into(), raw, "<b>".into()]),
            r"prog $'caf\xe9 \'x\'' '<b>'"
        );
    }
}
