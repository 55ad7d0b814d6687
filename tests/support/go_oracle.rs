//! The Go oracles of `tools/` (`cron-oracle`: robfig/cron v3, `template-oracle`: text/template +
//! sprig), built once into `<target>/<name>/<name>` and rebuilt when their sources change. Without
//! `go` the test is skipped loudly, or fails under `CI=true` ([`super::prerequisite`]). Included
//! with `mod support;`, or by path beside `prerequisite.rs`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The oracle binary of `tools/<name>` (`None`: no `go`, the test skips). `what` says what the
/// oracle is compared against, for the skip message; `flags` go to `go build`.
pub fn binary(name: &str, what: &str, flags: &[&str]) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("tools").join(name);
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let out_dir = target.join(name);
    let bin = out_dir.join(name);
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let newest_src = ["main.go", "go.mod", "go.sum"]
        .iter()
        .filter_map(|f| mtime(&src.join(f)))
        .max();
    if let (Some(b), Some(s)) = (mtime(&bin), newest_src)
        && b >= s
    {
        return Some(bin);
    }
    let go_ok = Command::new("go")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !go_ok {
        super::prerequisite::missing(
            &format!("`go` (to build tools/{name})"),
            &format!("install Go >= 1.22 to compare against {what}"),
        );
        return None;
    }
    std::fs::create_dir_all(&out_dir)
        .unwrap_or_else(|e| panic!("creating {}: {e}", out_dir.display()));
    // Built under a temporary name and renamed: tests running at once (threads of one test
    // binary too, hence the counter beside the pid) never see half a binary.
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = out_dir.join(format!("{name}.tmp{}-{n}", std::process::id()));
    let status = Command::new("go")
        .arg("build")
        .args(flags)
        .arg("-o")
        .arg(&tmp)
        .arg(".")
        .current_dir(&src)
        .status()
        .expect("run go build");
    assert!(
        status.success(),
        "go build of tools/{name} failed (its modules come from the Go module proxy)"
    );
    std::fs::rename(&tmp, &bin).expect("move the oracle binary into place");
    Some(bin)
}
