//! Go reference-layout time formatting and parsing (`time.Format`,
//! `time.ParseInLocation` with `Local` = UTC, as in Kanister's images).

use super::value::GoTime;
use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, TimeZone, Timelike, Utc};
use std::sync::Arc;

pub const RFC3339_NANO: &str = "2006-01-02T15:04:05.999999999Z07:00";
const STRING_LAYOUT: &str = "2006-01-02 15:04:05.999999999 -0700 MST";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Pm,
    Tz,
    Iso(u8),
    Num(u8),
    Frac0(usize, char),
    Frac9(usize, char),
}

// Zone variants: 0 = -070000, 1 = -07:00:00, 2 = -0700, 3 = -07:00, 4 = -07.
const ZONES: [&str; 5] = ["070000", "07:00:00", "0700", "07:00", "07"];

/// Split `layout` at the first standard chunk: (prefix, std, suffix).
fn next_std(layout: &str) -> (&str, Option<(Std, usize)>) {
    let b = layout.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // A layout may hold any text: a byte inside a multi-byte character starts no chunk.
        if !layout.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let rest = &layout[i..];
        let hit: Option<(Std, usize)> = match b[i] {
            b'J' if rest.starts_with("January") => Some((Std::LongMonth, 7)),
            b'J' if rest.starts_with("Jan") => Some((Std::Month, 3)),
            b'M' if rest.starts_with("Monday") => Some((Std::LongWeekDay, 6)),
            b'M' if rest.starts_with("Mon") => Some((Std::WeekDay, 3)),
            b'M' if rest.starts_with("MST") => Some((Std::Tz, 3)),
            b'0' if b.len() > i + 1 && (b'1'..=b'6').contains(&b[i + 1]) => Some((
                [
                    Std::ZeroMonth,
                    Std::ZeroDay,
                    Std::ZeroHour12,
                    Std::ZeroMinute,
                    Std::ZeroSecond,
                    Std::Year,
                ][(b[i + 1] - b'1') as usize],
                2,
            )),
            b'0' if rest.starts_with("002") => Some((Std::ZeroYearDay, 3)),
            b'1' if rest.starts_with("15") => Some((Std::Hour, 2)),
            b'1' => Some((Std::NumMonth, 1)),
            b'2' if rest.starts_with("2006") => Some((Std::LongYear, 4)),
            b'2' => Some((Std::Day, 1)),
            b'_' if rest.starts_with("_2006") => {
                return (&layout[..i + 1], Some((Std::LongYear, 4)));
            }
            b'_' if rest.starts_with("_2") => Some((Std::UnderDay, 2)),
            b'_' if rest.starts_with("__2") => Some((Std::UnderYearDay, 3)),
            b'3' => Some((Std::Hour12, 1)),
            b'4' => Some((Std::Minute, 1)),
            b'5' => Some((Std::Second, 1)),
            b'P' if rest.starts_with("PM") => Some((Std::PM, 2)),
            b'p' if rest.starts_with("pm") => Some((Std::Pm, 2)),
            b'-' | b'Z' => ZONES.iter().enumerate().find_map(|(k, z)| {
                rest[1..].starts_with(z).then(|| {
                    (
                        if b[i] == b'-' {
                            Std::Num(k as u8)
                        } else {
                            Std::Iso(k as u8)
                        },
                        1 + z.len(),
                    )
                })
            }),
            b'.' | b',' if b.len() > i + 1 && (b[i + 1] == b'0' || b[i + 1] == b'9') => {
                let ch = b[i + 1];
                let mut j = i + 1;
                while j < b.len() && b[j] == ch {
                    j += 1;
                }
                if j < b.len() && b[j].is_ascii_digit() {
                    None
                } else {
                    let n = j - (i + 1);
                    let sep = b[i] as char;
                    Some((
                        if ch == b'0' {
                            Std::Frac0(n, sep)
                        } else {
                            Std::Frac9(n, sep)
                        },
                        j - i,
                    ))
                }
            }
            _ => None,
        };
        if let Some(h) = hit {
            return (&layout[..i], Some(h));
        }
        i += 1;
    }
    (layout, None)
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

fn push_zone(out: &mut String, off: i32, variant: u8) {
    let sign = if off < 0 { '-' } else { '+' };
    let a = off.abs();
    let (h, m, s) = (a / 3600, (a / 60) % 60, a % 60);
    out.push(sign);
    match variant {
        0 => out.push_str(&format!("{h:02}{m:02}{s:02}")),
        1 => out.push_str(&format!("{h:02}:{m:02}:{s:02}")),
        2 => out.push_str(&format!("{h:02}{m:02}")),
        3 => out.push_str(&format!("{h:02}:{m:02}")),
        _ => out.push_str(&format!("{h:02}")),
    }
}

/// Go `Time.Format`.
pub fn format(t: &GoTime, layout: &str) -> String {
    let d = &t.dt;
    let off = d.offset().local_minus_utc();
    let mut out = String::new();
    let mut rest = layout;
    loop {
        let (prefix, std) = next_std(rest);
        out.push_str(prefix);
        let Some((std, n)) = std else { break };
        rest = &rest[prefix.len() + n..];
        let hour = d.hour();
        let h12 = if hour.is_multiple_of(12) {
            12
        } else {
            hour % 12
        };
        match std {
            Std::LongMonth => out.push_str(MONTHS[d.month0() as usize]),
            Std::Month => out.push_str(&MONTHS[d.month0() as usize][..3]),
            Std::NumMonth => out.push_str(&d.month().to_string()),
            Std::ZeroMonth => out.push_str(&format!("{:02}", d.month())),
            Std::LongWeekDay => out.push_str(DAYS[d.weekday().num_days_from_sunday() as usize]),
            Std::WeekDay => out.push_str(&DAYS[d.weekday().num_days_from_sunday() as usize][..3]),
            Std::Day => out.push_str(&d.day().to_string()),
            Std::UnderDay => out.push_str(&format!("{:>2}", d.day())),
            Std::ZeroDay => out.push_str(&format!("{:02}", d.day())),
            Std::UnderYearDay => out.push_str(&format!("{:>3}", d.ordinal())),
            Std::ZeroYearDay => out.push_str(&format!("{:03}", d.ordinal())),
            Std::Hour => out.push_str(&format!("{hour:02}")),
            Std::Hour12 => out.push_str(&h12.to_string()),
            Std::ZeroHour12 => out.push_str(&format!("{h12:02}")),
            Std::Minute => out.push_str(&d.minute().to_string()),
            Std::ZeroMinute => out.push_str(&format!("{:02}", d.minute())),
            Std::Second => out.push_str(&d.second().to_string()),
            Std::ZeroSecond => out.push_str(&format!("{:02}", d.second())),
            Std::LongYear => {
                let y = d.year();
                if y < 0 {
                    out.push_str(&format!("-{:04}", -y));
                } else {
                    out.push_str(&format!("{y:04}"));
                }
            }
            Std::Year => out.push_str(&format!("{:02}", d.year().rem_euclid(100))),
            Std::PM => out.push_str(if hour >= 12 { "PM" } else { "AM" }),
            Std::Pm => out.push_str(if hour >= 12 { "pm" } else { "am" }),
            Std::Tz => {
                if !t.zone.is_empty() {
                    out.push_str(&t.zone);
                } else {
                    push_zone(&mut out, off, 2);
                }
            }
            Std::Iso(v) => {
                if off == 0 {
                    out.push('Z');
                } else {
                    push_zone(&mut out, off, v);
                }
            }
            Std::Num(v) => push_zone(&mut out, off, v),
            Std::Frac0(n, sep) => {
                let nanos = format!("{:09}", d.nanosecond() % 1_000_000_000);
                out.push(sep);
                out.push_str(&nanos[..n.min(9)]);
            }
            Std::Frac9(n, sep) => {
                let nanos = format!("{:09}", d.nanosecond() % 1_000_000_000);
                let s = nanos[..n.min(9)].trim_end_matches('0');
                if !s.is_empty() {
                    out.push(sep);
                    out.push_str(s);
                }
            }
        }
    }
    out
}

/// Go `Time.String()` (without a monotonic clock reading).
pub fn time_string(t: &GoTime) -> String {
    format(t, STRING_LAYOUT)
}

/// The Go zero time (`0001-01-01 00:00:00 +0000 UTC`).
pub fn zero_time() -> GoTime {
    utc(DateTime::<Utc>::from_naive_utc_and_offset(
        NaiveDate::from_ymd_opt(1, 1, 1)
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .unwrap_or_default(),
        Utc,
    ))
}

/// A UTC time (zone `UTC`, which is also `Local` here).
pub fn utc(d: DateTime<Utc>) -> GoTime {
    GoTime {
        dt: d.fixed_offset(),
        zone: Arc::from("UTC"),
    }
}

/// The same instant in an IANA zone (Go `time.LoadLocation`; `Local`, an
/// unknown zone and `UTC` are UTC, as sprig falls back to UTC).
pub fn in_zone(t: &GoTime, zone: &str) -> GoTime {
    use chrono::Offset;
    use chrono_tz::OffsetName;
    let Ok(tz) = zone.parse::<chrono_tz::Tz>() else {
        return in_local(t);
    };
    if zone == "UTC" || zone.is_empty() {
        return in_local(t);
    }
    let local = t.dt.with_timezone(&tz);
    let abbr = local.offset().abbreviation().unwrap_or("").to_string();
    GoTime {
        dt: local.with_timezone(&local.offset().fix()),
        zone: Arc::from(abbr.as_str()),
    }
}

/// The same instant in Local (= UTC).
pub fn in_local(t: &GoTime) -> GoTime {
    utc(t.dt.with_timezone(&Utc))
}

fn getnum(v: &str, fixed: bool) -> Option<(u32, &str)> {
    let b = v.as_bytes();
    if b.is_empty() || !b[0].is_ascii_digit() {
        return None;
    }
    if b.len() < 2 || !b[1].is_ascii_digit() {
        if fixed {
            return None;
        }
        return Some(((b[0] - b'0') as u32, &v[1..]));
    }
    Some((((b[0] - b'0') * 10 + (b[1] - b'0')) as u32, &v[2..]))
}

fn getdigits(v: &str, n: usize) -> Option<(i64, &str)> {
    if v.len() < n || !v.as_bytes()[..n].iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some((v[..n].parse().ok()?, &v[n..]))
}

fn lookup<'a>(v: &'a str, names: &[&str]) -> Option<(usize, &'a str)> {
    for (i, n) in names.iter().enumerate() {
        if v.len() >= n.len() && v.is_char_boundary(n.len()) && v[..n.len()].eq_ignore_ascii_case(n)
        {
            return Some((i, &v[n.len()..]));
        }
    }
    None
}

/// Go's `skip`: match a literal prefix, runs of spaces being equivalent.
fn skip<'a>(mut value: &'a str, mut prefix: &str) -> Option<&'a str> {
    while !prefix.is_empty() {
        if prefix.starts_with(' ') {
            if !value.is_empty() && !value.starts_with(' ') {
                return None;
            }
            prefix = prefix.trim_start_matches(' ');
            value = value.trim_start_matches(' ');
            continue;
        }
        let c = prefix.chars().next()?;
        if !value.starts_with(c) {
            return None;
        }
        prefix = &prefix[c.len_utf8()..];
        value = &value[c.len_utf8()..];
    }
    Some(value)
}

/// [`getnum`] of a number in `range`.
fn getnum_in(v: &str, fixed: bool, range: std::ops::RangeInclusive<u32>) -> Option<(u32, &str)> {
    getnum(v, fixed).filter(|(n, _)| range.contains(n))
}

/// Go `time.ParseInLocation(layout, value, time.Local)` with Local = UTC.
pub fn parse(layout: &str, value: &str) -> Option<GoTime> {
    let (mut year, mut month, mut day, mut hour, mut min, mut sec, mut nsec) =
        (1i64, 1u32, 1u32, 0u32, 0u32, 0u32, 0u32);
    let mut pm_set: Option<bool> = None;
    let mut zone_off: Option<i32> = None;
    let mut zone_name: Option<String> = None;
    let mut utc_z = false;
    let mut yday: Option<u32> = None;
    let mut layout = layout;
    let mut v = value;
    loop {
        let (prefix, std) = next_std(layout);
        v = skip(v, prefix)?;
        let Some((std, n)) = std else { break };
        let std_str = &layout[prefix.len()..prefix.len() + n];
        layout = &layout[prefix.len() + n..];
        match std {
            Std::Year => {
                let (y, r) = getdigits(v, 2)?;
                year = if y >= 69 { y + 1900 } else { y + 2000 };
                v = r;
            }
            Std::LongYear => {
                let (y, r) = getdigits(v, 4)?;
                year = y;
                v = r;
            }
            Std::Month | Std::LongMonth => {
                let names: Vec<&str> = if std == Std::Month {
                    MONTHS.iter().map(|m| &m[..3]).collect()
                } else {
                    MONTHS.to_vec()
                };
                let (i, r) = lookup(v, &names)?;
                month = i as u32 + 1;
                v = r;
            }
            Std::NumMonth | Std::ZeroMonth => {
                (month, v) = getnum_in(v, std == Std::ZeroMonth, 1..=12)?;
            }
            Std::WeekDay | Std::LongWeekDay => {
                let names: Vec<&str> = if std == Std::WeekDay {
                    DAYS.iter().map(|m| &m[..3]).collect()
                } else {
                    DAYS.to_vec()
                };
                v = lookup(v, &names)?.1;
            }
            Std::Day | Std::UnderDay | Std::ZeroDay => {
                if std == Std::UnderDay && v.starts_with(' ') {
                    v = &v[1..];
                }
                (day, v) = getnum(v, std == Std::ZeroDay)?;
            }
            Std::UnderYearDay | Std::ZeroYearDay => {
                let mut w = v;
                if std == Std::UnderYearDay {
                    w = w.trim_start_matches(' ');
                }
                let (d, r) = getdigits(w, 3)
                    .or_else(|| getdigits(w, 2))
                    .or_else(|| getdigits(w, 1))?;
                yday = Some(d as u32);
                v = r;
            }
            Std::Hour => {
                (hour, v) = getnum_in(v, false, 0..=23)?;
            }
            Std::Hour12 | Std::ZeroHour12 => {
                (hour, v) = getnum_in(v, std == Std::ZeroHour12, 0..=12)?;
            }
            Std::Minute | Std::ZeroMinute => {
                (min, v) = getnum_in(v, std == Std::ZeroMinute, 0..=59)?;
            }
            Std::Second | Std::ZeroSecond => {
                (sec, v) = getnum_in(v, std == Std::ZeroSecond, 0..=59)?;
                // A fractional second in the value but not in the layout.
                let next_is_frac = matches!(
                    next_std(layout),
                    ("", Some((Std::Frac0(..) | Std::Frac9(..), _)))
                );
                let vb = v.as_bytes();
                if !next_is_frac
                    && vb.len() > 1
                    && (vb[0] == b'.' || vb[0] == b',')
                    && vb[1].is_ascii_digit()
                {
                    let n = 1 + v[1..].bytes().take_while(u8::is_ascii_digit).count();
                    nsec = frac_nanos(&v[1..n])?;
                    v = &v[n..];
                }
            }
            Std::PM | Std::Pm => {
                if v.len() < 2 {
                    return None;
                }
                match &v[..2] {
                    "PM" | "pm" if v.is_char_boundary(2) => pm_set = Some(true),
                    "AM" | "am" if v.is_char_boundary(2) => pm_set = Some(false),
                    _ => return None,
                }
                v = &v[2..];
            }
            Std::Iso(_) | Std::Num(_) => {
                let variant = match std {
                    Std::Iso(k) | Std::Num(k) => k,
                    _ => 0,
                };
                if matches!(std, Std::Iso(_)) && v.starts_with('Z') {
                    v = &v[1..];
                    utc_z = true;
                    continue;
                }
                let sign = match v.as_bytes().first() {
                    Some(b'+') => 1,
                    Some(b'-') => -1,
                    _ => return None,
                };
                let w = &v[1..];
                // Hours, then minutes and seconds as the variant has them.
                let (fields, colons) = match variant {
                    0 => (3, false),
                    1 => (3, true),
                    2 => (2, false),
                    3 => (2, true),
                    _ => (1, false),
                };
                let (mut hms, mut r) = ([0i64; 3], w);
                for (i, x) in hms.iter_mut().take(fields).enumerate() {
                    if i > 0 && colons {
                        r = r.strip_prefix(':')?;
                    }
                    (*x, r) = getdigits(r, 2)?;
                }
                let [h, m, s] = hms;
                if h > 24 || m > 60 || s > 60 {
                    return None;
                }
                zone_off = Some(sign * (h * 3600 + m * 60 + s) as i32);
                v = r;
                let _ = std_str;
            }
            Std::Tz => {
                if v.starts_with("UTC") {
                    zone_name = Some("UTC".into());
                    v = &v[3..];
                    continue;
                }
                let n = v.bytes().take_while(u8::is_ascii_uppercase).count();
                if n < 3 {
                    return None;
                }
                let mut end = n;
                if let Some(rest) = v.strip_prefix("GMT") {
                    end = 3;
                    let r = rest.as_bytes();
                    if !r.is_empty() && (r[0] == b'+' || r[0] == b'-') {
                        let digits = r[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                        if digits > 0 && digits <= 2 {
                            end = 4 + digits;
                        }
                    }
                } else if n > 5 && !(n == 6 && v.ends_with('T')) {
                    // Go accepts 3-5 letter abbreviations (plus ChST/MeST forms).
                    end = n.min(5);
                }
                zone_name = Some(v[..end].to_string());
                v = &v[end..];
            }
            Std::Frac0(n, sep) => {
                let vb = v.as_bytes();
                if vb.len() < n + 1 || vb[0] != sep as u8 {
                    return None;
                }
                if !vb[1..=n].iter().all(u8::is_ascii_digit) {
                    return None;
                }
                nsec = frac_nanos(&v[1..=n])?;
                v = &v[n + 1..];
            }
            Std::Frac9(..) => {
                let vb = v.as_bytes();
                if vb.len() < 2 || !(vb[0] == b'.' || vb[0] == b',') || !vb[1].is_ascii_digit() {
                    continue;
                }
                let n = 1 + v[1..].bytes().take_while(u8::is_ascii_digit).count();
                nsec = frac_nanos(&v[1..n])?;
                v = &v[n..];
            }
        }
    }
    if !v.is_empty() {
        return None;
    }
    if let Some(pm) = pm_set {
        if pm && hour < 12 {
            hour += 12;
        } else if !pm && hour == 12 {
            hour = 0;
        }
    }
    let year = i32::try_from(year).ok()?;
    let date = if let Some(yd) = yday {
        let d = NaiveDate::from_yo_opt(year, yd)?;
        if month != 1 && d.month() != month || day != 1 && d.day() != day {
            return None;
        }
        d
    } else {
        NaiveDate::from_ymd_opt(year, month, day)?
    };
    let naive = date.and_hms_nano_opt(hour, min, sec, nsec)?;
    if utc_z {
        return Some(utc(Utc.from_utc_datetime(&naive)));
    }
    if let Some(off) = zone_off {
        let fo = FixedOffset::east_opt(off)?;
        let dt = fo.from_local_datetime(&naive).single()?;
        let zone = if off == 0 { "UTC" } else { "" };
        return Some(GoTime {
            dt,
            zone: Arc::from(zone),
        });
    }
    if let Some(name) = zone_name {
        let mut off = 0;
        if name != "UTC"
            && let Some(rest) = name.strip_prefix("GMT")
        {
            off = rest.parse::<i32>().unwrap_or(0) * 3600;
        }
        let fo = FixedOffset::east_opt(off)?;
        let dt = fo.from_local_datetime(&naive).single()?;
        return Some(GoTime {
            dt,
            zone: Arc::from(name.as_str()),
        });
    }
    Some(utc(Utc.from_utc_datetime(&naive)))
}

fn frac_nanos(digits: &str) -> Option<u32> {
    let mut s: String = digits.chars().take(9).collect();
    while s.len() < 9 {
        s.push('0');
    }
    s.parse().ok()
}

/// Seconds since the epoch to a UTC time.
pub fn from_unix(secs: i64) -> GoTime {
    utc(DateTime::<Utc>::from_timestamp(secs, 0).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_with_non_ascii_text_do_not_panic() {
        // Found by the property test: `toDate "héllo wörld ünïcode" ""` sliced inside 'é'.
        assert!(parse("héllo wörld ünïcode", "").is_none());
        let t = from_unix(0);
        assert_eq!(format(&t, "é2006ü01ï02"), "é1970ü01ï01");
    }

    #[test]
    fn numeric_zone_offsets_in_each_layout_form() {
        for (layout, value, east) in [
            ("15 -070000", "10 +013007", 5407),
            ("15 -07:00:00", "10 -01:30:07", -5407),
            ("15 -0700", "10 +0130", 5400),
            ("15 -07:00", "10 +01:30", 5400),
            ("15 -07", "10 -02", -7200),
            ("15 Z07:00", "10 +01:30", 5400),
        ] {
            let t = parse(layout, value).unwrap_or_else(|| panic!("{layout} {value}"));
            assert_eq!(t.dt.offset().local_minus_utc(), east, "{layout} {value}");
        }
        assert!(parse("15 Z07:00", "10 Z").is_some());
        for (layout, value) in [
            ("15 -07:00", "10 +0130"),
            ("15 -0700", "10 +25"),
            ("15 -07", "10 +2"),
        ] {
            assert!(parse(layout, value).is_none(), "{layout} {value}");
        }
    }
}
