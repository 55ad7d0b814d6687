//! Logging: JSON lines on stderr through `tracing`, one flat object per event
//! (`{"timestamp":…,"level":"INFO","message":…,"uid":…}`).
//!
//! The filter is `--log-level` (an `EnvFilter` directive such as `info` or
//! `info,blueprint_operator=debug`); `RUST_LOG`, when set, wins over it.

use tracing_subscriber::EnvFilter;

/// Installs the global JSON subscriber. Calling it twice (e.g. from tests) is harmless: the
/// second call returns an error that is ignored.
pub fn init(log_level: &str) -> anyhow::Result<()> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(v) if !v.is_empty() => EnvFilter::try_new(&v)
            .map_err(|e| anyhow::anyhow!("RUST_LOG={v:?} is not a valid filter: {e}"))?,
        _ => EnvFilter::try_new(log_level).map_err(|e| {
            anyhow::anyhow!(
                "--log-level {log_level:?} is not a valid filter (try info, debug or info,blueprint_operator=debug): {e}"
            )
        })?,
    };
    let _ = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .try_init();
    Ok(())
}
