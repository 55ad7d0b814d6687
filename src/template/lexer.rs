//! Lexer for Go text/template (delimiters `{{ }}`), after Go's `lex.go`.
//!
//! Tokens borrow the template text: checking a template (the admission webhook) then copies
//! nothing; only quoted strings with escapes are built.

use std::borrow::Cow;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok<'a> {
    Text(&'a str),
    LeftDelim,
    RightDelim,
    Space,
    /// An identifier: a function name or a keyword.
    Ident(&'a str),
    /// `.Name` (one segment, without the dot).
    Field(&'a str),
    /// `.` alone.
    Dot,
    /// `$` or `$name` (with the `$`).
    Variable(&'a str),
    /// Unescaped; borrowed unless it had escapes.
    Str(Cow<'a, str>),
    Number(&'a str),
    Char(&'a str),
    Bool(bool),
    Nil,
    Pipe,
    LParen,
    RParen,
    Declare,
    Assign,
    Comma,
}

#[derive(Clone, Debug)]
pub struct Token<'a> {
    pub tok: Tok<'a>,
    pub line: usize,
}

/// A token as Go's parser names it in errors (`"}}"`, `<.Name>`, ...).
pub fn tok_text(t: &Tok<'_>) -> String {
    match t {
        Tok::Text(s) => format!("text {:?}", s.chars().take(20).collect::<String>()),
        Tok::LeftDelim => "\"{{\"".into(),
        Tok::RightDelim => "\"}}\"".into(),
        Tok::Space => "space".into(),
        Tok::Ident(s) => format!("<{s}>"),
        Tok::Field(s) => format!("<.{s}>"),
        Tok::Dot => "<.>".into(),
        Tok::Variable(s) => format!("<{s}>"),
        Tok::Str(s) => format!("{s:?}"),
        Tok::Number(s) | Tok::Char(s) => format!("<{s}>"),
        Tok::Bool(b) => format!("<{b}>"),
        Tok::Nil => "<nil>".into(),
        Tok::Pipe => "\"|\"".into(),
        Tok::LParen => "\"(\"".into(),
        Tok::RParen => "\")\"".into(),
        Tok::Declare => "\":=\"".into(),
        Tok::Assign => "\"=\"".into(),
        Tok::Comma => "\",\"".into(),
    }
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// ASCII letters, digits and `_`: one load per byte of a word.
static WORD_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 128 {
        t[b] = (b as u8).is_ascii_alphanumeric() || b == b'_' as usize;
        b += 1;
    }
    t
};

/// Length in bytes of the run of [`is_alnum`] characters `s` starts with: byte by byte while
/// ASCII (most words), decoding a character only for the others.
fn alnum_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if WORD_BYTE[usize::from(b[i])] {
            i += 1;
        } else if b[i].is_ascii() {
            break;
        } else {
            match s[i..].chars().next() {
                Some(c) if is_alnum(c) => i += c.len_utf8(),
                _ => break,
            }
        }
    }
    i
}

/// Length in bytes of the run of [`is_space`] characters `s` starts with (all ASCII, so bytes
/// can be compared: no byte of a longer UTF-8 sequence is ASCII).
fn space_len(s: &str) -> usize {
    s.bytes()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .unwrap_or(s.len())
}

/// Where the first `{{` starts: a byte search for `{` (memchr) instead of a substring searcher
/// built per call.
pub fn find_open(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'{', &b[from..]) {
        let at = from + i;
        if b.get(at + 1) == Some(&b'{') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

fn count_lines(s: &str) -> usize {
    // Eight bytes at a time (the byte-wise count was not vectorized and is most of lexing a
    // long script); memchr's counter costs more on short texts.
    const ONES: u64 = u64::MAX / 255;
    const LOW7: u64 = ONES * 0x7f;
    let mut chunks = s.as_bytes().chunks_exact(8);
    let mut n = 0;
    for chunk in &mut chunks {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            continue;
        };
        // A byte of `x` is zero where the text has a newline; the high bit of each byte of
        // `zero` is set exactly for the zero bytes of `x` (no carry crosses a byte).
        let x = u64::from_le_bytes(word) ^ (ONES * u64::from(b'\n'));
        let zero = !(((x & LOW7) + LOW7) | x | LOW7);
        // Most words have no newline (and `count_ones` is no single instruction on baseline x86-64).
        if zero != 0 {
            n += zero.count_ones() as usize;
        }
    }
    n + chunks.remainder().iter().filter(|&&b| b == b'\n').count()
}

/// Tokenize a whole template.
pub fn lex(src: &str) -> Result<Vec<Token<'_>>, (usize, String)> {
    // An action is about a token per 3 bytes (`{{ .A.B }}`): sized once rather than grown
    // by doubling; bounded so that a long text does not reserve for tokens it does not have.
    let mut toks = Vec::with_capacity((src.len() / 3).min(256));
    let mut pos = 0usize;
    let mut line = 1usize;
    let mut trim_next_text = false;
    while pos < src.len() {
        let rest = &src[pos..];
        let (text_end, found) = match find_open(rest) {
            Some(i) => (i, true),
            None => (rest.len(), false),
        };
        let mut text = &rest[..text_end];
        let trim_left = found && {
            let after = &rest[text_end + 2..];
            after.starts_with('-') && after[1..].starts_with(is_space)
        };
        if trim_next_text {
            text = text.trim_start_matches(is_space);
        }
        if trim_left {
            text = text.trim_end_matches(is_space);
        }
        if !text.is_empty() {
            toks.push(Token {
                tok: Tok::Text(text),
                line,
            });
        }
        line += count_lines(&rest[..text_end]);
        if !found {
            break;
        }
        pos += text_end + 2;
        if trim_left {
            pos += 2;
        }
        // Comment?
        let after = &src[pos..];
        if after.starts_with("/*") {
            let Some(end) = after.find("*/") else {
                return Err((line, "unclosed comment".into()));
            };
            line += count_lines(&after[..end]);
            pos += end + 2;
            let after = &src[pos..];
            if after.starts_with(" -}}")
                || after.starts_with("\t-}}")
                || after.starts_with("\n-}}")
                || after.starts_with("\r-}}")
            {
                pos += 4;
                trim_next_text = true;
            } else if after.starts_with("}}") {
                pos += 2;
                trim_next_text = false;
            } else {
                return Err((line, "comment ends before closing delimiter".into()));
            }
            continue;
        }
        toks.push(Token {
            tok: Tok::LeftDelim,
            line,
        });
        let (npos, nline, trim) = lex_action(src, pos, line, &mut toks)?;
        pos = npos;
        line = nline;
        trim_next_text = trim;
    }
    Ok(toks)
}

fn lex_action<'a>(
    src: &'a str,
    mut pos: usize,
    mut line: usize,
    toks: &mut Vec<Token<'a>>,
) -> Result<(usize, usize, bool), (usize, String)> {
    let mut depth = 0i32;
    loop {
        let rest = &src[pos..];
        if rest.starts_with("}}") {
            if depth > 0 {
                return Err((line, "unclosed left paren".into()));
            }
            toks.push(Token {
                tok: Tok::RightDelim,
                line,
            });
            return Ok((pos + 2, line, false));
        }
        let Some(c) = rest.chars().next() else {
            return Err((line, "unclosed action".into()));
        };
        if is_space(c) {
            // Right trim marker " -}}".
            let n = space_len(rest);
            let after = &rest[n..];
            if after.starts_with("-}}") {
                if depth > 0 {
                    return Err((line, "unclosed left paren".into()));
                }
                line += count_lines(&rest[..n]);
                toks.push(Token {
                    tok: Tok::RightDelim,
                    line,
                });
                return Ok((pos + n + 3, line, true));
            }
            line += count_lines(&rest[..n]);
            toks.push(Token {
                tok: Tok::Space,
                line,
            });
            pos += n;
            continue;
        }
        let push = |toks: &mut Vec<Token<'a>>, tok: Tok<'a>| toks.push(Token { tok, line });
        match c {
            '=' => {
                push(toks, Tok::Assign);
                pos += 1;
            }
            ':' => {
                if !rest.starts_with(":=") {
                    return Err((line, "expected :=".into()));
                }
                push(toks, Tok::Declare);
                pos += 2;
            }
            '|' => {
                push(toks, Tok::Pipe);
                pos += 1;
            }
            ',' => {
                push(toks, Tok::Comma);
                pos += 1;
            }
            '(' => {
                depth += 1;
                push(toks, Tok::LParen);
                pos += 1;
            }
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err((line, "unexpected right paren".into()));
                }
                push(toks, Tok::RParen);
                pos += 1;
            }
            '"' => {
                let (s, n) = lex_quote(rest).map_err(|e| (line, e.to_string()))?;
                push(toks, Tok::Str(s));
                pos += n;
            }
            '`' => {
                let Some(end) = rest[1..].find('`') else {
                    return Err((line, "unterminated raw quoted string".into()));
                };
                let s = &rest[1..1 + end];
                push(toks, Tok::Str(Cow::Borrowed(s)));
                line += count_lines(s);
                pos += end + 2;
            }
            '\'' => {
                let (s, n) = lex_char(rest).map_err(|e| (line, e.to_string()))?;
                push(toks, Tok::Char(s));
                pos += n;
            }
            '$' => {
                let n = 1 + alnum_len(&rest[1..]);
                push(toks, Tok::Variable(&rest[..n]));
                pos += n;
                check_term(src, pos, line)?;
            }
            '.' => {
                let next = rest[1..].chars().next();
                match next {
                    Some(d) if d.is_ascii_digit() => {
                        let n = scan_number(rest);
                        push(toks, Tok::Number(&rest[..n]));
                        pos += n;
                    }
                    Some(a) if is_alnum(a) => {
                        let n = 1 + alnum_len(&rest[1..]);
                        push(toks, Tok::Field(&rest[1..n]));
                        pos += n;
                        check_term(src, pos, line)?;
                    }
                    _ => {
                        push(toks, Tok::Dot);
                        pos += 1;
                    }
                }
            }
            '+' | '-' | '0'..='9' => {
                let n = scan_number(rest);
                if n == 0 || (n == 1 && !c.is_ascii_digit()) {
                    return Err((line, format!("bad number syntax: {:?}", &rest[..1])));
                }
                push(toks, Tok::Number(&rest[..n]));
                pos += n;
                if let Some(c2) = src[pos..].chars().next()
                    && is_alnum(c2)
                {
                    let bad = &rest[..n + c2.len_utf8()];
                    return Err((line, format!("bad number syntax: {bad:?}")));
                }
            }
            c if is_alnum(c) => {
                let n = alnum_len(rest);
                let word = &rest[..n];
                let tok = match word {
                    "true" => Tok::Bool(true),
                    "false" => Tok::Bool(false),
                    "nil" => Tok::Nil,
                    _ => Tok::Ident(word),
                };
                push(toks, tok);
                pos += n;
                check_term(src, pos, line)?;
            }
            other => {
                return Err((line, format!("unrecognized character in action: {other:?}")));
            }
        }
    }
}

/// After a word, Go requires a terminator.
fn check_term(src: &str, pos: usize, line: usize) -> Result<(), (usize, String)> {
    let rest = &src[pos..];
    // By the first byte: every terminator is ASCII.
    match rest.as_bytes().first() {
        None => Ok(()),
        Some(b' ' | b'\t' | b'\r' | b'\n' | b'.' | b',' | b'|' | b':' | b')' | b'(' | b'=') => {
            Ok(())
        }
        Some(b'}') if rest.starts_with("}}") => Ok(()),
        Some(_) => {
            let c = rest.chars().next().unwrap_or_default();
            Err((line, format!("bad character {c:?}")))
        }
    }
}

fn scan_number(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let mut digits: &[u8] = b"0123456789_";
    if i + 1 < b.len() && b[i] == b'0' {
        match b[i + 1] {
            b'x' | b'X' => {
                i += 2;
                digits = b"0123456789abcdefABCDEF_";
            }
            b'o' | b'O' => {
                i += 2;
                digits = b"01234567_";
            }
            b'b' | b'B' => {
                i += 2;
                digits = b"01_";
            }
            _ => {}
        }
    }
    while i < b.len() && digits.contains(&b[i]) {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && digits.contains(&b[i]) {
            i += 1;
        }
    }
    if digits.len() == 11 && i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    i
}

/// Why a quoted string or character constant does not lex (Go's texts).
#[derive(Debug, thiserror::Error)]
enum QuoteError {
    #[error("unterminated quoted string")]
    UnterminatedString,
    #[error("unterminated character constant")]
    UnterminatedChar,
    #[error("invalid syntax")]
    Syntax,
}

/// A `"` string at the start of `s`, unescaped, and its length in `s`.
fn lex_quote(s: &str) -> Result<(Cow<'_, str>, usize), QuoteError> {
    // Without a backslash before the closing quote there is nothing to unescape.
    match memchr::memchr3(b'"', b'\n', b'\\', &s.as_bytes()[1..]) {
        Some(i) if s.as_bytes()[1 + i] == b'"' => return Ok((Cow::Borrowed(&s[1..1 + i]), i + 2)),
        Some(i) if s.as_bytes()[1 + i] == b'\n' => return Err(QuoteError::UnterminatedString),
        Some(_) => {}
        None => return Err(QuoteError::UnterminatedString),
    }
    let mut out = String::new();
    let mut it = s.char_indices().skip(1).peekable();
    while let Some((i, c)) = it.next() {
        match c {
            '"' => return Ok((Cow::Owned(out), i + 1)),
            '\n' => return Err(QuoteError::UnterminatedString),
            '\\' => {
                let (_, e) = it.next().ok_or(QuoteError::UnterminatedString)?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'a' => out.push('\x07'),
                    'b' => out.push('\x08'),
                    'f' => out.push('\x0c'),
                    'v' => out.push('\x0b'),
                    '\\' => out.push('\\'),
                    '"' => out.push('"'),
                    'x' | 'u' | 'U' => {
                        let n = match e {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let mut v = 0u32;
                        for _ in 0..n {
                            let (_, h) = it.next().ok_or(QuoteError::UnterminatedString)?;
                            v = v * 16 + h.to_digit(16).ok_or(QuoteError::Syntax)?;
                        }
                        if e == 'x' {
                            // A raw byte; only ASCII is representable here.
                            out.push(char::from_u32(v).ok_or(QuoteError::Syntax)?);
                        } else {
                            out.push(char::from_u32(v).ok_or(QuoteError::Syntax)?);
                        }
                    }
                    '0'..='7' => {
                        let mut v = e.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            let (_, h) = it.next().ok_or(QuoteError::UnterminatedString)?;
                            v = v * 8 + h.to_digit(8).ok_or(QuoteError::Syntax)?;
                        }
                        if v > 255 {
                            return Err(QuoteError::Syntax);
                        }
                        out.push(char::from_u32(v).ok_or(QuoteError::Syntax)?);
                    }
                    _ => return Err(QuoteError::Syntax),
                }
            }
            c => out.push(c),
        }
    }
    Err(QuoteError::UnterminatedString)
}

fn lex_char(s: &str) -> Result<(&str, usize), QuoteError> {
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '\n' => break,
            '\'' => return Ok((&s[..=i], i + 1)),
            _ => {}
        }
    }
    Err(QuoteError::UnterminatedChar)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_lines_counts_every_newline() {
        let texts = [
            "",
            "\n",
            "abc",
            "a\nb\n",
            "\n\n\n\n\n\n\n\n\n",
            "0123456\n89abcde\nx",
            "\u{a0a}\n\u{10a0a}é\n\t\r\x0b\x09\x0a\x7f\u{ff}\n\n",
        ];
        for t in texts {
            for start in 0..t.len() {
                let Some(s) = t.get(start..) else { continue };
                let want = s.bytes().filter(|&b| b == b'\n').count();
                assert_eq!(count_lines(s), want, "{s:?}");
                let long = s.repeat(9);
                assert_eq!(count_lines(&long), want * 9, "{long:?}");
            }
        }
    }

    #[test]
    fn a_word_needs_a_terminator() {
        for (src, err) in [
            ("{{ .A!}}", Some("bad character '!'")),
            ("{{ .A\u{20ac} }}", Some("bad character '\u{20ac}'")),
            ("{{ $x} }}", Some("bad character '}'")),
            ("{{ .A}}", None),
            ("{{ .A.B|x (y) z=1,w:=2 }}", None),
            ("{{ .A", Some("unclosed action")),
        ] {
            let got = lex(src).err().map(|(_, m)| m);
            assert_eq!(got.as_deref(), err, "{src:?}");
        }
    }

    #[test]
    fn alnum_len_is_the_run_of_word_characters() {
        for (s, n) in [
            ("", 0),
            ("abc def", 3),
            ("a_1.b", 3),
            ("_", 1),
            ("ÄÖü9x}}", 8),
            ("x\u{2003}y", 1),
            ("日本語 x", 9),
            ("-a", 0),
        ] {
            assert_eq!(alnum_len(s), n, "{s:?}");
            let want = s
                .char_indices()
                .find(|(_, c)| !is_alnum(*c))
                .map_or(s.len(), |(i, _)| i);
            assert_eq!(alnum_len(s), want, "{s:?}");
        }
    }
}
