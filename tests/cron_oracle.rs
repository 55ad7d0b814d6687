//! Differential test of `scheduler::cron` against robfig/cron v3 (the parser
//! Kubernetes CronJob uses), through the Go program in `tools/cron-oracle`.
//!
//! The oracle binary is cached in `target/cron-oracle/` and rebuilt only when
//! its sources change. Without `go`: skipped with a message, or failed when
//! `CI=true`.

mod support;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use blueprint_operator::scheduler::cron::Schedule;
use chrono::DateTime;
use serde_json::{Value, json};

const SEED: u64 = 0x5eed_c0de_2026;
const CASES: usize = 4000;
const CHAIN: usize = 3;

/// splitmix64: small, seeded, reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

const ZONES: &[&str] = &[
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Europe/London",
    "Australia/Lord_Howe",
    "Australia/Sydney",
    "America/Sao_Paulo",
    "America/Santiago",
    "Asia/Kolkata",
    "Asia/Tokyo",
    "Pacific/Chatham",
    "America/St_Johns",
    "Asia/Kathmandu",
    "Europe/Moscow",
];

const MONTHS: &[&str] = &[
    "jan", "FEB", "Mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: &[&str] = &["sun", "MON", "Tue", "wed", "thu", "fri", "sat"];

fn atom(r: &mut Rng, min: u64, max: u64, names: &[&str]) -> String {
    let span = max - min + 1;
    // occasionally out of range by one, to compare rejections
    let num = |r: &mut Rng| -> String {
        if !names.is_empty() && r.chance(20) {
            r.pick(names).to_string()
        } else if r.chance(3) {
            (max + 1).to_string()
        } else {
            (min + r.below(span)).to_string()
        }
    };
    match r.below(10) {
        0 => "*".into(),
        1 => "?".into(),
        2 => format!("*/{}", 1 + r.below(max.max(2))),
        3 | 4 => num(r),
        5 | 6 => {
            let a = min + r.below(span);
            let b = a + r.below(max - a + 1);
            format!("{a}-{b}")
        }
        7 => {
            let a = min + r.below(span);
            let b = a + r.below(max - a + 1);
            format!("{a}-{b}/{}", 1 + r.below(10))
        }
        8 => format!("{}/{}", num(r), r.below(20)),
        _ => {
            let n = 2 + r.below(3);
            (0..n).map(|_| num(r)).collect::<Vec<_>>().join(",")
        }
    }
}

fn expression(r: &mut Rng) -> String {
    match r.below(40) {
        0 => r
            .pick(&[
                "@yearly",
                "@annually",
                "@monthly",
                "@weekly",
                "@daily",
                "@midnight",
                "@hourly",
                "@reboot",
            ])
            .to_string(),
        1 => format!(
            "@every {}",
            r.pick(&[
                "30s", "1m", "90s", "1h30m", "2h", "0.5s", "45m10s", "25h", "1.5h", "-1m", "0",
                "10", "7d", "300ms"
            ])
        ),
        2 => r
            .pick(&[
                "",
                "* * * *",
                "* * * * * *",
                "61 * * * *",
                "* * * * 7",
                "*/0 * * * *",
                "1-2-3 * * * *",
                "a * * * *",
                "5/ * * * *",
            ])
            .to_string(),
        _ => {
            // Bias towards fixed small hours to hit DST transitions.
            let hour = if r.chance(40) {
                format!("{}", r.below(4))
            } else {
                atom(r, 0, 23, &[])
            };
            let minute = if r.chance(50) {
                format!("{}", r.below(60))
            } else {
                atom(r, 0, 59, &[])
            };
            let dom = if r.chance(50) {
                "*".to_string()
            } else {
                atom(r, 1, 31, &[])
            };
            let month = if r.chance(60) {
                "*".to_string()
            } else {
                atom(r, 1, 12, MONTHS)
            };
            let dow = if r.chance(60) {
                "*".to_string()
            } else {
                atom(r, 0, 6, DAYS)
            };
            format!("{minute} {hour} {dom} {month} {dow}")
        }
    }
}

/// Instants between 2000 and 2031, a third of them within a day of a DST
/// transition (late March / late October / early November / April / September).
fn instant(r: &mut Rng) -> (i64, u32) {
    let secs = if r.chance(35) {
        let year = 2000 + r.below(31) as i32;
        let (m, d) = [
            (3, 8),
            (3, 25),
            (3, 29),
            (10, 25),
            (10, 30),
            (11, 1),
            (4, 3),
            (9, 28),
            (10, 4),
            (2, 16),
        ][r.below(10) as usize];
        let base = chrono::NaiveDate::from_ymd_opt(year, m, d)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc()
            .timestamp();
        base + r.below(3 * 86_400) as i64 - 86_400
    } else {
        946_684_800 + r.below(31 * 365 * 86_400) as i64
    };
    let nanos = if r.chance(20) {
        r.below(1_000_000_000) as u32
    } else {
        0
    };
    (secs, nanos)
}

fn oracle_binary() -> Option<PathBuf> {
    // -mod=mod: github.com/robfig/cron/v3 comes from the Go module proxy.
    support::go_oracle::binary("cron-oracle", "robfig/cron v3", &["-mod=mod"])
}

#[test]
fn matches_robfig_cron_v3() {
    let Some(bin) = oracle_binary() else { return };
    // CRON_ORACLE_SEED / CRON_ORACLE_CASES override the defaults for longer runs.
    let seed = std::env::var("CRON_ORACLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let n: usize = std::env::var("CRON_ORACLE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CASES);
    let mut r = Rng(seed);
    let mut cases = Vec::with_capacity(n);
    for _ in 0..n {
        let spec = expression(&mut r);
        let tz = r.pick(ZONES);
        let (from, nanos) = instant(&mut r);
        cases.push(
            json!({"spec": spec, "tz": tz, "from": from, "fromNanos": nanos, "count": CHAIN}),
        );
    }
    let mut child = Command::new(&bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start cron-oracle");
    let input = serde_json::to_vec(&cases).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "cron-oracle failed");
    let results: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(results.len(), cases.len());

    let (mut accepted, mut rejected, mut mismatches) = (0, 0, Vec::new());
    for (case, want) in cases.iter().zip(&results) {
        let spec = case["spec"].as_str().unwrap();
        let tz = case["tz"].as_str().unwrap();
        let ours = Schedule::parse(spec, Some(tz));
        match (&ours, want.get("error")) {
            (Err(_), Some(_)) => rejected += 1,
            (Ok(_), Some(e)) => {
                mismatches.push(format!("{spec:?} {tz}: we accept, robfig rejects: {e}"))
            }
            (Err(e), None) => {
                mismatches.push(format!("{spec:?} {tz}: we reject ({e}), robfig accepts"))
            }
            (Ok(s), None) => {
                accepted += 1;
                let mut t = DateTime::from_timestamp(
                    case["from"].as_i64().unwrap(),
                    case["fromNanos"].as_u64().unwrap() as u32,
                )
                .unwrap();
                let mut got = Vec::new();
                for _ in 0..CHAIN {
                    match s.next_after(t) {
                        Some(n) => {
                            got.push(n.timestamp());
                            t = n;
                        }
                        None => {
                            got.push(0);
                            break;
                        }
                    }
                }
                let want: Vec<i64> = want["next"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_i64().unwrap())
                    .collect();
                if got != want {
                    mismatches.push(format!(
                        "{spec:?} {tz} from {}: ours {:?} robfig {:?}",
                        case["from"],
                        got.iter()
                            .map(|s| DateTime::from_timestamp(*s, 0).unwrap().to_rfc3339())
                            .collect::<Vec<_>>(),
                        want.iter()
                            .map(|s| DateTime::from_timestamp(*s, 0).unwrap().to_rfc3339())
                            .collect::<Vec<_>>(),
                    ));
                }
            }
        }
    }
    eprintln!(
        "cron oracle: seed {seed}, {n} cases, {accepted} accepted ({} next times), {rejected} rejected by both, {} mismatches",
        accepted * CHAIN,
        mismatches.len()
    );
    assert!(
        accepted > n / 2,
        "generator produced too few valid expressions"
    );
    assert!(
        rejected > n / 80,
        "generator produced too few invalid expressions"
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches, first 20:\n{}",
        mismatches.len(),
        mismatches[..mismatches.len().min(20)].join("\n")
    );
}
