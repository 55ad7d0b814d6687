//! What failed stays visible: before the pods of a failed phase (or
//! deferPhase) are deleted, the last lines of each container's log are kept
//! on the ActionSet, in the failed step's `output` under [`OUTPUT_POD_LOGS`](crate::model::labels::OUTPUT_POD_LOGS)
//! (Kanister's status schema keeps `output` whole and prunes unknown
//! fields elsewhere), and in a Warning Event about the pod (related to the
//! ActionSet: Events about the ActionSet keep Kanister's sequence). Bounded ([`MAX_LINES`] lines,
//! [`MAX_BYTES`] per container, [`MAX_PODS`] pods) and redacted: the
//! Profile's credentials and the action's Secrets read `<redacted>`.

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, LogParams};
use serde_json::{Map, Value, json};

use super::events::EventSpec;
use super::params::PhaseObjects;
use crate::redact::Redactor;

pub const MAX_LINES: usize = 20;
pub const MAX_BYTES: usize = 2048;
pub const MAX_PODS: usize = 4;
/// Event reason.
pub const REASON: &str = "PodLogKept";

/// The redactor of an action's step: the Profile's credentials, the
/// ActionSet's Secrets and every phase's `objects` Secrets.
pub fn redactor(base: &Map<String, Value>, objects: &PhaseObjects) -> Redactor {
    let mut p = base.clone();
    p.insert("Phases".into(), json!(objects));
    Redactor::from_params(&Value::Object(p))
}

/// The last [`MAX_LINES`] lines of `text`, at most [`MAX_BYTES`] (cut at
/// the start, on a character boundary), redacted.
pub fn tail(text: &str, redactor: &Redactor) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let last = lines[lines.len().saturating_sub(MAX_LINES)..].join("\n");
    let last = redactor.redact(&last);
    if last.len() <= MAX_BYTES {
        return last;
    }
    let mut start = last.len() - MAX_BYTES;
    while !last.is_char_boundary(start) {
        start += 1;
    }
    last[start..].to_string()
}

/// The kept lines of one pod.
#[derive(Clone, Debug)]
pub struct Kept {
    /// The pod, for the Event's `regarding`.
    pub pod: ObjectReference,
    /// `<namespace>/<name>`.
    pub key: String,
    /// Container name -> last lines.
    pub containers: Map<String, Value>,
}

/// Reads the last log lines of every container of `pods` (`<namespace>/<name>`)
/// that still exist. Errors leave a pod out: this is a courtesy before deleting.
pub async fn capture(client: &kube::Client, pods: &[String], redactor: &Redactor) -> Vec<Kept> {
    let mut out = Vec::new();
    for p in pods.iter().take(MAX_PODS) {
        let Some((ns, name)) = p.split_once('/') else {
            continue;
        };
        let api: Api<Pod> = Api::namespaced(client.clone(), ns);
        let Ok(Some(pod)) = api.get_opt(name).await else {
            continue;
        };
        let containers = pod
            .spec
            .iter()
            .flat_map(|s| s.containers.iter())
            .map(|c| c.name.clone());
        let mut by_container = Map::new();
        for c in containers {
            let lp = LogParams {
                container: Some(c.clone()),
                tail_lines: Some(MAX_LINES as i64),
                limit_bytes: Some((MAX_BYTES * 8) as i64),
                ..LogParams::default()
            };
            match api.logs(name, &lp).await {
                Ok(text) if !text.trim().is_empty() => {
                    by_container.insert(c, Value::String(tail(&text, redactor)));
                }
                Ok(_) => {}
                Err(e) => tracing::debug!(pod = %p, container = %c, error = %e, "no log kept"),
            }
        }
        if !by_container.is_empty() {
            out.push(Kept {
                pod: ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Pod".into()),
                    name: Some(name.to_string()),
                    namespace: Some(ns.to_string()),
                    uid: pod.metadata.uid.clone(),
                    ..ObjectReference::default()
                },
                key: p.clone(),
                containers: by_container,
            });
        }
    }
    out
}

/// What the failed step's `output` keeps under [`OUTPUT_POD_LOGS`](crate::model::labels::OUTPUT_POD_LOGS).
pub fn output_value(kept: &[Kept]) -> Map<String, Value> {
    kept.iter()
        .map(|k| (k.key.clone(), Value::Object(k.containers.clone())))
        .collect()
}

/// The Warning Event about one pod: the step it served and its last lines.
pub fn event(step: &str, kept: &Kept) -> EventSpec {
    let mut note = format!(
        "{step} failed; last log lines of pod {} before it was deleted:",
        kept.key
    );
    for (c, text) in &kept.containers {
        note.push_str(&format!("\n[{c}]\n{}", text.as_str().unwrap_or_default()));
    }
    EventSpec {
        kind: crate::events::Kind::Warning,
        reason: REASON.into(),
        message: note,
        blueprint: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_are_bounded_and_redacted() {
        let r = Redactor::new(["hunter22".to_string()]);
        let text: String = (1..=30)
            .map(|i| format!("line {i} pw=hunter22\n"))
            .collect();
        let t = tail(&text, &r);
        assert_eq!(t.lines().count(), MAX_LINES);
        assert!(t.starts_with("line 11 pw=<redacted>"), "{t}");
        assert!(!t.contains("hunter22"));
        let long = "é".repeat(3000);
        let t = tail(&long, &Redactor::default());
        assert!(t.len() <= MAX_BYTES && t.chars().all(|c| c == 'é'));
    }

    #[test]
    fn kept_lines_go_to_the_failed_step_only() {
        use crate::executor::machine::{self, Ctx, Transition};
        use crate::model::{ActionSetSpec, ActionSpec, BlueprintAction, State};
        let bp: BlueprintAction = serde_json::from_value(json!({
            "phases": [{"func": "KubeTask", "name": "dump"}],
            "deferPhase": {"func": "KubeTask", "name": "up"}}))
        .unwrap();
        let spec = ActionSetSpec {
            actions: vec![ActionSpec {
                name: "backup".into(),
                ..ActionSpec::default()
            }],
            ..ActionSetSpec::default()
        };
        let init = machine::init("as", Some(&spec), &[Ok(bp)], "t");
        let (mut status, mut rec) = (init.status, init.record);
        let ctx = Ctx {
            actionset: "as",
            now: "2026-01-01T00:00:00Z",
        };
        let logs = json!({"ns/p": {"main": "boom"}})
            .as_object()
            .cloned()
            .unwrap();
        let mut apply = |t| machine::apply(&mut status, &mut rec, 0, t, ctx);
        // A running phase has not failed: nothing to keep yet.
        apply(Transition::PhaseStarted(0)).unwrap();
        assert!(apply(Transition::PodLogs(Some(0), logs.clone())).is_err());
        apply(Transition::PhaseFailed(0, "exit 1".into())).unwrap();
        let evs = apply(Transition::PodLogs(Some(0), logs.clone())).unwrap();
        assert!(evs.is_empty(), "{evs:?}");
        assert!(apply(Transition::PodLogs(None, logs)).is_err());
        let st = &status.actions[0];
        assert_eq!(st.phases[0].state, State::Failed);
        assert_eq!(
            st.phases[0].output[crate::model::labels::OUTPUT_POD_LOGS]["ns/p"]["main"],
            "boom"
        );
        assert_eq!(status.state, State::Running);
    }

    #[test]
    fn the_event_names_pod_and_container() {
        let kept = Kept {
            pod: ObjectReference::default(),
            key: "ns/p".into(),
            containers: json!({"main": "boom"}).as_object().cloned().unwrap(),
        };
        assert_eq!(
            output_value(std::slice::from_ref(&kept))["ns/p"]["main"],
            "boom"
        );
        let e = event("phase dump", &kept);
        assert_eq!(e.reason, REASON);
        assert!(
            e.message
                .contains("pod ns/p before it was deleted:\n[main]\nboom"),
            "{}",
            e.message
        );
    }
}
