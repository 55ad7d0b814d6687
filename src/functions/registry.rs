//! The one registry of Kanister functions (as Kanister's `kanister.Register`): for each, its
//! name, the arguments it requires and accepts with the JSON type each takes, which Kanister
//! releases register and document it, how this executor runs it, and what a restarted
//! controller does with it. `validate` and the webhook read it, the executor runs it
//! ([`super::execute`]) after checking the phase's arguments against it
//! ([`check_args`]), and the restart logic asks it ([`after_restart`]).
//!
//! It holds the 28 functions of Kanister HEAD `pkg/function`, plus the three
//! `*UsingKopiaServer` functions that released Kanister (0.9x to 0.116) registers and
//! documents, so Blueprints written for it are admitted (this executor does not run them:
//! Kanister's Kopia repository server is gone from HEAD and not provided here; `validate`
//! warns). [`NEVER_RELEASED`] lists the three other `*UsingKopiaServer` functions that were
//! only ever proposed.

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use super::{
    backup_data, backup_data_all, backup_data_stats, check_repository, copy_volume_data,
    create_csi_snapshot, create_rds_snapshot, csi_snapshot_static, delete_csi_snapshot,
    delete_csi_snapshot_content, delete_data, delete_data_all, delete_rds_snapshot,
    export_rds_snapshot_location, kube_exec, kube_exec_all, kube_ops, kube_task, location_delete,
    multi_container_run, prepare_data, restore_csi_snapshot, restore_data, restore_data_all,
    restore_rds_snapshot, scale_workload, wait, wait_v2,
};
use crate::phase_output::Output;

/// The JSON type a function argument takes after Kanister's weak decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgType {
    /// A string; numbers and booleans are accepted (weak decoding: `true` is "1").
    Str,
    /// A list of strings, e.g. `command`; a single value is a one-element list and an empty map
    /// an empty list (weak decoding).
    StrList,
    /// An integer, or a string of decimal digits or that renders to one
    /// (`'{{ len .StatefulSet.Pods }}'`).
    Int,
    /// A boolean, Go's `ParseBool` strings (`true`, `1`, `T`, `FALSE`, ...), a number, or a
    /// template.
    Bool,
    /// A map of anything (`podOverride`, Go `map[string]interface{}`); a list of maps is their
    /// merge and an empty list an empty map (weak decoding).
    Map,
    /// A map of strings (`podLabels`, `volumes`, Go `map[string]string`), decoded as [`Map`]
    /// with each value decoded as [`Str`].
    StrMap,
    /// A map decoded into a Go struct (`conditions`, `objectReference`): no list is accepted.
    Struct,
    /// Anything: the function decodes it itself.
    Any,
}

impl ArgType {
    pub fn describe(self) -> &'static str {
        match self {
            ArgType::Str => "a string",
            ArgType::StrList => "a list of strings (or one string)",
            ArgType::Int => {
                "an integer (or a string of decimal digits, or a template that renders to one)"
            }
            ArgType::Bool => {
                "a boolean (true/false, or a string Go's strconv.ParseBool reads: 1, t, T, TRUE, 0, f, F, FALSE)"
            }
            ArgType::Map => "a map (or a list of maps, merged)",
            ArgType::StrMap => "a map of strings (or a list of such maps, merged)",
            ArgType::Struct => "a map",
            ArgType::Any => "any value",
        }
    }
}

/// Which Kanister releases register (and document) a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kanister {
    /// Kanister HEAD `pkg/function` registers it.
    Head,
    /// Released Kanister (0.9x to 0.116) registers and documents it; HEAD removed it.
    ReleasedOnly,
}

/// How the executor runs a function: its phase's rendered `args`, already checked against the
/// registry ([`run`]), and the template parameters (Wait and WaitV2 render their own
/// `objectReference` fields with them).
pub type Runner = for<'a> fn(
    &'a Context,
    &'a Args<'a>,
    &'a Value,
) -> BoxFuture<'a, Result<Output, FunctionError>>;

/// What happens to a function's phase found running after a controller restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// The work runs in a pod the phase created; the phase waits for that pod again.
    Reattach,
    /// The function drives a desired state or waits: running it again reaches the same state.
    Reenter,
    /// Running it again could do the work twice: the phase fails (unless the Blueprint allows
    /// one re-run).
    AtMostOnce,
}

pub struct Function {
    pub name: &'static str,
    /// Required arguments, in Kanister's declared order.
    pub required: &'static [(&'static str, ArgType)],
    pub optional: &'static [(&'static str, ArgType)],
    pub kanister: Kanister,
    /// `None`: this executor does not run it ([`Function::not_run_hint`] says why).
    pub runner: Option<Runner>,
    /// The restart behaviour, from the phase's unrendered `args`.
    pub restart: fn(Option<&Map<String, Value>>) -> Restart,
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Function")
            .field("name", &self.name)
            .field("required", &self.required)
            .field("optional", &self.optional)
            .field("kanister", &self.kanister)
            .field("runs", &self.runner.is_some())
            .finish()
    }
}

impl Function {
    /// The type of a supported argument, `None` when the function does not take it.
    pub fn arg(&self, name: &str) -> Option<ArgType> {
        self.required
            .iter()
            .chain(self.optional)
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
    }

    pub fn arg_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.required.iter().chain(self.optional).map(|(n, _)| *n)
    }

    /// Wait and WaitV2 render their own arguments, against the fetched object.
    pub fn renders_own_args(&self) -> bool {
        matches!(self.name, "Wait" | "WaitV2")
    }

    /// Does this executor run it?
    pub fn runs(&self) -> bool {
        self.runner.is_some()
    }

    /// Why a Kanister function this executor does not run is missing, for the phase error and
    /// `validate`'s warning ("" when the supported list says enough).
    pub fn not_run_hint(&self) -> &'static str {
        if self.name.ends_with("UsingKopiaServer") {
            ": it needs Kanister's Kopia RepositoryServer (an ActionSet `repositoryServer` and `.RepositoryServer` in templates), which this executor does not provide; use BackupData, RestoreData and DeleteData with a Profile"
        } else {
            ""
        }
    }
}

use ArgType::*;

const POD: [(&str, ArgType); 3] = [
    ("podOverride", Map),
    ("podAnnotations", StrMap),
    ("podLabels", StrMap),
];

/// A [`Runner`] for `module::run(ctx, args)`, or with `params` for `module::run(ctx, args, params)`.
macro_rules! run {
    ($f:path) => {{
        fn runner<'a>(
            ctx: &'a Context,
            args: &'a Args<'a>,
            _: &'a Value,
        ) -> BoxFuture<'a, Result<Output, FunctionError>> {
            Box::pin($f(ctx, args))
        }
        Some(runner as Runner)
    }};
    ($f:path, params) => {{
        fn runner<'a>(
            ctx: &'a Context,
            args: &'a Args<'a>,
            params: &'a Value,
        ) -> BoxFuture<'a, Result<Output, FunctionError>> {
            Box::pin($f(ctx, args, params))
        }
        Some(runner as Runner)
    }};
}

/// One entry: name, required and optional arguments (`+ POD`: the three pod arguments), which
/// Kanister registers it, its runner and its restart behaviour.
macro_rules! func {
    ($name:literal, [$($r:literal: $rt:ident),*], [$($o:literal: $ot:ident),*] $(+ $pod:ident)?,
     $kanister:ident, $runner:expr, $restart:expr) => {
        Function {
            name: $name,
            required: &[$(($r, $rt)),*],
            optional: &[$(($o, $ot),)* $($pod[0], $pod[1], $pod[2])?],
            kanister: Kanister::$kanister,
            runner: $runner,
            restart: $restart,
        }
    };
}

fn reattach(_: Option<&Map<String, Value>>) -> Restart {
    Restart::Reattach
}

fn reenter(_: Option<&Map<String, Value>>) -> Restart {
    Restart::Reenter
}

fn at_most_once(_: Option<&Map<String, Value>>) -> Restart {
    Restart::AtMostOnce
}

/// A KubeOps patch is entered again; create and delete run at most once.
fn kube_ops_restart(args: Option<&Map<String, Value>>) -> Restart {
    if kube_ops::is_patch(args) {
        Restart::Reenter
    } else {
        Restart::AtMostOnce
    }
}

/// Every function: those this executor runs first, in the order messages list them, then the
/// ones it does not run.
pub static FUNCTIONS: &[Function] = &[
    func!("KubeTask", ["image": Str, "command": StrList], ["namespace": Str] + POD,
          Head, run!(kube_task::run), reattach),
    func!("KubeExec", ["namespace": Str, "pod": Str, "command": StrList], ["container": Str],
          Head, run!(kube_exec::run), at_most_once),
    func!("KubeExecAll", ["namespace": Str, "pods": Str, "containers": Str, "command": StrList], [],
          Head, run!(kube_exec_all::run), at_most_once),
    func!("ScaleWorkload", ["replicas": Int], ["namespace": Str, "name": Str, "kind": Str, "waitForReady": Bool],
          Head, run!(scale_workload::run), reenter),
    func!("KubeOps", ["operation": Str], ["spec": Str, "namespace": Str, "objectReference": Struct],
          Head, run!(kube_ops::run), kube_ops_restart),
    func!("Wait", ["timeout": Str, "conditions": Struct], [],
          Head, run!(wait::run, params), reenter),
    func!("WaitV2", ["timeout": Str, "conditions": Struct], [],
          Head, run!(wait_v2::run, params), reenter),
    func!("MultiContainerRun", ["backgroundImage": Str, "backgroundCommand": StrList, "outputImage": Str, "outputCommand": StrList],
          ["namespace": Str, "initImage": Str, "initCommand": StrList, "sharedVolumeMedium": Str,
           "sharedVolumeSizeLimit": Str, "sharedVolumeDir": Str] + POD,
          Head, run!(multi_container_run::run), reattach),
    func!("PrepareData", ["namespace": Str, "image": Str, "command": StrList],
          ["volumes": StrMap, "serviceaccount": Str, "failOnError": Bool] + POD,
          Head, run!(prepare_data::run, params), reattach),
    func!("CreateCSISnapshot", ["pvc": Str, "namespace": Str, "snapshotClass": Str], ["name": Str, "labels": StrMap],
          Head, run!(create_csi_snapshot::run), reenter),
    func!("RestoreCSISnapshot", ["name": Str, "pvc": Str, "namespace": Str, "storageClass": Str, "restoreSize": Str],
          ["accessModes": Any, "volumeMode": Str, "labels": StrMap],
          Head, run!(restore_csi_snapshot::run), reenter),
    func!("DeleteCSISnapshot", ["name": Str, "namespace": Str], [],
          Head, run!(delete_csi_snapshot::run), reenter),
    func!("CreateCSISnapshotStatic", ["name": Str, "namespace": Str, "driver": Str, "snapshotHandle": Str, "snapshotClass": Str], [],
          Head, run!(csi_snapshot_static::run), at_most_once),
    func!("DeleteCSISnapshotContent", ["name": Str], [],
          Head, run!(delete_csi_snapshot_content::run), reenter),
    func!("BackupData", ["namespace": Str, "pod": Str, "container": Str, "includePath": Str, "backupArtifactPrefix": Str],
          ["encryptionKey": Str, "insecureTLS": Bool],
          Head, run!(backup_data::run, params), at_most_once),
    func!("RestoreData", ["namespace": Str, "image": Str, "backupArtifactPrefix": Str],
          ["restorePath": Str, "encryptionKey": Str, "pod": Str, "volumes": StrMap, "backupTag": Str,
           "backupIdentifier": Str, "backupPath": Str, "insecureTLS": Bool] + POD,
          Head, run!(restore_data::run, params), at_most_once),
    func!("DeleteData", ["namespace": Str, "backupArtifactPrefix": Str],
          ["image": Str, "backupID": Str, "backupTag": Str, "encryptionKey": Str, "reclaimSpace": Bool, "insecureTLS": Bool] + POD,
          Head, run!(delete_data::run, params), at_most_once),
    func!("CopyVolumeData", ["namespace": Str, "volume": Str, "dataArtifactPrefix": Str],
          ["image": Str, "encryptionKey": Str, "mountPath": Str, "insecureTLS": Bool] + POD,
          Head, run!(copy_volume_data::run, params), at_most_once),
    func!("LocationDelete", ["artifact": Str], [],
          Head, run!(location_delete::run, params), at_most_once),
    func!("BackupDataAll", ["namespace": Str, "container": Str, "includePath": Str, "backupArtifactPrefix": Str],
          ["pods": Str, "encryptionKey": Str, "insecureTLS": Bool],
          Head, run!(backup_data_all::run, params), at_most_once),
    func!("RestoreDataAll", ["namespace": Str, "image": Str, "backupArtifactPrefix": Str, "backupInfo": Str],
          ["restorePath": Str, "encryptionKey": Str, "pods": Str, "insecureTLS": Bool] + POD,
          Head, run!(restore_data_all::run, params), at_most_once),
    func!("DeleteDataAll", ["namespace": Str, "backupArtifactPrefix": Str, "backupInfo": Str],
          ["image": Str, "encryptionKey": Str, "reclaimSpace": Bool, "insecureTLS": Bool] + POD,
          Head, run!(delete_data_all::run, params), at_most_once),
    func!("BackupDataStats", ["namespace": Str, "backupArtifactPrefix": Str, "backupID": Str],
          ["image": Str, "statsMode": Str, "encryptionKey": Str] + POD,
          Head, run!(backup_data_stats::run, params), at_most_once),
    func!("CheckRepository", ["backupArtifactPrefix": Str],
          ["image": Str, "encryptionKey": Str, "insecureTLS": Bool] + POD,
          Head, run!(check_repository::run, params), at_most_once),
    func!("CreateRDSSnapshot", ["instanceID": Str],
          ["dbEngine": Str, "credentialsSource": Str, "credentialsSecret": Str, "region": Str],
          Head, run!(create_rds_snapshot::run, params), at_most_once),
    func!("DeleteRDSSnapshot", ["snapshotID": Str],
          ["dbEngine": Str, "credentialsSource": Str, "credentialsSecret": Str, "region": Str],
          Head, run!(delete_rds_snapshot::run, params), reenter),
    func!("ExportRDSSnapshotToLocation", ["namespace": Str, "instanceID": Str, "snapshotID": Str, "dbEngine": Str],
          ["username": Str, "password": Str, "backupArtifactPrefix": Str, "databases": Any, "securityGroupID": Any,
           "dbSubnetGroup": Str, "podAnnotations": StrMap, "podLabels": StrMap, "credentialsSource": Str,
           "credentialsSecret": Str, "region": Str],
          Head, run!(export_rds_snapshot_location::run, params), at_most_once),
    func!("RestoreRDSSnapshot", ["instanceID": Str],
          ["snapshotID": Str, "dbEngine": Str, "backupArtifactPrefix": Str, "backupID": Str, "username": Str,
           "password": Str, "namespace": Str, "securityGroupID": Any, "dbSubnetGroup": Str, "podAnnotations": StrMap,
           "podLabels": StrMap, "credentialsSource": Str, "credentialsSecret": Str, "region": Str],
          Head, run!(restore_rds_snapshot::run, params), at_most_once),
    // Not run here: the Kopia ones need Kanister's repository server.
    func!("BackupDataUsingKopiaServer", ["container": Str, "includePath": Str, "namespace": Str, "pod": Str],
          ["snapshotTags": Str, "repositoryServerUserHostname": Str],
          ReleasedOnly, None, at_most_once),
    func!("DeleteDataUsingKopiaServer", ["backupID": Str, "namespace": Str, "image": Str],
          ["repositoryServerUserHostname": Str, "podAnnotations": StrMap, "podLabels": StrMap],
          ReleasedOnly, None, at_most_once),
    func!("RestoreDataUsingKopiaServer", ["backupIdentifier": Str, "namespace": Str, "restorePath": Str, "image": Str],
          ["pod": Str, "volumes": StrMap, "podOverride": Map, "repositoryServerUserHostname": Str,
           "podAnnotations": StrMap, "podLabels": StrMap],
          ReleasedOnly, None, at_most_once),
];

/// `*UsingKopiaServer` functions that were proposed for Kanister but that no release registers
/// (their pull requests were closed or left open, unmerged), with the pull request: they stay
/// unknown, and the unknown-function error says why.
pub const NEVER_RELEASED: &[(&str, &str)] = &[
    ("BackupDataAllUsingKopiaServer", "kanisterio/kanister#1968"),
    (
        "BackupDataStatsUsingKopiaServer",
        "kanisterio/kanister#1972",
    ),
    ("CopyVolumeDataUsingKopiaServer", "kanisterio/kanister#2143"),
];

/// Looks a function up by its exact (case-sensitive) name, as Kanister does.
pub fn function(name: &str) -> Option<&'static Function> {
    FUNCTIONS.iter().find(|f| f.name == name)
}

/// The functions this executor runs, in the order messages list them.
pub fn supported() -> impl Iterator<Item = &'static str> {
    FUNCTIONS.iter().filter(|f| f.runs()).map(|f| f.name)
}

/// The restart behaviour of function `func` with its (unrendered) `args`; a name the registry
/// does not know runs at most once.
pub fn after_restart(func: &str, args: Option<&Map<String, Value>>) -> Restart {
    function(func).map_or(Restart::AtMostOnce, |f| (f.restart)(args))
}

/// The error for a function this executor does not run.
pub fn unsupported(f: &Function) -> FunctionError {
    FunctionError::Unsupported {
        function: f.name,
        hint: f.not_run_hint(),
        supported: supported().collect::<Vec<_>>().join(", "),
    }
}

/// Kanister's `Validate`: every argument must be one the function takes.
pub fn check_args(a: &Args<'_>) -> Result<(), FunctionError> {
    let Some(f) = function(a.function) else {
        return Err(FunctionError::Unknown(a.function.to_string()));
    };
    for k in a.args.keys() {
        if f.arg(k).is_none() {
            return Err(FunctionError::arg(
                a.function,
                k,
                format!(
                    "argument {k} is not supported; {} accepts: {}",
                    a.function,
                    f.arg_names().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Runs `name` with its rendered `args`: unsupported Kanister functions, unknown names and
/// arguments the function does not take fail before it runs.
pub async fn run(
    ctx: &Context,
    name: &str,
    args: &Map<String, Value>,
    params: &Value,
) -> Result<Output, FunctionError> {
    let f = function(name).ok_or_else(|| FunctionError::Unknown(name.to_string()))?;
    let Some(runner) = f.runner else {
        return Err(unsupported(f));
    };
    let a = Args::new(f.name, args);
    check_args(&a)?;
    runner(ctx, &a, params).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn has_the_31_kanister_functions_unique_runnable_first() {
        assert_eq!(FUNCTIONS.len(), 31);
        let mut names: Vec<&str> = FUNCTIONS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 31);
        let first_not_run = FUNCTIONS.iter().position(|f| !f.runs()).unwrap();
        assert!(FUNCTIONS[first_not_run..].iter().all(|f| !f.runs()));
        assert_eq!(supported().count(), 28);
        assert_eq!(supported().next(), Some("KubeTask"));
        let released_only: Vec<&str> = FUNCTIONS
            .iter()
            .filter(|f| f.kanister == Kanister::ReleasedOnly)
            .map(|f| f.name)
            .collect();
        assert_eq!(
            released_only,
            [
                "BackupDataUsingKopiaServer",
                "DeleteDataUsingKopiaServer",
                "RestoreDataUsingKopiaServer"
            ]
        );
    }

    #[test]
    fn pod_functions_take_pod_args() {
        let kt = function("KubeTask").unwrap();
        assert_eq!(kt.arg("command"), Some(StrList));
        assert_eq!(kt.arg("podOverride"), Some(Map));
        assert_eq!(kt.arg("pod"), None);
        assert!(function("kubetask").is_none());
        assert!(function("WaitV2").unwrap().renders_own_args());
    }

    #[test]
    fn functions_by_restart_behaviour() {
        for f in ["KubeTask", "MultiContainerRun", "PrepareData"] {
            assert_eq!(after_restart(f, None), Restart::Reattach, "{f}");
        }
        for f in [
            "ScaleWorkload",
            "Wait",
            "WaitV2",
            "CreateCSISnapshot",
            "RestoreCSISnapshot",
            "DeleteCSISnapshot",
            "DeleteCSISnapshotContent",
            "DeleteRDSSnapshot",
        ] {
            assert_eq!(after_restart(f, None), Restart::Reenter, "{f}");
        }
        for f in [
            "KubeExec",
            "KubeExecAll",
            "BackupData",
            "CreateCSISnapshotStatic",
            "CreateRDSSnapshot",
            "NoSuchFunction",
        ] {
            assert_eq!(after_restart(f, None), Restart::AtMostOnce, "{f}");
        }
        let ops = |op: &str| json!({"operation": op}).as_object().cloned();
        assert_eq!(
            after_restart("KubeOps", ops("Patch").as_ref()),
            Restart::Reenter
        );
        assert_eq!(
            after_restart("KubeOps", ops("create").as_ref()),
            Restart::AtMostOnce
        );
        assert_eq!(
            after_restart("KubeOps", ops("{{ .Options.op }}").as_ref()),
            Restart::AtMostOnce
        );
    }

    /// A context whose client points nowhere: the runners below fail on their arguments before
    /// any API call.
    fn offline_context() -> Context {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        Context {
            client: kube::Client::try_from(config).unwrap(),
            namespace: "default".into(),
            object: Default::default(),
            pod_override: None,
            pod_labels: Default::default(),
            pod_annotations: Default::default(),
            actionset: None,
            controller: None,
        }
    }

    /// The registry and the runners agree: every runner refuses an argument the registry does
    /// not list, naming exactly the registry's arguments, and with no arguments fails on one the
    /// registry marks required.
    #[tokio::test]
    async fn every_runner_checks_its_arguments_against_the_registry() {
        let ctx = offline_context();
        for f in FUNCTIONS.iter().filter(|f| f.runs()) {
            let bogus = json!({"notAnArgument": "x"}).as_object().cloned().unwrap();
            let e = run(&ctx, f.name, &bogus, &json!({})).await.unwrap_err();
            let accepts = f.arg_names().collect::<Vec<_>>().join(", ");
            assert_eq!(
                e.to_string(),
                format!(
                    "{0}: argument `notAnArgument`: argument notAnArgument is not supported; {0} accepts: {accepts}",
                    f.name
                ),
            );
            let e = run(&ctx, f.name, &Map::new(), &json!({}))
                .await
                .unwrap_err();
            match &e {
                FunctionError::Arg { arg, .. } => assert!(
                    f.required.iter().any(|(r, _)| r == arg),
                    "{}: the runner requires {arg}, the registry does not: {e}",
                    f.name
                ),
                other => panic!("{}: {other}", f.name),
            }
        }
    }

    #[test]
    fn unsupported_arguments_are_named() {
        let m = json!({"image": "x", "comand": ["a"]});
        let e = check_args(&Args::new("KubeTask", m.as_object().unwrap()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("argument comand is not supported"), "{e}");
    }
}
