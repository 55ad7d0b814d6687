//! The composition root: each long-running subcommand is wired here from the executor, the
//! scheduler and the webhook, with what they share written once.
//!
//! - [`controller`]: the `controller` subcommand (ActionSet executor and ActionSchedule
//!   scheduler in one process, under one Lease);
//! - [`webhook`]: the `webhook` subcommand (flags to [`crate::webhook::server`]);
//! - [`leader`]: leader election through the one Lease;
//! - [`logging`]: JSON logs on stderr, filtered by `--log-level` or `RUST_LOG`;
//! - [`shutdown`]: the SIGTERM/SIGINT signal.
//!
//! Metrics and the `/healthz`, `/readyz` routes both serve are [`crate::metrics`].

pub mod controller;
pub mod leader;
pub mod logging;
pub mod shutdown;
pub mod webhook;
