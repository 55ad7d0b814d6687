//! `ctl watch ACTIONSET` (and `--watch` of `create` and `run-now`): one line
//! per change of the ActionSet's state, its phases and deferPhases, until it
//! is `complete` (exit 0) or `failed` (exit 1, with the error).

use std::collections::HashSet;
use std::io::Write;
use std::time::Duration;

use chrono::Utc;
use clap::Args;
use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};

use super::connect::Conn;
use super::output::{self, Format};
use super::{CtlError, Done};
use crate::model::{ActionSet, State};

#[derive(Clone, Debug, Args)]
pub struct WatchArgs {
    /// The ActionSet.
    pub name: String,
}

/// What the ActionSet shows now, one fact per line: its state, and each
/// phase's and deferPhase's state.
pub fn facts(a: &ActionSet) -> Vec<String> {
    let mut out = vec![format!("actionset {}", super::cells::state_text(a))];
    for act in a.status.iter().flat_map(|s| s.actions.iter()) {
        for p in &act.phases {
            if p.state != State::Pending && p.state != State::Unset {
                out.push(format!("{}/{} {}", act.name, p.name, p.state));
            }
        }
        let d = &act.defer_phase;
        if !d.name.is_empty() && d.state != State::Pending && d.state != State::Unset {
            out.push(format!("{}/{} (deferPhase) {}", act.name, d.name, d.state));
        }
    }
    out
}

/// The facts of `a` not printed yet, in order; remembers them in `seen`.
pub fn new_facts(a: &ActionSet, seen: &mut HashSet<String>) -> Vec<String> {
    facts(a)
        .into_iter()
        .filter(|f| seen.insert(f.clone()))
        .collect()
}

/// The last line: how it ended.
pub fn summary(a: &ActionSet) -> String {
    let name = a.metadata.name.as_deref().unwrap_or_default();
    let took = super::cells::duration_seconds(a, Utc::now())
        .map(|s| format!(" in {}", output::duration(s)))
        .unwrap_or_default();
    match a.state() {
        Some(State::Complete) => format!("actionset {name} complete{took}"),
        _ => {
            let err = a
                .status
                .as_ref()
                .map(|s| s.error.message.as_str())
                .unwrap_or_default();
            format!("actionset {name} failed{took}: {err}")
        }
    }
}

pub async fn run(conn: &Conn, args: &WatchArgs, format: Format) -> Result<Done, CtlError> {
    follow(conn, &args.name, format, None).await
}

/// Follows ActionSet `name` until it ends. `wait_created`: how long it may
/// take to appear (a run the scheduler is about to create); `None`: it must
/// exist now.
pub async fn follow(
    conn: &Conn,
    name: &str,
    format: Format,
    wait_created: Option<Duration>,
) -> Result<Done, CtlError> {
    let ns = &conn.namespace;
    let api: Api<ActionSet> = Api::namespaced(conn.client.clone(), ns);
    let exists = api
        .get_opt(name)
        .await
        .map_err(CtlError::kube(format!("cannot read ActionSet {ns}/{name}")))?;
    if exists.is_none() && wait_created.is_none() {
        return Err(CtlError::Input(format!(
            "no ActionSet {name} in namespace {ns}"
        )));
    }
    // Progress goes where it does not mix with -o json/yaml.
    let progress = |line: &str| {
        let stamped = format!("{}  {line}\n", Utc::now().format("%H:%M:%S"));
        let _ = match format {
            Format::Table => std::io::stdout().lock().write_all(stamped.as_bytes()),
            _ => std::io::stderr().lock().write_all(stamped.as_bytes()),
        };
    };
    let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut stream = watcher::watcher(api, cfg).default_backoff().boxed();
    let mut seen = HashSet::new();
    let appear_by = wait_created.map(|d| tokio::time::Instant::now() + d);
    let mut appeared = exists.is_some();
    let mut last_error: Option<String> = None;
    loop {
        let next = match (appeared, appear_by) {
            (false, Some(at)) => match tokio::time::timeout_at(at, stream.next()).await {
                Ok(n) => n,
                Err(_) => {
                    return Err(CtlError::Input(format!(
                        "ActionSet {ns}/{name} did not appear within {}s; is the controller \
                         running with its scheduler?",
                        wait_created.unwrap_or_default().as_secs()
                    )));
                }
            },
            _ => stream.next().await,
        };
        let Some(event) = next else {
            return Err(CtlError::Input(format!(
                "the watch of ActionSet {ns}/{name} ended"
            )));
        };
        let a = match event {
            Ok(watcher::Event::Apply(a) | watcher::Event::InitApply(a)) => a,
            Ok(watcher::Event::Delete(_)) => {
                progress(&format!("actionset {name} was deleted before it ended"));
                return Ok(Done::Failed);
            }
            Ok(_) => continue,
            Err(e) => {
                // The watcher retries with backoff; say so once per distinct error.
                let text = e.to_string();
                if last_error.as_ref() != Some(&text) {
                    eprintln!("warning: watching ActionSet {ns}/{name}: {text} (retrying)");
                    last_error = Some(text);
                }
                continue;
            }
        };
        appeared = true;
        for f in new_facts(&a, &mut seen) {
            progress(&f);
        }
        if a.state().is_some_and(State::is_terminal) {
            let ok = a.state() == Some(State::Complete);
            match format {
                Format::Table => output::print(&format!("{}\n", summary(&a)))?,
                f => {
                    eprintln!("{}", summary(&a));
                    let d = super::describe::describe(&a, vec![], Utc::now());
                    output::print(&output::structured(f, &d)?)?;
                }
            }
            return Ok(if ok { Done::Ok } else { Done::Failed });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_change_is_printed_once_in_order() {
        let at = |phase1: &str, defer: &str, state: &str| -> ActionSet {
            serde_json::from_value(json!({"metadata": {"name": "x"},
                "status": {"state": state, "actions": [{"name": "backup",
                    "phases": [{"name": "dump", "state": phase1}, {"name": "up", "state": "pending"}],
                    "deferPhase": {"name": "scale", "state": defer}}]}}))
            .unwrap()
        };
        let mut seen = HashSet::new();
        assert_eq!(
            new_facts(&at("running", "pending", "running"), &mut seen),
            vec!["actionset running", "backup/dump running"]
        );
        assert!(new_facts(&at("running", "pending", "running"), &mut seen).is_empty());
        assert_eq!(
            new_facts(&at("failed", "complete", "failed"), &mut seen),
            vec![
                "actionset failed",
                "backup/dump failed",
                "backup/scale (deferPhase) complete"
            ]
        );
    }
}
