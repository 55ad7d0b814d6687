//! The e2e tests: ONE test binary, so ONE control plane (tools/control-plane, started by
//! `support::cluster` on first use) serves all of them. Every test works in namespaces of its own
//! (`support::namespace`) and leaves cluster-wide state alone, or changes it only in ways no other
//! test can notice (see docs/testing.md). A test that must own the cluster (an all-namespaces
//! controller, the operator installed from manifests/, Kanister's CRDs in place of ours) is a test
//! binary of its own beside this directory (tests/e2e_*.rs).
//!
//! Run one module or one test: `cargo test --test e2e executor::` / `cargo test --test e2e NAME`.

#[path = "../support/mod.rs"]
mod support;
#[path = "../support/webhook_e2e.rs"]
mod webhook_e2e;

mod csi_snapshot;
mod csi_static;
mod ctl;
mod data;
mod data_all;
mod data_gcs;
mod data_stats;
mod deadline;
mod demo;
mod events;
mod exclusive;
mod executor;
mod functions;
mod harness;
mod kando;
mod kando_azure;
mod kando_gcs;
mod location_delete;
mod monitoring;
mod pod_functions;
mod rds;
mod restic_azure;
mod schedule;
mod tenancy;
mod webhook;
