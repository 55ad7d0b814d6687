//! ActionSet executor: runs Blueprint actions with Kanister's semantics and
//! a guaranteed, durable deferPhase.
//!
//! - [`machine`]: the pure action state machine (next step, transitions,
//!   status and Events); [`plan`]: what an action's driver does next (pure);
//! - [`deadline`]: phase and action timeouts (pure);
//! - [`status_size`]: size budgets for errors and outputs in status (pure);
//! - [`events`]: Kanister's Event reasons and messages;
//! - [`params`]: template parameters (`.Object`, `.Phases`, `.Outcome`, ...);
//! - [`metrics`]: Prometheus metrics;
//! - [`pod_sweep`]: deletes pods a killed controller left behind;
//! - [`pod_logs`]: the last log lines of a failed step's pods, kept on the
//!   ActionSet before the pods are deleted;
//! - [`resume`]: what happens to a phase found running after a restart;
//! - [`tenancy`]: which namespaces an ActionSet may reach; [`endpoints`]:
//!   Profile endpoints refused in metadata ranges;
//! - [`ownership`]: which ActionSets this executor runs (label, namespaces);
//!   [`claim`]: ActionSets made `running` at creation so no other controller starts them;
//! - [`exclusive`]: which ActionSet a not-started exclusive one waits for (pure);
//! - [`stored`]: what the executor's store keeps of each ActionSet (pure);
//! - [`runtime`]: the reconciler on ActionSets (kube Controller, finalizer,
//!   status writes with conflict retry).
//!
//! The `controller` subcommand that runs it is [`crate::app::controller`].

pub mod claim;
pub mod deadline;
pub mod endpoints;
pub mod events;
pub mod exclusive;
pub mod machine;
pub mod metrics;
pub mod ownership;
pub mod params;
pub mod plan;
pub mod pod_logs;
pub mod pod_sweep;
pub mod resume;
pub mod runtime;
pub mod status_size;
pub mod stored;
pub mod tenancy;
