//! What several benches measure the same way: settings from the environment, this process's
//! CPU time (whole or per thread name), resident memory, the load average, percentiles, and
//! the API server's own counters from its `/metrics`.
#![allow(dead_code)]

use std::collections::BTreeMap;

use kube::Client;

/// `name` from the environment as a number, else `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The sizes given on the command line (`cargo bench --bench B -- 1000 10000`), else `default`.
pub fn sizes(default: &[usize]) -> Vec<usize> {
    let given: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    if given.is_empty() {
        default.to_vec()
    } else {
        given
    }
}

/// Resident memory of this process, KiB.
pub fn rss_kib() -> u64 {
    proc_rss_kib("self")
}

/// glibc's malloc now, KiB: the bytes in use (what the program holds) and the bytes it
/// holds from the system (in use + free lists), over every arena. Zero for both under another
/// global allocator (dhat, mimalloc).
pub fn malloc_kib() -> (u64, u64) {
    // SAFETY: mallinfo2 has no preconditions; it reads glibc's own arena statistics.
    let m = unsafe { libc::mallinfo2() };
    (
        ((m.uordblks + m.hblkhd) / 1024) as u64,
        ((m.arena + m.hblkhd) / 1024) as u64,
    )
}

/// Resident memory of process `pid` (`"self"`: this one), KiB; 0 when it is gone.
pub fn proc_rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// User + system CPU seconds of a `/proc/.../stat` text, and its command name.
fn stat_cpu(stat: &str) -> (String, f64) {
    let comm = stat
        .split_once('(')
        .and_then(|(_, r)| r.rsplit_once(')'))
        .map_or("", |(c, _)| c)
        .to_string();
    // Fields after the command name (which may hold spaces): utime is the 14th field overall.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (comm, ticks as f64 / hz)
}

/// This process's CPU time (user + system, all threads), seconds.
pub fn cpu_secs() -> f64 {
    stat_cpu(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default()).1
}

/// Process `pid`'s CPU time (user + system, all threads, dead ones included), seconds.
pub fn pid_cpu_secs(pid: u32) -> f64 {
    stat_cpu(&std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default()).1
}

/// CPU time of this process's live threads named `name` (a tokio runtime's
/// `thread_name`), seconds: one runtime's share of the process.
pub fn thread_cpu_secs(name: &str) -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .map(|s| stat_cpu(&s))
        .filter(|(comm, _)| comm == name)
        .map(|(_, cpu)| cpu)
        .sum()
}

/// The 1, 5 and 15 minute load averages.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `p` quantile (0..=1) of sorted values (NaN for none).
pub fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Writes the API server counted: `(resource, verb)` to requests, from
/// `apiserver_request_total`.
pub type Writes = BTreeMap<(String, String), f64>;

/// The API server's `/metrics` now: its counts of writes to `resources` (subresources
/// excluded: a pod's binding or status is not a write of the pod's owner) and its own CPU
/// seconds (`process_cpu_seconds_total`). Needs a client allowed to read `/metrics` (the test
/// cluster's admin is).
pub async fn apiserver_counters(
    client: &Client,
    resources: &[&str],
) -> anyhow::Result<(Writes, f64)> {
    let req = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(req).await?;
    Ok(parse_counters(&text, resources))
}

fn label<'a>(labels: &'a str, name: &str) -> &'a str {
    labels
        .split(',')
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix("=\""))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or("")
}

fn parse_counters(text: &str, resources: &[&str]) -> (Writes, f64) {
    let mut writes = Writes::new();
    let mut cpu = 0.0;
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("process_cpu_seconds_total ") {
            cpu = v.trim().parse().unwrap_or(0.0);
            continue;
        }
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let (verb, resource) = (label(labels, "verb"), label(labels, "resource"));
        if !matches!(verb, "POST" | "PUT" | "PATCH" | "DELETE" | "APPLY")
            || !label(labels, "subresource").is_empty()
            || !resources.contains(&resource)
        {
            continue;
        }
        let key = (resource.to_string(), verb.to_string());
        *writes.entry(key).or_default() += value.trim().parse::<f64>().unwrap_or(0.0);
    }
    (writes, cpu)
}

/// The writes made between two readings.
pub fn writes_between(before: &Writes, after: &Writes) -> Writes {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, d)| *d > 0.0)
        .collect()
}
