//! Local servers the tests start once per test binary (the object store, moto): on a free port
//! of the test host, ended by a shell watchdog when this process is gone, however it ends.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;

/// The address servers listen on: loopback, or the real node's bridge address
/// (`BPO_TEST_HOST_IP`) where pods must reach them.
pub fn host() -> String {
    std::env::var("BPO_TEST_HOST_IP").unwrap_or_else(|_| "127.0.0.1".into())
}

/// A port of [`host`] free right now.
pub fn free_port(host: &str) -> anyhow::Result<u16> {
    Ok(TcpListener::bind((host, 0))?.local_addr()?.port())
}

/// A server started by [`spawn_watched`].
pub struct Watched {
    name: String,
    addr: String,
    log: PathBuf,
    /// The watchdog shell's: [`Watched::stop`] ends it, and its exit trap ends the server.
    pid: u32,
}

/// Starts server `name` (`bin args`, listening on `addr`) in the background, its stderr in
/// `/tmp/bpo-<name>-<pid>.log`, stopped by a watchdog shell once this process is gone.
pub fn spawn_watched(name: &str, bin: &Path, args: &[&str], addr: &str) -> anyhow::Result<Watched> {
    let watchdog = r#"
        "$0" "$@" & child=$!
        trap 'kill $child 2>/dev/null' EXIT
        while kill -0 "$BPO_WATCH_PID" 2>/dev/null && kill -0 $child 2>/dev/null; do sleep 1; done
    "#;
    let log = std::env::temp_dir().join(format!("bpo-{name}-{}.log", std::process::id()));
    let shell = Command::new("bash")
        .arg("-c")
        .arg(watchdog)
        .arg(bin)
        .args(args)
        .env("BPO_WATCH_PID", std::process::id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    Ok(Watched {
        name: name.into(),
        addr: addr.into(),
        log,
        pid: shell.id(),
    })
}

impl Watched {
    /// The server's stderr.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Ends the server now (SIGTERM to the watchdog, whose exit trap ends the server) instead of
    /// when this process is gone.
    pub fn stop(&self) {
        let _ = Command::new("kill").arg(self.pid.to_string()).status();
    }

    /// Waits (at most `timeout`, checking every `every`) until `ready` holds; the error points
    /// at the server's log.
    pub fn wait_ready(
        &self,
        timeout: Duration,
        every: Duration,
        mut ready: impl FnMut() -> bool,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        while !ready() {
            anyhow::ensure!(
                Instant::now() < deadline,
                "{} did not answer on {} within {timeout:?} (log: {})",
                self.name,
                self.addr,
                self.log.display()
            );
            std::thread::sleep(every);
        }
        Ok(())
    }
}

/// The one tool `key` of the build script `script` (see [`built_tools`]).
pub fn built_tool(script: &str, key: &str) -> anyhow::Result<PathBuf> {
    Ok(built_tools(script, &[key])
        .map_err(anyhow::Error::msg)?
        .remove(0))
}

/// Runs the build script `script` (relative to the repository root; it builds what is missing,
/// so the first run may take minutes) and returns the `KEY=path` lines it prints, for `keys`.
pub fn built_tools(script: &str, keys: &[&str]) -> Result<Vec<PathBuf>, String> {
    let script = super::repo_root().join(script);
    let out = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("running {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed with {}", script.display(), out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    keys.iter()
        .map(|k| {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
                .map(PathBuf::from)
                .ok_or_else(|| format!("{} printed no {k}=", script.display()))
        })
        .collect()
}
