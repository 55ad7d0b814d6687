//! ScaleWorkload's settle window: a workload that Kanister's rules call ready counts as ready only
//! once every container of its pods has stayed running, with no new restart, for a short window.
//! A container without a readiness probe is Ready the moment it starts, so a container that exits
//! at once would otherwise be declared ready just before its crash loop begins; within the window
//! the restart shows (the pod is not ready, then [`super::workload::stuck`] names the
//! CrashLoopBackOff). Kanister returns as soon as the pods are Ready.
//!
//! Time is measured on this process' clock from when a container's current run was first seen
//! (its restart count in a pod), not from the kubelet's `startedAt`, so clock skew between the
//! node and the operator does not shorten or lengthen the window.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;

/// The window when the workload sets no longer `minReadySeconds`.
pub const WINDOW: Duration = Duration::from_secs(3);

/// The settle window of a workload: [`WINDOW`], or its `minReadySeconds` when that is longer.
pub fn window(min_ready_seconds: Option<i32>) -> Duration {
    let min_ready =
        Duration::from_secs(min_ready_seconds.unwrap_or(0).max(0).unsigned_abs().into());
    min_ready.max(WINDOW)
}

/// Whether the pods seen so far have settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settle {
    Settled,
    /// Not yet: at least `left` more, and why.
    Waiting {
        left: Duration,
        why: String,
    },
}

/// The containers' current runs, each with when it was first seen.
#[derive(Debug)]
pub struct Settling {
    window: Duration,
    /// (pod uid, container) → (restart count, first seen with that count while running).
    runs: HashMap<(String, String), (i32, Instant)>,
}

impl Settling {
    pub fn new(window: Duration) -> Self {
        Settling {
            window,
            runs: HashMap::new(),
        }
    }

    /// Looks at the workload's pods at `now`: settled when every container of every pod (pods
    /// being deleted left out) is running and has been seen running with the same restart count
    /// for the whole window. A container that is not running, or restarted since it was last
    /// seen, starts its window again.
    pub fn observe(&mut self, pods: &[Pod], now: Instant) -> Settle {
        let mut runs = HashMap::new();
        let mut waiting: Option<(Duration, String)> = None;
        let mut wait = |left: Duration, why: String| {
            if waiting.as_ref().is_none_or(|(l, _)| left > *l) {
                waiting = Some((left, why));
            }
        };
        for pod in pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
        {
            let pod_name = pod.metadata.name.clone().unwrap_or_default();
            let uid = pod.metadata.uid.clone().unwrap_or_else(|| pod_name.clone());
            let statuses = pod
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref());
            for cs in statuses.into_iter().flatten() {
                let running = cs.state.as_ref().is_some_and(|s| s.running.is_some());
                if !running {
                    wait(
                        self.window,
                        format!("pod {pod_name}, container {:?} is not running", cs.name),
                    );
                    continue;
                }
                let key = (uid.clone(), cs.name.clone());
                let since = match self.runs.get(&key) {
                    Some((restarts, since)) if *restarts == cs.restart_count => *since,
                    _ => now,
                };
                runs.insert(key, (cs.restart_count, since));
                let stayed = now.saturating_duration_since(since);
                if stayed < self.window {
                    wait(
                        self.window - stayed,
                        format!(
                            "pod {pod_name}, container {:?} has been running for {:.1}s of the {}s settle window",
                            cs.name,
                            stayed.as_secs_f64(),
                            self.window.as_secs()
                        ),
                    );
                }
            }
        }
        self.runs = runs;
        match waiting {
            None => Settle::Settled,
            Some((left, why)) => Settle::Waiting { left, why },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod(uid: &str, containers: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": format!("web-{uid}"), "uid": uid},
            "status": {"phase": "Running", "containerStatuses": containers},
        }))
        .unwrap()
    }

    fn running(name: &str, restarts: i32) -> Value {
        json!({"name": name, "image": "x", "imageID": "", "ready": true,
            "restartCount": restarts, "state": {"running": {"startedAt": "2026-12-05T00:00:00Z"}}})
    }

    fn crashed(name: &str, restarts: i32) -> Value {
        json!({"name": name, "image": "x", "imageID": "", "ready": false, "restartCount": restarts,
            "state": {"terminated": {"exitCode": 3, "reason": "Error"}}})
    }

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_window_is_three_seconds_or_a_longer_min_ready_seconds() {
        assert_eq!(window(None), WINDOW);
        assert_eq!(window(Some(1)), WINDOW);
        assert_eq!(window(Some(-5)), WINDOW);
        assert_eq!(window(Some(10)), 10 * S);
    }

    #[test]
    fn containers_that_stay_running_settle_after_the_window() {
        let t0 = Instant::now();
        let mut s = Settling::new(3 * S);
        let pods = [pod("a", json!([running("app", 0), running("sidecar", 0)]))];
        assert!(matches!(s.observe(&pods, t0), Settle::Waiting { left, .. } if left == 3 * S));
        let Settle::Waiting { left, why } = s.observe(&pods, t0 + 2 * S) else {
            panic!("settled too early")
        };
        assert_eq!(left, S);
        assert!(why.contains("pod web-a, container"), "{why}");
        assert_eq!(s.observe(&pods, t0 + 3 * S), Settle::Settled);
    }

    #[test]
    fn a_restart_or_a_stop_in_the_window_starts_it_again() {
        let t0 = Instant::now();
        let mut s = Settling::new(3 * S);
        s.observe(&[pod("a", json!([running("app", 0)]))], t0);
        // Restarted between two looks: the count tells.
        let again = [pod("a", json!([running("app", 1)]))];
        assert!(
            matches!(s.observe(&again, t0 + 2 * S), Settle::Waiting { left, .. } if left == 3 * S)
        );
        let Settle::Waiting { why, .. } =
            s.observe(&[pod("a", json!([crashed("app", 1)]))], t0 + 4 * S)
        else {
            panic!("a stopped container settled")
        };
        assert!(why.contains("\"app\" is not running"), "{why}");
        s.observe(&again, t0 + 5 * S);
        assert!(matches!(
            s.observe(&again, t0 + 7 * S),
            Settle::Waiting { .. }
        ));
        assert_eq!(s.observe(&again, t0 + 8 * S), Settle::Settled);
    }

    #[test]
    fn a_replaced_pod_has_its_own_window_and_no_pods_are_settled() {
        let t0 = Instant::now();
        let mut s = Settling::new(3 * S);
        s.observe(&[pod("a", json!([running("app", 0)]))], t0);
        let b = [pod("b", json!([running("app", 0)]))];
        assert!(matches!(s.observe(&b, t0 + 5 * S), Settle::Waiting { left, .. } if left == 3 * S));
        assert_eq!(s.observe(&b, t0 + 8 * S), Settle::Settled);
        assert_eq!(Settling::new(3 * S).observe(&[], t0), Settle::Settled);
    }
}
