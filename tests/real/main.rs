//! The real tier: everything a pod does, on a real kubelet node ("real-0": containerd, runc, the
//! CNI bridge, kube-proxy, CoreDNS) with the images of `tools/images/build.sh`.
//!
//! These tests need that cluster, which only `tools/test.sh --real` starts (root, one per machine),
//! so they are `#[ignore]`d in the fast tier and run there with `--ignored`: they never pass by
//! skipping. One test at a time (`--test-threads=1`): they share one node and the operator's
//! cluster-wide install.

#[path = "../support/mod.rs"]
mod support;

mod admission_faults;
mod databases;
mod demo;
mod failures;
mod faults;
mod faults_defer;
mod faults_exec;
mod flux;
mod functions;
mod helm;
mod install;
mod kando_failures;
mod kando_peer;
mod kanister;
mod kanister_parity;
mod node;
mod pod_logs;
mod rds;
mod real;
mod restart;
mod verified_backups;
