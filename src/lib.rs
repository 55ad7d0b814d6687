//! blueprint-operator: Kanister Blueprints with a guaranteed deferPhase,
//! admission on apply, and scheduled ActionSets.
//!
//! Pure logic (model, blueprint, template, executor state machine, scheduler
//! planning) knows nothing of HTTP or the API server; the runtime parts
//! (webhook server, reconcilers, functions) are thin shells around it.

pub mod app;
pub mod aws;
pub mod azure;
pub mod blueprint;
pub mod cli;
pub mod ctl;
pub mod documents;
pub mod duration;
pub mod events;
pub mod executor;
pub mod functions;
pub mod gcs;
pub mod kando;
pub mod kanister_crd;
pub mod kube_error;
pub mod metrics;
pub mod model;
pub mod objectstore;
pub mod param;
pub mod phase_output;
pub mod pods;
pub mod redact;
pub mod restic;
pub mod scheduler;
pub mod step;
pub mod template;
pub mod webhook;
