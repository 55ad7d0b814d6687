//! `ctl create`: a new ActionSet from flags, or one that restores from a run
//! (`--from <actionset>`, or `--from-schedule <schedule>` for its newest
//! complete run). `--from` follows Kanister's `kanctl create actionset
//! --from` (`pkg/kanctl/actionset.go`, `ChildActionSet`): the run must be
//! complete; each of its actions gives one action with the run's Blueprint,
//! object, Secrets, ConfigMaps and Profile, its output artifacts as input
//! artifacts and its options (flags override each, options are merged);
//! `--object` gives one action per object.

use std::collections::BTreeMap;

use clap::Args;
use kube::api::{Api, ListParams, PostParams};
use kube::core::ObjectMeta;

use super::connect::Conn;
use super::output::{self, Format};
use super::{CtlError, Done};
use crate::model::{
    ActionSchedule, ActionSet, ActionSetSpec, ActionSpec, Blueprint, EXECUTOR_LABEL_VALUE,
    LABEL_EXECUTOR, LABEL_SCHEDULE, ObjectReference, Profile, State,
};
use crate::scheduler::{identity, plan};

#[derive(Clone, Debug, Default, Args)]
pub struct CreateArgs {
    /// Blueprint of the action (with --from: instead of the run's).
    #[arg(long)]
    pub blueprint: Option<String>,
    /// Action of the Blueprint to run (with --from: instead of the run's, e.g. `restore`).
    #[arg(long)]
    pub action: Option<String>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Restore from this ActionSet (a complete run): its objects, Profile and output artifacts
    /// become the new ActionSet's input.
    #[arg(long, value_name = "ACTIONSET", conflicts_with = "from_schedule")]
    pub from: Option<String>,
    /// Restore from the newest complete run of this ActionSchedule.
    #[arg(long, value_name = "SCHEDULE")]
    pub from_schedule: Option<String>,
    /// Name of the new ActionSet (default: generated, `<action>-[<run>-]xxxxx`).
    #[arg(long)]
    pub name: Option<String>,
    /// Print the ActionSet instead of creating it.
    #[arg(long)]
    pub dry_run: bool,
    /// After creating it, follow it until it ends (exit 1 when it failed).
    #[arg(long)]
    pub watch: bool,
    /// Leave out the label `blueprint-operator.io/executor=blueprint-operator` that opts the
    /// ActionSet in to this executor (for a namespace the controller runs whole, or Kanister's).
    #[arg(long)]
    pub no_executor_label: bool,
    /// Never run beside another run on the same object: wait for it (the annotation
    /// `blueprint-operator.io/exclusive`; README "Use").
    #[arg(long)]
    pub exclusive: bool,
    /// With --exclusive: fail, naming the run waited for, if not started this long (a Go
    /// duration such as `2h`) after creation.
    #[arg(long, value_name = "DURATION", requires = "exclusive")]
    pub exclusive_wait_timeout: Option<String>,
}

/// What an action runs on and with: shared by `create` and `render`.
#[derive(Clone, Debug, Default, Args)]
pub struct InputArgs {
    /// The action's object: `KIND/NAMESPACE/NAME` with KIND deployment, statefulset,
    /// deploymentconfig or pvc; `namespace/NAME`; or `GROUP/VERSION/RESOURCE/NAMESPACE/NAME`
    /// (`VERSION/RESOURCE/NAMESPACE/NAME` for the core group). Repeat for one action per object.
    #[arg(long = "object", value_name = "KIND/NAMESPACE/NAME")]
    pub objects: Vec<String>,
    /// Profile: `NAMESPACE/NAME`, or `NAME` in the ActionSet's namespace.
    #[arg(long)]
    pub profile: Option<String>,
    /// Options, `KEY=VALUE` (comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_name = "KEY=VALUE")]
    pub options: Vec<String>,
    /// Secrets, `REF=NAMESPACE/NAME` (comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_name = "REF=NAMESPACE/NAME")]
    pub secrets: Vec<String>,
    /// ConfigMaps, `REF=NAMESPACE/NAME` (comma-separated or repeated).
    #[arg(
        long = "config-maps",
        value_delimiter = ',',
        value_name = "REF=NAMESPACE/NAME"
    )]
    pub config_maps: Vec<String>,
}

impl CreateArgs {
    fn source(&self) -> Option<&str> {
        self.from.as_deref().or(self.from_schedule.as_deref())
    }
}

/// What the flags ask for, parsed (the overrides of a restore from a run, too).
pub use crate::model::child::Overrides as Request;

/// Parses the flags; `namespace` completes a Profile given by name alone.
pub fn request(args: &CreateArgs, namespace: &str) -> Result<Request, CtlError> {
    let input = &args.input;
    Ok(Request {
        action: args.action.clone().filter(|a| !a.is_empty()),
        blueprint: args.blueprint.clone().filter(|b| !b.is_empty()),
        objects: input
            .objects
            .iter()
            .map(|o| parse_object(o))
            .collect::<Result<_, _>>()?,
        profile: input
            .profile
            .as_deref()
            .map(|p| parse_profile(p, namespace))
            .transpose()?,
        options: parse_options(&input.options)?,
        secrets: parse_references(&input.secrets, "--secrets")?,
        config_maps: parse_references(&input.config_maps, "--config-maps")?,
    })
}

/// `--object`: see [`CreateArgs::objects`]. Kinds are written as Kanister's
/// kanctl writes them (`deployment`, `statefulset`, `pvc`, ...).
pub fn parse_object(text: &str) -> Result<ObjectReference, CtlError> {
    let parts: Vec<&str> = text.split('/').collect();
    let bad = |why: &str| {
        CtlError::Input(format!(
            "--object {text:?}: {why}; write KIND/NAMESPACE/NAME (KIND deployment, statefulset, \
             deploymentconfig or pvc), namespace/NAME, or GROUP/VERSION/RESOURCE/NAMESPACE/NAME"
        ))
    };
    if parts.iter().any(|p| p.is_empty()) {
        return Err(bad("an empty part"));
    }
    let known = |kind: &str| -> Option<&'static str> {
        match kind.to_ascii_lowercase().as_str() {
            "deployment" | "deployments" | "deploy" => Some("deployment"),
            "statefulset" | "statefulsets" | "sts" => Some("statefulset"),
            "deploymentconfig" | "deploymentconfigs" | "dc" => Some("deploymentconfig"),
            "pvc" | "persistentvolumeclaim" | "persistentvolumeclaims" => Some("pvc"),
            "namespace" | "namespaces" | "ns" => Some("namespace"),
            _ => None,
        }
    };
    match parts.as_slice() {
        [kind, name] if known(kind) == Some("namespace") => Ok(ObjectReference {
            kind: "namespace".into(),
            namespace: name.to_string(),
            name: name.to_string(),
            ..ObjectReference::default()
        }),
        [kind, ns, name] => match known(kind) {
            Some("namespace") => Err(bad("a namespace is written namespace/NAME")),
            Some(k) => Ok(ObjectReference {
                kind: k.into(),
                namespace: ns.to_string(),
                name: name.to_string(),
                ..ObjectReference::default()
            }),
            None => Err(bad(&format!("unknown kind {kind:?}"))),
        },
        [version, resource, ns, name] => Ok(ObjectReference {
            api_version: version.to_string(),
            resource: resource.to_string(),
            namespace: ns.to_string(),
            name: name.to_string(),
            ..ObjectReference::default()
        }),
        [group, version, resource, ns, name] => Ok(ObjectReference {
            group: group.to_string(),
            api_version: version.to_string(),
            resource: resource.to_string(),
            namespace: ns.to_string(),
            name: name.to_string(),
            ..ObjectReference::default()
        }),
        _ => Err(bad("not one of the forms")),
    }
}

/// `--profile NAMESPACE/NAME` or `NAME` (Kanister's `parseProfile`).
pub fn parse_profile(text: &str, namespace: &str) -> Result<ObjectReference, CtlError> {
    let (ns, name) = match text.split('/').collect::<Vec<_>>().as_slice() {
        [name] => (namespace, *name),
        [ns, name] => (*ns, *name),
        _ => ("", ""),
    };
    if ns.is_empty() || name.is_empty() {
        return Err(CtlError::Input(format!(
            "--profile {text:?}: write NAMESPACE/NAME, or NAME for a Profile in the ActionSet's namespace"
        )));
    }
    Ok(ObjectReference {
        name: name.into(),
        namespace: ns.into(),
        ..ObjectReference::default()
    })
}

/// `KEY=VALUE` pairs (the value may hold `=`).
pub fn parse_options(items: &[String]) -> Result<BTreeMap<String, String>, CtlError> {
    let mut out = BTreeMap::new();
    for kv in items.iter().filter(|s| !s.is_empty()) {
        match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                out.insert(k.to_string(), v.to_string());
            }
            _ => {
                return Err(CtlError::Input(format!(
                    "--options {kv:?}: write KEY=VALUE"
                )));
            }
        }
    }
    Ok(out)
}

/// `REF=NAMESPACE/NAME` pairs (Kanister's `parseReferences`).
pub fn parse_references(
    items: &[String],
    flag: &str,
) -> Result<BTreeMap<String, ObjectReference>, CtlError> {
    let mut out = BTreeMap::new();
    for item in items.iter().filter(|s| !s.is_empty()) {
        let parsed = item.split_once('=').and_then(|(r, nn)| {
            let (ns, name) = nn.split_once('/')?;
            let ok = [r, ns, name]
                .iter()
                .all(|p| !p.is_empty() && !p.contains('/'));
            ok.then(|| {
                (
                    r.to_string(),
                    ObjectReference {
                        name: name.into(),
                        namespace: ns.into(),
                        ..ObjectReference::default()
                    },
                )
            })
        });
        let Some((r, obj)) = parsed else {
            return Err(CtlError::Input(format!(
                "{flag} {item:?}: write REF=NAMESPACE/NAME"
            )));
        };
        out.insert(r, obj);
    }
    Ok(out)
}

/// The spec of a new ActionSet: one action per object.
pub fn new_spec(r: &Request) -> Result<ActionSetSpec, CtlError> {
    let missing = |flag: &str| {
        CtlError::Input(format!(
            "{flag} is required to create an ActionSet (or restore from a run with --from)"
        ))
    };
    let action = r.action.clone().ok_or_else(|| missing("--action"))?;
    let blueprint = r.blueprint.clone().ok_or_else(|| missing("--blueprint"))?;
    if r.objects.is_empty() {
        return Err(missing("--object"));
    }
    Ok(ActionSetSpec {
        actions: r
            .objects
            .iter()
            .map(|o| ActionSpec {
                name: action.clone(),
                blueprint: blueprint.clone(),
                object: o.clone(),
                secrets: r.secrets.clone(),
                config_maps: r.config_maps.clone(),
                profile: r.profile.clone(),
                options: r.options.clone(),
                ..ActionSpec::default()
            })
            .collect(),
        ..ActionSetSpec::default()
    })
}

/// The spec of an ActionSet restoring from `parent` (Kanister's `ChildActionSet`).
pub fn child_spec(parent: &ActionSet, r: &Request) -> Result<ActionSetSpec, CtlError> {
    crate::model::child::child_spec(parent, r).map_err(|e| CtlError::Input(e.to_string()))
}

/// Metadata of the new ActionSet: `name`, or a generated name
/// `<action>-[<parent>-]xxxxx` (as kanctl names them).
pub fn metadata(
    args: &CreateArgs,
    namespace: &str,
    spec: &ActionSetSpec,
    parent: Option<&str>,
) -> ObjectMeta {
    let action = args
        .action
        .clone()
        .or_else(|| spec.actions.first().map(|a| a.name.clone()))
        .unwrap_or_default();
    let base = [action.as_str(), parent.unwrap_or("")]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let mut meta = ObjectMeta {
        namespace: Some(namespace.to_string()),
        ..ObjectMeta::default()
    };
    match &args.name {
        Some(n) => meta.name = Some(n.clone()),
        None => meta.generate_name = Some(format!("{base}-")),
    }
    if !args.no_executor_label {
        meta.labels = Some(BTreeMap::from([(
            LABEL_EXECUTOR.to_string(),
            EXECUTOR_LABEL_VALUE.to_string(),
        )]));
    }
    let mut annotations = BTreeMap::new();
    if let Some(p) = parent {
        annotations.insert(
            crate::model::labels::ANNOTATION_RESTORED_FROM.to_string(),
            p.to_string(),
        );
    }
    if args.exclusive {
        annotations.insert(
            crate::model::labels::ANNOTATION_EXCLUSIVE.to_string(),
            "true".to_string(),
        );
        if let Some(t) = &args.exclusive_wait_timeout {
            annotations.insert(
                crate::model::labels::ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT.to_string(),
                t.clone(),
            );
        }
    }
    if !annotations.is_empty() {
        meta.annotations = Some(annotations);
    }
    meta
}

/// The newest complete run of `schedule` (by the time it was scheduled).
pub fn newest_complete<'a>(runs: &'a [ActionSet], schedule: &str) -> Option<&'a ActionSet> {
    runs.iter()
        .filter(|a| identity::is_run_of(&a.metadata, schedule))
        .filter(|a| a.state() == Some(State::Complete))
        // Backup runs only: not delete actions, not verifications.
        .filter(|a| crate::scheduler::read::record(a, schedule).is_backup())
        .max_by_key(|a| super::cells::started(a))
}

/// The ActionSet the flags describe, checked against the cluster (the
/// Blueprint has the action, the Profile exists) as kanctl checks it.
pub async fn build(conn: &Conn, args: &CreateArgs) -> Result<ActionSet, CtlError> {
    let ns = &conn.namespace;
    let req = request(args, ns)?;
    if let Some(t) = &args.exclusive_wait_timeout
        && let Err(e) = crate::duration::parse_timeout(t)
    {
        return Err(CtlError::Input(format!(
            "--exclusive-wait-timeout {t:?} is not a wait timeout ({e}): write a Go duration such as 2h"
        )));
    }
    let api: Api<ActionSet> = Api::namespaced(conn.client.clone(), ns);
    let (spec, parent) = match (&args.from, &args.from_schedule) {
        (Some(from), _) => {
            let parent = api
                .get(from)
                .await
                .map_err(CtlError::kube(format!("cannot read ActionSet {ns}/{from}")))?;
            (child_spec(&parent, &req)?, Some(from.clone()))
        }
        (None, Some(schedule)) => {
            let scheds: Api<ActionSchedule> = Api::namespaced(conn.client.clone(), ns);
            scheds.get(schedule).await.map_err(CtlError::kube(format!(
                "cannot read ActionSchedule {ns}/{schedule}"
            )))?;
            let lp = ListParams::default().labels(&format!(
                "{LABEL_SCHEDULE}={}",
                plan::schedule_label_value(schedule)
            ));
            let runs = api.list(&lp).await.map_err(CtlError::kube(format!(
                "cannot list the runs of {ns}/{schedule}"
            )))?;
            let parent = newest_complete(&runs.items, schedule).ok_or_else(|| {
                CtlError::Input(format!(
                    "ActionSchedule {ns}/{schedule} has no complete run to restore from \
                     (`ctl runs {schedule}` lists them)"
                ))
            })?;
            let name = parent.metadata.name.clone().unwrap_or_default();
            (child_spec(parent, &req)?, Some(name))
        }
        (None, None) => (new_spec(&req)?, None),
    };
    check_references(conn, &spec).await?;
    let meta = metadata(args, ns, &spec, parent.as_deref());
    let mut a = ActionSet::new(meta, spec);
    if !args.no_executor_label {
        // Claimed at creation, so Kanister's controller never starts it too.
        crate::executor::claim::claim(&mut a, crate::executor::claim::By::Ctl);
    }
    Ok(a)
}

/// Each action's Blueprint has the action; each Profile exists.
async fn check_references(conn: &Conn, spec: &ActionSetSpec) -> Result<(), CtlError> {
    let ns = &conn.namespace;
    let bps: Api<Blueprint> = Api::namespaced(conn.client.clone(), ns);
    for a in &spec.actions {
        let bp = bps.get(&a.blueprint).await.map_err(CtlError::kube(format!(
            "cannot read Blueprint {ns}/{} (the ActionSet's Blueprints live in its namespace)",
            a.blueprint
        )))?;
        if !bp.actions.contains_key(&a.name) {
            let has: Vec<&str> = bp.actions.keys().map(String::as_str).collect();
            return Err(CtlError::Input(format!(
                "Blueprint {ns}/{} has no action {:?}; it has: {}",
                a.blueprint,
                a.name,
                has.join(", ")
            )));
        }
        if let Some(p) = &a.profile {
            let pns = if p.namespace.is_empty() {
                ns
            } else {
                &p.namespace
            };
            let profiles: Api<Profile> = Api::namespaced(conn.client.clone(), pns);
            profiles.get(&p.name).await.map_err(CtlError::kube(format!(
                "cannot read Profile {pns}/{}",
                p.name
            )))?;
        }
    }
    Ok(())
}

pub async fn run(conn: &Conn, args: &CreateArgs, format: Format) -> Result<Done, CtlError> {
    let actionset = build(conn, args).await?;
    if args.dry_run {
        let shown = match format {
            Format::Json => output::structured(Format::Json, &actionset)?,
            _ => output::structured(Format::Yaml, &actionset)?,
        };
        output::print(&shown)?;
        return Ok(Done::Ok);
    }
    let api: Api<ActionSet> = Api::namespaced(conn.client.clone(), &conn.namespace);
    let created = api
        .create(&PostParams::default(), &actionset)
        .await
        .map_err(CtlError::kube(format!(
            "cannot create the ActionSet in namespace {}",
            conn.namespace
        )))?;
    let name = created.metadata.name.clone().unwrap_or_default();
    let source = args.source().map(|s| format!(" from {s}"));
    let line = format!("actionset {name} created{}", source.unwrap_or_default());
    report_created(conn, &created, &line, format, args.watch).await
}

/// Says an ActionSet was created (`line` in a table, the object in JSON/YAML), then follows it
/// to its end when `watch` (the object then is not printed: the watch's output follows).
pub(super) async fn report_created(
    conn: &Conn,
    created: &ActionSet,
    line: &str,
    format: Format,
    watch: bool,
) -> Result<Done, CtlError> {
    let name = created.metadata.name.clone().unwrap_or_default();
    match format {
        Format::Table => output::print(&format!("{line}\n"))?,
        f if !watch => output::print(&output::structured(f, created)?)?,
        _ => eprintln!("actionset {name} created"),
    }
    if watch {
        return super::watch::follow(conn, &name, format, None).await;
    }
    Ok(Done::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parent(state: &str) -> ActionSet {
        serde_json::from_value(json!({
            "metadata": {"name": "backup-abc", "namespace": "prod"},
            "spec": {"actions": [{"name": "backup", "blueprint": "bp",
                "object": {"kind": "deployment", "name": "app", "namespace": "prod"},
                "profile": {"name": "s3", "namespace": "prod"},
                "secrets": {"creds": {"name": "c", "namespace": "prod"}},
                "options": {"a": "1", "b": "2"}}]},
            "status": {"state": state, "actions": [{"name": "backup", "blueprint": "bp",
                "object": {"kind": "deployment", "name": "app", "namespace": "prod"},
                "artifacts": {"cloudObject": {"keyValue": {"path": "/backups/1"}}},
                "deferPhase": {"name": "", "state": ""}}]}
        }))
        .unwrap()
    }

    #[test]
    fn objects_parse_in_every_documented_form() {
        let o = parse_object("Deployment/prod/app").unwrap();
        assert_eq!(
            (o.kind.as_str(), o.namespace.as_str(), o.name.as_str()),
            ("deployment", "prod", "app")
        );
        assert_eq!(parse_object("sts/prod/db").unwrap().kind, "statefulset");
        let n = parse_object("namespace/prod").unwrap();
        assert_eq!(
            (n.kind.as_str(), n.namespace.as_str(), n.name.as_str()),
            ("namespace", "prod", "prod")
        );
        let g = parse_object("apps/v1/deployments/prod/app").unwrap();
        assert_eq!(
            (
                g.group.as_str(),
                g.api_version.as_str(),
                g.resource.as_str()
            ),
            ("apps", "v1", "deployments")
        );
        let c = parse_object("v1/configmaps/prod/cm").unwrap();
        assert_eq!(
            (c.api_version.as_str(), c.resource.as_str(), c.name.as_str()),
            ("v1", "configmaps", "cm")
        );
        for bad in [
            "app",
            "pod/prod/x",
            "deployment//app",
            "namespace/a/b",
            "a/b/c/d/e/f",
        ] {
            let e = parse_object(bad).unwrap_err().to_string();
            assert!(e.contains("KIND/NAMESPACE/NAME"), "{bad}: {e}");
        }
    }

    #[test]
    fn references_options_and_profiles_parse_or_say_how() {
        assert_eq!(parse_profile("s3", "prod").unwrap().namespace, "prod");
        assert_eq!(
            parse_profile("kanister/s3", "prod").unwrap().namespace,
            "kanister"
        );
        assert!(parse_profile("a/b/c", "prod").is_err());
        let o = parse_options(&["k=v".into(), "url=a=b".into()]).unwrap();
        assert_eq!(o["url"], "a=b");
        assert!(
            parse_options(&["novalue".into()])
                .unwrap_err()
                .to_string()
                .contains("KEY=VALUE")
        );
        let r = parse_references(&["creds=prod/c".into()], "--secrets").unwrap();
        assert_eq!(r["creds"].name, "c");
        assert!(parse_references(&["creds=c".into()], "--secrets").is_err());
    }

    #[test]
    fn a_new_actionset_needs_action_blueprint_and_object() {
        let r = Request {
            action: Some("backup".into()),
            blueprint: Some("bp".into()),
            objects: vec![
                parse_object("deployment/prod/a").unwrap(),
                parse_object("deployment/prod/b").unwrap(),
            ],
            ..Request::default()
        };
        let spec = new_spec(&r).unwrap();
        assert_eq!(spec.actions.len(), 2);
        assert_eq!(spec.actions[1].object.name, "b");
        let e = new_spec(&Request {
            objects: vec![],
            ..r
        })
        .unwrap_err();
        assert!(e.to_string().contains("--object"), "{e}");
    }

    #[test]
    fn from_a_run_takes_its_artifacts_objects_profile_and_options_as_kanctl() {
        let r = Request {
            action: Some("restore".into()),
            options: BTreeMap::from([("b".into(), "3".into())]),
            ..Request::default()
        };
        let spec = child_spec(&parent("complete"), &r).unwrap();
        let a = &spec.actions[0];
        assert_eq!(a.name, "restore");
        assert_eq!(a.blueprint, "bp");
        assert_eq!(a.object.name, "app");
        assert_eq!(a.artifacts["cloudObject"].key_value["path"], "/backups/1");
        assert_eq!(a.profile.as_ref().unwrap().name, "s3");
        assert_eq!(a.secrets["creds"].name, "c");
        assert_eq!(
            a.options,
            BTreeMap::from([("a".into(), "1".into()), ("b".into(), "3".into())])
        );
        // Without --action the run's action name stays; --object makes one action per object.
        let r = Request {
            objects: vec![
                parse_object("deployment/dr/app").unwrap(),
                parse_object("deployment/dr/app2").unwrap(),
            ],
            ..Request::default()
        };
        let spec = child_spec(&parent("complete"), &r).unwrap();
        assert_eq!(spec.actions.len(), 2);
        assert_eq!(spec.actions[0].name, "backup");
        assert_eq!(spec.actions[1].object.namespace, "dr");
        assert_eq!(
            spec.actions[1].artifacts["cloudObject"].key_value["path"],
            "/backups/1"
        );
        let e = child_spec(&parent("failed"), &Request::default()).unwrap_err();
        assert!(
            e.to_string().contains("backup-abc is failed, not complete"),
            "{e}"
        );
    }

    #[test]
    fn names_are_generated_as_kanctl_names_them_and_runs_are_opted_in() {
        let spec = child_spec(&parent("complete"), &Request::default()).unwrap();
        let args = CreateArgs {
            action: Some("restore".into()),
            ..CreateArgs::default()
        };
        let m = metadata(&args, "prod", &spec, Some("backup-abc"));
        assert_eq!(m.generate_name.as_deref(), Some("restore-backup-abc-"));
        assert_eq!(m.labels.unwrap()[LABEL_EXECUTOR], EXECUTOR_LABEL_VALUE);
        assert_eq!(
            m.annotations.unwrap()[crate::model::labels::ANNOTATION_RESTORED_FROM],
            "backup-abc"
        );
        let args = CreateArgs {
            name: Some("mine".into()),
            no_executor_label: true,
            ..CreateArgs::default()
        };
        let m = metadata(&args, "prod", &spec, None);
        assert_eq!(m.name.as_deref(), Some("mine"));
        assert!(m.labels.is_none());
        assert!(m.annotations.is_none());
        let args = CreateArgs {
            exclusive: true,
            exclusive_wait_timeout: Some("2h".into()),
            ..CreateArgs::default()
        };
        let a = metadata(&args, "prod", &spec, None).annotations.unwrap();
        assert_eq!(a[crate::model::labels::ANNOTATION_EXCLUSIVE], "true");
        assert_eq!(
            a[crate::model::labels::ANNOTATION_EXCLUSIVE_WAIT_TIMEOUT],
            "2h"
        );
    }
}
