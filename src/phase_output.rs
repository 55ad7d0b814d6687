//! Kanister's phase-output protocol (`pkg/output`): a line containing
//! `###Phase-output###:` followed by JSON `{"key":"<key>","value":"<value>"}`.
//! The marker may appear anywhere in a line (text before it is ordinary log),
//! the rest of the line is trimmed and JSON-decoded, invalid JSON is an error,
//! and later keys overwrite earlier ones.

use memchr::memmem;
use serde_json::Value;

/// Phase output: key → string value.
pub type Output = serde_json::Map<String, Value>;

/// The marker `kando output` prints before its JSON.
pub const MARKER: &str = "###Phase-output###:";

/// Every phase-output line of `text` (a pod log or exec stdout), whole.
pub fn parse(text: &str) -> Result<Output, LineError> {
    let mut sc = Scanner::default();
    sc.feed(text.as_bytes());
    sc.finish()
}

/// A phase-output line that cannot be read (the first one; lines count from 1).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LineError {
    #[error("line {0}: a line with `{MARKER}` is longer than {MAX_LINE} bytes")]
    TooLong(usize),
    #[error(
        "line {line}: {why}; expected `{MARKER} {{\"key\":\"<key>\",\"value\":\"<value>\"}}` (as printed by `kando output <key> <value>`), got `{got}`"
    )]
    Bad {
        line: usize,
        why: BadLine,
        /// The text after the marker, truncated.
        got: String,
    },
}

/// What is wrong with the JSON after the marker.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadLine {
    /// serde_json's message.
    #[error("invalid JSON: {0}")]
    Json(String),
    #[error("not a JSON object")]
    NotObject,
    #[error("`key` is missing or empty")]
    NoKey,
    #[error("`key` must be a string, not {0}")]
    KeyNotString(Value),
    #[error("`value` must be a string, not {0}")]
    ValueNotString(Value),
}

/// Longest line kept whole while scanning; a longer line that carries the
/// marker is an error (a pod log or exec stream is read in bounded memory).
pub const MAX_LINE: usize = 1 << 20;

/// Streaming [`parse`]: fed the bytes of a log or stdout as they arrive,
/// keeps only the current line (at most [`MAX_LINE`]) and the outputs.
#[derive(Debug, Default)]
pub struct Scanner {
    line: Vec<u8>,
    /// Lines completed so far.
    lines: usize,
    /// The current line outgrew [`MAX_LINE`]; only its tail is kept, to find a marker.
    overlong: bool,
    marker_in_overlong: bool,
    out: Output,
    error: Option<LineError>,
}

impl Scanner {
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (part, rest, eol) = match bytes.iter().position(|b| *b == b'\n') {
                Some(i) => (&bytes[..i], &bytes[i + 1..], true),
                None => (bytes, &bytes[bytes.len()..], false),
            };
            self.push(part);
            if eol {
                self.end_line();
            }
            bytes = rest;
        }
    }

    fn push(&mut self, part: &[u8]) {
        self.line.extend_from_slice(part);
        if self.line.len() > MAX_LINE {
            self.overlong = true;
            self.marker_in_overlong |= memmem::find(&self.line, MARKER.as_bytes()).is_some();
            // Keep what a marker split across chunks needs.
            let keep = MARKER.len() - 1;
            self.line.drain(..self.line.len() - keep);
        }
    }

    fn end_line(&mut self) {
        self.lines += 1;
        let line = std::mem::take(&mut self.line);
        if self.error.is_some() {
            return;
        }
        if self.overlong {
            let marker =
                self.marker_in_overlong || memmem::find(&line, MARKER.as_bytes()).is_some();
            self.overlong = false;
            self.marker_in_overlong = false;
            if marker {
                self.error = Some(LineError::TooLong(self.lines));
            }
            return;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        match parse_line(self.lines, text) {
            Ok(Some((k, v))) => {
                self.out.insert(k, Value::String(v));
            }
            Ok(None) => {}
            Err(e) => self.error = Some(e),
        }
    }

    /// The outputs, or the first bad line's message.
    pub fn finish(mut self) -> Result<Output, LineError> {
        if !self.line.is_empty() || self.overlong {
            self.end_line();
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.out),
        }
    }
}

/// One line (number `n`, from 1): `Ok(None)` without the marker.
fn parse_line(n: usize, line: &str) -> Result<Option<(String, String)>, LineError> {
    let Some(pos) = line.find(MARKER) else {
        return Ok(None);
    };
    let rest = line[pos + MARKER.len()..].trim();
    let bad = |why: BadLine| LineError::Bad {
        line: n,
        why,
        got: truncate(rest, 200),
    };
    let v: Value = serde_json::from_str(rest).map_err(|e| bad(BadLine::Json(e.to_string())))?;
    let Value::Object(obj) = v else {
        return Err(bad(BadLine::NotObject));
    };
    let key = match obj.get("key") {
        Some(Value::String(k)) if !k.is_empty() => k.clone(),
        Some(Value::String(_)) | None => return Err(bad(BadLine::NoKey)),
        Some(other) => return Err(bad(BadLine::KeyNotString(other.clone()))),
    };
    let value = match obj.get("value") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => return Err(bad(BadLine::ValueNotString(other.clone()))),
    };
    Ok(Some((key, value)))
}

/// The last bytes of a stream, at most `max` (a log or exec output read in
/// bounded memory): [`Tail::text`] starts at a line boundary and says how
/// much was left out.
#[derive(Debug)]
pub struct Tail {
    buf: Vec<u8>,
    max: usize,
    dropped: u64,
}

/// What [`Tail`]s of pod logs and exec streams keep.
pub const TAIL_BYTES: usize = 1 << 20;

impl Default for Tail {
    fn default() -> Self {
        Tail::new(TAIL_BYTES)
    }
}

impl Tail {
    pub fn new(max: usize) -> Self {
        Tail {
            buf: Vec::new(),
            max,
            dropped: 0,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        // Trim in batches: at most twice `max` is held.
        if self.buf.len() > 2 * self.max {
            let cut = self.buf.len() - self.max;
            self.buf.drain(..cut);
            self.dropped += cut as u64;
        }
    }

    pub fn text(mut self) -> String {
        if self.buf.len() > self.max {
            let cut = self.buf.len() - self.max;
            self.buf.drain(..cut);
            self.dropped += cut as u64;
        }
        if self.dropped == 0 {
            return String::from_utf8_lossy(&self.buf).into_owned();
        }
        let start = self
            .buf
            .iter()
            .position(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let dropped = self.dropped + start as u64;
        format!(
            "[{dropped} earlier bytes not kept]\n{}",
            String::from_utf8_lossy(&self.buf[start..])
        )
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_marker_anywhere_and_later_keys_win() {
        let log = "starting\n\
            ###Phase-output###: {\"key\":\"a\",\"value\":\"1\"}\n\
            2024-01-01 prefix text ###Phase-output###:   {\"key\":\"b\",\"value\":\"two words\"}   \r\n\
            noise ###Phase-output### not a marker\n\
            ###Phase-output###:{\"key\":\"a\",\"value\":\"3\"}\n";
        let out = parse(log).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out["a"], "3");
        assert_eq!(out["b"], "two words");
    }

    #[test]
    fn no_marker_no_output() {
        assert!(parse("hello\nworld").unwrap().is_empty());
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn invalid_json_is_an_error_naming_the_line() {
        let e = parse("ok\n###Phase-output###: {key: a}\n").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("line 2: invalid JSON"), "{msg}");
        assert!(msg.contains("{key: a}"), "{msg}");
    }

    #[test]
    fn non_object_or_bad_fields_are_errors() {
        assert!(parse("###Phase-output###: [1]").is_err());
        assert!(parse("###Phase-output###: {\"value\":\"x\"}").is_err());
        assert!(parse("###Phase-output###: {\"key\":\"k\",\"value\":1}").is_err());
        assert!(parse("###Phase-output###:").is_err());
        let out = parse("###Phase-output###: {\"key\":\"k\"}").unwrap();
        assert_eq!(out["k"], "");
    }

    #[test]
    fn long_garbage_is_truncated_in_the_message() {
        let line = format!("###Phase-output###: {}", "é".repeat(500));
        let msg = parse(&line).unwrap_err().to_string();
        assert!(msg.len() < 700, "{}", msg.len());
    }

    #[test]
    fn streamed_in_pieces_equals_parsed_whole() {
        let log = "a\r\nx ###Phase-output###: {\"key\":\"k\",\"value\":\"v\"}\r\nb\n###Phase-output###: {\"key\":\"z\",\"value\":\"1\"}";
        let whole = parse(log).unwrap();
        for size in [1, 2, 7, 19] {
            let mut sc = Scanner::default();
            for chunk in log.as_bytes().chunks(size) {
                sc.feed(chunk);
            }
            assert_eq!(sc.finish().unwrap(), whole, "chunks of {size}");
        }
        assert_eq!(whole["k"], "v");
        assert_eq!(whole["z"], "1");
    }

    #[test]
    fn large_output_is_scanned_in_bounded_memory() {
        // 64 MiB of log with outputs at the start, in an overlong line's
        // neighbourhood and at the end; the scanner holds one line at most.
        let mut sc = Scanner::default();
        let mut tail = Tail::new(4096);
        let first = b"###Phase-output###: {\"key\":\"first\",\"value\":\"1\"}\n";
        sc.feed(first);
        tail.push(first);
        let noise = vec![b'x'; 1023];
        for _ in 0..64 * 1024 {
            sc.feed(&noise);
            sc.feed(b"\n");
            tail.push(&noise);
            tail.push(b"\n");
            assert!(sc.line.capacity() <= 2 * MAX_LINE + 4096);
            assert!(tail.buf.capacity() <= 4 * 4096 + 2048);
        }
        // A line of 3 MiB without the marker is skipped.
        for _ in 0..3 * 1024 {
            sc.feed(&noise);
            sc.feed(b"y");
        }
        sc.feed(b"\n");
        let last = b"###Phase-output###: {\"key\":\"last\",\"value\":\"2\"}\n";
        sc.feed(last);
        tail.push(last);
        let out = sc.finish().unwrap();
        assert_eq!(out["first"], "1");
        assert_eq!(out["last"], "2");
        let text = tail.text();
        assert!(text.starts_with('['), "{}", &text[..80]);
        assert!(
            text.contains("earlier bytes not kept]\nxxx"),
            "{}",
            &text[..80]
        );
        assert!(text.ends_with("\"value\":\"2\"}\n"));
        assert!(text.len() < 4096 + 64);
    }

    #[test]
    fn an_overlong_marker_line_is_an_error() {
        let mut sc = Scanner::default();
        sc.feed(b"ok\n###Phase-output###: {\"key\":\"k\",\"value\":\"");
        let chunk = vec![b'v'; 64 * 1024];
        for _ in 0..20 {
            sc.feed(&chunk);
        }
        sc.feed(b"\"}\n");
        let e = sc.finish().unwrap_err().to_string();
        assert!(
            e.starts_with("line 2: a line with `###Phase-output###:` is longer than"),
            "{e}"
        );
        // The marker split across two chunks of an overlong line is found too.
        let mut sc = Scanner::default();
        sc.feed(&vec![b'x'; MAX_LINE + 5]);
        sc.feed(b"###Phase-");
        sc.feed(b"output###: {}\n");
        assert!(sc.finish().is_err());
    }

    #[test]
    fn a_short_tail_is_kept_whole() {
        let mut t = Tail::new(100);
        t.push(b"one\ntwo\n");
        assert_eq!(t.text(), "one\ntwo\n");
    }
}
