//! Pods, as Kanister's `pkg/kube`: every function that makes a pod (KubeTask,
//! MultiContainerRun, PrepareData, the data functions' helper pods) builds it with
//! [`build_pod`], creates it with [`create`] (ActionSet labels, the controller's ServiceAccount,
//! a delete-on-drop [`PodGuard`]), and runs it with [`run_pod`] or waits for it with
//! [`wait_ready`]; [`exec`] runs commands in any pod. A function file holds only that
//! function's arguments and steps.

mod create;
mod error;
mod exec;
mod exec_end;
pub mod helper;
pub mod quantity;
mod run;
pub mod settle;
mod spec;
mod wait;
pub mod workload;

pub use create::{PodEnv, PodGuard, create, find_resumed, stamp};
pub use error::{PodError, without_function};
pub use exec::{ExecResult, exec, failure_message, outcome};
pub use run::{PodLog, run_pod, run_pod_to_end};
pub use spec::{
    CONTAINER, InvalidPod, build_pod, json_merge, merge_labels, merge_overrides, strategic_merge,
};
pub use wait::{FATAL_WAITING, NotReady, readiness, ready_timeout, wait_finished, wait_ready};
