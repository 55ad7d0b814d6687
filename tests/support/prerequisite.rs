//! What a test does when something it needs is missing (the Kanister corpus, `go`, the kwok node of
//! an existing cluster): it never passes silently.
//!
//! * Under `CI=true` a missing prerequisite fails the test.
//! * What the test harness makes itself (the cluster, its kwok node) must be there: its absence is
//!   a failure everywhere ([`broken`]).
//! * Otherwise the test is skipped LOUDLY ([`missing`]): a `SKIPPED` line on stderr and in the file
//!   `BPO_SKIPPED_LOG` names, which `tools/test.sh` prints at the end of the run.
//!
//! Standalone (std only), so that binaries without `mod support;` can include it beside the support
//! file that uses it (`#[path = "support/prerequisite.rs"] mod prerequisite;`).
#![allow(dead_code)]

use std::io::Write as _;

/// True under `CI=true`.
pub fn is_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// `what` is missing: fails under CI, else records the skip of the running test. The caller
/// returns without testing. `fix` says how to provide it.
pub fn missing(what: &str, fix: &str) {
    let test = current_test();
    assert!(
        !is_ci(),
        "{test}: {what} is missing, and CI=true, where a missing prerequisite fails: {fix}"
    );
    let line = format!("SKIPPED {test}: {what} is missing; {fix}");
    eprintln!("{line}");
    if let Some(log) = std::env::var_os("BPO_SKIPPED_LOG").filter(|p| !p.is_empty()) {
        // O_APPEND: concurrent tests each add whole lines.
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = written {
            eprintln!("cannot record the skip in {}: {e}", log.to_string_lossy());
        }
    }
}

/// `what` should be there because the test harness made it: always a failure.
pub fn broken(what: &str, why: &str) -> ! {
    panic!("{}: {what}: {why}", current_test())
}

/// `<binary> <test>`, e.g. `e2e executor::deferphase_runs`: the test harness names each test's
/// thread after the test.
fn current_test() -> String {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|s| match s.rsplit_once('-') {
            // cargo's `<name>-<16 hex digits>`
            Some((name, hash)) if hash.len() == 16 => name.to_string(),
            _ => s,
        })
        .unwrap_or_default();
    let thread = std::thread::current();
    format!("{binary} {}", thread.name().unwrap_or("(unnamed thread)"))
}
