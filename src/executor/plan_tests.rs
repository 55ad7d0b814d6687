use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use proptest::prelude::*;

use super::*;
use crate::model::{ActionSetSpec, ActionSpec, BlueprintPhase};

const NOW: &str = "2026-01-01T00:00:00Z";
const TIMEOUT: Duration = Duration::from_secs(600);

fn now() -> DateTime<Utc> {
    deadline::parse_time(Some(NOW)).unwrap_or_default()
}

fn phase(name: &str, func: &str) -> BlueprintPhase {
    BlueprintPhase {
        func: func.into(),
        name: name.into(),
        ..BlueprintPhase::default()
    }
}

fn blueprint(phases: usize, func: &str, defer_func: &str) -> BlueprintAction {
    BlueprintAction {
        phases: (0..phases).map(|i| phase(&format!("p{i}"), func)).collect(),
        defer_phase: Some(phase("cleanup", defer_func)),
        ..BlueprintAction::default()
    }
}

fn started(bp: &BlueprintAction) -> (ActionSetStatus, Record) {
    let spec = ActionSetSpec {
        actions: vec![ActionSpec {
            name: "backup".into(),
            blueprint: "bp".into(),
            ..ActionSpec::default()
        }],
        ..ActionSetSpec::default()
    };
    let init = machine::init("as", Some(&spec), &[Ok(bp.clone())], NOW);
    (init.status, init.record)
}

fn facts<'a>(bp: &'a BlueprintAction, timeouts: &'a Timeouts) -> Facts<'a> {
    Facts {
        bp: Some(bp),
        broken: None,
        base_error: None,
        rerun: &[],
        timeouts,
        now: now(),
        deleting: false,
        deleted_at: None,
        deletion_timeout: TIMEOUT,
        removed: false,
        started: None,
    }
}

#[test]
fn guards_before_a_main_phase() {
    let bp = blueprint(2, "KubeTask", "KubeTask");
    let t = Timeouts::default();
    let (status, record) = started(&bp);
    let (st, rec) = (&status.actions[0], &record.actions[0]);
    let f = facts(&bp, &t);
    assert_eq!(
        decide(st, rec, &f),
        Plan::RunPhase {
            phase: 0,
            start: true
        }
    );
    let pre = Facts {
        started: Some(Step::RunPhase(0)),
        ..f
    };
    assert_eq!(
        decide(st, rec, &pre),
        Plan::RunPhase {
            phase: 0,
            start: false
        }
    );
    let gone = Facts { removed: true, ..f };
    assert!(
        matches!(decide(st, rec, &gone), Plan::Record(Transition::Stopped(m)) if m.contains("was removed"))
    );
    let broken = Facts {
        bp: None,
        broken: Some("Blueprint changed"),
        ..f
    };
    assert_eq!(
        decide(st, rec, &broken),
        Plan::Record(Transition::Stopped("Blueprint changed".into()))
    );
    let launch = Facts {
        base_error: Some("no profile"),
        ..f
    };
    assert_eq!(
        decide(st, rec, &launch),
        Plan::Record(Transition::LaunchFailed("no profile".into()))
    );
    let deleting = Facts {
        deleting: true,
        ..f
    };
    assert!(
        matches!(decide(st, rec, &deleting), Plan::Record(Transition::Stopped(m)) if m.contains("phase p0 and the phases after it"))
    );
    let short = Timeouts {
        action: Some(deadline::Limit {
            after: Duration::from_secs(1),
            source: deadline::Source::Flag,
        }),
        ..Timeouts::default()
    };
    let late = Facts {
        timeouts: &short,
        now: now() + chrono::Duration::seconds(5),
        ..f
    };
    assert!(
        matches!(decide(st, rec, &late), Plan::Record(Transition::Stopped(m)) if m.contains("before phase p0 started"))
    );
    // Started in the same write as the previous result: it runs.
    let late_pre = Facts {
        started: Some(Step::RunPhase(0)),
        ..late
    };
    assert_eq!(
        decide(st, rec, &late_pre),
        Plan::RunPhase {
            phase: 0,
            start: false
        }
    );
}

#[test]
fn the_defer_phase_is_not_started_past_the_deletion_timeout() {
    let bp = blueprint(0, "KubeTask", "KubeTask");
    let t = Timeouts::default();
    let (status, record) = started(&bp);
    let (st, rec) = (&status.actions[0], &record.actions[0]);
    let deleted = |ago: i64| Facts {
        deleting: true,
        deleted_at: Some(now() - chrono::Duration::seconds(ago)),
        ..facts(&bp, &t)
    };
    assert_eq!(
        decide(st, rec, &deleted(599)),
        Plan::RunDefer { start: true }
    );
    assert!(
        matches!(decide(st, rec, &deleted(600)), Plan::Record(Transition::DeferFailed(m)) if m.contains("deletion timeout (600s) elapsed"))
    );
    let gone = Facts {
        bp: None,
        broken: Some("Blueprint bp deleted"),
        ..facts(&bp, &t)
    };
    assert_eq!(
        decide(st, rec, &gone),
        Plan::Record(Transition::DeferFailed(
            "deferPhase not run: Blueprint bp deleted".into()
        ))
    );
}

#[test]
fn what_follows_a_result() {
    let ended = After {
        delete_pods: true,
        keep_logs: None,
    };
    assert_eq!(
        after(&Transition::PhaseSucceeded(0, Default::default())),
        ended
    );
    assert_eq!(after(&Transition::Interrupted), ended);
    assert_eq!(
        after(&Transition::PhaseFailed(1, "x".into())).keep_logs,
        Some(Some(1))
    );
    assert_eq!(
        after(&Transition::DeferFailed("x".into())).keep_logs,
        Some(None)
    );
    assert!(!after(&Transition::PhaseStarted(0)).delete_pods);
    assert!(!after(&Transition::Stopped("x".into())).delete_pods);
}

/// How one simulated run goes wrong.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Failure {
    None,
    Phase(usize),
    Launch,
    Defer,
}

#[derive(Clone, Debug)]
struct Case {
    phases: usize,
    func: &'static str,
    defer_func: &'static str,
    failure: Failure,
    /// The controller restarts after these writes (the driver's memory and the step in
    /// flight are lost).
    restarts: Vec<usize>,
    /// The ActionSet is deleted after this many writes.
    deleted: Option<usize>,
    /// It was deleted longer ago than the deletion timeout.
    long_ago: bool,
}

/// What happened to the deferPhase in a run.
#[derive(Debug, Default)]
struct Seen {
    /// Writes that recorded it `running`, and that recorded it ended.
    starts: Vec<usize>,
    ends: Vec<usize>,
    /// Times its function began from its start (a resumed run continues one).
    executions: usize,
    /// The write that made the ActionSet terminal.
    terminal: Option<usize>,
    /// A main phase found running when the deferPhase started.
    overlap: bool,
}

/// The driver against an in-memory ActionSet: what it remembers, and what was seen.
struct Sim<'a> {
    case: &'a Case,
    bp: BlueprintAction,
    timeouts: Timeouts,
    status: ActionSetStatus,
    record: Record,
    writes: usize,
    /// The step started with the last result (lost on a restart).
    memory: Option<Step>,
    seen: Seen,
}

impl Sim<'_> {
    fn facts(&self, started: Option<Step>) -> Facts<'_> {
        let deleting = self.case.deleted.is_some_and(|d| self.writes >= d);
        let ago = if self.case.long_ago {
            2 * TIMEOUT
        } else {
            TIMEOUT / 2
        };
        let ago = chrono::Duration::from_std(ago).unwrap_or_default();
        Facts {
            base_error: (self.case.failure == Failure::Launch).then_some("no profile"),
            deleting,
            deleted_at: deleting.then(|| now() - ago),
            started,
            ..facts(&self.bp, &self.timeouts)
        }
    }

    /// Records `t` (with the next step's start when `chain`), as the driver does; false
    /// when the controller restarts after this write.
    fn write(&mut self, t: Transition, chain: bool) -> bool {
        let before = self.status.actions[0].defer_phase.state;
        let ctx = Ctx {
            actionset: "as",
            now: NOW,
        };
        let f = chain.then(|| self.facts(None));
        let what = format!("{t:?}");
        let (mut status, mut rec) = (self.status.clone(), self.record.clone());
        let r = record(&mut status, &mut rec, 0, t, ctx, f.as_ref());
        // Another writer never interferes here: nothing may be stale.
        let (_, next) = r.unwrap_or_else(|e| panic!("{what}: {e} in {:?}", self.case));
        (self.status, self.record, self.memory) = (status, rec, next);
        self.writes += 1;
        let (st, seen) = (&self.status.actions[0], &mut self.seen);
        let after = st.defer_phase.state;
        if before != State::Running && after == State::Running {
            seen.starts.push(self.writes);
            seen.overlap |= st.phases.iter().any(|p| p.state == State::Running);
        }
        if before != after && matches!(after, State::Complete | State::Failed) {
            seen.ends.push(self.writes);
        }
        if self.status.state.is_terminal() && seen.terminal.is_none() {
            seen.terminal = Some(self.writes);
        }
        if self.case.restarts.contains(&self.writes) {
            self.memory = None;
            return false;
        }
        true
    }
}

/// Runs the case: [`decide`], run the step (its result as the case says), record it, with
/// restarts and the deletion after the case's writes.
fn simulate(case: &Case) -> Seen {
    let bp = blueprint(case.phases, case.func, case.defer_func);
    let (status, record) = started(&bp);
    let mut sim = Sim {
        case,
        bp,
        timeouts: Timeouts::default(),
        status,
        record,
        writes: 0,
        memory: None,
        seen: Seen::default(),
    };
    // The step to run was resumed after a restart: its run goes on, it does not begin.
    let mut resumed = false;
    for _ in 0..100 {
        let from_resume = std::mem::take(&mut resumed);
        let memory = sim.memory.take();
        let f = sim.facts(memory);
        let deleting = f.deleting;
        let plan = decide(&sim.status.actions[0], &sim.record.actions[0], &f);
        match plan {
            Plan::Done => return sim.seen,
            Plan::Missing(what) => panic!("{what} missing for {case:?}"),
            Plan::Record(t) => {
                sim.write(t, true);
            }
            Plan::Resume { how, step } => {
                assert_ne!(how, How::Rerun, "no phase may be re-run here");
                if sim.write(Transition::Resumed(how), false) {
                    (sim.memory, resumed) = (Some(step), true);
                }
            }
            Plan::RunPhase { phase, start } => {
                if start && !sim.write(Transition::PhaseStarted(phase), false) {
                    continue;
                }
                let t = if deleting {
                    Transition::PhaseFailed(phase, "cancelled".into())
                } else if case.failure == Failure::Phase(phase) {
                    Transition::PhaseFailed(phase, "boom".into())
                } else {
                    Transition::PhaseSucceeded(phase, Default::default())
                };
                sim.write(t, true);
            }
            Plan::RunDefer { start } => {
                if start && !sim.write(Transition::DeferStarted, false) {
                    continue;
                }
                sim.seen.executions += usize::from(!from_resume);
                let t = if case.failure == Failure::Defer {
                    Transition::DeferFailed("boom".into())
                } else {
                    Transition::DeferSucceeded(Default::default())
                };
                sim.write(t, true);
            }
            Plan::Finish { render } => {
                sim.write(
                    Transition::Finished(render.then(|| Ok(BTreeMap::new()))),
                    true,
                );
            }
        }
    }
    panic!("the action did not end: {case:?}");
}

fn case() -> impl Strategy<Value = Case> {
    let funcs = prop::sample::select(vec!["KubeTask", "KubeExec", "Wait"]);
    (
        0usize..4,
        funcs.clone(),
        funcs,
        0usize..8,
        prop::collection::vec(0usize..14, 0..3),
    )
        .prop_flat_map(|(phases, func, defer_func, failure, restarts)| {
            let failure = match failure {
                0 | 1 => Failure::None,
                2 => Failure::Launch,
                3 => Failure::Defer,
                n => Failure::Phase((n - 4) % phases.max(1)),
            };
            (
                Just(Case {
                    phases,
                    func,
                    defer_func,
                    failure,
                    restarts,
                    deleted: None,
                    long_ago: false,
                }),
                prop::option::of(0usize..14),
                any::<bool>(),
            )
        })
        .prop_map(|(case, deleted, long_ago)| Case {
            deleted,
            long_ago,
            ..case
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Whatever step fails, wherever the controller restarts and whenever the ActionSet is
    /// deleted, the deferPhase is recorded running once, after the main phases, runs at
    /// most once, ends once, and the ActionSet turns terminal only after it ended.
    #[test]
    fn the_defer_phase_runs_once_and_the_end_is_written_after_it(case in case()) {
        let seen = simulate(&case);
        prop_assert_eq!(seen.ends.len(), 1, "{:?} {:?}", case, seen);
        prop_assert!(!seen.overlap, "{:?} {:?}", case, seen);
        // Only a deletion past its timeout skips it; only a restart between its start and
        // its result keeps it from running to its result here (resumed or failed).
        let skipped = case.deleted.is_some() && case.long_ago;
        prop_assert!(seen.starts.len() == 1 || (skipped && seen.starts.is_empty()), "{:?} {:?}", case, seen);
        let cut = seen.starts.iter().any(|s| case.restarts.contains(s));
        prop_assert_eq!(seen.executions, usize::from(seen.starts.len() == 1 && !cut), "{:?} {:?}", case, seen);
        let terminal = seen.terminal.unwrap_or_default();
        prop_assert!(seen.ends[0] < terminal, "{:?} {:?}", case, seen);
    }
}
