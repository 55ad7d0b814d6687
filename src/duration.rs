//! Go durations (`time.ParseDuration`: `300ms`, `1.5h`, `2h45m`, `-2s`, `0`), parsed in one
//! place for every reader: timeouts (the phase-timeouts annotation, ActionSet options, controller
//! flags), Wait's `timeout`, `@every` schedules and the template engine's sprig functions.
//! [`parse`] is exactly Go's (integer nanoseconds, checked against overflow); the others add
//! the policy their callers share.

use std::time::Duration;

/// Why a text is not a Go duration. The callers say where it came from and how to write it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("empty")]
    Empty,
    #[error("expected a number at {0:?}")]
    Number(String),
    #[error("missing unit after {0:?} (use ns, us, ms, s, m or h)")]
    MissingUnit(String),
    #[error("unknown unit {0:?} (use ns, us, ms, s, m or h)")]
    UnknownUnit(String),
    #[error("too large")]
    Overflow,
    #[error("negative")]
    Negative,
    #[error("too large (more than a century)")]
    TooLong,
}

const UNITS: [(&str, u64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),
    ("\u{3bc}s", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Go's `time.ParseDuration`, in nanoseconds (no surrounding spaces allowed, as in Go).
pub fn parse(text: &str) -> Result<i64, DurationError> {
    const LIMIT: u64 = 1 << 63;
    let mut s = text;
    let mut neg = false;
    if let Some(c) = s.chars().next()
        && (c == '-' || c == '+')
    {
        neg = c == '-';
        s = &s[1..];
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(if text.is_empty() {
            DurationError::Empty
        } else {
            DurationError::Number(text.to_string())
        });
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        let at = s;
        if !s.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(DurationError::Number(at.to_string()));
        }
        // The integer part.
        let n = s.bytes().take_while(u8::is_ascii_digit).count();
        let mut v: u64 = 0;
        for c in s[..n].bytes() {
            if v > LIMIT / 10 {
                return Err(DurationError::Overflow);
            }
            v = v * 10 + u64::from(c - b'0');
            if v > LIMIT {
                return Err(DurationError::Overflow);
            }
        }
        let pre = n > 0;
        s = &s[n..];
        // The fraction: digits past what fits are dropped, as Go does.
        let (mut f, mut scale, mut post) = (0u64, 1f64, false);
        if let Some(rest) = s.strip_prefix('.') {
            let n = rest.bytes().take_while(u8::is_ascii_digit).count();
            let mut overflow = false;
            for c in rest[..n].bytes() {
                if overflow || f > LIMIT / 10 {
                    overflow = true;
                    continue;
                }
                let y = f * 10 + u64::from(c - b'0');
                if y > LIMIT {
                    overflow = true;
                    continue;
                }
                f = y;
                scale *= 10.0;
            }
            post = n > 0;
            s = &rest[n..];
        }
        if !pre && !post {
            return Err(DurationError::Number(at.to_string()));
        }
        let ul = s
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        let unit_text = &s[..ul];
        if unit_text.is_empty() {
            return Err(DurationError::MissingUnit(
                at[..at.len() - s.len()].to_string(),
            ));
        }
        let unit = UNITS
            .iter()
            .find(|(name, _)| *name == unit_text)
            .map(|(_, ns)| *ns)
            .ok_or_else(|| DurationError::UnknownUnit(unit_text.to_string()))?;
        s = &s[ul..];
        if v > LIMIT / unit {
            return Err(DurationError::Overflow);
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return Err(DurationError::Overflow);
            }
        }
        total += v;
        if total > LIMIT {
            return Err(DurationError::Overflow);
        }
    }
    if neg {
        return Ok((total as i64).wrapping_neg());
    }
    if total > LIMIT - 1 {
        return Err(DurationError::Overflow);
    }
    Ok(total as i64)
}

/// A non-negative Go duration; spaces around it are ignored (a YAML value may carry them).
pub fn parse_std(text: &str) -> Result<Duration, DurationError> {
    let nanos = parse(text.trim())?;
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| DurationError::Negative)
}

/// A timeout: [`parse_std`], at most a century (more is certainly a typo and would overflow
/// deadlines). `0` is a zero duration; the callers read it as "no timeout".
pub fn parse_timeout(text: &str) -> Result<Duration, DurationError> {
    let d = parse_std(text)?;
    if d > Duration::from_secs(100 * 365 * 86400) {
        return Err(DurationError::TooLong);
    }
    Ok(d)
}

/// A duration the way a person reads it: `30m`, `1h30m`, `5s`, `1.5s`.
pub fn format(d: Duration) -> String {
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let ms = d.subsec_millis();
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || ms > 0 || out.is_empty() {
        if ms > 0 {
            let frac = format!("{ms:03}");
            out.push_str(&format!("{s}.{}s", frac.trim_end_matches('0')));
        } else {
            out.push_str(&format!("{s}s"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_duration_parser() {
        assert_eq!(parse("1h30m").unwrap(), 5_400_000_000_000);
        assert_eq!(parse("1.5h").unwrap(), 5_400_000_000_000);
        assert_eq!(parse("-2s").unwrap(), -2_000_000_000);
        assert_eq!(parse("0").unwrap(), 0);
        assert_eq!(parse(".5s").unwrap(), 500_000_000);
        assert_eq!(parse("1\u{b5}s").unwrap(), 1_000);
        assert!(parse("").is_err());
        assert!(parse(" 1h").is_err());
        assert!(parse("1").is_err());
        assert!(parse(".s").is_err());
        assert!(parse("9999999999h").is_err());
        assert_eq!(parse("5"), Err(DurationError::MissingUnit("5".into())));
        assert_eq!(parse("1d"), Err(DurationError::UnknownUnit("d".into())));
        assert_eq!(parse(""), Err(DurationError::Empty));
    }

    /// What timeouts accept (the phase-timeouts annotation, ActionSet options, flags).
    #[test]
    fn timeouts() {
        let ok = [
            ("0", 0.0),
            ("30m", 1800.0),
            ("1h30m", 5400.0),
            ("1.5h", 5400.0),
            ("90s", 90.0),
            ("300ms", 0.3),
            ("2h45m10s", 9910.0),
            ("+5s", 5.0),
            ("1m0.5s", 60.5),
            ("10us", 0.00001),
        ];
        for (text, secs) in ok {
            let d = parse_timeout(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!((d.as_secs_f64() - secs).abs() < 1e-9, "{text}: {d:?}");
        }
        for bad in [
            "",
            "5",
            "-5m",
            "1d",
            "h",
            "1.2.3s",
            "5 m",
            "abc",
            "1e3s",
            "999999999h",
        ] {
            assert!(parse_timeout(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(parse_timeout("-5m"), Err(DurationError::Negative));
        assert_eq!(parse_timeout("1000000h"), Err(DurationError::TooLong));
    }

    /// What Wait's `timeout` accepts.
    #[test]
    fn std_durations() {
        assert_eq!(parse_std("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_std("240s").unwrap(), Duration::from_secs(240));
        assert_eq!(parse_std("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_std("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_std("300ms").unwrap(), Duration::from_millis(300));
        assert_eq!(parse_std(" 10m ").unwrap(), Duration::from_secs(600));
        for bad in ["10", "", "m", "10x", "-1s", "1h-2m"] {
            assert!(parse_std(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_print_compactly() {
        let f = |s: u64| format(Duration::from_secs(s));
        assert_eq!(f(1800), "30m");
        assert_eq!(f(5400), "1h30m");
        assert_eq!(f(3600), "1h");
        assert_eq!(f(5), "5s");
        assert_eq!(f(3605), "1h5s");
        assert_eq!(f(0), "0s");
        assert_eq!(format(Duration::from_millis(1500)), "1.5s");
    }
}
