//! Argument checks and conversions shared by every template function
//! (Go's and sprig's conversion rules), and the context a call may need.

use super::error::FuncError;
use super::error::check_len;
use super::print::fmt_v;
use super::value::{GoTime, Value};

/// Context a function call may need.
pub struct Ctx<'a> {
    pub now: &'a GoTime,
}

pub type FnResult = Result<Value, FuncError>;

pub fn arity(name: &str, args: &[Value], n: usize) -> Result<(), FuncError> {
    if args.len() != n {
        return Err(FuncError::Arity {
            name: name.to_string(),
            want: n,
            got: args.len(),
        });
    }
    Ok(())
}

pub fn at_least(name: &str, args: &[Value], n: usize) -> Result<(), FuncError> {
    if args.len() < n {
        return Err(FuncError::ArityAtLeast {
            name: name.to_string(),
            want: n,
            got: args.len(),
        });
    }
    Ok(())
}

/// A `string` parameter (Go does not convert other types).
pub fn s(v: &Value) -> Result<&str, FuncError> {
    match v {
        Value::Str(x) => Ok(x),
        other => Err(FuncError::wrong_type("string", other)),
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
pub fn strslice(v: &Value) -> Result<Vec<String>, FuncError> {
    let mut total = 0usize;
    let mut add = |s: String| {
        total += s.len();
        check_len(total, "the list of strings")?;
        Ok::<_, FuncError>(s)
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
pub fn join_bounded(parts: impl Iterator<Item = String>, sep: &str) -> Result<String, FuncError> {
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

/// An `int` parameter (Go does not convert other types).
pub fn int(v: &Value) -> Result<i64, FuncError> {
    match v {
        Value::Int(i) => Ok(*i),
        other => Err(FuncError::wrong_type("int", other)),
    }
}
