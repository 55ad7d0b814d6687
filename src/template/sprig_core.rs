//! sprig's basics: conversions, strings, encodings, lists and dicts, math,
//! defaults and dates that Kanister's Blueprints use most (plus Kanister's
//! FIPS stub for `derivePassword`).

use super::args::{
    Ctx, FnResult, arity, at_least, empty, join_bounded, s, strslice, strval, to_f64, to_i64,
};
use super::encoding::{b32_encode, go_b64_decode, sha1_hex, sha256_hex};
use super::error::FuncError;
use super::error::{check_count, check_len};
use super::gotime;
use super::print::{JsonError, go_quote, to_json};
use super::value::Value;
use base64::Engine;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Sprig functions implemented here (plus Kanister's FIPS stubs).
pub const NAMES: &[&str] = &[
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
        .ok_or_else(|| FuncError::Panic("integer divide by zero".into()))
}

/// A function of [`NAMES`] called with evaluated arguments; `None` for other names.
pub fn call(name: &str, args: &[Value], ctx: &Ctx) -> Option<FnResult> {
    call_known(name, args, ctx).transpose()
}

fn call_known(name: &str, args: &[Value], ctx: &Ctx) -> Result<Option<Value>, FuncError> {
    let r = match name {
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
                    return Err(super::error::string_too_long("the JSON text"));
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
                other => return Err(FuncError::wrong_type_of("time.Time", other)),
            }
        }
        "b64enc" => {
            arity(name, args, 1)?;
            Value::str(base64::engine::general_purpose::STANDARD.encode(s(&args[0])?))
        }
        "b32enc" => {
            arity(name, args, 1)?;
            Value::str(b32_encode(s(&args[0])?.as_bytes()))
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
                "sha256sum" => sha256_hex(x.as_bytes()),
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
                other => return Err(FuncError::wrong_type_of("int", other)),
            };
            let x = s(&args[1])?;
            if n < 0 {
                return Err(FuncError::NegativeRepeat);
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
                other => return Err(FuncError::wrong_type_of("int", other)),
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
                other => return Err(FuncError::wrong_type("map[string]interface {}", other)),
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
                other => return Err(FuncError::wrong_type_of("bool", other)),
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
        "sub" => return int_op(name, args, |a, b| Some(a.wrapping_sub(b))).map(Some),
        "div" => {
            return int_op(name, args, |a, b| {
                a.checked_div(b).or((b != 0).then_some(a))
            })
            .map(Some);
        }
        "mod" => {
            return int_op(name, args, |a, b| {
                a.checked_rem(b).or((b != 0).then_some(0))
            })
            .map(Some);
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
                    return Err(FuncError::NotAList {
                        op: format!("find {name}"),
                        kind: other.type_name(),
                    });
                }
            }
        }
        "fail" => {
            arity(name, args, 1)?;
            return Err(FuncError::Fail(s(&args[0])?.to_string()));
        }
        // Kanister's ksprig; sprig v2.22.0 has no bcrypt or htpasswd, so
        // those stay undefined as in Kanister.
        "derivePassword" => {
            return Err(FuncError::NotFips(name.to_string()));
        }
        _ => return Ok(None),
    };
    Ok(Some(r))
}

/// Go `strings.Replace(s, old, new, -1)` (an empty `old` matches between
/// runes), refused when the result would exceed `MAX_STRING`.
pub fn go_replace(src: &str, old: &str, new: &str) -> Result<String, FuncError> {
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
pub fn go_split(s: &str, sep: &str) -> Result<Vec<String>, FuncError> {
    if sep.is_empty() {
        check_count(s.chars().count(), "the split")?;
        return Ok(s.chars().map(|c| c.to_string()).collect());
    }
    check_count(s.matches(sep).count() + 1, "the split")?;
    Ok(s.split(sep).map(str::to_string).collect())
}
