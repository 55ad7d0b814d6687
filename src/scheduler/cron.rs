//! Cron schedules with Kubernetes CronJob syntax and semantics.
//!
//! This is a port of robfig/cron v3 (`ParseStandard` + `SpecSchedule.Next` +
//! `ConstantDelaySchedule`), the library Kubernetes CronJob, Velero, K8up and
//! Argo use, so that a schedule fires at exactly the instants a CronJob with the
//! same `schedule` and `timeZone` would. `tests/cron_oracle.rs` checks that
//! differentially against robfig itself.
//!
//! Accepted syntax:
//! - exactly 5 fields `minute hour day-of-month month day-of-week`, each a
//!   comma list of `*`, `?`, `N`, `N-M`, with an optional `/step`
//!   (`N/step` means `N-max/step`); month names `jan`..`dec` and weekday
//!   names `sun`..`sat` (case-insensitive); day-of-week is 0-6, Sunday = 0;
//! - descriptors `@yearly`/`@annually`, `@monthly`, `@weekly`,
//!   `@daily`/`@midnight`, `@hourly`, and `@every <Go duration>` (`@every 90s`,
//!   `@every 1h30m`); intervals below one second become one second and
//!   fractions of a second are dropped, as in robfig;
//! - day-of-month and day-of-week are ORed when both are restricted, ANDed when
//!   either starts with `*` or `?` (a stepped `*/2` counts as restricted).
//! - `TZ=`/`CRON_TZ=` prefixes are rejected: use `spec.timeZone` (Kubernetes
//!   rejects them on create too).
//!
//! # Daylight saving time rule (same as Kubernetes CronJob)
//!
//! Times are matched on the wall clock of the schedule's time zone:
//! - a wall-clock time that does not exist (inside a spring-forward gap) never
//!   matches, so `30 2 * * *` in `America/New_York` does not run on the day the
//!   clocks jump from 02:00 to 03:00;
//! - a wall-clock time that exists twice (fall-back) matches both times, so
//!   `30 1 * * *` in `America/New_York` runs at 01:30 EDT and again at 01:30 EST.
//!   Each run has its own instant and so its own ActionSet name.
//! - `@every` intervals are absolute durations and ignore the time zone.
//!
//! Schedules whose fixed fields fall outside 01:00-03:00 local time are never
//! affected in zones that shift at those hours.

use chrono::{DateTime, Datelike, NaiveDate, Offset, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use std::fmt;
use std::str::FromStr;

/// Why a schedule or time zone was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    #[error("invalid schedule {spec:?}: {reason}")]
    Schedule { spec: String, reason: SpecError },
    #[error(
        "unknown time zone {zone:?}: use an IANA name such as \"Europe/Berlin\" or \"UTC\" (see `timedatectl list-timezones`)"
    )]
    TimeZone { zone: String },
}

/// What is wrong with a schedule ([`CronError::Schedule`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error(
        "empty schedule; expected 5 fields such as \"0 3 * * *\" or a descriptor such as \"@daily\""
    )]
    Empty,
    #[error("TZ= and CRON_TZ= prefixes are not supported: put the zone in spec.timeZone")]
    ZonePrefix,
    #[error("expected exactly 5 fields (minute hour day-of-month month day-of-week), found {0}")]
    FieldCount(usize),
    /// Field `what` (`minute`, `hour`, ...) with text `field`.
    #[error("{what} field {field:?}: {error}")]
    Field {
        what: &'static str,
        field: String,
        error: FieldError,
    },
    #[error("@every: invalid duration {duration:?} ({error}); examples: 30s, 5m, 1h30m")]
    Every {
        duration: String,
        error: crate::duration::DurationError,
    },
    #[error(
        "unknown descriptor; use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or \"@every <duration>\""
    )]
    Descriptor,
}

/// What is wrong with one range `expr` of a field ([`SpecError::Field`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    #[error("too many hyphens in {0:?}")]
    Hyphens(String),
    #[error("too many slashes in {0:?}")]
    Slashes(String),
    #[error("beginning of range ({start}) below minimum ({min}) in {expr:?}")]
    BelowMinimum { start: u64, min: u64, expr: String },
    #[error("end of range ({end}) above maximum ({max}) in {expr:?}")]
    AboveMaximum { end: u64, max: u64, expr: String },
    #[error("beginning of range ({start}) beyond end of range ({end}) in {expr:?}")]
    Reversed { start: u64, end: u64, expr: String },
    #[error("step must be a positive number in {0:?}")]
    ZeroStep(String),
    #[error("{0:?} is not a number")]
    NotANumber(String),
    #[error("{0:?} is out of range")]
    OutOfRange(String),
    #[error("negative number ({0}) not allowed")]
    Negative(String),
}

const STAR_BIT: u64 = 1 << 63;

#[derive(Debug, Clone, Copy)]
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// A field-based schedule: bit sets as in robfig's `SpecSchedule` (seconds are
/// always 0 for standard 5-field specs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Spec {
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Spec(Spec),
    /// `@every`: whole seconds, at least 1.
    Every(i64),
}

/// A parsed schedule bound to a time zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    kind: Kind,
    tz: Tz,
    source: String,
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.source, self.tz.name())
    }
}

/// Parse an IANA time zone name; `None` or an empty string means UTC.
/// `Local` is rejected, as the Kubernetes API does.
pub fn parse_time_zone(zone: Option<&str>) -> Result<Tz, CronError> {
    match zone {
        None | Some("") => Ok(Tz::UTC),
        Some("Local") => Err(CronError::TimeZone {
            zone: "Local".into(),
        }),
        Some(z) => Tz::from_str(z).map_err(|_| CronError::TimeZone {
            zone: z.to_string(),
        }),
    }
}

impl Schedule {
    /// Parse `spec` (CronJob syntax) for the IANA zone `time_zone` (UTC if none).
    pub fn parse(spec: &str, time_zone: Option<&str>) -> Result<Schedule, CronError> {
        let tz = parse_time_zone(time_zone)?;
        let err = |reason: SpecError| CronError::Schedule {
            spec: spec.to_string(),
            reason,
        };
        if spec.is_empty() {
            return Err(err(SpecError::Empty));
        }
        if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
            return Err(err(SpecError::ZonePrefix));
        }
        let kind = if spec.starts_with('@') {
            parse_descriptor(spec).map_err(err)?
        } else {
            let fields: Vec<&str> = spec.split_whitespace().collect();
            if fields.len() != 5 {
                return Err(err(SpecError::FieldCount(fields.len())));
            }
            let f = |i: usize, b: Bounds, what: &'static str| {
                get_field(fields[i], b).map_err(|error| {
                    err(SpecError::Field {
                        what,
                        field: fields[i].to_string(),
                        error,
                    })
                })
            };
            Kind::Spec(Spec {
                minute: f(0, MINUTES, "minute")?,
                hour: f(1, HOURS, "hour")?,
                dom: f(2, DOM, "day-of-month")?,
                month: f(3, MONTHS, "month")?,
                dow: f(4, DOW, "day-of-week")?,
            })
        };
        Ok(Schedule {
            kind,
            tz,
            source: spec.to_string(),
        })
    }

    pub fn time_zone(&self) -> Tz {
        self.tz
    }

    /// `@every` interval in seconds, if this is an interval schedule.
    pub fn every_seconds(&self) -> Option<i64> {
        match self.kind {
            Kind::Every(s) => Some(s),
            Kind::Spec(_) => None,
        }
    }

    /// The first activation strictly after `t`, or `None` if there is none in
    /// the next five years (an impossible spec such as `0 0 30 2 *`).
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self.kind {
            Kind::Every(delay) => {
                // t + delay - t.nanos
                let secs = t.timestamp().checked_add(delay)?;
                DateTime::from_timestamp(secs, 0)
            }
            Kind::Spec(spec) => {
                next_spec(&spec, self.tz, t.timestamp(), t.timestamp_subsec_nanos())
                    .and_then(|s| DateTime::from_timestamp(s, 0))
            }
        }
    }

    /// The latest activation `a` with `after < a <= until`, and how many
    /// activations lie in that window (counting stops at `limit`).
    pub fn last_between(
        &self,
        after: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
    ) -> (Option<DateTime<Utc>>, u32) {
        if let Kind::Every(delay) = self.kind {
            // Closed form: activations are after + k*delay (after truncated to the second).
            let base = after.timestamp();
            let span = until.timestamp() - base;
            if span < delay {
                return (None, 0);
            }
            let k = span / delay;
            let count = u32::try_from(k).unwrap_or(u32::MAX).min(limit);
            return (DateTime::from_timestamp(base + k * delay, 0), count);
        }
        let mut last = None;
        let mut count = 0u32;
        let mut t = after;
        while let Some(n) = self.next_after(t) {
            if n > until {
                break;
            }
            last = Some(n);
            count = count.saturating_add(1);
            t = n;
            if count >= limit {
                // Jump close to the end: find the last activation by scanning
                // back from `until` in growing windows.
                let mut window = chrono::Duration::hours(1);
                loop {
                    let from = until - window;
                    if from <= n {
                        return (self.last_between_small(n, until).0.or(Some(n)), count);
                    }
                    if let (Some(l), _) = self.last_between_small(from, until) {
                        return (Some(l), count);
                    }
                    window = window * 4;
                }
            }
        }
        (last, count)
    }

    fn last_between_small(
        &self,
        after: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> (Option<DateTime<Utc>>, u32) {
        let mut last = None;
        let mut count = 0;
        let mut t = after;
        while let Some(n) = self.next_after(t) {
            if n > until {
                break;
            }
            last = Some(n);
            count += 1;
            t = n;
        }
        (last, count)
    }
}

fn parse_descriptor(spec: &str) -> Result<Kind, SpecError> {
    let all = |b: Bounds| get_bits(b.min, b.max, 1) | STAR_BIT;
    let one = |b: Bounds| 1u64 << b.min;
    let k = |minute, hour, dom, month, dow| {
        Kind::Spec(Spec {
            minute,
            hour,
            dom,
            month,
            dow,
        })
    };
    Ok(match spec {
        "@yearly" | "@annually" => k(one(MINUTES), one(HOURS), one(DOM), one(MONTHS), all(DOW)),
        "@monthly" => k(one(MINUTES), one(HOURS), one(DOM), all(MONTHS), all(DOW)),
        "@weekly" => k(one(MINUTES), one(HOURS), all(DOM), all(MONTHS), one(DOW)),
        "@daily" | "@midnight" => k(one(MINUTES), one(HOURS), all(DOM), all(MONTHS), all(DOW)),
        "@hourly" => k(one(MINUTES), all(HOURS), all(DOM), all(MONTHS), all(DOW)),
        _ => {
            if let Some(d) = spec.strip_prefix("@every ") {
                let nanos = crate::duration::parse(d).map_err(|error| SpecError::Every {
                    duration: d.to_string(),
                    error,
                })?;
                let nanos = nanos.max(1_000_000_000);
                Kind::Every(nanos / 1_000_000_000)
            } else {
                return Err(SpecError::Descriptor);
            }
        }
    })
}

fn get_field(field: &str, b: Bounds) -> Result<u64, FieldError> {
    let mut bits = 0;
    for expr in field.split(',').filter(|s| !s.is_empty()) {
        bits |= get_range(expr, b)?;
    }
    Ok(bits)
}

fn get_range(expr: &str, b: Bounds) -> Result<u64, FieldError> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let mut extra = 0;
    let (start, mut end);
    if low_and_high[0] == "*" || low_and_high[0] == "?" {
        start = b.min;
        end = b.max;
        extra = STAR_BIT;
    } else {
        start = parse_int_or_name(low_and_high[0], b)?;
        end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], b)?,
            _ => return Err(FieldError::Hyphens(expr.to_string())),
        };
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = parse_int(range_and_step[1])?;
            if single {
                end = b.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(FieldError::Slashes(expr.to_string())),
    };
    if start < b.min {
        return Err(FieldError::BelowMinimum {
            start,
            min: b.min,
            expr: expr.to_string(),
        });
    }
    if end > b.max {
        return Err(FieldError::AboveMaximum {
            end,
            max: b.max,
            expr: expr.to_string(),
        });
    }
    if start > end {
        return Err(FieldError::Reversed {
            start,
            end,
            expr: expr.to_string(),
        });
    }
    if step == 0 {
        return Err(FieldError::ZeroStep(expr.to_string()));
    }
    Ok(get_bits(start, end, step) | extra)
}

fn parse_int_or_name(expr: &str, b: Bounds) -> Result<u64, FieldError> {
    let lower = expr.to_lowercase();
    if let Some((_, v)) = b.names.iter().find(|(n, _)| *n == lower) {
        return Ok(*v);
    }
    parse_int(expr)
}

/// Go's `strconv.Atoi` followed by robfig's non-negative check.
fn parse_int(expr: &str) -> Result<u64, FieldError> {
    let (neg, digits) = match expr.as_bytes().first() {
        Some(b'+') => (false, &expr[1..]),
        Some(b'-') => (true, &expr[1..]),
        _ => (false, expr),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(FieldError::NotANumber(expr.to_string()));
    }
    let v: i64 = digits
        .parse()
        .map_err(|_| FieldError::OutOfRange(expr.to_string()))?;
    if neg && v != 0 {
        return Err(FieldError::Negative(expr.to_string()));
    }
    Ok(v as u64)
}

fn get_bits(min: u64, max: u64, step: u64) -> u64 {
    let mut bits = 0u64;
    let mut i = min;
    while i <= max {
        bits |= 1u64 << i;
        i = match i.checked_add(step) {
            Some(n) => n,
            None => break,
        };
    }
    bits
}

// ---- robfig SpecSchedule.Next on unix seconds, with Go's time semantics ----

fn offset_at(tz: Tz, unix: i64) -> i64 {
    match DateTime::from_timestamp(unix, 0) {
        Some(dt) => i64::from(
            tz.offset_from_utc_datetime(&dt.naive_utc())
                .fix()
                .local_minus_utc(),
        ),
        None => 0,
    }
}

/// Wall-clock fields of an instant in `tz`.
#[derive(Debug, Clone, Copy)]
struct Wall {
    year: i32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    weekday: u32, // Sunday = 0
}

fn wall(tz: Tz, unix: i64) -> Option<Wall> {
    let local = DateTime::from_timestamp(unix + offset_at(tz, unix), 0)?.naive_utc();
    Some(Wall {
        year: local.year(),
        month: local.month(),
        day: local.day(),
        hour: local.hour(),
        minute: local.minute(),
        second: local.second(),
        weekday: local.weekday().num_days_from_sunday(),
    })
}

/// Go's `time.Date(year, month, day, hour, min, sec, 0, loc)` with its
/// normalisation of out-of-range fields and its choice of offset for wall
/// times that do not exist or exist twice.
fn go_date(tz: Tz, year: i32, month: i64, day: i64, hour: i64, min: i64, sec: i64) -> Option<i64> {
    let m0 = month - 1;
    let year = i64::from(year) + m0.div_euclid(12);
    let month = m0.rem_euclid(12) + 1;
    let first = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month as u32, 1)?;
    let days = first.and_hms_opt(0, 0, 0)?.and_utc().timestamp() / 86_400 + day - 1;
    let unix = days * 86_400 + hour * 3_600 + min * 60 + sec;
    let offset = offset_at(tz, unix - offset_at(tz, unix));
    Some(unix - offset)
}

fn day_matches(s: &Spec, w: &Wall) -> bool {
    let dom = (1u64 << w.day) & s.dom > 0;
    let dow = (1u64 << w.weekday) & s.dow > 0;
    if s.dom & STAR_BIT > 0 || s.dow & STAR_BIT > 0 {
        dom && dow
    } else {
        dom || dow
    }
}

fn next_spec(s: &Spec, tz: Tz, unix: i64, nanos: u32) -> Option<i64> {
    // Start at the earliest possible time (the upcoming second).
    let _ = nanos;
    let mut t = unix.checked_add(1)?;
    let mut added = false;
    let year_limit = wall(tz, t)?.year + 5;
    // Each loop below is bounded; the WRAP restarts are bounded by the year limit.
    'wrap: loop {
        let mut w = wall(tz, t)?;
        if w.year > year_limit {
            return None;
        }
        while (1u64 << w.month) & s.month == 0 {
            if !added {
                added = true;
                t = go_date(tz, w.year, w.month.into(), 1, 0, 0, 0)?;
                w = wall(tz, t)?;
            }
            t = go_date(
                tz,
                w.year,
                i64::from(w.month) + 1,
                w.day.into(),
                w.hour.into(),
                w.minute.into(),
                w.second.into(),
            )?;
            w = wall(tz, t)?;
            if w.month == 1 {
                continue 'wrap;
            }
        }
        while !day_matches(s, &w) {
            if !added {
                added = true;
                t = go_date(tz, w.year, w.month.into(), w.day.into(), 0, 0, 0)?;
                w = wall(tz, t)?;
            }
            t = go_date(
                tz,
                w.year,
                w.month.into(),
                i64::from(w.day) + 1,
                w.hour.into(),
                w.minute.into(),
                w.second.into(),
            )?;
            w = wall(tz, t)?;
            if w.hour != 0 {
                if w.hour > 12 {
                    t += i64::from(24 - w.hour) * 3_600;
                } else {
                    t -= i64::from(w.hour) * 3_600;
                }
                w = wall(tz, t)?;
            }
            if w.day == 1 {
                continue 'wrap;
            }
        }
        while (1u64 << w.hour) & s.hour == 0 {
            if !added {
                added = true;
                t = go_date(
                    tz,
                    w.year,
                    w.month.into(),
                    w.day.into(),
                    w.hour.into(),
                    0,
                    0,
                )?;
            }
            t += 3_600;
            w = wall(tz, t)?;
            if w.hour == 0 {
                continue 'wrap;
            }
        }
        while (1u64 << w.minute) & s.minute == 0 {
            if !added {
                added = true;
                t = t.div_euclid(60) * 60;
            }
            t += 60;
            w = wall(tz, t)?;
            if w.minute == 0 {
                continue 'wrap;
            }
        }
        // Seconds field is "0" for standard specs.
        while w.second != 0 {
            // Truncate(second) is a no-op on whole seconds.
            added = true;
            t += 1;
            w = wall(tz, t)?;
            if w.second == 0 {
                continue 'wrap;
            }
        }
        return Some(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn next(spec: &str, tz: Option<&str>, from: &str) -> String {
        Schedule::parse(spec, tz)
            .unwrap()
            .next_after(utc(from))
            .map(|t| t.to_rfc3339())
            .unwrap_or_default()
    }

    #[test]
    fn next_activation_table() {
        // spec | from | next activation
        for row in [
            "30 2 * * *   | 2026-06-01T00:00:00Z | 2026-06-01T02:30:00+00:00",
            "*/15 * * * * | 2026-06-01T00:00:00Z | 2026-06-01T00:15:00+00:00",
            "5/15 * * * * | 2026-06-01T00:06:00Z | 2026-06-01T00:20:00+00:00",
            "*/61 * * * * | 2026-06-01T00:06:00Z | 2026-06-01T01:00:00+00:00",
            "0 0 1 jan *  | 2026-06-01T00:00:00Z | 2027-01-01T00:00:00+00:00",
            "@hourly      | 2026-06-01T00:00:00Z | 2026-06-01T01:00:00+00:00",
            "@midnight    | 2026-06-01T00:00:00Z | 2026-06-02T00:00:00+00:00",
            // Strictly after: an instant on an activation moves to the next one.
            "0 * * * *    | 2026-06-01T01:00:00Z | 2026-06-01T02:00:00+00:00",
            // Both restricted: OR. 2026-06-05 is a Friday.
            "0 0 13 * fri | 2026-06-01T00:00:00Z | 2026-06-05T00:00:00+00:00",
            // DOW star: only DOM decides.
            "0 0 13 * *   | 2026-06-01T00:00:00Z | 2026-06-13T00:00:00+00:00",
            // */2 clears the star bit: OR semantics (day 1,3,5... or Friday).
            "0 0 */2 * 5  | 2026-06-01T00:00:00Z | 2026-06-03T00:00:00+00:00",
            "0 0 * * 0    | 2026-06-01T00:00:00Z | 2026-06-07T00:00:00+00:00",
        ] {
            let [spec, from, want]: [&str; 3] = row
                .split('|')
                .map(str::trim)
                .collect::<Vec<_>>()
                .try_into()
                .unwrap();
            assert_eq!(next(spec, None, from), want, "{row}");
        }
    }

    #[test]
    fn every() {
        let s = Schedule::parse("@every 1h30m", None).unwrap();
        assert_eq!(s.every_seconds(), Some(5400));
        assert_eq!(
            next(
                "@every 90s",
                Some("Europe/Berlin"),
                "2026-06-01T00:00:00.5Z"
            ),
            "2026-06-01T00:01:30+00:00"
        );
        assert_eq!(
            Schedule::parse("@every 100ms", None)
                .unwrap()
                .every_seconds(),
            Some(1)
        );
        assert_eq!(
            Schedule::parse("@every 1.5s", None)
                .unwrap()
                .every_seconds(),
            Some(1)
        );
        assert!(Schedule::parse("@every", None).is_err());
        assert!(Schedule::parse("@every 5", None).is_err());
        assert!(Schedule::parse("@every 5x", None).is_err());
    }

    #[test]
    fn rejects_bad_input_with_reasons() {
        for (spec, needle) in [
            ("", "empty"),
            ("* * * *", "exactly 5 fields"),
            ("0 30 2 * * *", "exactly 5 fields"),
            ("60 * * * *", "above maximum"),
            ("* * * * 7", "above maximum"),
            ("* * 0 * *", "below minimum"),
            ("5-1 * * * *", "beyond end"),
            ("*/0 * * * *", "positive"),
            ("1-2-3 * * * *", "hyphens"),
            ("1/2/3 * * * *", "slashes"),
            ("L * * * *", "not a number"),
            ("TZ=UTC 0 * * * *", "spec.timeZone"),
            ("@fortnightly", "unknown descriptor"),
        ] {
            let e = Schedule::parse(spec, None).unwrap_err().to_string();
            assert!(e.contains(needle), "{spec:?}: {e}");
        }
        assert!(matches!(
            Schedule::parse("@daily", Some("Mars/Base")),
            Err(CronError::TimeZone { .. })
        ));
        assert!(matches!(
            Schedule::parse("@daily", Some("Local")),
            Err(CronError::TimeZone { .. })
        ));
    }

    #[test]
    fn impossible_schedule_has_no_next() {
        let s = Schedule::parse("0 0 30 feb *", None).unwrap();
        assert_eq!(s.next_after(utc("2026-01-01T00:00:00Z")), None);
    }

    #[test]
    fn dst_spring_forward_skips_gap() {
        // America/New_York jumps 02:00 -> 03:00 on 2026-03-08.
        assert_eq!(
            next(
                "30 2 * * *",
                Some("America/New_York"),
                "2026-03-07T12:00:00Z"
            ),
            // 2026-03-09 02:30 EDT
            "2026-03-09T06:30:00+00:00"
        );
        // An hourly schedule just loses the missing hour.
        assert_eq!(
            next(
                "0 * * * *",
                Some("America/New_York"),
                "2026-03-08T06:30:00Z"
            ),
            "2026-03-08T07:00:00+00:00" // 03:00 EDT
        );
    }

    #[test]
    fn dst_fall_back_runs_twice() {
        // America/New_York goes 02:00 EDT -> 01:00 EST on 2026-11-01.
        let s = Schedule::parse("30 1 * * *", Some("America/New_York")).unwrap();
        let a = s.next_after(utc("2026-11-01T00:00:00Z")).unwrap();
        let b = s.next_after(a).unwrap();
        assert_eq!(a.to_rfc3339(), "2026-11-01T05:30:00+00:00"); // 01:30 EDT
        assert_eq!(b.to_rfc3339(), "2026-11-01T06:30:00+00:00"); // 01:30 EST
        let c = s.next_after(b).unwrap();
        assert_eq!(c.to_rfc3339(), "2026-11-02T06:30:00+00:00");
    }

    #[test]
    fn last_between_counts_missed() {
        let s = Schedule::parse("*/10 * * * *", None).unwrap();
        let (last, n) = s.last_between(
            utc("2026-06-01T00:00:00Z"),
            utc("2026-06-01T01:05:00Z"),
            100,
        );
        assert_eq!(last.unwrap().to_rfc3339(), "2026-06-01T01:00:00+00:00");
        assert_eq!(n, 6);
        // Limit reached: count capped, last still exact.
        let (last, n) =
            s.last_between(utc("2026-06-01T00:00:00Z"), utc("2026-06-03T01:05:00Z"), 10);
        assert_eq!(last.unwrap().to_rfc3339(), "2026-06-03T01:00:00+00:00");
        assert_eq!(n, 10);
        let e = Schedule::parse("@every 30s", None).unwrap();
        let (last, n) = e.last_between(
            utc("2026-06-01T00:00:00Z"),
            utc("2026-06-01T00:01:45Z"),
            100,
        );
        assert_eq!(last.unwrap().to_rfc3339(), "2026-06-01T00:01:30+00:00");
        assert_eq!(n, 3);
        let (last, n) = e.last_between(
            utc("2026-06-01T00:00:00Z"),
            utc("2026-06-01T00:00:29Z"),
            100,
        );
        assert_eq!((last, n), (None, 0));
    }
}
