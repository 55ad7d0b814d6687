//! The composition root: each long-running subcommand (`controller`, `webhook`) is wired here
//! from the executor, the scheduler and the webhook, with logging set up once.
//!
//! - [`controller`]: the `controller` subcommand (ActionSet executor and ActionSchedule
//!   scheduler in one process);
//! - [`logging`]: JSON logs on stderr, filtered by `--log-level` or `RUST_LOG`.

pub mod controller;
pub mod logging;
