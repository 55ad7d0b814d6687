//! An ActionSet that restores from a complete run: Kanister's `ChildActionSet`
//! (`pkg/kanctl/actionset.go`, what `kanctl create actionset --from` makes). `ctl create
//! --from` and the scheduler's restore verification both build it here.
//!
//! Each action of the run gives one action with the run's Blueprint, object, Secrets,
//! ConfigMaps and Profile, its output artifacts as input artifacts and its options; the
//! [`Overrides`] replace each (options are merged), and objects give one action per object.

use std::collections::BTreeMap;
use std::fmt;

use super::{ActionSet, ActionSetSpec, ActionSpec, ObjectReference, State};

/// What replaces the run's own values (empty: the run's).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    pub action: Option<String>,
    pub blueprint: Option<String>,
    pub objects: Vec<ObjectReference>,
    pub profile: Option<ObjectReference>,
    pub options: BTreeMap<String, String>,
    pub secrets: BTreeMap<String, ObjectReference>,
    pub config_maps: BTreeMap<String, ObjectReference>,
}

/// The run is not complete: it has no output artifacts to restore from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotComplete {
    pub name: String,
    /// Its state, `not started` when it has none.
    pub state: String,
}

impl fmt::Display for NotComplete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ActionSet {} is {}, not complete: only a complete run has artifacts to restore from",
            self.name, self.state
        )
    }
}

/// The spec of an ActionSet restoring from `parent`.
pub fn child_spec(parent: &ActionSet, r: &Overrides) -> Result<ActionSetSpec, NotComplete> {
    let name = parent.metadata.name.as_deref().unwrap_or_default();
    let status = parent
        .status
        .as_ref()
        .filter(|s| s.state == State::Complete);
    let Some(status) = status else {
        let state = parent.state().map(|s| s.as_str()).unwrap_or("");
        return Err(NotComplete {
            name: name.to_string(),
            state: if state.is_empty() {
                "not started"
            } else {
                state
            }
            .to_string(),
        });
    };
    let parent_specs = parent
        .spec
        .as_ref()
        .map(|s| s.actions.as_slice())
        .unwrap_or_default();
    let mut actions = Vec::new();
    for (i, pa) in status.actions.iter().enumerate() {
        // Kanister pairs status and spec actions by position.
        let ps = parent_specs.get(i).cloned().unwrap_or_default();
        let mut options = ps.options.clone();
        options.extend(r.options.clone());
        let a = ActionSpec {
            name: r.action.clone().unwrap_or_else(|| ps.name.clone()),
            blueprint: r.blueprint.clone().unwrap_or_else(|| pa.blueprint.clone()),
            object: pa.object.clone(),
            artifacts: pa.artifacts.clone(),
            secrets: if r.secrets.is_empty() {
                ps.secrets.clone()
            } else {
                r.secrets.clone()
            },
            config_maps: if r.config_maps.is_empty() {
                ps.config_maps.clone()
            } else {
                r.config_maps.clone()
            },
            profile: r.profile.clone().or(ps.profile.clone()),
            options,
            ..ActionSpec::default()
        };
        if r.objects.is_empty() {
            actions.push(a);
        } else {
            actions.extend(r.objects.iter().map(|o| ActionSpec {
                object: o.clone(),
                ..a.clone()
            }));
        }
    }
    Ok(ActionSetSpec {
        actions,
        ..ActionSetSpec::default()
    })
}
