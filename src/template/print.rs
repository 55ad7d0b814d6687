//! Go `fmt` printing (`%v`, `Sprint`, `Sprintf`), `strconv.Quote` and
//! `encoding/json` marshalling of template values.

use super::gotime;
use super::limits::MAX_STRING;
use super::semver::Version;
use super::value::Value;
use std::fmt::Write;

/// Go `strconv.FormatFloat(f, 'g', -1, 64)` as used by `%v`.
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let (neg, digits, exp) = shortest(f);
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    if !(-4..6).contains(&exp) {
        push_exp(&mut s, &digits, exp);
    } else {
        push_fixed(&mut s, &digits, exp);
    }
    s
}

/// Shortest decimal digits and exponent (d.ddd × 10^exp).
fn shortest(f: f64) -> (bool, String, i32) {
    let e = format!("{:e}", f.abs());
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    (f < 0.0, digits, exp.parse().unwrap_or(0))
}

fn push_exp(s: &mut String, digits: &str, exp: i32) {
    s.push_str(&digits[..1]);
    if digits.len() > 1 {
        s.push('.');
        s.push_str(&digits[1..]);
    }
    let _ = write!(s, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
}

fn push_fixed(s: &mut String, digits: &str, exp: i32) {
    if exp < 0 {
        s.push_str("0.");
        for _ in 0..(-exp - 1) {
            s.push('0');
        }
        s.push_str(digits);
    } else {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            s.push_str(digits);
            for _ in digits.len()..int_len {
                s.push('0');
            }
        } else {
            s.push_str(&digits[..int_len]);
            s.push('.');
            s.push_str(&digits[int_len..]);
        }
    }
}

/// Float as `encoding/json` writes it (`None` for NaN/Inf: an error in Go).
pub fn json_float(f: f64) -> Option<String> {
    if !f.is_finite() {
        return None;
    }
    if f == 0.0 {
        return Some(if f.is_sign_negative() { "-0" } else { "0" }.into());
    }
    let (neg, digits, exp) = shortest(f);
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    let a = f.abs();
    if !(1e-6..1e21).contains(&a) {
        s.push_str(&digits[..1]);
        if digits.len() > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        let _ = write!(s, "e{}{}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else {
        push_fixed(&mut s, &digits, exp);
    }
    Some(s)
}

/// Go `%v` formatting.
pub fn fmt_v(v: &Value) -> String {
    let mut s = String::new();
    write_v(&mut s, v);
    s
}

/// Stops once `s` is longer than [`MAX_STRING`] (values may share
/// sub-values, so printing could otherwise be exponential): callers reject
/// over-long results.
fn write_v(s: &mut String, v: &Value) {
    if s.len() > MAX_STRING {
        return;
    }
    match v {
        Value::Nil | Value::NilPtr(_) => s.push_str("<nil>"),
        Value::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(s, "{i}");
        }
        Value::Float(f) => s.push_str(&go_float(*f)),
        Value::Str(x) => s.push_str(x),
        Value::Bytes(b) => {
            s.push('[');
            for (i, x) in b.iter().enumerate() {
                if i > 0 {
                    s.push(' ');
                }
                let _ = write!(s, "{x}");
            }
            s.push(']');
        }
        Value::List(l, _) => {
            s.push('[');
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    s.push(' ');
                }
                write_v(s, x);
            }
            s.push(']');
        }
        Value::Map(m) => {
            s.push_str("map[");
            for (i, (k, x)) in m.entries.iter().enumerate() {
                if i > 0 {
                    s.push(' ');
                }
                s.push_str(k);
                s.push(':');
                write_v(s, x);
            }
            s.push(']');
        }
        Value::Struct(st) => {
            s.push('{');
            for (i, f) in st.fields.iter().enumerate() {
                if i > 0 {
                    s.push(' ');
                }
                write_v(s, &f.value);
            }
            s.push('}');
        }
        Value::Time(t) => s.push_str(&gotime::time_string(t)),
        Value::Semver(x, true) => {
            let _ = write!(s, "{x}");
        }
        Value::Semver(x, false) => s.push_str(&semver_fields(x, 'v', &Spec::default())),
    }
}

fn is_string(v: &Value) -> bool {
    matches!(v, Value::Str(_))
}

/// Go `fmt.Sprint`.
pub fn sprint(args: &[Value]) -> String {
    let mut s = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 && !is_string(a) && !is_string(&args[i - 1]) {
            s.push(' ');
        }
        write_v(&mut s, a);
    }
    s
}

/// Go `fmt.Sprintln`.
pub fn sprintln(args: &[Value]) -> String {
    let mut s = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        write_v(&mut s, a);
    }
    s.push('\n');
    s
}

pub fn is_go_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    // Format characters, private use and unassigned areas are not printable.
    !(matches!(u, 0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E | 0x200B..=0x200F
        | 0x202A..=0x202E | 0x2060..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB | 0xE000..=0xF8FF
        | 0xFFFE | 0xFFFF | 0xF0000..=0x10FFFF))
}

/// Go `strconv.Quote`.
pub fn go_quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\x07' => o.push_str("\\a"),
            '\x08' => o.push_str("\\b"),
            '\x0c' => o.push_str("\\f"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            '\x0b' => o.push_str("\\v"),
            '\u{FFFD}' => o.push('\u{FFFD}'),
            c if is_go_print(c) => o.push(c),
            c if (c as u32) < 0x80 => {
                let _ = write!(o, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(o, "\\U{:08x}", c as u32);
            }
        }
    }
    o.push('"');
    o
}

/// Go `%q` of a rune.
fn quote_rune(i: i64) -> String {
    let c = u32::try_from(i)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\u{FFFD}');
    let q = go_quote(&c.to_string());
    let inner = &q[1..q.len() - 1];
    let inner = match inner {
        "\\\"" => "\"",
        _ => inner,
    };
    if c == '\'' {
        return "'\\''".into();
    }
    format!("'{inner}'")
}

/// Go's `%!verb(type=value)` for a bad argument.
/// Go's `%!verb(type=value)`; the value is printed with `%v` and the
/// verb's flags and width (`%3d` of "" gives `%!d(string=   )`).
fn bad_verb(verb: char, v: &Value, sp: &Spec) -> String {
    match v {
        Value::Nil => format!("%!{verb}(<nil>)"),
        _ => format!("%!{verb}({}={})", v.type_name(), fmt_one(v, 'v', sp)),
    }
}

#[derive(Clone, Default)]
struct Spec {
    minus: bool,
    plus: bool,
    zero: bool,
    space: bool,
    sharp: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

fn pad(s: String, sp: &Spec, numeric: bool) -> String {
    let Some(w) = sp.width else { return s };
    let n = s.chars().count();
    if n >= w {
        return s;
    }
    let fill = w - n;
    if sp.minus {
        return s + &" ".repeat(fill);
    }
    // Go pads strings and booleans with zeros too; only numbers keep the
    // sign in front.
    if sp.zero {
        let (sign, rest) = if numeric && (s.starts_with('-') || s.starts_with('+')) {
            s.split_at(1)
        } else {
            ("", s.as_str())
        };
        return format!("{sign}{}{rest}", "0".repeat(fill));
    }
    " ".repeat(fill) + &s
}

fn fmt_int(i: i64, verb: char, sp: &Spec) -> Option<String> {
    let mut s = match verb {
        'd' | 'v' => i.unsigned_abs().to_string(),
        'x' => format!("{:x}", i.unsigned_abs()),
        'X' => format!("{:X}", i.unsigned_abs()),
        'o' => format!("{:o}", i.unsigned_abs()),
        'b' => format!("{:b}", i.unsigned_abs()),
        'c' => {
            return Some(
                u32::try_from(i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}')
                    .to_string(),
            );
        }
        'q' => return Some(quote_rune(i)),
        _ => return None,
    };
    if sp.sharp {
        match verb {
            'x' => s.insert_str(0, "0x"),
            'X' => s.insert_str(0, "0X"),
            'o' => s.insert(0, '0'),
            _ => {}
        }
    }
    if i < 0 {
        s.insert(0, '-');
    } else if sp.plus {
        s.insert(0, '+');
    } else if sp.space {
        s.insert(0, ' ');
    }
    Some(s)
}

fn fmt_float(f: f64, verb: char, sp: &Spec) -> Option<String> {
    let mut s = match verb {
        'v' | 'g' if sp.prec.is_none() => go_float(f),
        'f' | 'F' => format!("{:.*}", sp.prec.unwrap_or(6), f),
        'e' | 'E' => {
            let r = format!("{:.*e}", sp.prec.unwrap_or(6), f);
            let (m, e) = r.split_once('e').unwrap_or((&r, "0"));
            let e: i32 = e.parse().unwrap_or(0);
            let s = format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
            if verb == 'E' { s.to_uppercase() } else { s }
        }
        'g' => go_float(f),
        _ => return None,
    };
    if sp.plus && !s.starts_with('-') {
        s.insert(0, '+');
    }
    Some(s)
}

fn fmt_str(x: &str, verb: char, sp: &Spec) -> Option<String> {
    Some(match verb {
        's' | 'v' => match sp.prec {
            Some(p) => x.chars().take(p).collect(),
            None => x.to_string(),
        },
        'q' => go_quote(x),
        'x' => x.bytes().map(|b| format!("{b:02x}")).collect(),
        'X' => x.bytes().map(|b| format!("{b:02X}")).collect(),
        _ => return None,
    })
}

fn fmt_one(v: &Value, verb: char, sp: &Spec) -> String {
    let r = match v {
        Value::Int(i) => fmt_int(*i, verb, sp).map(|s| pad(s, sp, true)),
        Value::Float(f) => fmt_float(*f, verb, sp).map(|s| pad(s, sp, true)),
        Value::Str(x) => fmt_str(x, verb, sp).map(|s| pad(s, sp, false)),
        Value::Bool(b) if matches!(verb, 't' | 'v') => Some(pad(b.to_string(), sp, false)),
        Value::Bytes(b) if matches!(verb, 's' | 'q' | 'x' | 'X') => {
            fmt_str(&String::from_utf8_lossy(b), verb, sp).map(|s| pad(s, sp, false))
        }
        Value::Time(t) if matches!(verb, 's' | 'v' | 'q') => {
            fmt_str(&gotime::time_string(t), verb, sp).map(|s| pad(s, sp, false))
        }
        Value::List(l, _) => Some(bounded_join(
            "[",
            l.iter().map(|x| fmt_one(x, verb, sp)),
            "]",
        )),
        Value::Bytes(b) => Some(bounded_join(
            "[",
            b.iter().map(|x| fmt_one(&Value::Int(*x as i64), verb, sp)),
            "]",
        )),
        Value::Map(m) => Some(bounded_join(
            "map[",
            m.entries.iter().map(|(k, x)| {
                format!(
                    "{}:{}",
                    fmt_str(k, verb, sp).unwrap_or_else(|| bad_verb(
                        verb,
                        &Value::str(k.as_str()),
                        sp
                    )),
                    fmt_one(x, verb, sp)
                )
            }),
            "]",
        )),
        Value::Struct(st) => Some(bounded_join(
            "{",
            st.fields.iter().map(|f| {
                if sp.plus && verb == 'v' {
                    format!("{}:{}", f.name, fmt_one(&f.value, verb, sp))
                } else {
                    fmt_one(&f.value, verb, sp)
                }
            }),
            "}",
        )),
        // `*Version` is a fmt.Stringer, used for the string-like verbs.
        Value::Semver(x, true) if matches!(verb, 'v' | 's' | 'q' | 'x' | 'X') => {
            fmt_str(&x.to_string(), verb, sp).map(|s| pad(s, sp, false))
        }
        Value::Semver(x, true) => Some(format!("&{}", semver_fields(x, verb, sp))),
        Value::Semver(x, false) => Some(semver_fields(x, verb, sp)),
        Value::Nil | Value::NilPtr(_) if verb == 'v' => Some(pad("<nil>".into(), sp, false)),
        Value::NilPtr(_) if verb == 'p' => Some("0x0".into()),
        _ => None,
    };
    r.unwrap_or_else(|| bad_verb(verb, v, sp))
}

/// Go's printing of a semver `Version` struct: its unexported fields
/// (`int64` major, minor, patch; string pre, metadata, original).
fn semver_fields(v: &Version, verb: char, sp: &Spec) -> String {
    // `%+v` names the fields; the `+` does not reach the numbers.
    let names = sp.plus && verb == 'v';
    let sp = &Spec {
        plus: sp.plus && !names,
        ..sp.clone()
    };
    let field = |name: &str, text: String| {
        if names {
            format!("{name}:{text}")
        } else {
            text
        }
    };
    let ints = [("major", v.major), ("minor", v.minor), ("patch", v.patch)].map(|(n, i)| {
        let text = fmt_int(i, verb, sp)
            .map(|s| pad(s, sp, true))
            .unwrap_or_else(|| format!("%!{verb}(int64={})", fmt_one(&Value::Int(i), 'v', sp)));
        field(n, text)
    });
    let strs = [
        ("pre", &v.pre),
        ("metadata", &v.metadata),
        ("original", &v.original),
    ]
    .map(|(n, x)| {
        let text = fmt_str(x, verb, sp)
            .map(|s| pad(s, sp, false))
            .unwrap_or_else(|| bad_verb(verb, &Value::str(x.as_str()), sp));
        field(n, text)
    });
    format!(
        "{{{}}}",
        ints.into_iter().chain(strs).collect::<Vec<_>>().join(" ")
    )
}

/// `open` + parts separated by spaces + `close`, stopping (over-long) once
/// past [`MAX_STRING`] so shared sub-values cannot blow up.
fn bounded_join(open: &str, mut parts: impl Iterator<Item = String>, close: &str) -> String {
    let mut s = String::from(open);
    let mut first = true;
    // Check before computing the next part: each part may be as long as the limit.
    while s.len() <= MAX_STRING {
        let Some(p) = parts.next() else {
            s.push_str(close);
            return s;
        };
        if !first {
            s.push(' ');
        }
        first = false;
        s.push_str(&p);
    }
    s
}

/// Go `fmt.Sprintf` for the common verbs. Stops once the result is longer
/// than [`MAX_STRING`] (the caller rejects it).
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut argi = 0usize;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if out.len() > MAX_STRING {
            return out;
        }
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut sp = Spec {
            minus: false,
            plus: false,
            zero: false,
            space: false,
            sharp: false,
            width: None,
            prec: None,
        };
        while let Some(&f) = chars.peek() {
            match f {
                '-' => sp.minus = true,
                '+' => sp.plus = true,
                '0' => sp.zero = true,
                ' ' => sp.space = true,
                '#' => sp.sharp = true,
                _ => break,
            }
            chars.next();
        }
        let num = |chars: &mut std::iter::Peekable<std::str::Chars>, argi: &mut usize| {
            if chars.peek() == Some(&'*') {
                chars.next();
                let w = match args.get(*argi) {
                    Some(Value::Int(i)) => usize::try_from(*i).ok().map(|v| v.min(1 << 16)),
                    _ => None,
                };
                *argi += 1;
                return w;
            }
            let mut n: Option<usize> = None;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                n = Some((n.unwrap_or(0) * 10 + d as usize).min(1 << 16));
                chars.next();
            }
            n
        };
        sp.width = num(&mut chars, &mut argi);
        if chars.peek() == Some(&'.') {
            chars.next();
            sp.prec = Some(num(&mut chars, &mut argi).unwrap_or(0));
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        match args.get(argi) {
            None => {
                let _ = write!(out, "%!{verb}(MISSING)");
            }
            Some(v) => out.push_str(&fmt_one(v, verb, &sp)),
        }
        argi += 1;
    }
    if argi < args.len() {
        out.push_str("%!(EXTRA ");
        let parts: Vec<String> = args[argi..]
            .iter()
            .map(|v| match v {
                Value::Nil => "<nil>".to_string(),
                _ => format!("{}={}", v.type_name(), fmt_v(v)),
            })
            .collect();
        out.push_str(&parts.join(", "));
        out.push(')');
    }
    out
}

/// Go `json.Marshal` string encoding (HTML-safe).
fn json_str(out: &mut String, s: &str) {
    json_bytes(out, s.as_bytes());
}

/// A JSON string as Go's `encoding/json` (with HTML escaping) writes `s`.
pub fn go_json_string(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    json_bytes(&mut out, s);
    out
}

/// [`go_json_string`] into `out`.
fn json_bytes(out: &mut String, s: &[u8]) {
    out.push('"');
    for chunk in s.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\x08' => out.push_str("\\b"),
                '\x0c' => out.push_str("\\f"),
                '<' | '>' | '&' | '\u{2028}' | '\u{2029}' | '\u{0}'..='\u{1f}' => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
        // Go decodes rune by rune: every byte of an invalid sequence is one U+FFFD.
        for _ in chunk.invalid() {
            out.push_str("\\ufffd");
        }
    }
    out.push('"');
}

fn json_empty(v: &Value) -> bool {
    match v {
        Value::Nil | Value::NilPtr(_) => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Float(f) => *f == 0.0,
        Value::Str(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::List(l, _) => l.is_empty(),
        Value::Map(m) => m.entries.is_empty(),
        Value::Struct(_) | Value::Time(_) | Value::Semver(..) => false,
    }
}

/// Why `json.Marshal` gave no result.
#[derive(Debug, PartialEq)]
pub enum JsonError {
    /// Go returns an error (NaN, infinities): sprig's `toJson` prints "".
    Unsupported,
    /// Longer than [`MAX_STRING`].
    TooLong,
}

/// Go `json.Marshal` (`indent`: `json.MarshalIndent(v, "", indent)`).
pub fn to_json(v: &Value, indent: Option<&str>) -> Result<String, JsonError> {
    let mut s = String::new();
    write_json(&mut s, v, 0, indent)?;
    Ok(s)
}

fn newline(out: &mut String, indent: Option<&str>, depth: usize) {
    if let Some(ind) = indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(ind);
        }
    }
}

fn write_json(
    out: &mut String,
    v: &Value,
    depth: usize,
    indent: Option<&str>,
) -> Result<(), JsonError> {
    if out.len() > MAX_STRING {
        return Err(JsonError::TooLong);
    }
    if depth > 1000 {
        return Err(JsonError::Unsupported);
    }
    match v {
        Value::Nil | Value::NilPtr(_) => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&json_float(*f).ok_or(JsonError::Unsupported)?),
        Value::Str(s) => json_str(out, s),
        Value::Bytes(b) => {
            use base64::Engine;
            out.push('"');
            out.push_str(&base64::engine::general_purpose::STANDARD.encode(b));
            out.push('"');
        }
        Value::List(l, _) => {
            out.push('[');
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_json(out, x, depth + 1, indent)?;
            }
            if !l.is_empty() {
                newline(out, indent, depth);
            }
            out.push(']');
        }
        Value::Map(m) => {
            if m.nil {
                out.push_str("null");
                return Ok(());
            }
            let fields = m.entries.iter().map(|(k, x)| (k.as_str(), x));
            write_object(out, fields, depth, indent)?;
        }
        Value::Struct(st) => {
            let fields = st
                .fields
                .iter()
                .filter(|f| !(f.omitempty && json_empty(&f.value)))
                .map(|f| (f.json.unwrap_or(f.name), &f.value));
            write_object(out, fields, depth, indent)?;
        }
        Value::Time(t) => {
            out.push('"');
            out.push_str(&gotime::format(t, gotime::RFC3339_NANO));
            out.push('"');
        }
        // `*Version` marshals as its string; the `Version` struct has only
        // unexported fields.
        Value::Semver(x, true) => json_str(out, &x.to_string()),
        Value::Semver(_, false) => out.push_str("{}"),
    }
    Ok(())
}

fn write_object<'a>(
    out: &mut String,
    fields: impl Iterator<Item = (&'a str, &'a Value)>,
    depth: usize,
    indent: Option<&str>,
) -> Result<(), JsonError> {
    out.push('{');
    let mut any = false;
    for (k, x) in fields {
        if any {
            out.push(',');
        }
        any = true;
        newline(out, indent, depth + 1);
        json_str(out, k);
        out.push(':');
        if indent.is_some() {
            out.push(' ');
        }
        write_json(out, x, depth + 1, indent)?;
    }
    if any {
        newline(out, indent, depth);
    }
    out.push('}');
    Ok(())
}
