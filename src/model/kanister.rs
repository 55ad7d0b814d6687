//! Blueprint, ActionSet and Profile as Kanister serializes them
//! (`pkg/apis/cr/v1alpha1/types.go`). Field names, optionality and the
//! lowercase state strings are kept exactly; `omitempty` in Go becomes
//! `skip_serializing_if` here, and Go fields without it are always written.

use std::collections::BTreeMap;

use kube::core::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::resource::kanister_resource;

pub const GROUP: &str = "cr.kanister.io";
pub const VERSION: &str = "v1alpha1";
pub const API_VERSION: &str = "cr.kanister.io/v1alpha1";

/// Kanister's `ObjectReference` (only `namespace` is `omitempty`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectReference {
    pub api_version: String,
    pub group: String,
    pub resource: String,
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// An artifact: key/value pairs and/or a kopia snapshot, values may be templates.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Artifact {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub key_value: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kopia_snapshot: String,
    /// Fields this model does not know (newer Kanister, other tools), kept
    /// so that writing the object back does not drop them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

// ---------------------------------------------------------------- Blueprint

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Blueprint {
    #[serde(default = "Blueprint::api_version")]
    pub api_version: String,
    #[serde(default = "Blueprint::kind")]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub actions: BTreeMap<String, BlueprintAction>,
}
kanister_resource!(Blueprint, "Blueprint", "blueprints");

impl Blueprint {
    fn api_version() -> String {
        API_VERSION.into()
    }
    fn kind() -> String {
        "Blueprint".into()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BlueprintAction {
    pub name: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config_map_names: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secret_names: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub input_artifact_names: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub output_artifacts: BTreeMap<String, Artifact>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<BlueprintPhase>,
    /// One optional phase that always runs after `phases` (never a list).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defer_phase: Option<BlueprintPhase>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BlueprintPhase {
    pub func: String,
    pub name: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub objects: BTreeMap<String, ObjectReference>,
    pub args: Option<Map<String, Value>>,
}

// ---------------------------------------------------------------- ActionSet

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionSet {
    #[serde(default = "ActionSet::api_version")]
    pub api_version: String,
    #[serde(default = "ActionSet::kind")]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ActionSetSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ActionSetStatus>,
}
kanister_resource!(ActionSet, "ActionSet", "actionsets");

impl ActionSet {
    fn api_version() -> String {
        API_VERSION.into()
    }
    fn kind() -> String {
        "ActionSet".into()
    }

    /// A new ActionSet with the given metadata and spec and no status.
    pub fn new(metadata: ObjectMeta, spec: ActionSetSpec) -> Self {
        ActionSet {
            api_version: Self::api_version(),
            kind: Self::kind(),
            metadata,
            spec: Some(spec),
            status: None,
        }
    }

    /// The ActionSet's state, `None` before the controller initialised it.
    pub fn state(&self) -> Option<State> {
        self.status.as_ref().map(|s| s.state)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ActionSetSpec {
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "exact")]
    pub actions: Vec<ActionSpec>,
    /// Fields this model does not know (newer Kanister, other tools), kept
    /// so that writing the object back does not drop them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A list as read, without spare places: serde grows a list of unknown length to four places
/// at least, and an action (most of an ActionSet's or a schedule's size) usually comes alone.
fn exact<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    let mut v = Vec::<T>::deserialize(d)?;
    v.shrink_to_fit();
    Ok(v)
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ActionSpec {
    pub name: String,
    pub object: ObjectReference,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub blueprint: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub artifacts: BTreeMap<String, Artifact>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub config_maps: BTreeMap<String, ObjectReference>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub secrets: BTreeMap<String, ObjectReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<ObjectReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_override: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, String>,
    pub preferred_version: String,
    pub pod_labels: Option<BTreeMap<String, String>>,
    pub pod_annotations: Option<BTreeMap<String, String>>,
    /// Released Kanister's Kopia RepositoryServer reference (gone from Kanister HEAD; this
    /// executor does not use it): kept so that status writes and ActionSchedule runs do not
    /// drop it from ActionSets written for released Kanister.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository_server: Option<ObjectReference>,
    /// Fields this model does not know (newer Kanister, other tools), kept
    /// so that writing the object back does not drop them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The state of an ActionSet, an action's phase or a deferPhase. Kanister
/// writes `""` for a deferPhase that does not exist, hence `Unset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    #[serde(rename = "")]
    #[default]
    Unset,
    Pending,
    Running,
    Failed,
    Complete,
}

impl State {
    /// `failed` or `complete`: nothing will run any more.
    pub fn is_terminal(self) -> bool {
        matches!(self, State::Failed | State::Complete)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            State::Unset => "",
            State::Pending => "pending",
            State::Running => "running",
            State::Failed => "failed",
            State::Complete => "complete",
        }
    }
}

impl<'de> Deserialize<'de> for State {
    /// Kanister's strings; anything else is an error that names the value and
    /// the states there are (serde's own message lists `""` as a variant).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        State::parse(&s).ok_or_else(|| serde::de::Error::custom(State::unknown_message(&s)))
    }
}

impl State {
    /// The state a Kanister state string names.
    pub fn parse(s: &str) -> Option<State> {
        [
            State::Unset,
            State::Pending,
            State::Running,
            State::Failed,
            State::Complete,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }

    fn unknown_message(s: &str) -> String {
        format!("{s:?} is not an ActionSet state (pending, running, failed, complete)")
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ActionSetStatus {
    pub state: State,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "exact")]
    pub actions: Vec<ActionStatus>,
    pub error: StatusError,
    pub progress: ActionProgress,
    /// Fields this model does not know (newer Kanister, other tools), kept
    /// so that writing the object back does not drop them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StatusError {
    pub message: String,
    /// Fields this model does not know (newer Kanister, other tools), kept
    /// so that writing the object back does not drop them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ActionProgress {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub running_phase: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub percent_completed: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// Fields this model does not know (newer Kanister, other tools), kept
    /// so that writing the object back does not drop them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ActionStatus {
    pub name: String,
    pub object: ObjectReference,
    pub blueprint: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub artifacts: BTreeMap<String, Artifact>,
    /// Always present, as in Kanister (`{name: "", state: ""}` when the
    /// action has no deferPhase).
    pub defer_phase: Phase,
    /// Fields this model does not know (newer Kanister, other tools), kept
    /// so that writing the object back does not drop them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A phase's status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Phase {
    pub name: String,
    pub state: State,
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub output: Map<String, Value>,
    pub progress: PhaseProgress,
    /// Fields this model does not know (newer Kanister, other tools), kept
    /// so that writing the object back does not drop them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PhaseProgress {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub progress_percent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// Fields this model does not know (newer Kanister, other tools), kept
    /// so that writing the object back does not drop them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

// ---------------------------------------------------------------- Profile

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    #[serde(default = "Profile::api_version")]
    pub api_version: String,
    #[serde(default = "Profile::kind")]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub location: Location,
    #[serde(default)]
    pub credential: Credential,
    #[serde(default, rename = "skipSSLVerify")]
    pub skip_ssl_verify: bool,
}
kanister_resource!(Profile, "Profile", "profiles");

impl Profile {
    fn api_version() -> String {
        API_VERSION.into()
    }
    fn kind() -> String {
        "Profile".into()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Location {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub bucket: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub endpoint: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub region: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Credential {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_pair: Option<KeyPair>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectReference>,
    /// Kept as JSON: only carried through to templates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kopia_server_secret: Option<Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KeyPair {
    pub id_field: String,
    pub secret_field: String,
    pub secret: ObjectReference,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn actions_are_read_without_spare_places() {
        let a: ActionSet = serde_json::from_value(json!({
            "metadata": {"name": "a"},
            "spec": {"actions": [{"name": "backup", "blueprint": "bp"}]},
            "status": {"state": "running", "actions": [{"name": "backup"}]},
        }))
        .unwrap();
        let spec = a.spec.unwrap();
        assert_eq!((spec.actions.len(), spec.actions.capacity()), (1, 1));
        assert_eq!(spec.actions[0].blueprint, "bp");
        let status = a.status.unwrap();
        assert_eq!((status.actions.len(), status.actions.capacity()), (1, 1));
        // Absent: none, as before.
        let b: ActionSetSpec = serde_json::from_value(json!({})).unwrap();
        assert!(b.actions.is_empty());
    }

    #[test]
    fn released_kanisters_repository_server_reference_survives_a_round_trip() {
        let spec = json!({"actions": [{"name": "backup", "blueprint": "bp",
            "object": {"kind": "Deployment", "name": "app", "namespace": "ns"},
            "repositoryServer": {"name": "kopia-repo-server", "namespace": "kanister"}}]});
        let typed: ActionSetSpec = serde_json::from_value(spec.clone()).unwrap();
        let back = serde_json::to_value(&typed).unwrap();
        let rs = &back["actions"][0]["repositoryServer"];
        assert_eq!(
            (rs["name"].as_str(), rs["namespace"].as_str()),
            (Some("kopia-repo-server"), Some("kanister")),
            "{back}"
        );
        let plain: ActionSetSpec =
            serde_json::from_value(json!({"actions": [{"name": "b"}]})).unwrap();
        assert!(
            serde_json::to_value(&plain).unwrap()["actions"][0]
                .get("repositoryServer")
                .is_none()
        );
    }

    #[test]
    fn action_status_keeps_kanister_shapes() {
        let status = ActionSetStatus {
            state: State::Running,
            actions: vec![ActionStatus {
                name: "backup".into(),
                phases: vec![Phase {
                    name: "one".into(),
                    state: State::Pending,
                    ..Phase::default()
                }],
                ..ActionStatus::default()
            }],
            ..ActionSetStatus::default()
        };
        let v = serde_json::to_value(&status).unwrap();
        assert_eq!(v["state"], "running");
        assert_eq!(v["error"], json!({"message": ""}));
        assert_eq!(v["progress"], json!({}));
        // deferPhase is always present, with an empty state when absent.
        assert_eq!(v["actions"][0]["deferPhase"]["state"], "");
        assert_eq!(v["actions"][0]["phases"][0]["state"], "pending");
    }

    #[test]
    fn blueprint_reads_defer_phase_object() {
        let bp: Blueprint = serde_json::from_value(json!({
            "apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint",
            "metadata": {"name": "b"},
            "actions": {"backup": {
                "phases": [{"func": "KubeTask", "name": "p", "args": {"image": "x", "command": ["a"]}}],
                "deferPhase": {"func": "KubeOps", "name": "cleanup", "args": {"operation": "delete"}}
            }}
        }))
        .unwrap();
        let action = &bp.actions["backup"];
        assert_eq!(action.defer_phase.as_ref().unwrap().name, "cleanup");
        assert_eq!(action.phases[0].func, "KubeTask");
    }

    #[test]
    fn fields_the_model_lacks_survive_a_round_trip() {
        // Kanister always writes an ObjectReference's fields (no omitempty).
        let obj = json!({"apiVersion": "", "group": "", "resource": "", "kind": "Deployment", "name": "app"});
        let raw = json!({
            "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
            "metadata": {"name": "a"},
            "spec": {
                "repositoryServer": {"name": "rs", "namespace": "kanister"},
                "actions": [{"name": "backup", "blueprint": "bp",
                    "object": obj,
                    "repositoryServer": {"apiVersion": "", "group": "", "resource": "", "kind": "", "name": "rs2"},
                    "kopiaServer": {"future": 1},
                    "artifacts": {"in": {"keyValue": {"k": "v"}, "future": true}},
                    "preferredVersion": "v1.0.0", "podLabels": null, "podAnnotations": null}],
            },
            "status": {
                "state": "running",
                "error": {"message": "", "code": 3},
                "progress": {"runningPhase": "one", "sizeUploadedB": 10, "estimatedUploadSizeB": 20},
                "actions": [{"name": "backup", "blueprint": "bp",
                    "object": obj,
                    "phases": [{"name": "one", "state": "running",
                        "progress": {"progressPercent": "5", "sizeDownloadedB": 7, "estimatedTimeSeconds": 9}}],
                    "artifacts": {"out": {"keyValue": {"k": "v"}, "kopiaSnapshot": "s", "size": 1}},
                    "deferPhase": {"name": "", "state": "", "progress": {}, "note": "x"},
                    "startedBy": "someone"}],
                "newField": {"a": [1, 2]},
            },
        });
        let a: ActionSet = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(a.state(), Some(State::Running));
        assert_eq!(serde_json::to_value(&a).unwrap(), raw);
    }

    #[test]
    fn unknown_state_is_an_error_not_a_panic() {
        let err = serde_json::from_value::<ActionSetStatus>(json!({"state": "bogus"})).unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
    }
}
