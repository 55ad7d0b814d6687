use super::*;
use crate::events::Kind;
use crate::executor::resume::How;
use crate::model::{ActionSpec, BlueprintPhase, ObjectReference};
use serde_json::json;

const NOW: &str = "2026-01-01T00:00:00Z";

fn phase(name: &str) -> BlueprintPhase {
    BlueprintPhase {
        func: "KubeTask".into(),
        name: name.into(),
        ..BlueprintPhase::default()
    }
}

fn bp_action(phases: &[&str], defer: Option<&str>) -> BlueprintAction {
    let mut output_artifacts = BTreeMap::new();
    output_artifacts.insert(
        "art".to_string(),
        Artifact {
            key_value: BTreeMap::from([(
                "k".to_string(),
                "{{ .DeferPhase.Output.v }}".to_string(),
            )]),
            ..Artifact::default()
        },
    );
    BlueprintAction {
        phases: phases.iter().map(|p| phase(p)).collect(),
        defer_phase: defer.map(phase),
        output_artifacts,
        ..BlueprintAction::default()
    }
}

fn spec(actions: &[&str]) -> ActionSetSpec {
    ActionSetSpec {
        actions: actions
            .iter()
            .map(|a| ActionSpec {
                name: a.to_string(),
                blueprint: "bp".into(),
                object: ObjectReference {
                    kind: "Deployment".into(),
                    name: "app".into(),
                    namespace: "ns".into(),
                    ..ObjectReference::default()
                },
                ..ActionSpec::default()
            })
            .collect(),
        ..ActionSetSpec::default()
    }
}

fn ctx() -> Ctx<'static> {
    Ctx {
        actionset: "as1",
        now: NOW,
    }
}

/// Outcome of executing one phase in a simulation.
#[derive(Clone)]
enum Exec {
    Ok(&'static str),
    Fail(&'static str),
}

/// A script for [`Sim::drive`]: the deferPhase `cleanup` ends with `defer`, every other phase with
/// `main`.
fn main_and_defer(main: Exec, defer: Exec) -> impl Fn(&str) -> Exec {
    move |p| {
        if p == "cleanup" {
            defer.clone()
        } else {
            main.clone()
        }
    }
}

fn json_map(v: &str) -> Map<String, Value> {
    json!({ "v": v }).as_object().unwrap().clone()
}

fn start(bp: &BlueprintAction) -> (ActionSetStatus, Record, Vec<EventSpec>) {
    let init = init("as1", Some(&spec(&["backup"])), &[Ok(bp.clone())], NOW);
    assert!(init.started);
    (init.status, init.record, init.events)
}

fn reasons(evs: &[EventSpec]) -> Vec<String> {
    evs.iter()
        .map(|e| format!("{}|{}", e.reason, e.message))
        .collect()
}

/// An ActionSet's status and executor record as the machine changes them, step by step.
struct Sim {
    status: ActionSetStatus,
    record: Record,
}

impl Sim {
    /// [`start`]: the first action of `bp` started (its Events dropped).
    fn start(bp: &BlueprintAction) -> Sim {
        let (status, record, _) = start(bp);
        Sim { status, record }
    }

    /// Applies `t` to action `action`; the machine must accept it. Returns its Events.
    fn step(&mut self, action: usize, t: Transition) -> Vec<EventSpec> {
        apply(&mut self.status, &mut self.record, action, t, ctx()).unwrap()
    }

    /// Whether the machine refuses `t` for action `action`.
    fn rejects(&mut self, action: usize, t: Transition) -> bool {
        apply(&mut self.status, &mut self.record, action, t, ctx()).is_err()
    }

    /// Runs phase `i` of the first action to success with `output`.
    fn run_phase(&mut self, i: usize, output: Map<String, Value>) {
        self.step(0, Transition::PhaseStarted(i));
        self.step(0, Transition::PhaseSucceeded(i, output));
    }

    /// Runs the first action's first phase, then starts its deferPhase.
    fn drive_until_defer_running(&mut self) {
        self.run_phase(0, Map::new());
        self.step(0, Transition::DeferStarted);
    }

    /// Drives one action through the machine the way the runtime does, with
    /// scripted results per phase name, and returns every Event (reason, message).
    fn drive(
        &mut self,
        action: usize,
        script: &dyn Fn(&str) -> Exec,
        deleting: bool,
    ) -> Vec<EventSpec> {
        let mut out = Vec::new();
        for _ in 0..100 {
            let st = &self.status.actions[action];
            let rec = &self.record.actions[action];
            let t = match next_step(st, rec, deleting) {
                Step::Done => return out,
                Step::RunPhase(i) => {
                    let name = st.phases[i].name.clone();
                    out.extend(self.step(action, Transition::PhaseStarted(i)));
                    match script(&name) {
                        Exec::Ok(v) => Transition::PhaseSucceeded(i, json_map(v)),
                        Exec::Fail(e) => Transition::PhaseFailed(i, e.to_string()),
                    }
                }
                Step::RunDefer => {
                    let name = st.defer_phase.name.clone();
                    out.extend(self.step(action, Transition::DeferStarted));
                    // The deferPhase is recorded running before it executes.
                    assert_eq!(
                        self.status.actions[action].defer_phase.state,
                        State::Running
                    );
                    assert_eq!(self.status.state, State::Running);
                    match script(&name) {
                        Exec::Ok(v) => Transition::DeferSucceeded(json_map(v)),
                        Exec::Fail(e) => Transition::DeferFailed(e.to_string()),
                    }
                }
                Step::Interrupted => Transition::Interrupted,
                Step::Stop => Transition::Stopped("ActionSet is being deleted".into()),
                Step::Finish => {
                    let arts = if succeeded(st, rec) {
                        let v = st
                            .defer_phase
                            .output
                            .get("v")
                            .and_then(|v| v.as_str())
                            .unwrap_or("")
                            .to_string();
                        Some(Ok(BTreeMap::from([(
                            "art".to_string(),
                            Artifact {
                                key_value: BTreeMap::from([("k".to_string(), v)]),
                                ..Artifact::default()
                            },
                        )])))
                    } else {
                        None
                    };
                    Transition::Finished(arts)
                }
            };
            out.extend(self.step(action, t));
        }
        panic!("machine did not terminate");
    }
}

#[test]
fn init_marks_everything_pending_and_copies_artifact_templates() {
    let bp = bp_action(&["one", "two"], Some("cleanup"));
    let (status, record, evs) = start(&bp);
    assert_eq!(status.state, State::Running);
    let a = &status.actions[0];
    assert_eq!(
        a.phases.iter().map(|p| p.state).collect::<Vec<_>>(),
        [State::Pending; 2]
    );
    assert_eq!(a.defer_phase.name, "cleanup");
    assert_eq!(a.defer_phase.state, State::Pending);
    assert_eq!(
        a.artifacts["art"].key_value["k"],
        "{{ .DeferPhase.Output.v }}"
    );
    assert_eq!(record.actions[0].time, NOW);
    assert_eq!(reasons(&evs), ["Started Action|Executing action backup"]);
}

#[test]
fn main_ok_defer_ok_completes_with_events_in_order() {
    let bp = bp_action(&["one", "two"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    let evs = m.drive(0, &main_and_defer(Exec::Ok("mv"), Exec::Ok("dv")), false);
    assert_eq!(
        reasons(&evs),
        [
            "Started Phase|Executing phase one",
            "Ended Phase|Completed phase one",
            "Started Phase|Executing phase two",
            "Ended Phase|Completed phase two",
            "Started deferPhase|Executing deferPhase cleanup",
            "Ended deferPhase|Completed deferPhase cleanup",
            "Update Complete|Updated ActionSet 'as1' Status->complete",
        ]
    );
    assert_eq!(m.status.state, State::Complete);
    assert_eq!(m.status.error.message, "");
    assert_eq!(m.status.progress.running_phase, "");
    assert_eq!(m.status.progress.percent_completed, "100");
    let a = &m.status.actions[0];
    assert_eq!(a.defer_phase.state, State::Complete);
    assert_eq!(a.defer_phase.output["v"], "dv");
    assert_eq!(a.phases[1].output["v"], "mv");
    // Artifacts rendered (from .DeferPhase.Output).
    assert_eq!(a.artifacts["art"].key_value["k"], "dv");
}

#[test]
fn main_fails_defer_ok_fails_after_defer_with_main_error() {
    let bp = bp_action(&["one", "two", "three"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    let mut states_during_defer = Vec::new();
    let evs = m.drive(
        0,
        &|p| match p {
            "two" => Exec::Fail("exit 1"),
            _ => Exec::Ok("x"),
        },
        false,
    );
    states_during_defer.push(m.status.state);
    assert_eq!(
        reasons(&evs)
            .iter()
            .map(|r| r.split('|').next().unwrap().to_string())
            .collect::<Vec<_>>(),
        [
            "Started Phase",
            "Ended Phase",
            "Started Phase",
            "ActionSetFailed Action: backup",
            "Started deferPhase",
            "Ended deferPhase",
        ]
    );
    assert!(evs[3].message.starts_with("Failed to execute phase: "));
    assert!(evs[3].message.contains("\"two\""), "{}", evs[3].message);
    assert!(evs[3].message.ends_with(": exit 1"));
    assert_eq!(evs[3].kind, Kind::Warning);
    assert_eq!(evs[3].blueprint.as_deref(), Some("bp"));
    assert_eq!(m.status.state, State::Failed);
    assert_eq!(m.status.error.message, "exit 1");
    let a = &m.status.actions[0];
    assert_eq!(
        a.phases.iter().map(|p| p.state).collect::<Vec<_>>(),
        [State::Complete, State::Failed, State::Pending]
    );
    assert_eq!(a.defer_phase.state, State::Complete);
    // Not rendered: still the template.
    assert_eq!(
        a.artifacts["art"].key_value["k"],
        "{{ .DeferPhase.Output.v }}"
    );
}

#[test]
fn main_ok_defer_fails() {
    let bp = bp_action(&["one"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    let evs = m.drive(
        0,
        &main_and_defer(Exec::Ok("x"), Exec::Fail("scale failed")),
        false,
    );
    let last = evs.last().unwrap();
    assert_eq!(last.reason, "ActionSetFailed Action: backup");
    assert!(last.message.starts_with("Failed to execute defer phase: "));
    assert_eq!(m.status.state, State::Failed);
    assert_eq!(m.status.error.message, "scale failed");
    assert_eq!(m.status.actions[0].defer_phase.state, State::Failed);
    assert_eq!(m.status.actions[0].phases[0].state, State::Complete);
    assert_eq!(
        m.status.actions[0].artifacts["art"].key_value["k"],
        "{{ .DeferPhase.Output.v }}"
    );
}

#[test]
fn both_fail_keeps_main_error() {
    let bp = bp_action(&["one"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    let evs = m.drive(
        0,
        &main_and_defer(Exec::Fail("main boom"), Exec::Fail("defer boom")),
        false,
    );
    assert_eq!(
        evs.iter().map(|e| e.reason.as_str()).collect::<Vec<_>>(),
        [
            "Started Phase",
            "ActionSetFailed Action: backup",
            "Started deferPhase",
            "ActionSetFailed Action: backup"
        ]
    );
    assert_eq!(m.status.state, State::Failed);
    assert_eq!(
        m.status.error.message,
        "main boom; deferPhase cleanup also failed: defer boom"
    );
}

#[test]
fn actionset_stays_running_until_defer_ends() {
    let bp = bp_action(&["one"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    m.step(0, Transition::PhaseStarted(0));
    m.step(0, Transition::PhaseFailed(0, "e".into()));
    assert_eq!(m.status.state, State::Running);
    assert_eq!(m.status.error.message, "e");
    assert_eq!(
        next_step(&m.status.actions[0], &m.record.actions[0], false),
        Step::RunDefer
    );
    m.step(0, Transition::DeferStarted);
    assert_eq!(m.status.state, State::Running);
    assert_eq!(m.status.progress.running_phase, "cleanup");
    assert_eq!(
        outcome(&m.status.actions[0], &m.record.actions[0]),
        Outcome {
            state: "failed".into(),
            failed_phase: "one".into(),
            error: "e".into()
        }
    );
}

#[test]
fn no_defer_phase_fails_at_first_failure() {
    let bp = bp_action(&["one", "two"], None);
    let mut m = Sim::start(&bp);
    assert_eq!(m.status.actions[0].defer_phase.state, State::Unset);
    let evs = m.drive(0, &|_| Exec::Fail("nope"), false);
    assert_eq!(evs.len(), 2);
    assert_eq!(m.status.state, State::Failed);
    assert_eq!(m.status.actions[0].phases[1].state, State::Pending);
}

#[test]
fn restart_mid_phase_fails_it_and_runs_defer_once() {
    let bp = bp_action(&["one", "two"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    m.run_phase(0, json_map("a"));
    m.step(0, Transition::PhaseStarted(1));
    // The controller dies here; a new one reads the status back.
    m.status = serde_json::from_value(serde_json::to_value(&m.status).unwrap()).unwrap();
    assert_eq!(
        next_step(&m.status.actions[0], &m.record.actions[0], false),
        Step::Interrupted
    );
    let mut ran = Vec::new();
    let evs = m.drive(
        0,
        &|p| {
            assert_ne!(p, "one", "completed phase re-run");
            assert_ne!(p, "two", "interrupted phase re-run");
            Exec::Ok("d")
        },
        false,
    );
    ran.extend(evs.iter().filter(|e| e.reason == "Started deferPhase"));
    assert_eq!(ran.len(), 1);
    assert_eq!(m.status.state, State::Failed);
    assert!(
        m.status
            .error
            .message
            .contains("controller restarted while phase two was running"),
        "{}",
        m.status.error.message
    );
    assert_eq!(m.status.actions[0].phases[0].state, State::Complete);
    assert_eq!(m.status.actions[0].phases[1].state, State::Failed);
    assert_eq!(m.status.actions[0].defer_phase.state, State::Complete);
}

#[test]
fn pods_of_the_running_step_are_recorded_until_it_ends() {
    let bp = bp_action(&["one", "two"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    let pod = |n: &str| Transition::PodCreated(format!("ns/{n}"));
    assert!(m.rejects(0, pod("early")));
    m.step(0, Transition::PhaseStarted(0));
    let before = m.status.clone();
    assert!(m.step(0, pod("p1")).is_empty());
    m.step(0, pod("p1"));
    assert_eq!(m.record.actions[0].pods, ["ns/p1"]);
    assert_eq!(m.status, before, "recording a pod leaves the status alone");
    // The record survives a restart (it lives in an annotation).
    let mut meta = ObjectMeta::default();
    m.record.to_meta(&mut meta);
    let (back, problem) = Record::from_meta(&meta, 1, NOW);
    assert_eq!((back, problem), (m.record.clone(), None));
    m.step(0, Transition::PhaseSucceeded(0, Map::new()));
    assert!(m.record.actions[0].pods.is_empty());
}

#[test]
fn resumed_phase_stays_running_and_an_event_says_how() {
    let bp = bp_action(&["one"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    m.step(0, Transition::PhaseStarted(0));
    m.step(0, Transition::PodCreated("ns/p".into()));
    let started = m.status.actions[0].phases[0].progress.clone();
    let evs = m.step(0, Transition::Resumed(How::Reattach));
    assert_eq!(
        reasons(&evs),
        [
            "Resumed Phase|Controller restarted while phase one was running; re-attached to its pod (the phase was not re-run)"
        ]
    );
    let p = &m.status.actions[0].phases[0];
    assert_eq!(p.state, State::Running);
    assert_eq!(
        p.progress, started,
        "the phase deadline counts from its first start"
    );
    assert_eq!(
        m.record.actions[0].pods,
        ["ns/p"],
        "kept to find the pod again"
    );
    // Re-attaching again (another restart) is fine.
    m.step(0, Transition::Resumed(How::Reattach));
    m.step(0, Transition::PhaseSucceeded(0, Map::new()));
    assert!(m.rejects(0, Transition::Resumed(How::Reattach)));
}

#[test]
fn early_outputs_are_kept_for_a_reentered_step_and_dropped_when_it_ends() {
    let bp = bp_action(&["scale"], None);
    let mut m = Sim::start(&bp);
    let early = Transition::EarlyOutput("originalReplicaCount".into(), json!(3));
    assert!(m.rejects(0, early.clone()));
    m.step(0, Transition::PhaseStarted(0));
    assert!(m.step(0, early).is_empty());
    m.step(0, Transition::Resumed(How::Reenter));
    assert_eq!(
        m.record.actions[0].early_output["originalReplicaCount"],
        json!(3)
    );
    m.step(0, Transition::PhaseSucceeded(0, Map::new()));
    assert!(m.record.actions[0].early_output.is_empty());
}

#[test]
fn a_declared_rerun_happens_once_then_a_restart_fails_the_phase() {
    let bp = bp_action(&["one"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    m.step(0, Transition::PhaseStarted(0));
    m.step(0, Transition::PodCreated("ns/helper".into()));
    let evs = m.step(0, Transition::Resumed(How::Rerun));
    assert!(
        reasons(&evs)[0].starts_with(
            "Resumed Phase|Controller restarted while phase one was running; re-running it once"
        ),
        "{evs:?}"
    );
    assert_eq!(m.record.actions[0].rerun, ["one"]);
    assert!(
        m.record.actions[0].pods.is_empty(),
        "the first run's pods are not the re-run's"
    );
    assert!(m.rejects(0, Transition::Resumed(How::Rerun)));
    m.step(0, Transition::Interrupted);
    assert!(
        m.record.actions[0].error.starts_with(
            "controller restarted while phase one was running, again after it was re-run once"
        ),
        "{}",
        m.record.actions[0].error
    );
    // The deferPhase is re-run under its own key.
    m.step(0, Transition::DeferStarted);
    m.step(0, Transition::Resumed(How::Rerun));
    assert_eq!(m.record.actions[0].rerun, ["one", "defer:cleanup"]);
    let evs = m.step(0, Transition::Resumed(How::Reenter));
    assert_eq!(evs[0].reason, "Resumed deferPhase");
}

#[test]
fn restart_mid_defer_does_not_rerun_it() {
    let bp = bp_action(&["one"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    m.drive_until_defer_running();
    let evs = m.drive(0, &|_| panic!("nothing may run"), false);
    assert_eq!(evs[0].reason, "ActionSetFailed Action: backup");
    assert!(
        evs[0]
            .message
            .contains("controller restarted while deferPhase cleanup was running")
    );
    assert_eq!(m.status.state, State::Failed);
    assert_eq!(m.status.actions[0].defer_phase.state, State::Failed);
}

#[test]
fn deletion_between_phases_stops_main_and_runs_defer() {
    let bp = bp_action(&["one", "two"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    m.run_phase(0, Map::new());
    let evs = m.drive(
        0,
        &|p| {
            assert_eq!(p, "cleanup");
            Exec::Ok("d")
        },
        true,
    );
    assert!(evs.iter().any(|e| e.reason == "Ended deferPhase"));
    assert_eq!(m.status.state, State::Failed);
    assert_eq!(m.status.actions[0].phases[1].state, State::Pending);
    assert_eq!(m.status.error.message, "ActionSet is being deleted");
}

#[test]
fn launch_failure_still_runs_defer() {
    let bp = bp_action(&["one"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    let evs = m.step(0, Transition::LaunchFailed("no object".into()));
    assert_eq!(evs[0].message, "Failed to launch Action as1: no object");
    assert_eq!(m.status.actions[0].phases[0].state, State::Failed);
    assert_eq!(
        next_step(&m.status.actions[0], &m.record.actions[0], false),
        Step::RunDefer
    );
    let o = outcome(&m.status.actions[0], &m.record.actions[0]);
    assert_eq!(o.state, "failed");
    assert_eq!(o.error, "no object");
}

#[test]
fn stale_transitions_are_rejected_not_applied() {
    let bp = bp_action(&["one", "two"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    let before = m.status.clone();
    // Phase two before phase one.
    assert!(m.rejects(0, Transition::PhaseStarted(1)));
    // Success of a phase that is not running.
    assert!(m.rejects(0, Transition::PhaseSucceeded(0, Map::new())));
    // Defer before main phases are over.
    assert!(m.rejects(0, Transition::DeferStarted));
    // Unknown action.
    let err = apply(
        &mut m.status,
        &mut m.record,
        7,
        Transition::DeferStarted,
        ctx(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("no such action"), "{err}");
    assert_eq!(m.status, before);
    // Starting twice (a second controller) is rejected.
    m.step(0, Transition::PhaseStarted(0));
    assert!(m.rejects(0, Transition::PhaseStarted(0)));
}

#[test]
fn parallel_actions_finish_independently() {
    let bp1 = bp_action(&["a1"], Some("d1"));
    let bp2 = bp_action(&["b1"], None);
    let init = init(
        "as1",
        Some(&spec(&["backup", "other"])),
        &[Ok(bp1), Ok(bp2)],
        NOW,
    );
    let mut m = Sim {
        status: init.status,
        record: init.record,
    };
    assert_eq!(init.events.len(), 2);
    m.drive(1, &|_| Exec::Fail("b broke"), false);
    // Action "backup" has not finished: still running.
    assert_eq!(m.status.state, State::Running);
    m.drive(0, &|_| Exec::Ok("v"), false);
    assert_eq!(m.status.state, State::Failed);
    assert_eq!(m.status.error.message, "action other: b broke");
    // The successful action got its artifacts rendered.
    assert_eq!(m.status.actions[0].artifacts["art"].key_value["k"], "v");
}

#[test]
fn init_failures_fail_at_once_with_kanister_events() {
    let init = init(
        "as1",
        Some(&spec(&["backup"])),
        &[Err(InitError::ActionNotFound {
            action: "backup".into(),
            kind: "Deployment".into(),
            blueprint: "bp".into(),
        })],
        NOW,
    );
    assert!(!init.started);
    assert_eq!(init.status.state, State::Failed);
    assert!(init.status.actions.is_empty());
    assert_eq!(init.events[0].reason, "ActionSetFailed Action: backup");
    assert_eq!(
        init.events[0].message,
        "Could not get initial action: Action backup for object kind Deployment not found in blueprint bp"
    );
    let empty = super::init("as1", Some(&ActionSetSpec::default()), &[], NOW);
    assert_eq!(empty.status.state, State::Complete);
    assert_eq!(empty.events[0].reason, "Update Complete");
}

#[test]
fn render_failure_of_artifacts_fails_the_actionset() {
    let bp = bp_action(&["one"], None);
    let mut m = Sim::start(&bp);
    m.run_phase(0, Map::new());
    assert_eq!(
        next_step(&m.status.actions[0], &m.record.actions[0], false),
        Step::Finish
    );
    let evs = m.step(
        0,
        Transition::Finished(Some(Err(
            "Failed to render template: \"x\" not found".into()
        ))),
    );
    assert!(
        evs[0]
            .message
            .starts_with("Failed to render output artifacts ")
    );
    assert_eq!(m.status.state, State::Failed);
    assert_eq!(
        m.status.error.message,
        "Failed to render template: \"x\" not found"
    );
}

#[test]
fn record_round_trips_and_survives_garbage() {
    let mut meta = ObjectMeta::default();
    let rec = Record {
        actions: vec![ActionRecord {
            time: NOW.into(),
            error: "e".into(),
            finished: true,
            ..ActionRecord::default()
        }],
    };
    rec.to_meta(&mut meta);
    assert_eq!(Record::from_meta(&meta, 1, "later"), (rec, None));
    meta.annotations
        .as_mut()
        .unwrap()
        .insert(ANNOTATION_EXECUTOR_RECORD.into(), "{not json".into());
    let (r, problem) = Record::from_meta(&meta, 2, "later");
    assert_eq!(r.actions.len(), 2);
    assert_eq!(r.actions[0].time, "later");
    assert!(problem.unwrap().contains(ANNOTATION_EXECUTOR_RECORD));
}

#[test]
fn finalizer_held_only_while_running() {
    let mut meta = ObjectMeta::default();
    assert!(sync_finalizer(&mut meta, State::Running));
    assert!(!sync_finalizer(&mut meta, State::Running));
    assert_eq!(
        meta.finalizers.as_ref().unwrap(),
        &[FINALIZER_DEFER_PHASE.to_string()]
    );
    assert!(sync_finalizer(&mut meta, State::Failed));
    assert!(meta.finalizers.as_ref().unwrap().is_empty());
}

#[test]
fn blueprint_changed_while_running_is_detected() {
    let bp = bp_action(&["one", "two"], Some("cleanup"));
    let (status, _, _) = start(&bp);
    assert!(check_blueprint(&bp, &status.actions[0]).is_ok());
    let changed = bp_action(&["one"], Some("cleanup"));
    let err = check_blueprint(&changed, &status.actions[0])
        .unwrap_err()
        .to_string();
    assert!(err.contains("changed while ActionSet was running"), "{err}");
    let no_defer = bp_action(&["one", "two"], None);
    assert!(check_blueprint(&no_defer, &status.actions[0]).is_err());
}

#[test]
fn a_huge_phase_error_is_cut_and_the_defer_phase_still_runs() {
    let bp = bp_action(&["one"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    m.step(0, Transition::PhaseStarted(0));
    let huge = format!("pod failed; last log lines:\n{}END", "x".repeat(3 << 20));
    let evs = m.step(0, Transition::PhaseFailed(0, huge));
    let rec = &m.record.actions[0];
    assert!(
        rec.error.len() <= status_size::ERROR_MAX,
        "{}",
        rec.error.len()
    );
    assert!(rec.error.starts_with("pod failed; last log lines:\n"));
    assert!(rec.error.ends_with("END"));
    assert!(rec.error.contains(" bytes cut ...\n"));
    assert_eq!(m.status.error.message, rec.error);
    assert_eq!(evs[0].reason, "ActionSetFailed Action: backup");
    // The record annotation stays far below the API server's 256 KiB.
    let mut meta = ObjectMeta::default();
    m.record.to_meta(&mut meta);
    assert!(meta.annotations.unwrap()[ANNOTATION_EXECUTOR_RECORD].len() < 16 * 1024);
    assert_eq!(
        next_step(&m.status.actions[0], &m.record.actions[0], false),
        Step::RunDefer
    );
}

#[test]
fn an_output_too_large_for_status_fails_the_phase_without_recording_it() {
    let bp = bp_action(&["one", "two"], Some("cleanup"));
    let mut m = Sim::start(&bp);
    m.step(0, Transition::PhaseStarted(0));
    let big = json!({"dump": "y".repeat(2 << 20)})
        .as_object()
        .unwrap()
        .clone();
    let evs = m.step(0, Transition::PhaseSucceeded(0, big));
    let a = &m.status.actions[0];
    assert_eq!(a.phases[0].state, State::Failed);
    assert!(a.phases[0].output.is_empty());
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].reason, "ActionSetFailed Action: backup");
    assert!(
        m.status
            .error
            .message
            .starts_with("the output of phase one is 2.0 MiB (key dump: 2.0 MiB)"),
        "{}",
        m.status.error.message
    );
    assert_eq!(m.record.actions[0].failed_phase, "one");
    assert_eq!(next_step(a, &m.record.actions[0], false), Step::RunDefer);

    // The same for the deferPhase's output.
    m.step(0, Transition::DeferStarted);
    let big = json!({"v": "z".repeat(1 << 20)})
        .as_object()
        .unwrap()
        .clone();
    m.step(0, Transition::DeferSucceeded(big));
    let a = &m.status.actions[0];
    assert_eq!(a.defer_phase.state, State::Failed);
    assert!(a.defer_phase.output.is_empty());
    assert!(
        m.record.actions[0]
            .defer_error
            .starts_with("the output of deferPhase cleanup is 1.0 MiB"),
        "{}",
        m.record.actions[0].defer_error
    );
}

#[test]
fn huge_artifacts_fail_the_action_instead_of_the_status_write() {
    let bp = bp_action(&["one"], None);
    let mut m = Sim::start(&bp);
    m.drive(0, &|_| Exec::Ok("v"), false);
    assert_eq!(m.status.state, State::Complete);
    let mut m = Sim::start(&bp);
    m.run_phase(0, json_map("v"));
    let arts = BTreeMap::from([(
        "art".to_string(),
        Artifact {
            key_value: BTreeMap::from([("k".to_string(), "a".repeat(1 << 20))]),
            ..Artifact::default()
        },
    )]);
    m.step(0, Transition::Finished(Some(Ok(arts))));
    assert_eq!(m.status.state, State::Failed);
    assert!(
        m.status
            .error
            .message
            .starts_with("the rendered output artifacts are 1.0 MiB"),
        "{}",
        m.status.error.message
    );
    assert_eq!(
        m.status.actions[0].artifacts["art"].key_value["k"],
        "{{ .DeferPhase.Output.v }}"
    );
}

#[test]
fn many_actions_with_huge_errors_stay_within_the_object_budget() {
    let names: Vec<String> = (0..40).map(|i| format!("a{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let bp = bp_action(&["one"], Some("cleanup"));
    let resolved = vec![Ok(bp); names.len()];
    let init = init("as1", Some(&spec(&refs)), &resolved, NOW);
    let mut m = Sim {
        status: init.status,
        record: init.record,
    };
    let huge = "e".repeat(1 << 20);
    for i in 0..names.len() {
        m.step(i, Transition::PhaseStarted(0));
        m.step(i, Transition::PhaseFailed(0, huge.clone()));
        m.step(i, Transition::DeferStarted);
        m.step(i, Transition::DeferFailed(huge.clone()));
        m.step(i, Transition::Finished(None));
    }
    assert_eq!(m.status.state, State::Failed);
    let mut meta = ObjectMeta::default();
    m.record.to_meta(&mut meta);
    let record_len = meta.annotations.unwrap()[ANNOTATION_EXECUTOR_RECORD].len();
    let status_len = serde_json::to_string(&m.status).unwrap().len();
    assert!(
        record_len <= status_size::ERRORS_TOTAL + 8 * 1024,
        "{record_len}"
    );
    assert!(
        status_len <= status_size::MESSAGE_MAX + 64 * 1024,
        "{status_len}"
    );
    assert!(m.status.error.message.contains(" bytes cut ...\n"));
    assert!(m.status.error.message.starts_with("action a0: eee"));
}

#[test]
fn spec_entry_is_found_by_identity_not_index() {
    let bp = bp_action(&["one"], Some("cleanup"));
    let s = spec(&["backup", "verify"]);
    let init = init("as1", Some(&s), &[Ok(bp.clone()), Ok(bp.clone())], NOW);
    let (backup, verify) = (&init.status.actions[0], &init.status.actions[1]);
    assert_eq!(spec_action_for(Some(&s), verify, 1).unwrap().name, "verify");
    // "backup" removed from the spec: "verify" is now at index 0.
    let shrunk = spec(&["verify"]);
    assert_eq!(
        spec_action_for(Some(&shrunk), verify, 1).unwrap().name,
        "verify"
    );
    assert!(spec_action_for(Some(&shrunk), backup, 0).is_none());
    assert!(spec_action_for(None, backup, 0).is_none());
    // Same name, another object: not the same action.
    let mut moved = spec(&["backup"]);
    moved.actions[0].object.name = "other".into();
    assert!(spec_action_for(Some(&moved), backup, 0).is_none());
    let msg = removed_message(backup);
    assert!(
        msg.starts_with(
            "action backup (Blueprint bp, Deployment app) was removed from spec.actions"
        ),
        "{msg}"
    );
}

#[test]
fn finishing_keeps_artifact_fields_others_wrote() {
    let bp = bp_action(&["one"], None);
    let mut m = Sim::start(&bp);
    m.status.actions[0]
        .artifacts
        .get_mut("art")
        .unwrap()
        .extra
        .insert("size".into(), json!(42));
    m.run_phase(0, Map::new());
    let rendered = BTreeMap::from([(
        "art".to_string(),
        Artifact {
            key_value: BTreeMap::from([("k".to_string(), "v".to_string())]),
            ..Artifact::default()
        },
    )]);
    m.step(0, Transition::Finished(Some(Ok(rendered))));
    let art = &m.status.actions[0].artifacts["art"];
    assert_eq!(art.key_value["k"], "v");
    assert_eq!(art.extra["size"], json!(42));
}
