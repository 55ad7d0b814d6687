//! Pure: what the per-schedule freshness gauges say (`..._last_complete_timestamp_seconds`,
//! `..._last_verified_timestamp_seconds`, `..._verification_failures`, `..._interval_seconds`,
//! `..._verify_interval_seconds`): the ages alerts compare, and the intervals they compare
//! them with, so that no alert hard-codes how often a schedule runs.

use chrono::{DateTime, Utc};

use super::cron::Schedule;
use super::window::{self, Window};
use crate::model::{ActionScheduleSpec, ActionScheduleStatus};

/// Days of ticks an interval is measured over: two weeks, so that a weekly pattern (weekdays
/// only, a window open on Sundays) shows its longest gap.
const HORIZON_DAYS: i64 = 15;

/// The longest time in seconds between two consecutive runs `s` starts after `from`, over the
/// ticks of the next [`HORIZON_DAYS`] (at least the next two, at most 1000), with the run
/// window applied: a tick outside it is dropped, or moved to the window's next start with
/// `outside: Wait`. The longest rather than the next gap: `0 2 * * 1-5` runs every day but
/// leaves three days over the weekend, and an alert at twice the interval must not fire then.
/// The jitter offset shifts every run alike and does not count. `None` with fewer than two
/// runs.
pub fn interval(s: &Schedule, window: Option<&Window>, from: DateTime<Utc>) -> Option<i64> {
    if let (Some(every), None) = (s.every_seconds(), window) {
        return Some(every);
    }
    let tz = s.time_zone();
    let mut runs = window::scan(s, from, HORIZON_DAYS).filter_map(|t| match window {
        None => Some(t),
        Some(w) if w.contains(t, tz) => Some(t),
        Some(w) if w.wait => w.next_open(t, tz),
        Some(_) => None,
    });
    let mut prev = runs.next()?;
    let mut longest = None;
    for t in runs {
        // Ticks waiting for the same window start make one run.
        if t > prev {
            let gap = (t - prev).num_seconds();
            longest = Some(longest.map_or(gap, |l: i64| l.max(gap)));
            prev = t;
        }
    }
    longest
}

/// What the interval gauges say about a schedule; computed when its spec changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Intervals {
    /// `..._interval_seconds`: [`interval`] of `spec.schedule` in `spec.timeZone`.
    pub interval: Option<i64>,
    /// `..._verify_interval_seconds`: `verify.every` x the interval, or [`interval`] of
    /// `verify.schedule`; `None` without `spec.verify`.
    pub verify: Option<i64>,
}

/// The intervals of `spec`, from `from` on. None while the schedule is suspended
/// (`spec.suspend`: no run is due, so no age alert may fire) or does not parse (the
/// schedule's `Ready` condition says why).
pub fn intervals(spec: &ActionScheduleSpec, from: DateTime<Utc>) -> Intervals {
    if spec.suspend {
        return Intervals::default();
    }
    let Ok(s) = Schedule::parse(&spec.schedule, spec.time_zone.as_deref()) else {
        return Intervals::default();
    };
    let window = match spec.window.as_ref().map(Window::parse).transpose() {
        Ok(w) => w,
        Err(_) => return Intervals::default(),
    };
    let interval = self::interval(&s, window.as_ref(), from);
    let verify = spec.verify.as_ref().and_then(|v| match &v.schedule {
        Some(cron) => Schedule::parse(cron, spec.time_zone.as_deref())
            .ok()
            .and_then(|vs| self::interval(&vs, None, from)),
        None => interval?.checked_mul(i64::from(v.every.unwrap_or(1).max(1))),
    });
    Intervals { interval, verify }
}

/// Every freshness gauge of one schedule; `None`: the series is absent (an alert on it does
/// not fire).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Freshness {
    /// `status.lastSuccessfulTime`: nominal time of the newest complete run.
    pub last_complete: Option<i64>,
    /// `status.lastVerifiedTime`: when the newest passing verification completed.
    pub last_verified: Option<i64>,
    /// `status.consecutiveVerificationFailures`, for schedules with `spec.verify`.
    pub verification_failures: Option<i64>,
    pub intervals: Intervals,
}

pub fn freshness(
    spec: &ActionScheduleSpec,
    status: Option<&ActionScheduleStatus>,
    intervals: Intervals,
) -> Freshness {
    let seconds = |t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
        t.map(|t| t.0.as_second())
    };
    Freshness {
        last_complete: seconds(status.and_then(|s| s.last_successful_time.as_ref())),
        last_verified: seconds(status.and_then(|s| s.last_verified_time.as_ref())),
        verification_failures: spec
            .verify
            .as_ref()
            .map(|_| status.map_or(0, |s| i64::from(s.consecutive_verification_failures))),
        intervals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HOUR: i64 = 3600;
    const DAY: i64 = 24 * HOUR;

    fn at(t: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(t).unwrap().to_utc()
    }

    fn cron(spec: &str, tz: Option<&str>) -> Schedule {
        Schedule::parse(spec, tz).unwrap()
    }

    /// 2026-01-07 is a Wednesday.
    const WED: &str = "2026-01-07T12:00:00Z";

    #[test]
    fn interval_of_regular_schedules() {
        let from = at(WED);
        let cases = [
            ("@every 90s", 90),
            ("@hourly", HOUR),
            ("*/15 * * * *", 15 * 60),
            ("0 2 * * *", DAY),
            ("0 3 * * 0", 7 * DAY),
            ("0 0,12 * * *", 12 * HOUR),
        ];
        for (spec, want) in cases {
            assert_eq!(
                interval(&cron(spec, None), None, from),
                Some(want),
                "{spec}"
            );
        }
    }

    #[test]
    fn interval_is_the_longest_gap_not_the_next_one() {
        // Weekdays: the next gap (Wednesday to Thursday) is a day, the weekend's is three.
        let from = at(WED);
        assert_eq!(
            interval(&cron("0 2 * * 1-5", None), None, from),
            Some(3 * DAY)
        );
        // Uneven hours: 02:00 and 06:00 leave 20 h until the next 02:00.
        assert_eq!(
            interval(&cron("0 2,6 * * *", None), None, from),
            Some(20 * HOUR)
        );
        // Monthly and yearly: the next two ticks, even beyond the horizon.
        let monthly = interval(&cron("0 0 1 * *", None), None, from).unwrap();
        assert!((28 * DAY..=31 * DAY).contains(&monthly), "{monthly}");
        assert_eq!(
            interval(&cron("@yearly", None), None, from),
            Some(365 * DAY)
        );
        // Never: no interval.
        assert_eq!(interval(&cron("0 0 30 2 *", None), None, from), None);
    }

    #[test]
    fn interval_is_measured_on_the_time_zone_of_the_schedule() {
        // New York springs forward on 2026-03-08: 02:30 does not exist that day, so that
        // tick is not run (the DST rule of CronJobs): two days less the lost hour.
        let from = at("2026-03-02T12:00:00Z");
        assert_eq!(
            interval(&cron("30 2 * * *", Some("America/New_York")), None, from),
            Some(2 * DAY - HOUR)
        );
        // 03:00 exists every day; the spring-forward day is an hour short, the longest is a day.
        assert_eq!(
            interval(&cron("0 3 * * *", Some("America/New_York")), None, from),
            Some(DAY)
        );
        // In November it falls back: that day is 25 hours long.
        let from = at("2026-10-30T12:00:00Z");
        assert_eq!(
            interval(&cron("0 3 * * *", Some("America/New_York")), None, from),
            Some(DAY + HOUR)
        );
    }

    #[test]
    fn interval_counts_only_runs_the_window_lets_start() {
        let window = |w: serde_json::Value| Window::parse(&serde_json::from_value(w).unwrap());
        let from = at(WED);
        // Hourly ticks, a window from 01:00 to 05:00 (end excluded) that skips the rest: runs
        // at 01:00 to 04:00, 21 h overnight.
        let skip = window(json!({"start": "01:00", "end": "05:00"})).unwrap();
        assert_eq!(
            interval(&cron("@hourly", None), Some(&skip), from),
            Some(21 * HOUR)
        );
        // Every 10 minutes, waiting for a window open on Sundays only: one run a week (the
        // waiting ticks make one run at the window's start) plus the runs inside it.
        let sundays = window(json!({"start": "01:00", "end": "02:00", "days": ["Sun"],
                                    "outside": "Wait"}))
        .unwrap();
        let got = interval(&cron("*/10 * * * *", None), Some(&sundays), from).unwrap();
        assert_eq!(got, 7 * DAY - 50 * 60);
    }

    fn spec(extra: serde_json::Value) -> ActionScheduleSpec {
        let mut v = json!({"schedule": "0 2 * * *", "actionSetTemplate": {"actions": []}});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn verify_interval_is_every_n_runs_or_its_own_cron() {
        let from = at(WED);
        let verify = |v: serde_json::Value| {
            let mut v = v;
            v["action"] = json!("restore");
            v["object"] = json!({"kind": "StatefulSet", "name": "scratch", "namespace": "ns"});
            spec(json!({"verify": v}))
        };
        let i = |s: &ActionScheduleSpec| intervals(s, from);
        assert_eq!(
            i(&spec(json!({}))),
            Intervals {
                interval: Some(DAY),
                verify: None
            }
        );
        assert_eq!(i(&verify(json!({}))).verify, Some(DAY), "every run");
        assert_eq!(i(&verify(json!({"every": 7}))).verify, Some(7 * DAY));
        assert_eq!(
            i(&verify(json!({"schedule": "0 4 * * 6"}))).verify,
            Some(7 * DAY)
        );
        // Suspended, or a schedule that does not parse: no interval, so no age alert.
        let mut suspended = verify(json!({"every": 2}));
        suspended.suspend = true;
        assert_eq!(i(&suspended), Intervals::default());
        assert_eq!(
            i(&spec(json!({"schedule": "61 * * * *"}))),
            Intervals::default()
        );
        assert_eq!(
            i(&spec(json!({"timeZone": "Mars/Olympus"}))),
            Intervals::default()
        );
    }

    #[test]
    fn freshness_reads_the_status() {
        let status: ActionScheduleStatus = serde_json::from_value(json!({
            "lastSuccessfulTime": "2026-01-07T02:00:00Z",
            "lastVerifiedTime": "2026-01-06T03:00:00Z",
            "consecutiveVerificationFailures": 2,
        }))
        .unwrap();
        let plain = spec(json!({}));
        let ivs = Intervals {
            interval: Some(DAY),
            verify: None,
        };
        let f = freshness(&plain, Some(&status), ivs);
        assert_eq!(
            f.last_complete,
            Some(at("2026-01-07T02:00:00Z").timestamp())
        );
        assert_eq!(
            f.last_verified,
            Some(at("2026-01-06T03:00:00Z").timestamp())
        );
        assert_eq!(f.verification_failures, None, "no spec.verify");
        assert_eq!(f.intervals, ivs);
        let with_verify = spec(json!({"verify": {"action": "restore",
            "object": {"kind": "StatefulSet", "name": "scratch", "namespace": "ns"}}}));
        assert_eq!(
            freshness(&with_verify, Some(&status), ivs).verification_failures,
            Some(2)
        );
        // A new schedule: nothing complete or verified yet, no failure either.
        let f = freshness(&with_verify, None, ivs);
        assert_eq!(
            (f.last_complete, f.last_verified, f.verification_failures),
            (None, None, Some(0))
        );
    }
}
