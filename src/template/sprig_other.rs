//! sprig v2.22.0 number, path, regex, date, URL, environment, network,
//! random and version functions, and Go's `call` builtin.

use super::args::{Ctx, FnResult, arity, at_least, int, s, to_f64, to_i64};
use super::error::FuncError;
use super::error::check_count;
use super::gotime;
use super::print::sprint;
use super::value::{GoTime, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

pub const NAMES: &[&str] = &[
    "toDecimal",
    "biggest",
    "ceil",
    "floor",
    "round",
    "base",
    "dir",
    "clean",
    "ext",
    "isAbs",
    "regexMatch",
    "regexFind",
    "regexFindAll",
    "regexReplaceAll",
    "regexReplaceAllLiteral",
    "regexSplit",
    "dateModify",
    "date_modify",
    "htmlDate",
    "htmlDateInZone",
    "ago",
    "urlParse",
    "urlJoin",
    "env",
    "expandenv",
    "getHostByName",
    "randAlpha",
    "randAlphaNum",
    "randAscii",
    "randNumeric",
    "shuffle",
    "uuidv4",
    "call",
];

/// Go `path.Clean`.
pub fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            x => out.push(x),
        }
    }
    let joined = out.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

fn base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/".into();
    }
    t.rsplit('/').next().unwrap_or(t).to_string()
}

fn dir(p: &str) -> String {
    let i = p.rfind('/').map(|i| i + 1).unwrap_or(0);
    clean(&p[..i])
}

fn ext(p: &str) -> String {
    for (i, c) in p.char_indices().rev() {
        if c == '/' {
            break;
        }
        if c == '.' {
            return p[i..].to_string();
        }
    }
    String::new()
}

fn regex(re: &str) -> Result<regex::Regex, FuncError> {
    regex::RegexBuilder::new(re)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| FuncError::Regex {
            pattern: re.to_string(),
            detail: e.to_string(),
        })
}

/// Go `time.ParseDuration` in nanoseconds ([`crate::duration::parse`]).
fn parse_duration(x: &str) -> Option<i128> {
    crate::duration::parse(x).ok().map(i128::from)
}

/// Go `Duration.String()` for whole seconds.
fn duration_string(secs: i64) -> String {
    if secs == 0 {
        return "0s".into();
    }
    let sign = if secs < 0 { "-" } else { "" };
    let a = secs.unsigned_abs();
    let (h, m, s) = (a / 3600, a / 60 % 60, a % 60);
    if h > 0 {
        format!("{sign}{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{sign}{m}m{s}s")
    } else {
        format!("{sign}{s}s")
    }
}

fn time_arg(v: &Value, ctx: &Ctx) -> GoTime {
    match v {
        Value::Time(t) => (**t).clone(),
        Value::Int(i) => gotime::from_unix(*i),
        _ => ctx.now.clone(),
    }
}

pub fn random_bytes(n: usize) -> Result<Vec<u8>, FuncError> {
    use ring::rand::SecureRandom;
    let mut buf = vec![0u8; n];
    ring::rand::SystemRandom::new()
        .fill(&mut buf)
        .map_err(|_| FuncError::NoRandomness)?;
    Ok(buf)
}

/// A random string from `alphabet` (goutils' crypto random strings).
fn random_string(count: i64, alphabet: &[u8]) -> Result<String, FuncError> {
    if count < 0 {
        return Ok(String::new());
    }
    let count = count as usize;
    super::error::check_len(count, "the random string")?;
    let bytes = random_bytes(count * 2)?;
    Ok(bytes
        .chunks(2)
        .map(|c| alphabet[(u16::from_be_bytes([c[0], c[1]]) as usize) % alphabet.len()] as char)
        .collect())
}

/// Go `url.Parse` fields as sprig's `urlParse` returns them.
fn url_parse(x: &str) -> BTreeMap<String, Value> {
    let (rest, fragment) = x.split_once('#').unwrap_or((x, ""));
    let (mut rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut scheme = "";
    if let Some(i) = rest.find(':')
        && i > 0
        && rest[..i]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
        && rest[..i]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        scheme = &rest[..i];
        rest = &rest[i + 1..];
    }
    let (mut host, mut userinfo, mut opaque, mut path) = ("", "", "", rest);
    if !scheme.is_empty() && !rest.starts_with('/') {
        opaque = rest;
        path = "";
    } else if let Some(r) = rest.strip_prefix("//") {
        let end = r.find('/').unwrap_or(r.len());
        let auth = &r[..end];
        path = &r[end..];
        match auth.rsplit_once('@') {
            Some((u, h)) => {
                userinfo = u;
                host = h;
            }
            None => host = auth,
        }
    }
    let hostname = if let Some(h) = host.strip_prefix('[') {
        h.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host)
    };
    let mut m = BTreeMap::new();
    for (k, v) in [
        ("scheme", scheme.to_ascii_lowercase()),
        ("host", host.to_string()),
        ("hostname", hostname.to_string()),
        ("path", path.to_string()),
        ("query", query.to_string()),
        ("opaque", opaque.to_string()),
        ("fragment", fragment.to_string()),
        ("userinfo", userinfo.to_string()),
    ] {
        m.insert(k.to_string(), Value::str(v));
    }
    m
}

fn url_join(d: &BTreeMap<String, Value>) -> String {
    let get = |k: &str| match d.get(k) {
        Some(Value::Str(s)) => s.to_string(),
        _ => String::new(),
    };
    let (scheme, host, path, query, opaque, fragment, user) = (
        get("scheme"),
        get("host"),
        get("path"),
        get("query"),
        get("opaque"),
        get("fragment"),
        get("userinfo"),
    );
    let mut out = String::new();
    if !scheme.is_empty() {
        out.push_str(&scheme);
        out.push(':');
    }
    if !opaque.is_empty() {
        out.push_str(&opaque);
    } else {
        if !scheme.is_empty() || !host.is_empty() || !user.is_empty() {
            if !host.is_empty() || !path.is_empty() || !user.is_empty() {
                out.push_str("//");
            }
            if !user.is_empty() {
                out.push_str(&user);
                out.push('@');
            }
            out.push_str(&host);
        }
        if !path.is_empty() && !path.starts_with('/') && !host.is_empty() {
            out.push('/');
        }
        out.push_str(&path);
    }
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query);
    }
    if !fragment.is_empty() {
        out.push('#');
        out.push_str(&fragment);
    }
    out
}

pub fn call(name: &str, args: &[Value], ctx: &Ctx) -> Option<FnResult> {
    if !NAMES.contains(&name) {
        return None;
    }
    Some(call_inner(name, args, ctx))
}

fn call_inner(name: &str, args: &[Value], ctx: &Ctx) -> FnResult {
    Ok(match name {
        "toDecimal" => {
            arity(name, args, 1)?;
            Value::Int(i64::from_str_radix(&sprint(args), 8).unwrap_or(0))
        }
        "biggest" => {
            at_least(name, args, 1)?;
            Value::Int(args.iter().map(to_i64).max().unwrap_or(0))
        }
        "ceil" | "floor" => {
            arity(name, args, 1)?;
            let x = to_f64(&args[0]);
            Value::Float(if name == "ceil" { x.ceil() } else { x.floor() })
        }
        "round" => {
            at_least(name, args, 2)?;
            let val = to_f64(&args[0]);
            let places = int(&args[1])? as f64;
            let on = match args.get(2) {
                Some(Value::Float(f)) => *f,
                Some(Value::Int(i)) => *i as f64,
                Some(other) => return Err(FuncError::wrong_type_of("float64", other)),
                None => 0.5,
            };
            let pow = 10f64.powf(places);
            let digit = pow * val;
            let frac = digit.fract();
            let r = if frac >= on {
                digit.ceil()
            } else {
                digit.floor()
            };
            Value::Float(r / pow)
        }
        "base" | "dir" | "clean" | "ext" => {
            arity(name, args, 1)?;
            let p = s(&args[0])?;
            Value::str(match name {
                "base" => base(p),
                "dir" => dir(p),
                "clean" => clean(p),
                _ => ext(p),
            })
        }
        "isAbs" => {
            arity(name, args, 1)?;
            Value::Bool(s(&args[0])?.starts_with('/'))
        }
        "regexMatch" => {
            arity(name, args, 2)?;
            let (re, x) = (s(&args[0])?, s(&args[1])?);
            Value::Bool(regex(re).map(|r| r.is_match(x)).unwrap_or(false))
        }
        "regexFind" => {
            arity(name, args, 2)?;
            let (re, x) = (s(&args[0])?, s(&args[1])?);
            Value::str(regex(re)?.find(x).map(|m| m.as_str()).unwrap_or(""))
        }
        "regexFindAll" | "regexSplit" => {
            arity(name, args, 3)?;
            let (re, x, n) = (s(&args[0])?, s(&args[1])?, int(&args[2])?);
            let r = regex(re)?;
            let limit = if n < 0 { usize::MAX } else { n as usize };
            let parts: Vec<Value> = if name == "regexFindAll" {
                r.find_iter(x)
                    .take(limit)
                    .map(|m| Value::str(m.as_str()))
                    .collect()
            } else {
                go_regex_split(&r, re, x, n)
                    .into_iter()
                    .map(Value::str)
                    .collect()
            };
            check_count(parts.len(), &format!("the result of {name}"))?;
            Value::list(parts, "[]string")
        }
        "regexReplaceAll" | "regexReplaceAllLiteral" => {
            arity(name, args, 3)?;
            let (re, x, repl) = (s(&args[0])?, s(&args[1])?, s(&args[2])?);
            let r = regex(re)?;
            let matches = r.find_iter(x).count();
            super::error::check_len(
                x.len()
                    .saturating_add(matches.saturating_mul(repl.len() * 2)),
                &format!("the result of {name}"),
            )?;
            let out = if name == "regexReplaceAll" {
                r.replace_all(x, repl)
            } else {
                r.replace_all(x, regex::NoExpand(repl))
            };
            Value::str(out.into_owned())
        }
        "dateModify" | "date_modify" => {
            arity(name, args, 2)?;
            let d = s(&args[0])?;
            let Value::Time(t) = &args[1] else {
                return Err(FuncError::wrong_type_of("time.Time", &args[1]));
            };
            match parse_duration(d) {
                Some(ns) => {
                    let delta = chrono::Duration::nanoseconds(ns as i64);
                    let dt = t.dt.checked_add_signed(delta).unwrap_or(t.dt);
                    Value::Time(Arc::new(GoTime {
                        dt,
                        zone: t.zone.clone(),
                    }))
                }
                None => args[1].clone(),
            }
        }
        "htmlDate" => {
            arity(name, args, 1)?;
            Value::str(super::sprig_core::date_in_zone(
                "2006-01-02",
                &args[0],
                "Local",
                ctx,
            ))
        }
        "htmlDateInZone" => {
            arity(name, args, 2)?;
            let zone = s(&args[1])?;
            Value::str(super::sprig_core::date_in_zone(
                "2006-01-02",
                &args[0],
                zone,
                ctx,
            ))
        }
        "ago" => {
            arity(name, args, 1)?;
            let t = time_arg(&args[0], ctx);
            let ms = ctx.now.dt.timestamp_millis() - t.dt.timestamp_millis();
            // Round to the nearest second, halves away from zero (Go's Round).
            let secs = (ms as f64 / 1000.0).round() as i64;
            Value::str(duration_string(secs))
        }
        "urlParse" => {
            arity(name, args, 1)?;
            Value::map(
                url_parse(s(&args[0])?),
                Value::Nil,
                "map[string]interface {}",
            )
        }
        "urlJoin" => {
            arity(name, args, 1)?;
            match &args[0] {
                Value::Map(m) if &*m.ty == "map[string]interface {}" => {
                    Value::str(url_join(&m.entries))
                }
                other => {
                    return Err(FuncError::wrong_type_of("map[string]interface {}", other));
                }
            }
        }
        // The operator's own environment is not the Blueprint's business:
        // every variable reads as unset (see docs/template-engine.md, "Differences from Kanister").
        "env" => {
            arity(name, args, 1)?;
            s(&args[0])?;
            Value::str("")
        }
        "expandenv" => {
            arity(name, args, 1)?;
            Value::str(expand_empty(s(&args[0])?))
        }
        "getHostByName" => {
            arity(name, args, 1)?;
            use std::net::ToSocketAddrs;
            let host = s(&args[0])?;
            // sprig picks one address with rand.Intn, which panics when there is none.
            match (host, 0u16)
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.next())
            {
                Some(a) => Value::str(a.ip().to_string()),
                None => return Err(FuncError::Panic("invalid argument to Intn".into())),
            }
        }
        "randAlpha" | "randAlphaNum" | "randAscii" | "randNumeric" => {
            arity(name, args, 1)?;
            let n = int(&args[0])?;
            let alphabet: Vec<u8> = match name {
                "randAlpha" => (b'a'..=b'z').chain(b'A'..=b'Z').collect(),
                "randAlphaNum" => (b'a'..=b'z')
                    .chain(b'A'..=b'Z')
                    .chain(b'0'..=b'9')
                    .collect(),
                "randNumeric" => (b'0'..=b'9').collect(),
                _ => (32u8..=126).collect(),
            };
            Value::str(random_string(n, &alphabet)?)
        }
        "shuffle" => {
            arity(name, args, 1)?;
            let mut chars: Vec<char> = s(&args[0])?.chars().collect();
            let r = random_bytes(chars.len() * 4)?;
            for i in (1..chars.len()).rev() {
                let x = u32::from_be_bytes([r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]]);
                chars.swap(i, x as usize % (i + 1));
            }
            Value::str(chars.into_iter().collect::<String>())
        }
        "uuidv4" => {
            arity(name, args, 0)?;
            let mut b = random_bytes(16)?;
            b[6] = (b[6] & 0x0f) | 0x40;
            b[8] = (b[8] & 0x3f) | 0x80;
            let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
            Value::str(format!(
                "{}-{}-{}-{}-{}",
                &h[0..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..32]
            ))
        }
        // No value a template can reach is a function.
        "call" => match args.first() {
            None => {
                return Err(FuncError::ArityAtLeast {
                    name: name.to_string(),
                    want: 1,
                    got: 0,
                });
            }
            Some(Value::Nil) => return Err(FuncError::CallOfNil),
            Some(other) => return Err(FuncError::NonFunction(other.type_name())),
        },
        _ => return Err(FuncError::NotDefined(name.to_string())),
    })
}

/// Go `os.ExpandEnv` with every variable unset.
fn expand_empty(x: &str) -> String {
    let b = x.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() {
            let rest = &b[i + 1..];
            if rest[0] == b'{' {
                match rest.iter().position(|c| *c == b'}') {
                    Some(1) => {
                        // "${}" is invalid: Go drops the "${}".
                        i += 3;
                    }
                    Some(end) => i += end + 2,
                    None => {
                        // Bad syntax: Go eats "${".
                        i += 2;
                    }
                }
                continue;
            }
            if b"*#$@!?-0123456789".contains(&rest[0]) {
                i += 2;
                continue;
            }
            let n = rest
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                .count();
            if n == 0 {
                // A lone "$" followed by a non-name: Go keeps neither.
                i += 1;
                continue;
            }
            i += 1 + n;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Go `Regexp.Split` (empty matches at the start and end split nothing).
fn go_regex_split(r: &regex::Regex, expr: &str, x: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !expr.is_empty() && x.is_empty() {
        return vec![String::new()];
    }
    let limit = if n < 0 { usize::MAX } else { n as usize };
    let mut out = Vec::new();
    let (mut beg, mut end) = (0, 0);
    for m in r.find_iter(x).take(limit) {
        if n > 0 && out.len() as i64 == n - 1 {
            break;
        }
        end = m.start();
        if m.end() != 0 {
            out.push(x[beg..end].to_string());
        }
        beg = m.end();
    }
    if end != x.len() {
        out.push(x[beg..].to_string());
    }
    out
}
