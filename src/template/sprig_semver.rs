//! sprig's `semver` and `semverCompare`, after Masterminds/semver v1.5.0
//! (`version.go`, `constraints.go`): the same regular expressions, the same
//! quirks (`1.2` in a constraint means exactly 1.2.0, a prerelease version
//! never satisfies a constraint without one) and the same error texts.

use super::args::{FnResult, arity, s};
use super::error::{FuncError, NIL_DEREFERENCE};
use super::print::to_json;
use super::semver::{PART, SemverError, Version};
use super::value::Value;
use regex::Regex;
use std::sync::{Arc, LazyLock};

pub const NAMES: &[&str] = &["semver", "semverCompare"];

/// Go's `\s` (ASCII, without `\v`; Rust's `\s` is Unicode).
const SP: &str = r"[\t\n\f\r ]";

/// A constraint version: `x`, `X` and `*` are wildcards, and (as in Go)
/// `|` is accepted inside a number, which then fails to parse.
fn cv_regex() -> String {
    let n = r"[0-9|x|X|\*]+";
    format!(r"v?({n})(\.{n})?(\.{n})?(-({PART}))?(\+({PART}))?")
}

static CONSTRAINT_RE: LazyLock<Regex> = LazyLock::new(|| {
    // Longest operators first; the anchors make the match unambiguous anyway.
    Regex::new(&format!(
        r"^{SP}*(>=|=>|<=|=<|~>|!=|>|<|=|~|\^|){SP}*({}){SP}*$",
        cv_regex()
    ))
    .expect("semver constraint regex")
});

static RANGE_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"{SP}*({cv}){SP}+-{SP}+({cv}){SP}*",
        cv = cv_regex()
    ))
    .expect("semver range regex")
});

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    TildeOrEqual,
    NotEqual,
    Greater,
    Less,
    GreaterEqual,
    LessEqual,
    Tilde,
    Caret,
}

/// One comparison of a constraint (Go `constraint`).
#[derive(Debug)]
struct Constraint {
    op: Op,
    con: Version,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

fn is_x(x: &str) -> bool {
    matches!(x, "x" | "X" | "*")
}

/// Go `rewriteRange`: `a - b` becomes `>= a, <= b`. Go replaces the first
/// occurrence of each matched text in the string rewritten so far; that is
/// always the match itself (rewritten text holds no whitespace before a
/// `-`), so one pass gives the same string in linear time.
fn rewrite_range(c: &str) -> String {
    let mut out = String::with_capacity(c.len());
    let mut done = 0;
    for m in RANGE_RE.captures_iter(c) {
        let group = |i: usize| m.get(i).map_or("", |g| g.as_str());
        let whole = m.get(0).map_or(done..done, |g| g.range());
        out.push_str(&c[done..whole.start]);
        out.push_str(&format!(">= {}, <= {}", group(1), group(11)));
        done = whole.end;
    }
    out.push_str(&c[done..]);
    out
}

fn parse_constraint(c: &str) -> Result<Constraint, SemverError> {
    let Some(m) = CONSTRAINT_RE.captures(c) else {
        return Err(SemverError::ImproperConstraint(c.to_string()));
    };
    let group = |i: usize| m.get(i).map_or("", |g| g.as_str());
    let (major, minor, patch, pre) = (group(3), group(4), group(5), group(6));
    let (mut minor_dirty, mut patch_dirty, mut dirty) = (false, false, false);
    let ver = if is_x(major) {
        dirty = true;
        "0.0.0".to_string()
    } else if minor.is_empty() || minor.strip_prefix('.').is_some_and(is_x) {
        (minor_dirty, dirty) = (true, true);
        format!("{major}.0.0{pre}")
    } else if patch.strip_prefix('.').is_some_and(is_x) {
        (patch_dirty, dirty) = (true, true);
        format!("{major}{minor}.0{pre}")
    } else {
        group(2).to_string()
    };
    // Go words every failure here the same way (for example `1x` or a
    // number too large for int64).
    let con = Version::parse(&ver).map_err(|_| SemverError::ConstraintVersion)?;
    let op = match group(1) {
        "" | "=" => Op::TildeOrEqual,
        "!=" => Op::NotEqual,
        ">" => Op::Greater,
        "<" => Op::Less,
        ">=" | "=>" => Op::GreaterEqual,
        "<=" | "=<" => Op::LessEqual,
        "~" | "~>" => Op::Tilde,
        _ => Op::Caret,
    };
    Ok(Constraint {
        op,
        con,
        minor_dirty,
        patch_dirty,
        dirty,
    })
}

impl Constraint {
    fn check(&self, v: &Version) -> bool {
        let c = &self.con;
        // A prerelease only satisfies constraints that name one
        // (Masterminds/semver's rule); Go skips this rule for an exact `!=`.
        let exact_ne = self.op == Op::NotEqual && !self.dirty;
        if !v.pre.is_empty() && c.pre.is_empty() && !exact_ne {
            return false;
        }
        match self.op {
            Op::NotEqual if self.dirty => {
                v.major != c.major || (v.minor != c.minor && !self.minor_dirty)
            }
            Op::NotEqual => v.compare(c) != 0,
            Op::Greater => v.compare(c) == 1,
            Op::GreaterEqual => v.compare(c) >= 0,
            Op::Less | Op::LessEqual if self.dirty => {
                !(v.major > c.major || (v.minor > c.minor && !self.minor_dirty))
            }
            Op::Less => v.compare(c) < 0,
            Op::LessEqual => v.compare(c) <= 0,
            Op::TildeOrEqual if !self.dirty => v.compare(c) == 0,
            Op::TildeOrEqual | Op::Tilde => self.tilde(v),
            Op::Caret => v.compare(c) >= 0 && v.major == c.major,
        }
    }

    fn tilde(&self, v: &Version) -> bool {
        let c = &self.con;
        if v.compare(c) < 0 {
            return false;
        }
        // `~0.0.0` accepts everything (Go's special case).
        if (c.major, c.minor, c.patch) == (0, 0, 0) && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        v.major == c.major && (v.minor == c.minor || self.minor_dirty)
    }
}

/// Go `NewConstraint`: `||` separates alternatives, `,` joins comparisons.
fn parse_constraints(c: &str) -> Result<Vec<Vec<Constraint>>, SemverError> {
    rewrite_range(c)
        .split("||")
        .map(|alt| alt.split(',').map(parse_constraint).collect())
        .collect()
}

/// sprig `semverCompare`: does `version` satisfy `constraint`?
pub fn satisfies(constraint: &str, version: &str) -> Result<bool, SemverError> {
    let alternatives = parse_constraints(constraint)?;
    let v = Version::parse(version)?;
    Ok(alternatives
        .iter()
        .any(|all| all.iter().all(|c| c.check(&v))))
}

/// `*semver.Version` (`ptr`) or a `semver.Version` returned by a method.
pub fn value(v: Version, ptr: bool) -> Value {
    Value::Semver(Arc::new(v), ptr)
}

pub fn call(name: &str, args: &[Value]) -> Option<FnResult> {
    Some(match name {
        "semver" => arity(name, args, 1)
            .and_then(|()| Ok(Version::parse(s(&args[0])?)?))
            .map(|v| value(v, true)),
        "semverCompare" => arity(name, args, 2)
            .and_then(|()| Ok(satisfies(s(&args[0])?, s(&args[1])?)?))
            .map(Value::Bool),
        _ => return None,
    })
}

/// Why a field or method of a version cannot be evaluated.
#[derive(Debug, PartialEq)]
pub enum MethodError {
    /// No such method (Go: "can't evaluate field ..."), or an unexported field.
    NoField(String),
    /// Wrong argument count or type (Go reports these without "error calling").
    Args(FuncError),
    /// The method itself failed or panicked (Go: "error calling <name>: ...").
    Call(FuncError),
}

/// Methods of `Version`; `*Version` has these plus [`PTR_METHODS`].
const VALUE_METHODS: &[(&str, usize)] = &[
    ("IncMajor", 0),
    ("IncMinor", 0),
    ("IncPatch", 0),
    ("SetMetadata", 1),
    ("SetPrerelease", 1),
];

const PTR_METHODS: &[(&str, usize)] = &[
    ("Compare", 1),
    ("Equal", 1),
    ("GreaterThan", 1),
    ("LessThan", 1),
    ("Major", 0),
    ("MarshalJSON", 0),
    ("Metadata", 0),
    ("Minor", 0),
    ("Original", 0),
    ("Patch", 0),
    ("Prerelease", 0),
    ("String", 0),
    ("UnmarshalJSON", 1),
];

const FIELDS: &[&str] = &["major", "minor", "patch", "pre", "metadata", "original"];

/// The number of arguments method `name` takes, or why there is no such method.
pub fn method_arity(name: &str, ptr: bool) -> Result<usize, MethodError> {
    let mut methods = VALUE_METHODS
        .iter()
        .chain(if ptr { PTR_METHODS } else { &[] });
    if let Some((_, n)) = methods.find(|(m, _)| *m == name) {
        return Ok(*n);
    }
    let ty = Version::type_name(ptr);
    Err(MethodError::NoField(if FIELDS.contains(&name) {
        format!("{name} is an unexported field of struct type {ty}")
    } else {
        format!("can't evaluate field {name} in type {ty}")
    }))
}

/// A `*Version` argument (a `Version` value or another type is an error).
fn version_arg(v: &Value) -> Result<Option<&Version>, MethodError> {
    match v {
        Value::Semver(x, true) => Ok(Some(x)),
        // An untyped nil converts to a nil pointer, which Go then dereferences.
        Value::Nil => Ok(None),
        other => Err(MethodError::Args(FuncError::wrong_type_of(
            "*semver.Version",
            other,
        ))),
    }
}

/// Call method `name` of version `v` with evaluated arguments.
pub fn call_method(
    v: &Version,
    ptr: bool,
    name: &str,
    args: &[Value],
) -> Result<Value, MethodError> {
    let want = method_arity(name, ptr)?;
    if args.len() != want {
        return Err(MethodError::Args(FuncError::Arity {
            name: name.to_string(),
            want,
            got: args.len(),
        }));
    }
    let str_arg = |a: &Value| s(a).map(str::to_string).map_err(MethodError::Args);
    let nil = || MethodError::Call(FuncError::Panic(NIL_DEREFERENCE.into()));
    let other = || -> Result<&Version, MethodError> { version_arg(&args[0])?.ok_or_else(nil) };
    Ok(match name {
        "Compare" => Value::Int(v.compare(other()?)),
        "Equal" => Value::Bool(v.compare(other()?) == 0),
        "GreaterThan" => Value::Bool(v.compare(other()?) > 0),
        "LessThan" => Value::Bool(v.compare(other()?) < 0),
        "Major" => Value::Int(v.major),
        "Minor" => Value::Int(v.minor),
        "Patch" => Value::Int(v.patch),
        "Prerelease" => Value::str(v.pre.as_str()),
        "Metadata" => Value::str(v.metadata.as_str()),
        "Original" => Value::str(v.original.as_str()),
        "String" => Value::str(v.to_string()),
        "MarshalJSON" => {
            let json = to_json(&Value::str(v.to_string()), None).unwrap_or_default();
            Value::Bytes(json.into_bytes().into())
        }
        "IncMajor" => value(v.inc_major(), false),
        "IncMinor" => value(v.inc_minor(), false),
        "IncPatch" => value(v.inc_patch(), false),
        "SetPrerelease" => value(
            v.set_prerelease(&str_arg(&args[0])?)
                .map_err(|e| MethodError::Call(e.into()))?,
            false,
        ),
        "SetMetadata" => value(
            v.set_metadata(&str_arg(&args[0])?)
                .map_err(|e| MethodError::Call(e.into()))?,
            false,
        ),
        // Go parses into the version in place, visible through every
        // reference to it; our values are immutable.
        _ => {
            return Err(MethodError::Call(
                SemverError::InPlace(name.to_string()).into(),
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: &str) -> Version {
        Version::parse(x).unwrap_or_else(|e| panic!("{x}: {e}"))
    }

    #[test]
    fn parses_like_new_version() {
        let x = v("v1.2.3-beta.1+c0ff33");
        assert_eq!((x.major, x.minor, x.patch), (1, 2, 3));
        assert_eq!((x.pre.as_str(), x.metadata.as_str()), ("beta.1", "c0ff33"));
        assert_eq!(x.original, "v1.2.3-beta.1+c0ff33");
        assert_eq!(x.to_string(), "1.2.3-beta.1+c0ff33");
        assert_eq!(v("1").to_string(), "1.0.0");
        assert_eq!(v("01.002").to_string(), "1.2.0");
        assert_eq!(v("1.2.3-01").pre, "01");
    }

    #[test]
    fn bad_versions_are_errors_not_panics() {
        for bad in [
            "",
            "1.2.x",
            "1.2.3.4",
            "1.2.x.y",
            "v",
            ">=1",
            "1.2.3-",
            "1.2.3+",
            "1..2",
            " 1.2.3",
            "V1.2.3",
            "1.2.3-a..b",
            "١.2.3",
        ] {
            assert_eq!(
                Version::parse(bad).map_err(|e| e.to_string()),
                Err("Invalid Semantic Version".into()),
                "{bad:?}"
            );
        }
        assert_eq!(
            Version::parse("1.99999999999999999999").map_err(|e| e.to_string()),
            Err("Error parsing version segment: strconv.ParseInt: parsing \"99999999999999999999\": value out of range".into())
        );
        assert_eq!(v("9223372036854775807").major, i64::MAX);
        // Incrementing the largest version wraps as Go's int64 does, without a panic.
        assert_eq!(v("9223372036854775807").inc_major().major, i64::MIN);
    }

    #[test]
    fn compares_prereleases_like_go() {
        let cmp = |a: &str, b: &str| v(a).compare(&v(b));
        assert_eq!(cmp("1.2.3", "1.2.3+meta"), 0);
        assert_eq!(cmp("1.2.3-alpha", "1.2.3"), -1);
        assert_eq!(cmp("1.2.3-alpha.10", "1.2.3-alpha.9"), 1);
        assert_eq!(cmp("1.2.3-alpha", "1.2.3-alpha.1"), -1);
        assert_eq!(cmp("1.2.3-1", "1.2.3-alpha"), -1);
        assert_eq!(cmp("1.2.3-beta", "1.2.3-alpha"), 1);
        // Go's quirk: equal numbers spelled differently are "less" both ways.
        assert_eq!(cmp("1.2.3-01", "1.2.3-1"), -1);
        assert_eq!(cmp("1.2.3-1", "1.2.3-01"), -1);
        assert_eq!(cmp("2.0.0", "10.0.0"), -1);
    }

    #[test]
    fn constraints_follow_semver_1_5() {
        let yes = |c: &str, x: &str| assert_eq!(satisfies(c, x), Ok(true), "{c:?} {x:?}");
        let no = |c: &str, x: &str| assert_eq!(satisfies(c, x), Ok(false), "{c:?} {x:?}");
        yes(">=1.2.0", "1.2.0");
        no(">1.2.0", "1.2.0");
        yes(">= 1.2, < 2.0", "1.9.9");
        no(">= 1.2, < 2.0", "2.0.0");
        yes("<1.2.0 || >=2.0", "2.1.0");
        yes("1.2.3 - 1.4.5", "1.4.5");
        no("1.2.3 - 1.4.5", "1.4.6");
        yes("~1.2.3", "1.2.9");
        no("~1.2.3", "1.3.0");
        yes("~1", "1.9.0");
        yes("^1.2.3", "1.9.0");
        no("^1.2.3", "2.0.0");
        no("^0.2.3", "1.0.0");
        yes("1.2.x", "1.2.7");
        no("1.2.x", "1.3.0");
        yes("*", "42.0.0");
        yes("=1.2", "1.2.0");
        no("=1.2", "1.2.1");
        yes("1", "1.5.0");
        yes("!=1.x", "2.0.0");
        no("!=1.x", "1.5.0");
        yes("<2.x", "2.5.0");
        no("<=1.2.x", "1.3.0");
        // A prerelease only matches constraints that name one.
        no(">=1.0.0", "1.5.0-beta");
        yes(">=1.0.0-0", "1.5.0-beta");
        yes("~0.0.0", "0.0.1");
        // Operators ignore surrounding spaces; `=>` and `=<` are aliases.
        yes(" =>  1.0 ", "1.0.0");
        yes("=<1.0", "0.9.0");
    }

    #[test]
    fn constraint_errors_have_go_texts() {
        let err = |c: &str, x: &str| satisfies(c, x).expect_err(c).to_string();
        assert_eq!(err(">=", "1.0.0"), "improper constraint: >=");
        assert_eq!(err("", "1.0.0"), "improper constraint: ");
        assert_eq!(err(">=1.0,", "1.0.0"), "improper constraint: ");
        assert_eq!(err("foo", "1.0.0"), "improper constraint: foo");
        assert_eq!(err(">=1.0x", "1.0.0"), "constraint Parser Error");
        assert_eq!(err(">=1|2", "1.0.0"), "constraint Parser Error");
        assert_eq!(
            err(">=99999999999999999999", "1.0.0"),
            "constraint Parser Error"
        );
        assert_eq!(err(">=1.0 - 2.0", "1.0.0"), "improper constraint: >=>= 1.0");
        assert_eq!(err(">=1.0", "1.x"), "Invalid Semantic Version");
        // `|` is a digit of a constraint version in Go, so a range swallows it.
        assert_eq!(satisfies("1 - 2||3", "3.0.0"), Ok(true));
    }

    #[test]
    fn long_constraints_with_many_ranges_work() {
        let many = "1 - 2 || ".repeat(50_000) + "3";
        assert_eq!(satisfies(&many, "3.0.0"), Ok(true));
        let bad = ">=1.0 - 2.0, ".repeat(50_000);
        assert!(satisfies(&bad, "1.0.0").is_err());
    }

    #[test]
    fn methods_and_their_errors() {
        let x = v("v1.2.3-rc.1");
        let call = |name: &str, args: &[Value]| call_method(&x, true, name, args);
        assert_eq!(call("Major", &[]), Ok(Value::Int(1)));
        assert_eq!(call("String", &[]), Ok(Value::str("1.2.3-rc.1")));
        let next = call("IncPatch", &[]).expect("IncPatch");
        let Value::Semver(n, false) = &next else {
            panic!("{next:?}")
        };
        assert_eq!(
            (n.to_string(), n.original.as_str()),
            ("1.2.3".into(), "v1.2.3")
        );
        assert_eq!(
            call("Compare", &[value(v("1.2.3"), true)]),
            Ok(Value::Int(-1))
        );
        assert!(matches!(call("Compare", &[]), Err(MethodError::Args(_))));
        assert!(matches!(
            call("Compare", &[Value::str("1")]),
            Err(MethodError::Args(_))
        ));
        assert!(matches!(
            call("Compare", &[Value::Nil]),
            Err(MethodError::Call(_))
        ));
        assert!(matches!(
            call("SetPrerelease", &[Value::str("a..b")]),
            Err(MethodError::Call(_))
        ));
        assert_eq!(
            call_method(&x, false, "Major", &[]),
            Err(MethodError::NoField(
                "can't evaluate field Major in type semver.Version".into()
            ))
        );
        assert_eq!(
            call("major", &[]),
            Err(MethodError::NoField(
                "major is an unexported field of struct type *semver.Version".into()
            ))
        );
        assert_eq!(
            call("MarshalJSON", &[]),
            Ok(Value::Bytes(b"\"1.2.3-rc.1\"".to_vec().into()))
        );
    }
}
