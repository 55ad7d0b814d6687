//! The admission webhook (its subcommand is wired in [`crate::app::webhook`]) and
//! `blueprint-operator certs`.
//!
//! * [`admission`]: pure handlers, an AdmissionReview in and an HTTP answer out
//!   (`/mutate/blueprint`, `/validate/blueprint`, `/validate/actionschedule`);
//! * [`claim`]: `/mutate/actionset`, ActionSets claimed at creation for the executor;
//! * [`answers`]: answers already given to Blueprint reviews, by the object's bytes;
//! * [`schedule`]: the ActionSchedule checks;
//! * [`response`]: what the handlers share: denials, warnings, the Blueprint lookup;
//! * [`server`]: axum + rustls server, body limit, probes, metrics, graceful shutdown;
//! * [`tls`]: certificate loading and reload on change;
//! * [`limits`]: connection limit and header/idle timeouts of the listeners;
//! * [`certs`]: a development CA and serving certificate;
//! * [`metrics`]: Prometheus metrics;
//! * [`workers`]: where the review's CPU work runs (inline, or a pool sized to the cores).

pub mod admission;
pub mod answers;
pub mod certs;
pub mod claim;
pub mod limits;
pub mod metrics;
pub mod response;
pub mod schedule;
pub mod server;
pub mod tls;
pub mod workers;

pub use admission::{MAX_BODY_BYTES, Route, handle_review};
pub use certs::{CertsArgs, run_certs};
pub use server::{ServerConfig, start};
