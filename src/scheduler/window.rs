//! Pure: when a tick's run may start. The run window (`spec.window`), the stable jitter
//! offset (`spec.jitter`) and the failure breaker (`spec.suspendAfterFailures`).
//! [`plan`](super::plan) applies them; the webhook refuses what could never work.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;

use super::cron::Schedule;
use crate::model::{OutsideWindow, RunWindow, WindowDay};

/// Ticks looked at when a property of a schedule is measured (shortest interval, a tick in
/// the window): at most this many, within [`SCAN_DAYS`] of the first.
const SCAN_TICKS: usize = 1000;
const SCAN_DAYS: i64 = 400;

/// What is wrong with `spec.window`; [`WindowError::field`] says where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    #[error("{1:?} is not a wall-clock time: write HH:MM, 00:00 to 23:59")]
    Time(&'static str, String),
    #[error("start and end are both {0}: the window never opens")]
    Empty(String),
    #[error("days is empty: the window never opens (leave days out for every day)")]
    NoDays,
}

impl WindowError {
    /// The field of `spec.window` at fault.
    pub fn field(&self) -> &'static str {
        match self {
            WindowError::Time(f, _) => f,
            WindowError::Empty(_) => "end",
            WindowError::NoDays => "days",
        }
    }
}

/// A parsed `spec.window`: minutes of the day, days Monday first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    start: u32,
    end: u32,
    days: [bool; 7],
    pub wait: bool,
}

fn minutes(field: &'static str, text: &str) -> Result<u32, WindowError> {
    let bad = || WindowError::Time(field, text.to_string());
    let (h, m) = text.split_once(':').ok_or_else(bad)?;
    let num = |s: &str| {
        (s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    match (num(h), num(m)) {
        (Some(h), Some(m)) if h < 24 && m < 60 => Ok(h * 60 + m),
        _ => Err(bad()),
    }
}

/// Whether `text` is a wall-clock time `HH:MM`.
pub fn is_wall_time(text: &str) -> bool {
    minutes("start", text).is_ok()
}

fn day_index(d: WindowDay) -> usize {
    match d {
        WindowDay::Mon => 0,
        WindowDay::Tue => 1,
        WindowDay::Wed => 2,
        WindowDay::Thu => 3,
        WindowDay::Fri => 4,
        WindowDay::Sat => 5,
        WindowDay::Sun => 6,
    }
}

impl Window {
    /// Every error of `w`, in field order (empty: valid).
    pub fn errors(w: &RunWindow) -> Vec<WindowError> {
        let mut errors = Vec::new();
        let start = minutes("start", &w.start).map_err(|e| errors.push(e)).ok();
        let end = minutes("end", &w.end).map_err(|e| errors.push(e)).ok();
        if start.is_some() && start == end {
            errors.push(WindowError::Empty(w.start.clone()));
        }
        if w.days.as_ref().is_some_and(Vec::is_empty) {
            errors.push(WindowError::NoDays);
        }
        errors
    }

    pub fn parse(w: &RunWindow) -> Result<Window, WindowError> {
        if let Some(e) = Window::errors(w).into_iter().next() {
            return Err(e);
        }
        let mut days = [w.days.is_none(); 7];
        for d in w.days.iter().flatten() {
            days[day_index(*d)] = true;
        }
        Ok(Window {
            start: minutes("start", &w.start)?,
            end: minutes("end", &w.end)?,
            days,
            wait: w.outside == OutsideWindow::Wait,
        })
    }

    fn opens_on(&self, date: NaiveDate) -> bool {
        self.days[date.weekday().num_days_from_monday() as usize]
    }

    /// Whether the instant `t` lies in the window, on the wall clock of `tz`. A window that
    /// crosses midnight belongs to the day it starts on.
    pub fn contains(&self, t: DateTime<Utc>, tz: Tz) -> bool {
        let local = t.with_timezone(&tz).naive_local();
        let minute = local.hour() * 60 + local.minute();
        let today = local.date();
        if self.start < self.end {
            self.start <= minute && minute < self.end && self.opens_on(today)
        } else {
            (minute >= self.start && self.opens_on(today))
                || (minute < self.end && today.pred_opt().is_some_and(|d| self.opens_on(d)))
        }
    }

    /// The first instant at or after `t` inside the window: `t` itself, or a start of the
    /// window within the next eight days. A start that falls in a spring-forward gap opens
    /// when the clocks resume; one repeated by fall-back opens the first time.
    pub fn next_open(&self, t: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        if self.contains(t, tz) {
            return Some(t);
        }
        let today = t.with_timezone(&tz).date_naive();
        let at = NaiveTime::from_hms_opt(self.start / 60, self.start % 60, 0)?;
        (0..=8)
            .filter_map(|d| today.checked_add_signed(Duration::days(d)))
            .filter(|date| self.opens_on(*date))
            .filter_map(|date| {
                let wall = date.and_time(at);
                // The first existing wall time from the start on (a gap lasts at most hours).
                (0..=180).find_map(|m| {
                    tz.from_local_datetime(&(wall + Duration::minutes(m)))
                        .earliest()
                })
            })
            .map(|o| o.with_timezone(&Utc))
            .find(|o| *o > t && self.contains(*o, tz))
    }
}

/// `spec.jitter` in whole seconds (a Go duration; fractions of a second are dropped).
pub fn parse_jitter(text: &str) -> Result<i64, crate::duration::DurationError> {
    let d = crate::duration::parse_timeout(text)?;
    Ok(i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The schedule's stable offset in `[0, jitter)` seconds: FNV-1a (64 bit) of
/// `namespace/name`, so it is the same on every controller, version and restart.
pub fn jitter_offset(namespace: &str, name: &str, jitter_seconds: i64) -> i64 {
    let Ok(jitter) = u64::try_from(jitter_seconds) else {
        return 0;
    };
    if jitter == 0 {
        return 0;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in namespace.bytes().chain([b'/']).chain(name.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h % jitter) as i64
}

/// The shortest time between two ticks of the cron line `spec` on the wall clock (measured in
/// UTC, so DST shifts do not count), over the ticks after `from`; `None` when it has fewer
/// than two.
pub fn shortest_interval(spec: &str, from: DateTime<Utc>) -> Option<i64> {
    let s = Schedule::parse(spec, None).ok()?;
    if let Some(every) = s.every_seconds() {
        return Some(every);
    }
    let ticks: Vec<DateTime<Utc>> = scan(&s, from, SCAN_DAYS).collect();
    ticks.windows(2).map(|w| (w[1] - w[0]).num_seconds()).min()
}

/// The ticks of `s` after `from`: at most [`SCAN_TICKS`], within `days` (at least two).
pub(super) fn scan(
    s: &Schedule,
    from: DateTime<Utc>,
    days: i64,
) -> impl Iterator<Item = DateTime<Utc>> + '_ {
    let until = from + Duration::days(days);
    std::iter::successors(s.next_after(from), |t| s.next_after(*t))
        .enumerate()
        .take_while(move |(i, t)| *i < 2 || *t <= until)
        .map(|(_, t)| t)
        .take(SCAN_TICKS)
}

/// Whether any tick of `s` after `from` falls in `w` (over [`SCAN_TICKS`] ticks within
/// [`SCAN_DAYS`]).
pub fn some_tick_inside(s: &Schedule, w: &Window, from: DateTime<Utc>) -> bool {
    scan(s, from, SCAN_DAYS).any(|t| w.contains(t, s.time_zone()))
}

/// `Some((failures, limit))` when `suspendAfterFailures` has tripped: scheduled runs stop.
pub fn breaker(limit: Option<u32>, consecutive_failures: u32) -> Option<(u32, u32)> {
    limit
        .filter(|n| *n >= 1 && consecutive_failures >= *n)
        .map(|n| (consecutive_failures, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::plan::fixtures::t;

    fn window(start: &str, end: &str, days: Option<&[WindowDay]>) -> Window {
        Window::parse(&RunWindow {
            start: start.into(),
            end: end.into(),
            days: days.map(<[WindowDay]>::to_vec),
            outside: OutsideWindow::Skip,
        })
        .unwrap()
    }

    const BERLIN: Tz = chrono_tz::Europe::Berlin;

    #[test]
    fn jitter_offset_is_stable_and_below_the_jitter_for_many_names() {
        for jitter in [1, 7, 60, 1800, 86_399] {
            for i in 0..2000 {
                let name = format!("db-{i}");
                let o = jitter_offset("prod", &name, jitter);
                assert!((0..jitter).contains(&o), "{name}: {o} of {jitter}");
                assert_eq!(o, jitter_offset("prod", &name, jitter));
            }
        }
        // Pinned: FNV-1a must not change between versions, or every schedule moves.
        assert_eq!(jitter_offset("ns", "db", 1800), 1381);
        assert_ne!(
            jitter_offset("a", "bc", 1 << 40),
            jitter_offset("ab", "c", 1 << 40)
        );
        assert_eq!(jitter_offset("ns", "db", 0), 0);
        assert_eq!(jitter_offset("ns", "db", -5), 0);
        // 500 schedules on one cron line spread over the jitter.
        let offsets: std::collections::BTreeSet<i64> = (0..500)
            .map(|i| jitter_offset("prod", &format!("s{i}"), 1800) / 60)
            .collect();
        assert!(offsets.len() > 20, "{offsets:?}");
    }

    #[test]
    fn window_membership_across_midnight_and_days() {
        let w = window("22:00", "04:00", Some(&[WindowDay::Fri]));
        // Friday 2026-06-05 in Berlin (CEST, UTC+2).
        assert!(!w.contains(t("2026-06-05T19:59:00Z"), BERLIN)); // Fri 21:59
        assert!(w.contains(t("2026-06-05T20:00:00Z"), BERLIN)); // Fri 22:00
        assert!(w.contains(t("2026-06-06T01:59:00Z"), BERLIN)); // Sat 03:59, Friday's window
        assert!(!w.contains(t("2026-06-06T02:00:00Z"), BERLIN)); // Sat 04:00: end excluded
        assert!(!w.contains(t("2026-06-06T20:00:00Z"), BERLIN)); // Sat 22:00
        assert!(!w.contains(t("2026-06-05T01:00:00Z"), BERLIN)); // Fri 03:00: Thursday's
        let daily = window("01:00", "05:00", None);
        assert!(daily.contains(t("2026-06-07T23:00:00Z"), BERLIN)); // Mon 01:00
        assert!(!daily.contains(t("2026-06-07T23:00:00Z"), Tz::UTC)); // Sun 23:00
        assert_eq!(
            daily.next_open(t("2026-06-07T12:00:00Z"), BERLIN),
            Some(t("2026-06-07T23:00:00Z"))
        );
        assert_eq!(
            w.next_open(t("2026-06-06T03:00:00Z"), BERLIN),
            Some(t("2026-06-12T20:00:00Z")),
            "next Friday"
        );
        let inside = t("2026-06-05T21:00:00Z");
        assert_eq!(w.next_open(inside, BERLIN), Some(inside));
    }

    #[test]
    fn window_on_dst_days_in_berlin() {
        // 2026-03-29: 02:00 CET jumps to 03:00 CEST. A window from 02:30 opens at 03:00.
        let w = window("02:30", "04:00", None);
        assert_eq!(
            w.next_open(t("2026-03-28T23:00:00Z"), BERLIN),
            Some(t("2026-03-29T01:00:00Z"))
        );
        assert!(w.contains(t("2026-03-29T01:00:00Z"), BERLIN)); // 03:00 CEST
        assert!(!w.contains(t("2026-03-29T02:00:00Z"), BERLIN)); // 04:00 CEST
        // 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice, both inside,
        // and the window opens at the first.
        assert!(w.contains(t("2026-10-25T00:30:00Z"), BERLIN));
        assert!(w.contains(t("2026-10-25T01:30:00Z"), BERLIN));
        assert_eq!(
            w.next_open(t("2026-10-24T22:00:00Z"), BERLIN),
            Some(t("2026-10-25T00:30:00Z"))
        );
        // The window 01:00-03:00 lasts three hours that night, two hours in UTC in spring.
        let night = window("01:00", "03:00", None);
        let inside = |from: &str, hours: i64| {
            (0..hours * 60)
                .filter(|m| night.contains(t(from) + Duration::minutes(*m), BERLIN))
                .count()
        };
        assert_eq!(inside("2026-10-24T20:00:00Z", 10), 180);
        assert_eq!(inside("2026-03-28T20:00:00Z", 10), 60);
    }

    #[test]
    fn bad_windows_are_refused_by_field() {
        let w = |start: &str, end: &str, days: Option<Vec<WindowDay>>| {
            Window::errors(&RunWindow {
                start: start.into(),
                end: end.into(),
                days,
                outside: OutsideWindow::Wait,
            })
            .iter()
            .map(WindowError::field)
            .collect::<Vec<_>>()
        };
        assert_eq!(w("01:00", "01:00", None), ["end"]);
        assert_eq!(w("1:00", "24:00", Some(vec![])), ["start", "end", "days"]);
        assert_eq!(w("01:60", "+1:00", None), ["start", "end"]);
        assert!(w("23:59", "00:00", Some(vec![WindowDay::Sun])).is_empty());
    }

    #[test]
    fn intervals_ticks_in_window_and_breaker() {
        let from = t("2026-01-01T00:00:00Z");
        assert_eq!(shortest_interval("0 2 * * *", from), Some(86_400));
        assert_eq!(shortest_interval("0 2,3 * * 1-5", from), Some(3600));
        assert_eq!(shortest_interval("@every 90s", from), Some(90));
        assert_eq!(shortest_interval("0 0 1 * *", from), Some(28 * 86_400));
        assert_eq!(shortest_interval("0 0 30 2 *", from), None);
        let s = Schedule::parse("0 12 * * *", Some("Europe/Berlin")).unwrap();
        assert!(!some_tick_inside(&s, &window("01:00", "05:00", None), from));
        assert!(some_tick_inside(&s, &window("11:00", "13:00", None), from));
        assert_eq!(breaker(None, 10), None);
        assert_eq!(breaker(Some(3), 2), None);
        assert_eq!(breaker(Some(3), 3), Some((3, 3)));
        assert_eq!(breaker(Some(0), 3), None);
        assert_eq!(parse_jitter("30m"), Ok(1800));
        assert!(parse_jitter("-1m").is_err() && parse_jitter("soon").is_err());
    }
}
