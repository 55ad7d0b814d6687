//! sprig v2.22.0 list, dict and reflection functions, after
//! `list.go`, `dict.go`, `numeric.go` (`until`), `reflect.go` and mergo.
//! Values are immutable: `set`, `unset`, `merge` and `mergeOverwrite`
//! return the changed map (exec writes it back to the variable passed).

use super::args::{FnResult, arity, at_least, empty, int, s, strslice, strval, to_i64};
use super::error::check_count;
use super::error::{FuncError, NIL_DEREFERENCE};
use super::value::Value;
use std::collections::BTreeMap;

pub const NAMES: &[&str] = &[
    "tuple",
    "append",
    "push",
    "prepend",
    "rest",
    "initial",
    "reverse",
    "uniq",
    "without",
    "has",
    "slice",
    "concat",
    "compact",
    "sortAlpha",
    "set",
    "unset",
    "pluck",
    "keys",
    "pick",
    "omit",
    "merge",
    "mergeOverwrite",
    "values",
    "deepCopy",
    "until",
    "untilStep",
    "deepEqual",
    "typeOf",
    "typeIs",
    "typeIsLike",
    "kindOf",
    "kindIs",
];

const IFACE_LIST: &str = "[]interface {}";
const IFACE_MAP: &str = "map[string]interface {}";

/// Go `reflect.Kind` names.
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Nil => "invalid",
        Value::NilPtr(_) | Value::Semver(_, true) => "ptr",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Float(_) => "float64",
        Value::Str(_) => "string",
        Value::Bytes(_) | Value::List(..) => "slice",
        Value::Map(_) => "map",
        Value::Struct(_) | Value::Time(_) | Value::Semver(_, false) => "struct",
    }
}

/// The elements of a slice argument, or the error for another value
/// ([`not_a_list`]).
fn elems(v: &Value, bad: impl FnOnce(&'static str) -> FuncError) -> Result<Vec<Value>, FuncError> {
    match v {
        Value::List(l, _) => Ok(l.to_vec()),
        Value::Bytes(b) => Ok(b.iter().map(|x| Value::Int(*x as i64)).collect()),
        other => Err(not_a_list(other, bad)),
    }
}

/// Go's panic for nil; else `bad` of the value's kind (sprig's own error).
fn not_a_list(v: &Value, bad: impl FnOnce(&'static str) -> FuncError) -> FuncError {
    match v {
        Value::Nil => FuncError::Panic(NIL_DEREFERENCE.into()),
        other => bad(kind_of(other)),
    }
}

/// sprig's `Cannot <op> on type <kind>` for list function `op`.
fn cannot(op: String) -> impl FnOnce(&'static str) -> FuncError {
    move |kind| FuncError::NotAList {
        op,
        kind: kind.to_string(),
    }
}

/// A `map[string]interface {}` parameter.
fn dict(v: &Value) -> Result<&BTreeMap<String, Value>, FuncError> {
    match v {
        Value::Map(m) if &*m.ty == IFACE_MAP => Ok(&m.entries),
        other => Err(FuncError::wrong_type(IFACE_MAP, other)),
    }
}

fn new_dict(m: BTreeMap<String, Value>) -> Value {
    Value::map(m, Value::Nil, IFACE_MAP)
}

/// `reflect.DeepEqual`, with a budget of comparisons (shared sub-values
/// could otherwise make it exponential).
pub fn deep_equal(a: &Value, b: &Value, budget: &mut usize) -> Result<bool, FuncError> {
    if *budget == 0 {
        return Err(FuncError::CompareTooLarge);
    }
    *budget -= 1;
    Ok(match (a, b) {
        (Value::List(x, tx), Value::List(y, ty)) => {
            if tx.name != ty.name || x.len() != y.len() {
                return Ok(false);
            }
            for (p, q) in x.iter().zip(y.iter()) {
                if !deep_equal(p, q, budget)? {
                    return Ok(false);
                }
            }
            true
        }
        (Value::Map(x), Value::Map(y)) => {
            if x.ty != y.ty || x.entries.len() != y.entries.len() || x.nil != y.nil {
                return Ok(false);
            }
            for (k, p) in &x.entries {
                match y.entries.get(k) {
                    Some(q) if deep_equal(p, q, budget)? => {}
                    _ => return Ok(false),
                }
            }
            true
        }
        (Value::Float(x), Value::Float(y)) => x == y,
        _ => a == b,
    })
}

const COMPARE_BUDGET: usize = 10_000_000;

fn in_list(hay: &[Value], needle: &Value, budget: &mut usize) -> Result<bool, FuncError> {
    for h in hay {
        if deep_equal(needle, h, budget)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// mergo's `isEmptyValue` for map elements.
fn mergo_empty(v: &Value) -> bool {
    match v {
        Value::Struct(_) | Value::Time(_) => false,
        other => empty(other),
    }
}

/// `mergo.Merge` / `mergo.MergeWithOverwrite` of `map[string]interface{}`:
/// nested maps merge; otherwise a source value fills a missing or empty
/// destination value (or any, with `overwrite`); a nil source value only
/// overwrites.
fn mergo(dst: &mut BTreeMap<String, Value>, src: &BTreeMap<String, Value>, overwrite: bool) {
    for (k, sv) in src {
        let dv = dst.get(k);
        let new = match (sv, dv) {
            (Value::Nil, _) if overwrite => Value::Nil,
            (Value::Nil, _) => continue,
            (Value::Map(sm), Some(Value::Map(dm))) if !dm.entries.is_empty() => {
                let mut merged = dm.entries.clone();
                mergo(&mut merged, &sm.entries, overwrite);
                Value::map(merged, dm.zero.clone(), &dm.ty)
            }
            (_, Some(d)) if !overwrite && !mergo_empty(d) => continue,
            _ => sv.clone(),
        };
        dst.insert(k.clone(), new);
    }
}

/// `until`/`untilStep`, refused beyond `MAX_LIST` elements.
fn until_step(start: i64, stop: i64, step: i64) -> FnResult {
    let (start, stop, step) = (start as i128, stop as i128, step as i128);
    let count = if stop < start {
        if step >= 0 {
            0
        } else {
            (start - stop + (-step) - 1) / (-step)
        }
    } else if step <= 0 {
        0
    } else {
        (stop - start + step - 1) / step
    };
    check_count(
        usize::try_from(count).unwrap_or(usize::MAX),
        "the result of until",
    )?;
    let v = (0..count)
        .map(|i| Value::Int((start + i * step) as i64))
        .collect();
    Ok(Value::list(v, "[]int"))
}

pub fn call(name: &str, args: &[Value]) -> Option<FnResult> {
    if !NAMES.contains(&name) {
        return None;
    }
    Some(call_inner(name, args))
}

fn call_inner(name: &str, args: &[Value]) -> FnResult {
    let budget = &mut COMPARE_BUDGET.clone();
    Ok(match name {
        "tuple" => Value::list(args.to_vec(), IFACE_LIST),
        "append" | "push" | "prepend" => {
            arity(name, args, 2)?;
            let op = if name == "prepend" { "prepend" } else { "push" };
            let mut l = elems(&args[0], cannot(op.to_string()))?;
            check_count(l.len() + 1, &format!("the result of {name}"))?;
            if name == "prepend" {
                l.insert(0, args[1].clone());
            } else {
                l.push(args[1].clone());
            }
            Value::list(l, IFACE_LIST)
        }
        "rest" | "initial" | "reverse" | "compact" | "uniq" => {
            arity(name, args, 1)?;
            let op = match name {
                "compact" => "compact".to_string(),
                other => format!("find {other}"),
            };
            let mut l = elems(&args[0], cannot(op))?;
            match name {
                "rest" if !l.is_empty() => {
                    l.remove(0);
                }
                "initial" => {
                    l.pop();
                }
                "reverse" => l.reverse(),
                "compact" => l.retain(|x| !empty(x)),
                "uniq" => {
                    let mut out: Vec<Value> = Vec::new();
                    for x in l {
                        if !in_list(&out, &x, budget)? {
                            out.push(x);
                        }
                    }
                    l = out;
                }
                _ => {}
            }
            Value::list(l, IFACE_LIST)
        }
        "without" => {
            at_least(name, args, 1)?;
            let l = elems(&args[0], cannot("find without".into()))?;
            let mut out = Vec::new();
            for x in l {
                if !in_list(&args[1..], &x, budget)? {
                    out.push(x);
                }
            }
            Value::list(out, IFACE_LIST)
        }
        "has" => {
            arity(name, args, 2)?;
            if matches!(args[1], Value::Nil) {
                return Ok(Value::Bool(false));
            }
            let l = elems(&args[1], cannot("find has".into()))?;
            Value::Bool(in_list(&l, &args[0], budget)?)
        }
        "slice" => {
            at_least(name, args, 1)?;
            let (l, ty) = match &args[0] {
                Value::List(l, t) => (l.to_vec(), t.name.to_string()),
                Value::Bytes(b) => (
                    b.iter().map(|x| Value::Int(*x as i64)).collect(),
                    "[]uint8".to_string(),
                ),
                other => return Err(not_a_list(other, FuncError::SliceNotAList)),
            };
            if l.is_empty() {
                return Ok(Value::Nil);
            }
            let start = args.get(1).map(to_i64).unwrap_or(0);
            let end = args.get(2).map(to_i64).unwrap_or(l.len() as i64);
            if start < 0 || end < start || end > l.len() as i64 {
                return Err(FuncError::SliceIndex);
            }
            let part = l[start as usize..end as usize].to_vec();
            if let Value::Bytes(_) = &args[0] {
                let bytes: Vec<u8> = part.iter().map(|v| to_i64(v) as u8).collect();
                Value::Bytes(bytes.into())
            } else {
                Value::list(part, &ty)
            }
        }
        "concat" => {
            let mut out = Vec::new();
            for a in args {
                out.extend(elems(a, FuncError::ConcatNotAList)?);
                check_count(out.len(), "the result of concat")?;
            }
            Value::list(out, IFACE_LIST)
        }
        "sortAlpha" => {
            arity(name, args, 1)?;
            match &args[0] {
                Value::List(..) | Value::Bytes(_) => {
                    let mut l = strslice(&args[0])?;
                    l.sort();
                    Value::list(l.into_iter().map(Value::str).collect(), "[]string")
                }
                other => Value::list(vec![Value::str(strval(other))], "[]string"),
            }
        }
        "set" => {
            arity(name, args, 3)?;
            let mut m = dict(&args[0])?.clone();
            m.insert(s(&args[1])?.to_string(), args[2].clone());
            new_dict(m)
        }
        "unset" => {
            arity(name, args, 2)?;
            let mut m = dict(&args[0])?.clone();
            m.remove(s(&args[1])?);
            new_dict(m)
        }
        "pluck" => {
            at_least(name, args, 1)?;
            let key = s(&args[0])?;
            let mut out = Vec::new();
            for d in &args[1..] {
                if let Some(v) = dict(d)?.get(key) {
                    out.push(v.clone());
                }
            }
            Value::list(out, IFACE_LIST)
        }
        "keys" => {
            // Go's map order is random; ours is sorted per dict.
            let mut out = Vec::new();
            for d in args {
                out.extend(dict(d)?.keys().map(|k| Value::str(k.as_str())));
            }
            Value::list(out, "[]string")
        }
        "values" => {
            arity(name, args, 1)?;
            Value::list(dict(&args[0])?.values().cloned().collect(), IFACE_LIST)
        }
        "pick" | "omit" => {
            at_least(name, args, 1)?;
            let m = dict(&args[0])?;
            let keys = args[1..].iter().map(s).collect::<Result<Vec<_>, _>>()?;
            let out = m
                .iter()
                .filter(|(k, _)| keys.contains(&k.as_str()) == (name == "pick"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            new_dict(out)
        }
        "merge" | "mergeOverwrite" => {
            at_least(name, args, 1)?;
            let mut m = dict(&args[0])?.clone();
            for src in &args[1..] {
                mergo(&mut m, dict(src)?, name == "mergeOverwrite");
            }
            new_dict(m)
        }
        "deepCopy" => {
            arity(name, args, 1)?;
            match &args[0] {
                // copystructure skips unexported fields: Go copies a zero version.
                Value::Semver(_, ptr) => Value::Semver(Default::default(), *ptr),
                other => other.clone(),
            }
        }
        "until" => {
            arity(name, args, 1)?;
            let n = int(&args[0])?;
            until_step(0, n, if n < 0 { -1 } else { 1 })?
        }
        "untilStep" => {
            arity(name, args, 3)?;
            until_step(int(&args[0])?, int(&args[1])?, int(&args[2])?)?
        }
        "deepEqual" => {
            arity(name, args, 2)?;
            Value::Bool(deep_equal(&args[0], &args[1], budget)?)
        }
        "typeOf" => {
            arity(name, args, 1)?;
            Value::str(args[0].type_name())
        }
        "kindOf" => {
            arity(name, args, 1)?;
            Value::str(kind_of(&args[0]))
        }
        "typeIs" | "typeIsLike" | "kindIs" => {
            arity(name, args, 2)?;
            let target = s(&args[0])?;
            let actual = if name == "kindIs" {
                kind_of(&args[1]).to_string()
            } else {
                args[1].type_name()
            };
            Value::Bool(
                target == actual || (name == "typeIsLike" && format!("*{target}") == actual),
            )
        }
        _ => return Err(FuncError::NotDefined(name.to_string())),
    })
}
