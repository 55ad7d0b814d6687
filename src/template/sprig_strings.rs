//! sprig v2.22.0 string functions beyond the original subset,
//! after `strings.go` and Masterminds/goutils.

use super::args::{FnResult, arity, int, s};
use super::error::FuncError;
use super::error::check_len;
use super::value::Value;
use super::xstrings;
use std::collections::BTreeMap;

pub const NAMES: &[&str] = &[
    "abbrev",
    "abbrevboth",
    "trunc",
    "untitle",
    "substr",
    "initials",
    "swapcase",
    "wrap",
    "wrapWith",
    "plural",
    "adler32sum",
    "splitn",
    "b32dec",
    "hello",
    "html",
    "js",
    "urlquery",
    "snakecase",
    "camelcase",
    "kebabcase",
];

/// Go slices strings by byte; ours are UTF-8, so a cut inside a character
/// becomes U+FFFD as invalid bytes do elsewhere.
fn byte_slice(x: &str, from: usize, to: usize) -> String {
    String::from_utf8_lossy(&x.as_bytes()[from..to]).into_owned()
}

/// Go's panic for `x[from:to]` out of bounds.
fn slice_err(from: i64, to: i64, len: usize) -> FuncError {
    FuncError::Panic(if to > len as i64 {
        format!("slice bounds out of range [:{to}] with length {len}")
    } else if to < 0 {
        format!("slice bounds out of range [:{to}]")
    } else {
        format!("slice bounds out of range [{from}:{to}]")
    })
}

/// Go `x[from:to]` with Go's panics as errors.
fn go_slice(x: &str, from: i64, to: i64) -> Result<String, FuncError> {
    if to < 0 || to as u64 > x.len() as u64 || from < 0 || from > to {
        return Err(slice_err(from, to, x.len()));
    }
    Ok(byte_slice(x, from as usize, to as usize))
}

/// goutils `AbbreviateFull`.
fn abbreviate_full(x: &str, offset: i64, width: i64) -> Result<String, FuncError> {
    if x.is_empty() {
        return Ok(String::new());
    }
    if width < 4 {
        return Err(FuncError::AbbrevWidth { with_offset: false });
    }
    let len = x.len() as i64;
    if len <= width {
        return Ok(x.to_string());
    }
    let mut offset = offset.min(len);
    if len - offset < width - 3 {
        offset = len - (width - 3);
    }
    if offset <= 4 {
        return Ok(go_slice(x, 0, width - 3)? + "...");
    }
    if width < 7 {
        return Err(FuncError::AbbrevWidth { with_offset: true });
    }
    if offset + width - 3 < len {
        let rest = go_slice(x, offset, len)?;
        return Ok(format!(
            "...{}",
            abbreviate_full(&rest, 0, width - 3).unwrap_or_default()
        ));
    }
    Ok(format!("...{}", go_slice(x, len - (width - 3), len)?))
}

/// goutils `WrapCustom`.
fn wrap_custom(x: &str, width: i64, newline: &str, long_words: bool) -> String {
    if x.is_empty() {
        return String::new();
    }
    let newline = if newline.is_empty() { "\n" } else { newline };
    let width = width.max(1) as usize;
    let b = x.as_bytes();
    let len = b.len();
    let mut offset = 0usize;
    let mut out: Vec<u8> = Vec::with_capacity(len + len / width * newline.len());
    while len - offset > width {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = (width + offset + 1).min(len);
        match b[offset..end].iter().rposition(|c| *c == b' ') {
            Some(i) => {
                out.extend_from_slice(&b[offset..offset + i]);
                out.extend_from_slice(newline.as_bytes());
                offset += i + 1;
            }
            None if long_words => {
                out.extend_from_slice(&b[offset..offset + width]);
                out.extend_from_slice(newline.as_bytes());
                offset += width;
            }
            None => {
                let end = width + offset;
                match b[end..].iter().position(|c| *c == b' ') {
                    None => {
                        out.extend_from_slice(&b[offset..]);
                        offset = len;
                    }
                    Some(i) => {
                        out.extend_from_slice(&b[offset..end + i]);
                        out.extend_from_slice(newline.as_bytes());
                        offset = end + i + 1;
                    }
                }
            }
        }
    }
    out.extend_from_slice(&b[offset..]);
    String::from_utf8_lossy(&out).into_owned()
}

/// goutils `SwapCase`.
fn swapcase(x: &str) -> String {
    let mut out = String::with_capacity(x.len());
    let mut ws = true;
    for c in x.chars() {
        if c.is_uppercase() {
            out.extend(c.to_lowercase());
            ws = false;
        } else if c.is_lowercase() {
            if ws {
                out.extend(c.to_uppercase());
                ws = false;
            } else {
                out.extend(c.to_uppercase());
            }
        } else {
            out.push(c);
            ws = c.is_whitespace();
        }
    }
    out
}

/// goutils `Uncapitalize`: the first letter of each space-separated word.
fn untitle(x: &str) -> String {
    let mut out = String::with_capacity(x.len());
    let mut next = true;
    for c in x.chars() {
        if c.is_whitespace() {
            next = true;
            out.push(c);
        } else if next {
            out.extend(c.to_lowercase());
            next = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// goutils `Initials` (byte-wise, as Go's is).
fn initials(x: &str) -> String {
    let mut out = Vec::new();
    let mut gap = true;
    for &b in x.as_bytes() {
        if (b as char).is_whitespace() && b < 0x80 || b == 0x85 || b == 0xA0 {
            gap = true;
        } else if gap {
            out.push(b);
            gap = false;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + x as u32) % 65521;
        b = (b + a) % 65521;
    }
    b << 16 | a
}

/// Go `encoding/base32` StdEncoding decode; the error text as sprig returns it.
fn b32dec(x: &str) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let src: Vec<u8> = x.bytes().filter(|c| *c != b'\r' && *c != b'\n').collect();
    let mut out = Vec::new();
    for (ci, chunk) in src.chunks(8).enumerate() {
        if chunk.len() < 8 {
            return format!("illegal base32 data at input byte {}", ci * 8);
        }
        let pad = chunk.iter().rev().take_while(|c| **c == b'=').count();
        let mut v: u64 = 0;
        for (i, c) in chunk.iter().enumerate() {
            let d = if i >= 8 - pad {
                0
            } else {
                match A.iter().position(|a| a == c) {
                    Some(d) => d as u64,
                    None => return format!("illegal base32 data at input byte {}", ci * 8 + i),
                }
            };
            v = v << 5 | d;
        }
        let n = match pad {
            0 => 5,
            1 => 4,
            3 => 3,
            4 => 2,
            6 => 1,
            _ => return format!("illegal base32 data at input byte {}", ci * 8 + 8 - pad),
        };
        let bytes = v.to_be_bytes();
        out.extend_from_slice(&bytes[3..3 + n]);
        if pad > 0 && (ci + 1) * 8 < src.len() {
            return format!("illegal base32 data at input byte {}", (ci + 1) * 8);
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Go `template.HTMLEscapeString`.
fn html_escape(x: &str) -> String {
    let mut o = String::with_capacity(x.len());
    for c in x.chars() {
        match c {
            '"' => o.push_str("&#34;"),
            '\'' => o.push_str("&#39;"),
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '\0' => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

/// Go `template.JSEscapeString`.
fn js_escape(x: &str) -> String {
    let mut o = String::with_capacity(x.len());
    for c in x.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '\'' => o.push_str("\\'"),
            '"' => o.push_str("\\\""),
            '<' => o.push_str("\\u003C"),
            '>' => o.push_str("\\u003E"),
            '&' => o.push_str("\\u0026"),
            '=' => o.push_str("\\u003D"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04X}", c as u32)),
            c if (c as u32) >= 0x80 && !super::print::is_go_print(c) => {
                o.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => o.push(c),
        }
    }
    o
}

/// Go `url.QueryEscape`.
fn query_escape(x: &str) -> String {
    let mut o = String::with_capacity(x.len());
    for b in x.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                o.push(b as char)
            }
            b' ' => o.push('+'),
            b => o.push_str(&format!("%{b:02X}")),
        }
    }
    o
}

/// Go's `evalArgs` for `html`/`js`/`urlquery`: one string argument as is,
/// otherwise `fmt.Sprint` of all.
fn escaper_arg(args: &[Value]) -> String {
    match args {
        [Value::Str(x)] => x.to_string(),
        _ => super::print::sprint(args),
    }
}

pub fn call(name: &str, args: &[Value]) -> Option<FnResult> {
    Some(call_inner(name, args))
}

fn call_inner(name: &str, args: &[Value]) -> FnResult {
    Ok(match name {
        "hello" => {
            arity(name, args, 0)?;
            Value::str("Hello!")
        }
        "abbrev" => {
            arity(name, args, 2)?;
            let (w, x) = (int(&args[0])?, s(&args[1])?);
            if w < 4 {
                Value::str(x)
            } else {
                Value::str(abbreviate_full(x, 0, w).unwrap_or_default())
            }
        }
        "abbrevboth" => {
            arity(name, args, 3)?;
            let (l, r, x) = (int(&args[0])?, int(&args[1])?, s(&args[2])?);
            if r < 4 || l > 0 && r < 7 {
                Value::str(x)
            } else {
                Value::str(abbreviate_full(x, l, r).unwrap_or_default())
            }
        }
        "trunc" => {
            arity(name, args, 2)?;
            let (c, x) = (int(&args[0])?, s(&args[1])?);
            if x.len() as i64 <= c {
                Value::str(x)
            } else {
                Value::str(go_slice(x, 0, c)?)
            }
        }
        "substr" => {
            arity(name, args, 3)?;
            let (start, end, x) = (int(&args[0])?, int(&args[1])?, s(&args[2])?);
            let len = x.len() as i64;
            Value::str(if start < 0 {
                go_slice(x, 0, end)?
            } else if end < 0 || end > len {
                if start > len {
                    return Err(FuncError::Panic(format!(
                        "slice bounds out of range [{start}:{len}]"
                    )));
                }
                go_slice(x, start, len)?
            } else {
                go_slice(x, start, end)?
            })
        }
        "untitle" | "swapcase" | "initials" | "adler32sum" | "b32dec" | "snakecase"
        | "camelcase" | "kebabcase" => {
            arity(name, args, 1)?;
            let x = s(&args[0])?;
            Value::str(match name {
                "untitle" => untitle(x),
                "swapcase" => swapcase(x),
                "initials" => initials(x),
                "adler32sum" => adler32(x.as_bytes()).to_string(),
                "snakecase" => xstrings::snake_case(x),
                "camelcase" => xstrings::camel_case(x),
                "kebabcase" => xstrings::kebab_case(x),
                _ => b32dec(x),
            })
        }
        "wrap" => {
            arity(name, args, 2)?;
            let (w, x) = (int(&args[0])?, s(&args[1])?);
            Value::str(wrap_custom(x, w, "", false))
        }
        "wrapWith" => {
            arity(name, args, 3)?;
            let (w, sep, x) = (int(&args[0])?, s(&args[1])?, s(&args[2])?);
            let pieces = x.len() / (w.max(1) as usize) + 1;
            check_len(
                x.len() + pieces.saturating_mul(sep.len().max(1)),
                "the result of wrapWith",
            )?;
            Value::str(wrap_custom(x, w, sep, true))
        }
        "plural" => {
            arity(name, args, 3)?;
            let (one, many, n) = (s(&args[0])?, s(&args[1])?, int(&args[2])?);
            Value::str(if n == 1 { one } else { many })
        }
        "splitn" => {
            arity(name, args, 3)?;
            let (sep, n, orig) = (s(&args[0])?, int(&args[1])?, s(&args[2])?);
            let parts = go_splitn(orig, sep, n)?;
            let m: BTreeMap<String, Value> = parts
                .into_iter()
                .enumerate()
                .map(|(i, p)| (format!("_{i}"), Value::str(p)))
                .collect();
            Value::map(m, Value::str(""), "map[string]string")
        }
        "html" => Value::str(html_escape(&escaper_arg(args))),
        "js" => Value::str(js_escape(&escaper_arg(args))),
        "urlquery" => Value::str(query_escape(&escaper_arg(args))),
        _ => return Err(FuncError::NotDefined(name.to_string())),
    })
}

/// Go `strings.SplitN`.
fn go_splitn(x: &str, sep: &str, n: i64) -> Result<Vec<String>, FuncError> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if n < 0 {
        return super::sprig_core::go_split(x, sep);
    }
    let n = n as usize;
    if sep.is_empty() {
        let chars: Vec<char> = x.chars().collect();
        if chars.len() <= n {
            return Ok(chars.iter().map(|c| c.to_string()).collect());
        }
        let mut out: Vec<String> = chars[..n - 1].iter().map(|c| c.to_string()).collect();
        out.push(chars[n - 1..].iter().collect());
        return Ok(out);
    }
    Ok(x.splitn(n, sep).map(str::to_string).collect())
}
