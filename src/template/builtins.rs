//! The Go text/template builtins (`and`/`or` are evaluated lazily in exec):
//! `not`, `len`, `index`, `print`, `printf`, `println` and the comparisons.

use super::args::{FnResult, arity, at_least, s};
use super::error::FuncError;
use super::print::{fmt_v, sprint, sprintf, sprintln};
use super::value::Value;
use std::sync::Arc;

/// Go builtins implemented here (`and`/`or` are evaluated lazily in exec).
pub const NAMES: &[&str] = &[
    "and", "or", "not", "len", "index", "print", "printf", "println", "eq", "ne", "lt", "le", "gt",
    "ge",
];

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
        return Err(FuncError::ArityAtLeast {
            name: "eq".into(),
            want: 1,
            got: 0,
        });
    };
    if rest.is_empty() {
        return Err(FuncError::MissingComparand);
    }
    let ka = kind(a);
    for b in rest {
        let kb = kind(b);
        let truth = if ka != kb {
            if ka != Kind::Invalid && kb != Kind::Invalid {
                return Err(FuncError::IncompatibleTypes);
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
                        return Err(FuncError::NonComparableTypes(
                            fmt_v(a),
                            a.type_name(),
                            b.type_name(),
                            fmt_v(b),
                        ));
                    }
                    x == y
                }
                (Value::Time(x), Value::Time(y)) => x == y,
                // Pointers are equal when they point to the same version.
                (Value::Semver(x, true), Value::Semver(y, true)) => Arc::ptr_eq(x, y),
                (Value::Semver(x, false), Value::Semver(y, false)) => x == y,
                (Value::Semver(..), Value::Semver(..)) => {
                    return Err(FuncError::IncompatibleTypesOf(a.type_name(), b.type_name()));
                }
                (Value::NilPtr(_), Value::Struct(_)) | (Value::Struct(_), Value::NilPtr(_)) => {
                    false
                }
                _ => {
                    return Err(FuncError::NonComparable {
                        value: fmt_v(a),
                        ty: a.type_name(),
                    });
                }
            }
        };
        if truth {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

fn lt(a: &Value, b: &Value) -> Result<bool, FuncError> {
    let (ka, kb) = (kind(a), kind(b));
    if ka != kb {
        return Err(FuncError::IncompatibleTypes);
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(x < y),
        (Value::Float(x), Value::Float(y)) => Ok(x < y),
        (Value::Str(x), Value::Str(y)) => Ok(x < y),
        _ => Err(FuncError::BadComparisonType),
    }
}

fn index(args: &[Value]) -> FnResult {
    let Some((item, idx)) = args.split_first() else {
        return Err(FuncError::ArityAtLeast {
            name: "index".into(),
            want: 1,
            got: 0,
        });
    };
    let mut cur = item.clone();
    for i in idx {
        cur = match (&cur, i) {
            (Value::Nil, _) => return Err(FuncError::IndexOfNil("untyped nil")),
            (Value::NilPtr(_), _) => return Err(FuncError::IndexOfNil("nil pointer")),
            (Value::List(l, _), Value::Int(n)) => usize::try_from(*n)
                .ok()
                .and_then(|n| l.get(n).cloned())
                .ok_or(FuncError::IndexOutOfRange(*n))?,
            (Value::Bytes(b), Value::Int(n)) => usize::try_from(*n)
                .ok()
                .and_then(|n| b.get(n).map(|x| Value::Int(*x as i64)))
                .ok_or(FuncError::IndexOutOfRange(*n))?,
            (Value::Str(x), Value::Int(n)) => usize::try_from(*n)
                .ok()
                .and_then(|n| x.as_bytes().get(n).map(|x| Value::Int(*x as i64)))
                .ok_or(FuncError::IndexOutOfRange(*n))?,
            (Value::List(..) | Value::Bytes(_) | Value::Str(_), Value::Nil) => {
                return Err(FuncError::IndexWithNil);
            }
            (Value::List(..) | Value::Bytes(_) | Value::Str(_), other) => {
                return Err(FuncError::IndexWithType(other.type_name()));
            }
            (Value::Map(m), Value::Str(k)) => m
                .entries
                .get(&**k)
                .cloned()
                .unwrap_or_else(|| m.zero.clone()),
            (Value::Map(_), Value::Nil) => {
                return Err(FuncError::NilKey);
            }
            (Value::Map(_), other) => {
                return Err(FuncError::KeyType(other.type_name()));
            }
            (other, _) => return Err(FuncError::CannotIndex(other.type_name())),
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
        Value::Nil => return Err(FuncError::LenOfNil),
        other => return Err(FuncError::LenOfType(other.type_name())),
    } as i64))
}

/// A builtin called with evaluated arguments; `None` for other names.
pub fn call(name: &str, args: &[Value]) -> Option<FnResult> {
    call_known(name, args).transpose()
}

fn call_known(name: &str, args: &[Value]) -> Result<Option<Value>, FuncError> {
    let r = match name {
        "not" => {
            arity(name, args, 1)?;
            Value::Bool(!args[0].truth())
        }
        "len" => return len(args).map(Some),
        "index" => return index(args).map(Some),
        "print" => Value::str(sprint(args)),
        "println" => Value::str(sprintln(args)),
        "printf" => {
            at_least(name, args, 1)?;
            Value::str(sprintf(s(&args[0])?, &args[1..]))
        }
        "eq" => return eq(args).map(Some),
        "ne" => {
            arity(name, args, 2)?;
            let Value::Bool(b) = eq(args)? else {
                return Ok(Some(Value::Bool(false)));
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
        _ => return Ok(None),
    };
    Ok(Some(r))
}
