//! Go text/template builtins and the sprig v2.22.0 subset Kanister uses.

use super::gotime;
use super::limits::{check_count, check_len};
use super::print::{JsonError, fmt_v, go_quote, sprint, sprintf, sprintln, to_json};
use super::value::{GoTime, Value};
use base64::Engine;
use sha2::Digest;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Go builtins implemented here (`and`/`or` are evaluated lazily in exec).
const BUILTINS: &[&str] = &[
    "and", "or", "not", "len", "index", "print", "printf", "println", "eq", "ne", "lt", "le", "gt",
    "ge",
];

/// Sprig functions implemented here (plus Kanister's FIPS stubs).
const SPRIG: &[&str] = &[
    "toString",
    "toJson",
    "toPrettyJson",
    "date",
    "dateInZone",
    "date_in_zone",
    "toDate",
    "now",
    "unixEpoch",
    "b64enc",
    "b64dec",
    "b32enc",
    "quote",
    "squote",
    "upper",
    "lower",
    "title",
    "replace",
    "default",
    "empty",
    "coalesce",
    "ternary",
    "trim",
    "trimAll",
    "trimall",
    "trimSuffix",
    "trimPrefix",
    "hasPrefix",
    "hasSuffix",
    "nospace",
    "repeat",
    "cat",
    "indent",
    "nindent",
    "split",
    "splitList",
    "join",
    "list",
    "dict",
    "hasKey",
    "contains",
    "sha256sum",
    "sha1sum",
    "int",
    "int64",
    "float64",
    "atoi",
    "add",
    "add1",
    "sub",
    "mul",
    "div",
    "mod",
    "max",
    "min",
    "first",
    "last",
    "toStrings",
    "fail",
    "derivePassword",
];

/// The other sprig v2.22.0 names (implemented in the `sprig_*` modules): with
/// `SPRIG`, the catalog Kanister accepts. A name no module defines would be
/// refused at parse time as "not supported".
const SPRIG_OTHER: &[&str] = &[
    "abbrev",
    "abbrevboth",
    "adler32sum",
    "ago",
    "append",
    "b32dec",
    "base",
    "biggest",
    "buildCustomCert",
    "camelcase",
    "ceil",
    "clean",
    "compact",
    "concat",
    "dateModify",
    "date_modify",
    "decryptAES",
    "deepCopy",
    "deepEqual",
    "dir",
    "encryptAES",
    "env",
    "expandenv",
    "ext",
    "floor",
    "genCA",
    "genPrivateKey",
    "genSelfSignedCert",
    "genSignedCert",
    "getHostByName",
    "has",
    "hello",
    "htmlDate",
    "htmlDateInZone",
    "initial",
    "initials",
    "isAbs",
    "kebabcase",
    "keys",
    "kindIs",
    "kindOf",
    "merge",
    "mergeOverwrite",
    "omit",
    "pick",
    "pluck",
    "plural",
    "prepend",
    "push",
    "randAlpha",
    "randAlphaNum",
    "randAscii",
    "randNumeric",
    "regexFind",
    "regexFindAll",
    "regexMatch",
    "regexReplaceAll",
    "regexReplaceAllLiteral",
    "regexSplit",
    "rest",
    "reverse",
    "round",
    "semver",
    "semverCompare",
    "set",
    "shuffle",
    "slice",
    "snakecase",
    "sortAlpha",
    "splitn",
    "substr",
    "swapcase",
    "toDecimal",
    "trunc",
    "tuple",
    "typeIs",
    "typeIsLike",
    "typeOf",
    "uniq",
    "unset",
    "until",
    "untilStep",
    "untitle",
    "urlJoin",
    "urlParse",
    "uuidv4",
    "values",
    "without",
    "wrap",
    "wrapWith",
    "html",
    "js",
    "urlquery",
    "call",
];

pub fn is_defined(name: &str) -> bool {
    BUILTINS.contains(&name)
        || SPRIG.contains(&name)
        || super::sprig_strings::NAMES.contains(&name)
        || super::sprig_lists::NAMES.contains(&name)
        || super::sprig_other::NAMES.contains(&name)
        || super::sprig_semver::NAMES.contains(&name)
        || super::sprig_crypto::NAMES.contains(&name)
}

/// Every function a template may call (Go builtins and sprig), for tests.
#[cfg(test)]
pub fn all_names() -> Vec<&'static str> {
    BUILTINS
        .iter()
        .chain(SPRIG)
        .chain(SPRIG_OTHER)
        .chain(super::sprig_strings::NAMES)
        .chain(super::sprig_lists::NAMES)
        .chain(super::sprig_other::NAMES)
        .chain(super::sprig_semver::NAMES)
        .chain(super::sprig_crypto::NAMES)
        .copied()
        .filter(|n| is_defined(n))
        .collect()
}

pub fn is_sprig_unsupported(name: &str) -> bool {
    SPRIG_OTHER.contains(&name) && !is_defined(name)
}

/// Context a function call may need.
pub struct Ctx<'a> {
    pub now: &'a GoTime,
}

pub type FnResult = Result<Value, String>;

pub fn arity(name: &str, args: &[Value], n: usize) -> Result<(), String> {
    if args.len() != n {
        return Err(format!(
            "wrong number of args for {name}: want {n} got {}",
            args.len()
        ));
    }
    Ok(())
}

pub fn at_least(name: &str, args: &[Value], n: usize) -> Result<(), String> {
    if args.len() < n {
        return Err(format!(
            "wrong number of args for {name}: want at least {n} got {}",
            args.len()
        ));
    }
    Ok(())
}

/// A `string` parameter (Go does not convert other types).
pub fn s(v: &Value) -> Result<&str, String> {
    match v {
        Value::Str(x) => Ok(x),
        Value::Nil => Err("invalid value; expected string".into()),
        other => Err(format!(
            "wrong type for value; expected string; got {}",
            other.type_name()
        )),
    }
}

/// sprig `strval`.
pub fn strval(v: &Value) -> String {
    match v {
        Value::Str(x) => x.to_string(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        other => fmt_v(other),
    }
}

/// sprig `toInt64`.
pub fn to_i64(v: &Value) -> i64 {
    match v {
        Value::Str(x) => x.parse().unwrap_or(0),
        Value::Int(i) => *i,
        Value::Float(f) => {
            if f.is_finite() {
                *f as i64
            } else {
                i64::MIN
            }
        }
        Value::Bool(b) => *b as i64,
        _ => 0,
    }
}

pub fn to_f64(v: &Value) -> f64 {
    match v {
        Value::Str(x) => x.parse().unwrap_or(0.0),
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => *b as i64 as f64,
        _ => 0.0,
    }
}

/// sprig `empty`.
pub fn empty(v: &Value) -> bool {
    !matches!(v, Value::Struct(_) | Value::Time(_)) && !v.truth()
}

/// sprig `strslice`, refused when the strings together exceed `MAX_STRING`.
pub fn strslice(v: &Value) -> Result<Vec<String>, String> {
    let mut total = 0usize;
    let mut add = |s: String| {
        total += s.len();
        check_len(total, "the list of strings")?;
        Ok::<_, String>(s)
    };
    match v {
        Value::List(l, _) => l
            .iter()
            .filter(|x| !matches!(x, Value::Nil))
            .map(|x| add(strval(x)))
            .collect(),
        Value::Bytes(b) => b.iter().map(|x| add(x.to_string())).collect(),
        Value::Nil => Ok(Vec::new()),
        other => Ok(vec![add(strval(other))?]),
    }
}

/// Join with `sep`, refusing a result longer than `MAX_STRING`.
pub fn join_bounded(parts: impl Iterator<Item = String>, sep: &str) -> Result<String, String> {
    let mut out = String::new();
    for (i, p) in parts.enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(&p);
        check_len(out.len(), "the joined string")?;
    }
    Ok(out)
}

/// Go's `basicKind` classes for comparisons.
#[derive(PartialEq, Clone, Copy)]
enum Kind {
    Invalid,
    Bool,
    Int,
    Float,
    Str,
    Other,
}

fn kind(v: &Value) -> Kind {
    match v {
        Value::Nil => Kind::Invalid,
        Value::Bool(_) => Kind::Bool,
        Value::Int(_) => Kind::Int,
        Value::Float(_) => Kind::Float,
        Value::Str(_) => Kind::Str,
        _ => Kind::Other,
    }
}

pub fn eq(args: &[Value]) -> FnResult {
    let Some((a, rest)) = args.split_first() else {
        return Err("wrong number of args for eq: want at least 1 got 0".into());
    };
    if rest.is_empty() {
        return Err("missing argument for comparison".into());
    }
    let ka = kind(a);
    for b in rest {
        let kb = kind(b);
        let truth = if ka != kb {
            if ka != Kind::Invalid && kb != Kind::Invalid {
                return Err("incompatible types for comparison".into());
            }
            false
        } else {
            match (a, b) {
                (Value::Bool(x), Value::Bool(y)) => x == y,
                (Value::Int(x), Value::Int(y)) => x == y,
                (Value::Float(x), Value::Float(y)) => x == y,
                (Value::Str(x), Value::Str(y)) => x == y,
                (Value::Nil, Value::Nil) => true,
                (Value::NilPtr(x), Value::NilPtr(y)) => x == y,
                (Value::Struct(x), Value::Struct(y)) => {
                    if x.ty != y.ty {
                        return Err(format!(
                            "non-comparable types {}: {}, {}: {}",
                            fmt_v(a),
                            a.type_name(),
                            b.type_name(),
                            fmt_v(b)
                        ));
                    }
                    x == y
                }
                (Value::Time(x), Value::Time(y)) => x == y,
                // Pointers are equal when they point to the same version.
                (Value::Semver(x, true), Value::Semver(y, true)) => Arc::ptr_eq(x, y),
                (Value::Semver(x, false), Value::Semver(y, false)) => x == y,
                (Value::Semver(..), Value::Semver(..)) => {
                    return Err(format!(
                        "incompatible types for comparison: {} and {}",
                        a.type_name(),
                        b.type_name()
                    ));
                }
                (Value::NilPtr(_), Value::Struct(_)) | (Value::Struct(_), Value::NilPtr(_)) => {
                    false
                }
                _ => {
                    return Err(format!(
                        "non-comparable type {}: {}",
                        fmt_v(a),
                        a.type_name()
                    ));
                }
            }
        };
        if truth {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

fn lt(a: &Value, b: &Value) -> Result<bool, String> {
    let (ka, kb) = (kind(a), kind(b));
    if ka != kb {
        return Err("incompatible types for comparison".into());
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(x < y),
        (Value::Float(x), Value::Float(y)) => Ok(x < y),
        (Value::Str(x), Value::Str(y)) => Ok(x < y),
        _ => Err("invalid type for comparison".into()),
    }
}

fn index(args: &[Value]) -> FnResult {
    let Some((item, idx)) = args.split_first() else {
        return Err("wrong number of args for index: want at least 1 got 0".into());
    };
    let mut cur = item.clone();
    for i in idx {
        cur = match (&cur, i) {
            (Value::Nil, _) => return Err("index of untyped nil".into()),
            (Value::NilPtr(_), _) => return Err("index of nil pointer".into()),
            (Value::List(l, _), Value::Int(n)) => usize::try_from(*n)
                .ok()
                .and_then(|n| l.get(n).cloned())
                .ok_or_else(|| format!("index out of range: {n}"))?,
            (Value::Bytes(b), Value::Int(n)) => usize::try_from(*n)
                .ok()
                .and_then(|n| b.get(n).map(|x| Value::Int(*x as i64)))
                .ok_or_else(|| format!("index out of range: {n}"))?,
            (Value::Str(x), Value::Int(n)) => usize::try_from(*n)
                .ok()
                .and_then(|n| x.as_bytes().get(n).map(|x| Value::Int(*x as i64)))
                .ok_or_else(|| format!("index out of range: {n}"))?,
            (Value::List(..) | Value::Bytes(_) | Value::Str(_), Value::Nil) => {
                return Err("cannot index slice/array with nil".into());
            }
            (Value::List(..) | Value::Bytes(_) | Value::Str(_), other) => {
                return Err(format!(
                    "cannot index slice/array with type {}",
                    other.type_name()
                ));
            }
            (Value::Map(m), Value::Str(k)) => m
                .entries
                .get(&**k)
                .cloned()
                .unwrap_or_else(|| m.zero.clone()),
            (Value::Map(_), Value::Nil) => {
                return Err("value is nil; should be of type string".into());
            }
            (Value::Map(_), other) => {
                return Err(format!(
                    "value has type {}; should be string",
                    other.type_name()
                ));
            }
            (other, _) => return Err(format!("can't index item of type {}", other.type_name())),
        };
    }
    Ok(cur)
}

fn len(args: &[Value]) -> FnResult {
    arity("len", args, 1)?;
    Ok(Value::Int(match &args[0] {
        Value::Str(x) => x.len(),
        Value::Bytes(b) => b.len(),
        Value::List(l, _) => l.len(),
        Value::Map(m) => m.entries.len(),
        Value::Nil => return Err("len of nil pointer".into()),
        other => return Err(format!("len of type {}", other.type_name())),
    } as i64))
}

/// Go's `base64.StdEncoding.DecodeString`, with Go's error positions.
pub fn go_b64_decode(src: &[u8]) -> Result<Vec<u8>, usize> {
    fn val(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some((c - b'A') as u32),
            b'a'..=b'z' => Some((c - b'a') as u32 + 26),
            b'0'..=b'9' => Some((c - b'0') as u32 + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let mut out = Vec::with_capacity(src.len() * 3 / 4);
    let mut si = 0usize;
    loop {
        let mut dbuf = [0u32; 4];
        let mut dlen = 4;
        let mut j = 0;
        let mut trailing_err = None;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                return Err(si - j);
            }
            let c = src[si];
            si += 1;
            if let Some(v) = val(c) {
                dbuf[j] = v;
                j += 1;
                continue;
            }
            if c == b'\n' || c == b'\r' {
                continue;
            }
            if c != b'=' {
                return Err(si - 1);
            }
            match j {
                0 | 1 => return Err(si - 1),
                2 => {
                    while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(src.len());
                    }
                    if src[si] != b'=' {
                        return Err(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                si += 1;
            }
            if si < src.len() {
                trailing_err = Some(si);
            }
            dlen = j;
            break;
        }
        let v = dbuf[0] << 18 | dbuf[1] << 12 | dbuf[2] << 6 | dbuf[3];
        let bytes = [(v >> 16) as u8, (v >> 8) as u8, v as u8];
        out.extend_from_slice(&bytes[..dlen - 1]);
        if let Some(e) = trailing_err {
            return Err(e);
        }
        if dlen < 4 {
            return Ok(out);
        }
    }
}

fn title(x: &str) -> String {
    let mut out = String::with_capacity(x.len());
    let mut prev_letter = false;
    for c in x.chars() {
        let is_sep = !(c.is_alphanumeric() || c == '_' || c == '\'');
        if !prev_letter && !is_sep {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev_letter = !is_sep;
    }
    out
}

pub fn date_in_zone(layout: &str, d: &Value, zone: &str, ctx: &Ctx) -> String {
    let t = match d {
        Value::Time(t) => (**t).clone(),
        Value::Int(i) => gotime::from_unix(*i),
        _ => ctx.now.clone(),
    };
    gotime::format(&gotime::in_zone(&t, zone), layout)
}

fn int_op(name: &str, args: &[Value], f: impl Fn(i64, i64) -> Option<i64>) -> FnResult {
    arity(name, args, 2)?;
    f(to_i64(&args[0]), to_i64(&args[1]))
        .map(Value::Int)
        .ok_or_else(|| "runtime error: integer divide by zero".into())
}

/// Call a non-lazy function with evaluated arguments.
pub fn call(name: &str, args: &[Value], ctx: &Ctx) -> FnResult {
    let r = match name {
        "not" => {
            arity(name, args, 1)?;
            Value::Bool(!args[0].truth())
        }
        "len" => return len(args),
        "index" => return index(args),
        "print" => Value::str(sprint(args)),
        "println" => Value::str(sprintln(args)),
        "printf" => {
            at_least(name, args, 1)?;
            Value::str(sprintf(s(&args[0])?, &args[1..]))
        }
        "eq" => return eq(args),
        "ne" => {
            arity(name, args, 2)?;
            let Value::Bool(b) = eq(args)? else {
                return Ok(Value::Bool(false));
            };
            Value::Bool(!b)
        }
        "lt" | "le" | "gt" | "ge" => {
            arity(name, args, 2)?;
            let (a, b) = (&args[0], &args[1]);
            let r = match name {
                "lt" => lt(a, b)?,
                "le" => lt(a, b)? || matches!(eq(args)?, Value::Bool(true)),
                "gt" => !lt(a, b)? && !matches!(eq(args)?, Value::Bool(true)),
                _ => !lt(a, b)?,
            };
            Value::Bool(r)
        }
        // ---- sprig ----
        "toString" => {
            arity(name, args, 1)?;
            Value::str(strval(&args[0]))
        }
        "toJson" | "toPrettyJson" => {
            arity(name, args, 1)?;
            let indent = (name == "toPrettyJson").then_some("  ");
            match to_json(&args[0], indent) {
                Ok(j) => Value::str(j),
                Err(JsonError::Unsupported) => Value::str(""),
                Err(JsonError::TooLong) => {
                    return Err(super::limits::string_too_long("the JSON text"));
                }
            }
        }
        "date" => {
            arity(name, args, 2)?;
            Value::str(date_in_zone(s(&args[0])?, &args[1], "Local", ctx))
        }
        "dateInZone" | "date_in_zone" => {
            arity(name, args, 3)?;
            Value::str(date_in_zone(s(&args[0])?, &args[1], s(&args[2])?, ctx))
        }
        "toDate" => {
            arity(name, args, 2)?;
            let t = gotime::parse(s(&args[0])?, s(&args[1])?).unwrap_or_else(gotime::zero_time);
            Value::Time(Arc::new(t))
        }
        "now" => {
            arity(name, args, 0)?;
            Value::Time(Arc::new(ctx.now.clone()))
        }
        "unixEpoch" => {
            arity(name, args, 1)?;
            match &args[0] {
                Value::Time(t) => Value::str(t.dt.timestamp().to_string()),
                other => {
                    return Err(format!(
                        "wrong type for value; expected time.Time; got {}",
                        other.type_name()
                    ));
                }
            }
        }
        "b64enc" => {
            arity(name, args, 1)?;
            Value::str(base64::engine::general_purpose::STANDARD.encode(s(&args[0])?))
        }
        "b32enc" => {
            arity(name, args, 1)?;
            Value::str(b32(s(&args[0])?.as_bytes()))
        }
        "b64dec" => {
            arity(name, args, 1)?;
            match go_b64_decode(s(&args[0])?.as_bytes()) {
                Ok(b) => Value::str(String::from_utf8_lossy(&b).into_owned()),
                Err(p) => Value::str(format!("illegal base64 data at input byte {p}")),
            }
        }
        "quote" => Value::str(join_bounded(
            args.iter()
                .filter(|a| !matches!(a, Value::Nil))
                .map(|a| go_quote(&strval(a))),
            " ",
        )?),
        "squote" => Value::str(join_bounded(
            args.iter()
                .filter(|a| !matches!(a, Value::Nil))
                .map(|a| format!("'{}'", strval(a))),
            " ",
        )?),
        "upper" | "lower" | "title" | "trim" | "nospace" | "sha256sum" | "sha1sum" => {
            arity(name, args, 1)?;
            let x = s(&args[0])?;
            Value::str(match name {
                "upper" => x.to_uppercase(),
                "lower" => x.to_lowercase(),
                "title" => title(x),
                "trim" => x.trim_matches(|c: char| c.is_whitespace()).to_string(),
                "nospace" => x.chars().filter(|c| !c.is_whitespace()).collect(),
                "sha256sum" => hex(&sha2::Sha256::digest(x.as_bytes())),
                _ => sha1_hex(x.as_bytes()),
            })
        }
        "replace" => {
            arity(name, args, 3)?;
            let (old, new, src) = (s(&args[0])?, s(&args[1])?, s(&args[2])?);
            Value::str(go_replace(src, old, new)?)
        }
        "trimAll" | "trimall" | "trimSuffix" | "trimPrefix" | "hasPrefix" | "hasSuffix"
        | "contains" => {
            arity(name, args, 2)?;
            let (a, b) = (s(&args[0])?, s(&args[1])?);
            match name {
                "trimSuffix" => Value::str(b.strip_suffix(a).unwrap_or(b)),
                "trimPrefix" => Value::str(b.strip_prefix(a).unwrap_or(b)),
                "hasPrefix" => Value::Bool(b.starts_with(a)),
                "hasSuffix" => Value::Bool(b.ends_with(a)),
                "contains" => Value::Bool(b.contains(a)),
                _ => Value::str(b.trim_matches(|c| a.contains(c))),
            }
        }
        "repeat" => {
            arity(name, args, 2)?;
            let n = match &args[0] {
                Value::Int(n) => *n,
                other => {
                    return Err(format!(
                        "wrong type for value; expected int; got {}",
                        other.type_name()
                    ));
                }
            };
            let x = s(&args[1])?;
            if n < 0 {
                return Err("strings: negative Repeat count".into());
            }
            let total = (n as u128) * (x.len() as u128);
            check_len(
                usize::try_from(total).unwrap_or(usize::MAX),
                "the result of repeat",
            )?;
            Value::str(x.repeat(n as usize))
        }
        "cat" => Value::str(join_bounded(
            args.iter().filter(|a| !matches!(a, Value::Nil)).map(strval),
            " ",
        )?),
        "indent" | "nindent" => {
            arity(name, args, 2)?;
            let n = match &args[0] {
                Value::Int(n) => usize::try_from(*n).unwrap_or(0).min(1 << 16),
                other => {
                    return Err(format!(
                        "wrong type for value; expected int; got {}",
                        other.type_name()
                    ));
                }
            };
            let text = s(&args[1])?;
            let lines = text.matches('\n').count() + 1;
            check_len(
                lines.saturating_mul(n).saturating_add(text.len() + 1),
                &format!("the result of {name}"),
            )?;
            let pad = " ".repeat(n);
            let r = format!("{pad}{}", text.replace('\n', &format!("\n{pad}")));
            Value::str(if name == "nindent" {
                format!("\n{r}")
            } else {
                r
            })
        }
        "split" => {
            arity(name, args, 2)?;
            let (sep, orig) = (s(&args[0])?, s(&args[1])?);
            let m: BTreeMap<String, Value> = go_split(orig, sep)?
                .into_iter()
                .enumerate()
                .map(|(i, p)| (format!("_{i}"), Value::str(p)))
                .collect();
            Value::map(m, Value::str(""), "map[string]string")
        }
        "splitList" => {
            arity(name, args, 2)?;
            let (sep, orig) = (s(&args[0])?, s(&args[1])?);
            Value::list(
                go_split(orig, sep)?.into_iter().map(Value::str).collect(),
                "[]string",
            )
        }
        "join" => {
            arity(name, args, 2)?;
            let sep = s(&args[0])?;
            Value::str(join_bounded(strslice(&args[1])?.into_iter(), sep)?)
        }
        "toStrings" => {
            arity(name, args, 1)?;
            Value::list(
                strslice(&args[0])?.into_iter().map(Value::str).collect(),
                "[]string",
            )
        }
        "list" => Value::list(args.to_vec(), "[]interface {}"),
        "dict" => {
            let mut m = BTreeMap::new();
            let mut i = 0;
            while i < args.len() {
                let k = strval(&args[i]);
                let v = args.get(i + 1).cloned().unwrap_or(Value::str(""));
                m.insert(k, v);
                i += 2;
            }
            Value::map(m, Value::Nil, "map[string]interface {}")
        }
        "hasKey" => {
            arity(name, args, 2)?;
            let m = match &args[0] {
                Value::Map(m) if &*m.ty == "map[string]interface {}" => m,
                Value::Nil => return Err("invalid value; expected map[string]interface {}".into()),
                other => {
                    return Err(format!(
                        "wrong type for value; expected map[string]interface {{}}; got {}",
                        other.type_name()
                    ));
                }
            };
            let k = s(&args[1])?;
            Value::Bool(m.entries.contains_key(k))
        }
        "default" => {
            at_least(name, args, 1)?;
            match args.get(1) {
                Some(g) if !empty(g) => g.clone(),
                _ => args[0].clone(),
            }
        }
        "empty" => {
            arity(name, args, 1)?;
            Value::Bool(empty(&args[0]))
        }
        "coalesce" => args
            .iter()
            .find(|a| !empty(a))
            .cloned()
            .unwrap_or(Value::Nil),
        "ternary" => {
            arity(name, args, 3)?;
            match &args[2] {
                Value::Bool(b) => {
                    if *b {
                        args[0].clone()
                    } else {
                        args[1].clone()
                    }
                }
                other => {
                    return Err(format!(
                        "wrong type for value; expected bool; got {}",
                        other.type_name()
                    ));
                }
            }
        }
        "int" | "int64" => {
            arity(name, args, 1)?;
            Value::Int(to_i64(&args[0]))
        }
        "float64" => {
            arity(name, args, 1)?;
            Value::Float(to_f64(&args[0]))
        }
        "atoi" => {
            arity(name, args, 1)?;
            Value::Int(s(&args[0])?.parse().unwrap_or(0))
        }
        "add" => Value::Int(args.iter().map(to_i64).fold(0i64, i64::wrapping_add)),
        "add1" => {
            arity(name, args, 1)?;
            Value::Int(to_i64(&args[0]).wrapping_add(1))
        }
        "sub" => return int_op(name, args, |a, b| Some(a.wrapping_sub(b))),
        "div" => {
            return int_op(name, args, |a, b| {
                a.checked_div(b).or((b != 0).then_some(a))
            });
        }
        "mod" => {
            return int_op(name, args, |a, b| {
                a.checked_rem(b).or((b != 0).then_some(0))
            });
        }
        "mul" => {
            at_least(name, args, 1)?;
            Value::Int(args.iter().map(to_i64).fold(1i64, i64::wrapping_mul))
        }
        "max" | "min" => {
            at_least(name, args, 1)?;
            let it = args.iter().map(to_i64);
            Value::Int(if name == "max" { it.max() } else { it.min() }.unwrap_or(0))
        }
        "first" | "last" => {
            arity(name, args, 1)?;
            match &args[0] {
                Value::List(l, _) => {
                    let v = if name == "first" { l.first() } else { l.last() };
                    v.cloned().unwrap_or(Value::Nil)
                }
                Value::Nil => Value::Nil,
                other => {
                    return Err(format!("Cannot find {name} on type {}", other.type_name()));
                }
            }
        }
        "fail" => {
            arity(name, args, 1)?;
            return Err(s(&args[0])?.to_string());
        }
        // Kanister's ksprig; sprig v2.22.0 has no bcrypt or htpasswd, so
        // those stay undefined as in Kanister.
        "derivePassword" => {
            return Err(format!(
                "sprig usage of '{name}' is not allowed by kanister as it is not FIPS compatible"
            ));
        }
        _ => {
            return super::sprig_lists::call(name, args)
                .or_else(|| super::sprig_other::call(name, args, ctx))
                .or_else(|| super::sprig_semver::call(name, args))
                .or_else(|| super::sprig_crypto::call(name, args, ctx))
                // Last: it answers every name (with "not defined").
                .or_else(|| super::sprig_strings::call(name, args))
                .unwrap_or_else(|| Err(format!("function {name:?} not defined")));
        }
    };
    Ok(r)
}

/// Go `strings.Replace(s, old, new, -1)` (an empty `old` matches between
/// runes), refused when the result would exceed `MAX_STRING`.
pub fn go_replace(src: &str, old: &str, new: &str) -> Result<String, String> {
    let matches = if old.is_empty() {
        src.chars().count() + 1
    } else {
        src.matches(old).count()
    };
    let total = (src.len() as u128) + (matches as u128) * (new.len() as u128);
    check_len(
        usize::try_from(total).unwrap_or(usize::MAX),
        "the result of replace",
    )?;
    Ok(replace_unchecked(src, old, new))
}

fn replace_unchecked(src: &str, old: &str, new: &str) -> String {
    if old.is_empty() {
        let mut out = String::from(new);
        for c in src.chars() {
            out.push(c);
            out.push_str(new);
        }
        return out;
    }
    src.replace(old, new)
}

/// Go `strings.Split` (an empty separator splits into runes), refused
/// beyond `MAX_LIST` pieces.
pub fn go_split(s: &str, sep: &str) -> Result<Vec<String>, String> {
    if sep.is_empty() {
        check_count(s.chars().count(), "the split")?;
        return Ok(s.chars().map(|c| c.to_string()).collect());
    }
    check_count(s.matches(sep).count() + 1, "the split")?;
    Ok(s.split(sep).map(str::to_string).collect())
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn b32(data: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let v = buf.iter().fold(0u64, |acc, b| acc << 8 | *b as u64);
        let n = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < n {
                out.push(A[((v >> (35 - i * 5)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// SHA-1 (small, self-contained: `sha1sum` is rare).
fn sha1_hex(data: &[u8]) -> String {
    let mut h: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 80];
        for i in 0..16 {
            w[i] = u32::from_be_bytes([
                block[4 * i],
                block[4 * i + 1],
                block[4 * i + 2],
                block[4 * i + 3],
            ]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A827999),
                20..=39 => (b ^ c ^ d, 0x6ED9EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1BBCDC),
                _ => (b ^ c ^ d, 0xCA62C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sprig_v2_22_function_is_implemented() {
        let missing: Vec<_> = SPRIG_OTHER.iter().filter(|n| !is_defined(n)).collect();
        assert!(missing.is_empty(), "{missing:?}");
    }

    #[test]
    fn b64_errors_match_go_positions() {
        assert_eq!(go_b64_decode(b"aGVsbG8="), Ok(b"hello".to_vec()));
        assert_eq!(go_b64_decode(b"aGVsbG8"), Err(4));
        assert_eq!(go_b64_decode(b"a!"), Err(1));
        assert_eq!(go_b64_decode(b"aGVs\nbG8="), Ok(b"hello".to_vec()));
        assert_eq!(go_b64_decode(b"aGk=x"), Err(4));
    }

    #[test]
    fn sha1_known() {
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    }

    #[test]
    fn b32_known() {
        assert_eq!(b32(b"foobar"), "MZXW6YTBOI======");
    }
}
