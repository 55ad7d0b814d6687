//! Logging: JSON lines on stderr through `tracing`, one flat object per event
//! (`{"timestamp":…,"level":"INFO","message":…,"uid":…}`).
//!
//! The filter is `--log-level` (an `EnvFilter` directive such as `info` or
//! `info,blueprint_operator=debug`); `RUST_LOG`, when set, wins over it.

use tracing_subscriber::EnvFilter;

/// A log filter that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error(
        "RUST_LOG={value:?} is not a valid log filter: {source}; unset RUST_LOG or set it to a filter such as info, debug or info,blueprint_operator=debug"
    )]
    RustLog {
        value: String,
        source: tracing_subscriber::filter::ParseError,
    },
    #[error(
        "--log-level {value:?} is not a valid log filter: {source}; use a level (error, warn, info, debug, trace) or directives such as info,blueprint_operator=debug"
    )]
    Flag {
        value: String,
        source: tracing_subscriber::filter::ParseError,
    },
}

/// The filter of `--log-level`, or of `RUST_LOG` when that is set and not empty.
pub fn filter(log_level: &str, rust_log: Option<&str>) -> Result<EnvFilter, FilterError> {
    match rust_log {
        Some(v) if !v.is_empty() => EnvFilter::try_new(v).map_err(|source| FilterError::RustLog {
            value: v.to_string(),
            source,
        }),
        _ => EnvFilter::try_new(log_level).map_err(|source| FilterError::Flag {
            value: log_level.to_string(),
            source,
        }),
    }
}

/// Installs the global JSON subscriber; a filter that does not parse is an error (the process
/// does not start). Calling it twice (e.g. from tests) is harmless: the second subscriber is
/// not installed.
pub fn init(log_level: &str) -> Result<(), FilterError> {
    let filter = filter(log_level, std::env::var("RUST_LOG").ok().as_deref())?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_filter_is_an_error_naming_its_source_and_a_fix() {
        assert!(filter("info", None).is_ok());
        assert!(filter("info,blueprint_operator=debug", None).is_ok());
        let e = filter("info,blueprint_operator=loud", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--log-level \"info,blueprint_operator=loud\" is not a valid log filter"),
            "{e}"
        );
        assert!(
            e.contains("use a level (error, warn, info, debug, trace)"),
            "{e}"
        );
        // RUST_LOG wins over the flag, and is named when it is the bad one.
        let e = filter("info", Some("app=loud")).unwrap_err().to_string();
        assert!(
            e.starts_with("RUST_LOG=\"app=loud\" is not a valid log filter"),
            "{e}"
        );
        assert!(e.contains("unset RUST_LOG"), "{e}");
        assert!(filter("info,blueprint_operator=loud", Some("debug")).is_ok());
        // An empty RUST_LOG is not set.
        assert!(filter("info", Some("")).is_ok());
    }
}
