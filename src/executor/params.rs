//! Template parameters, as Kanister's `param.TemplateParams` (Go field
//! names), plus `.Outcome` for the deferPhase.
//!
//! [`fetch_base`] reads what the ActionSet names (target object, workload
//! pods, ConfigMaps, Secrets, Profile) once per action run; the pure
//! functions [`for_phase`], [`for_defer`] and [`for_artifacts`] add the
//! per-stage values from the status:
//! - main phase i: `.Phases.<name>` for phases 0..=i (`Output` for the
//!   completed ones), `.CurrentPhase`;
//! - deferPhase: `.Phases.<name>` of the phases that ran (failed ones without
//!   `Output`), `.DeferPhase` (no output yet), `.Outcome {State, FailedPhase,
//!   Error}`;
//! - output artifacts: all phase outputs and `.DeferPhase.Output`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Map, Value, json};

use super::endpoints;
use super::machine::{ActionRecord, outcome};
use super::tenancy::{Policy, Scope};
use crate::model::{ActionSpec, ActionStatus, Artifact, ObjectReference, Profile, State};
use crate::param;
use crate::pods;
use crate::template;

/// Builds the ActionSet-level parameters of one action, under the default
/// [`Policy`] (confined to `namespace`). Never fails: what cannot be fetched
/// (or may not be, see [`super::tenancy`]) is left out and reported as the
/// error (the action then fails to launch, and its deferPhase still runs
/// with what is there).
pub async fn fetch_base(
    client: &kube::Client,
    namespace: &str,
    spec: &ActionSpec,
    time: &str,
) -> (Map<String, Value>, Option<String>) {
    fetch_base_with(client, namespace, spec, time, &Policy::default()).await
}

/// [`fetch_base`] under the controller's [`Policy`] (references outside the
/// ActionSet's namespace, Profile endpoints).
pub async fn fetch_base_with(
    client: &kube::Client,
    namespace: &str,
    spec: &ActionSpec,
    time: &str,
    policy: &Policy,
) -> (Map<String, Value>, Option<String>) {
    let scope = policy.scope(namespace);
    let mut p = Map::new();
    let mut errors = Vec::new();
    p.insert(param::TIME.into(), json!(time));
    p.insert(param::OPTIONS.into(), json!(spec.options));
    p.insert(param::ARTIFACTS_IN.into(), json!(spec.artifacts));
    if let Some(po) = &spec.pod_override {
        p.insert(param::POD_OVERRIDE.into(), Value::Object(po.clone()));
    }
    if let Some(a) = &spec.pod_annotations {
        p.insert(param::POD_ANNOTATIONS.into(), json!(a));
    }
    if let Some(l) = &spec.pod_labels {
        p.insert(param::POD_LABELS.into(), json!(l));
    }
    match fetch_object(client, namespace, &spec.object, &scope).await {
        Ok(extra) => p.extend(extra),
        Err(e) => errors.push(e.to_string()),
    }
    let mut cms = Map::new();
    for (name, r) in &spec.config_maps {
        let ns = or_ns(&r.namespace, namespace);
        if let Err(e) = scope.check("ConfigMap", ns, &r.name, &format!("configMaps.{name}")) {
            errors.push(e.to_string());
            continue;
        }
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        match api.get(&r.name).await {
            Ok(cm) => {
                cms.insert(name.clone(), json!(cm));
            }
            Err(e) => errors
                .push(get(format!("ConfigMap {ns}/{} (configMaps.{name})", r.name))(e).to_string()),
        }
    }
    p.insert(param::CONFIG_MAPS.into(), Value::Object(cms));
    let mut secrets = Map::new();
    for (name, r) in &spec.secrets {
        let ns = or_ns(&r.namespace, namespace);
        if let Err(e) = scope.check("Secret", ns, &r.name, &format!("secrets.{name}")) {
            errors.push(e.to_string());
            continue;
        }
        match get_secret(client, ns, &r.name).await {
            Ok(s) => {
                secrets.insert(name.clone(), s);
            }
            Err(e) => errors.push(format!("{e} (secrets.{name})")),
        }
    }
    p.insert(param::SECRETS.into(), Value::Object(secrets));
    if let Some(r) = &spec.profile {
        let ns = or_ns(&r.namespace, namespace);
        let fetched = match scope.check("Profile", ns, &r.name, "profile") {
            Ok(()) => fetch_profile(client, ns, &r.name, &scope, policy).await,
            Err(e) => Err(ParamError::from(e)),
        };
        match fetched {
            Ok(v) => {
                p.insert(param::PROFILE.into(), v);
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    let err = (!errors.is_empty()).then(|| errors.join("; "));
    (p, err)
}

/// Why an action's parameters (its object, ConfigMaps, Secrets, Profile, phase objects, output
/// artifacts) could not be gathered; each says which object and which field of the ActionSet or
/// Blueprint named it.
#[derive(Debug, thiserror::Error)]
pub enum ParamError {
    #[error(
        "Not a known object Kind {kind}. Action must specify Resource name and API version (object {ns}/{name})"
    )]
    UnknownKind {
        kind: String,
        ns: String,
        name: String,
    },
    /// `what`: the kind, the object and, where known, the field naming it.
    #[error("Failed to get {what}: {}", crate::kube_error::Describe(.source))]
    Get {
        what: String,
        #[source]
        source: kube::Error,
    },
    /// Outside what the ActionSet may reach ([`Scope`]).
    #[error(transparent)]
    OutsideScope(#[from] super::tenancy::OutsideScope),
    #[error(transparent)]
    Endpoint(#[from] endpoints::MetadataEndpoint),
    #[error("Key '{field}' not found in secret '{ns}:{name}'")]
    KeyMissing {
        field: String,
        ns: String,
        name: String,
    },
    #[error("Value '{field}' not found in secret '{ns}:{name}'")]
    ValueMissing {
        field: String,
        ns: String,
        name: String,
    },
    /// A template in the Blueprint; `at` is where (`objects.<key>`, `outputArtifacts.<name>...`).
    #[error("{source} ({at})")]
    Render {
        at: String,
        #[source]
        source: template::TemplateError,
    },
    #[error("{source} ({at})")]
    Json {
        at: String,
        #[source]
        source: serde_json::Error,
    },
    /// The workload's pods could not be listed.
    #[error(transparent)]
    Workload(#[from] pods::workload::PodsError),
}

fn get(what: String) -> impl FnOnce(kube::Error) -> ParamError {
    move |source| ParamError::Get { what, source }
}

fn or_ns<'a>(ns: &'a str, default: &'a str) -> &'a str {
    if ns.is_empty() { default } else { ns }
}

async fn get_secret(client: &kube::Client, ns: &str, name: &str) -> Result<Value, ParamError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), ns);
    api.get(name)
        .await
        .map(|s| json!(s))
        .map_err(get(format!("Secret {ns}/{name}")))
}

/// `.Object` and the kind-specific values (`.Deployment`, `.StatefulSet`,
/// `.PVC`, `.Namespace`, `.DeploymentConfig`).
async fn fetch_object(
    client: &kube::Client,
    namespace: &str,
    obj: &ObjectReference,
    scope: &Scope,
) -> Result<Map<String, Value>, ParamError> {
    let ns = or_ns(&obj.namespace, namespace);
    let kind = obj.kind.to_ascii_lowercase();
    let (gvk, plural, namespaced) = match kind.as_str() {
        "deployment" => (
            GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "deployments",
            true,
        ),
        "statefulset" => (
            GroupVersionKind::gvk("apps", "v1", "StatefulSet"),
            "statefulsets",
            true,
        ),
        "deploymentconfig" => (
            GroupVersionKind::gvk("apps.openshift.io", "v1", "DeploymentConfig"),
            "deploymentconfigs",
            true,
        ),
        "pvc" | "persistentvolumeclaim" => (
            GroupVersionKind::gvk("", "v1", "PersistentVolumeClaim"),
            "persistentvolumeclaims",
            true,
        ),
        "namespace" => (
            GroupVersionKind::gvk("", "v1", "Namespace"),
            "namespaces",
            false,
        ),
        _ => {
            if obj.api_version.is_empty() || obj.resource.is_empty() {
                return Err(ParamError::UnknownKind {
                    kind: obj.kind.clone(),
                    ns: ns.to_string(),
                    name: obj.name.clone(),
                });
            }
            let (group, version) = match obj.api_version.split_once('/') {
                Some((g, v)) => (g.to_string(), v.to_string()),
                None => (obj.group.clone(), obj.api_version.clone()),
            };
            (
                GroupVersionKind::gvk(&group, &version, &obj.kind),
                obj.resource.as_str(),
                !obj.namespace.is_empty(),
            )
        }
    };
    if namespaced {
        scope
            .check(&obj.kind, ns, &obj.name, "object")
            .map_err(ParamError::from)?;
    } else {
        scope
            .check_cluster_scoped(&obj.kind, &obj.name, "object")
            .map_err(ParamError::from)?;
        // Kanister's `.Namespace` params come from object.namespace.
        if !obj.namespace.is_empty() {
            scope
                .check(&obj.kind, &obj.namespace, &obj.name, "object.namespace")
                .map_err(ParamError::from)?;
        }
    }
    let ar = ApiResource::from_gvk_with_plural(&gvk, plural);
    let api: Api<DynamicObject> = if namespaced {
        Api::namespaced_with(client.clone(), ns, &ar)
    } else {
        Api::all_with(client.clone(), &ar)
    };
    let place = if namespaced {
        format!("{ns}/")
    } else {
        String::new()
    };
    let fetched = api
        .get(&obj.name)
        .await
        .map_err(get(format!("object {} {place}{}", obj.kind, obj.name)))?;
    let object = serde_json::to_value(&fetched).map_err(|source| ParamError::Json {
        at: "object".into(),
        source,
    })?;
    let mut p = Map::new();
    match kind.as_str() {
        "deployment" | "statefulset" | "deploymentconfig" => {
            use pods::workload::Kind;
            let (field, wkind) = match kind.as_str() {
                "deployment" => (param::DEPLOYMENT, Kind::Deployment),
                "statefulset" => (param::STATEFUL_SET, Kind::StatefulSet),
                _ => (param::DEPLOYMENT_CONFIG, Kind::DeploymentConfig),
            };
            let workload = workload_params(client, wkind, ns, &obj.name, &object).await?;
            p.insert(field.into(), workload);
        }
        "pvc" | "persistentvolumeclaim" => {
            p.insert(
                param::PVC.into(),
                json!({"Name": obj.name, "Namespace": ns}),
            );
        }
        // Kanister quirk: both come from object.namespace.
        "namespace" => {
            p.insert(
                param::NAMESPACE.into(),
                json!({"Name": obj.namespace, "Namespace": obj.namespace}),
            );
        }
        _ => {}
    }
    p.insert(param::OBJECT.into(), object);
    Ok(p)
}

/// `{Name, Namespace, Pods, Containers, PersistentVolumeClaims}` from the
/// running pods the workload owns (see [`pods::workload`]: owner
/// references, as Kanister, not the label selector).
async fn workload_params(
    client: &kube::Client,
    kind: pods::workload::Kind,
    ns: &str,
    name: &str,
    object: &Value,
) -> Result<Value, ParamError> {
    let pods = pods::workload::running_pods(client, kind, ns, name, object)
        .await
        .map_err(ParamError::Workload)?;
    Ok(workload_value(name, ns, &pods))
}

/// Pure part of [`workload_params`].
pub fn workload_value(name: &str, ns: &str, pods: &[Pod]) -> Value {
    let mut names = Vec::new();
    let mut containers = Vec::new();
    let mut pvcs = Map::new();
    for pod in pods {
        let pname = pod.metadata.name.clone().unwrap_or_default();
        let Some(spec) = &pod.spec else { continue };
        containers.push(
            spec.containers
                .iter()
                .map(|c| c.name.clone())
                .collect::<Vec<_>>(),
        );
        let mut claims = Map::new();
        for v in spec.volumes.iter().flatten() {
            let Some(pvc) = &v.persistent_volume_claim else {
                continue;
            };
            let mount = spec
                .containers
                .iter()
                .flat_map(|c| c.volume_mounts.iter().flatten())
                .find(|m| m.name == v.name)
                .map(|m| m.mount_path.clone())
                .unwrap_or_default();
            claims.insert(pvc.claim_name.clone(), json!(mount));
        }
        if !claims.is_empty() {
            pvcs.insert(pname.clone(), Value::Object(claims));
        }
        names.push(pname);
    }
    json!({
        "Name": name,
        "Namespace": ns,
        "Pods": names,
        "Containers": containers,
        "PersistentVolumeClaims": pvcs,
    })
}

/// `.Profile` as Kanister's `param.Profile`. The Profile's credential Secret
/// is confined like the ActionSet's own references; the endpoint is checked
/// against metadata ranges unless the policy allows them.
async fn fetch_profile(
    client: &kube::Client,
    ns: &str,
    name: &str,
    scope: &Scope,
    policy: &Policy,
) -> Result<Value, ParamError> {
    let api: Api<Profile> = Api::namespaced(client.clone(), ns);
    let prof = api
        .get(name)
        .await
        .map_err(get(format!("Profile {ns}/{name}")))?;
    let l = &prof.location;
    if !policy.allow_metadata_endpoints {
        endpoints::check(&l.endpoint, &format!("{ns}/{name}"))
            .await
            .map_err(ParamError::Endpoint)?;
    }
    let mut key_pair_value = None;
    if let Some(kp) = &prof.credential.key_pair {
        let sns = or_ns(&kp.secret.namespace, ns);
        scope
            .check(
                "Secret",
                sns,
                &kp.secret.name,
                &format!("credential.keyPair.secret of Profile {ns}/{name}"),
            )
            .map_err(ParamError::from)?;
        let s = get_secret(client, sns, &kp.secret.name).await?;
        key_pair_value = Some(key_pair(&s, &kp.id_field, &kp.secret_field)?);
    }
    let mut secret = None;
    if let Some(r) = &prof.credential.secret {
        let sns = or_ns(&r.namespace, ns);
        scope
            .check(
                "Secret",
                sns,
                &r.name,
                &format!("credential.secret of Profile {ns}/{name}"),
            )
            .map_err(ParamError::from)?;
        secret = Some(get_secret(client, sns, &r.name).await?);
    }
    Ok(param::profile::param_value(&prof, key_pair_value, secret))
}

/// `{ID, Secret}` from a keyPair credential's Secret, as Kanister's
/// `fetchKeyPairCredential`: a missing key is an error (an empty value is
/// not; ValidateProfile reports that later).
pub fn key_pair(
    secret: &Value,
    id_field: &str,
    secret_field: &str,
) -> Result<(String, String), ParamError> {
    let ns = secret
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = secret
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let field = |f: &str| -> Option<String> {
        let b64 = secret.get("data")?.get(f)?.as_str()?;
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    let id = field(id_field).ok_or_else(|| ParamError::KeyMissing {
        field: id_field.into(),
        ns: ns.into(),
        name: name.into(),
    })?;
    let sec = field(secret_field).ok_or_else(|| ParamError::ValueMissing {
        field: secret_field.into(),
        ns: ns.into(),
        name: name.into(),
    })?;
    Ok((id, sec))
}

fn phase_entry(output: Option<&Map<String, Value>>, objects: Option<&Map<String, Value>>) -> Value {
    let mut e = Map::new();
    if let Some(objs) = objects {
        e.extend(objs.clone());
    }
    if let Some(o) = output {
        e.insert("Output".into(), Value::Object(o.clone()));
    }
    Value::Object(e)
}

/// The fetched `objects` of phases, by phase name: `{"Secrets": {...},
/// "ConfigMaps": {...}}` (Kanister keeps them in `.Phases.<name>` for the
/// rest of the action).
pub type PhaseObjects = BTreeMap<String, Map<String, Value>>;

/// Parameters for main phase `index`: `.Phases.<name>` of it and the phases
/// before it, each with its `objects` and (earlier phases) `Output`.
pub fn for_phase(
    base: &Map<String, Value>,
    st: &ActionStatus,
    index: usize,
    objects: &PhaseObjects,
) -> Value {
    let mut p = base.clone();
    let mut phases = Map::new();
    for (i, ph) in st.phases.iter().enumerate().take(index + 1) {
        let output = (i != index).then_some(&ph.output);
        phases.insert(ph.name.clone(), phase_entry(output, objects.get(&ph.name)));
    }
    if let Some(cur) = st.phases.get(index).and_then(|ph| phases.get(&ph.name)) {
        p.insert(param::CURRENT_PHASE.into(), cur.clone());
    }
    p.insert(param::PHASES.into(), Value::Object(phases));
    p.insert(param::DEFER_PHASE.into(), json!({}));
    Value::Object(p)
}

fn ran_phases(st: &ActionStatus, objects: &PhaseObjects) -> Map<String, Value> {
    let mut phases = Map::new();
    for ph in &st.phases {
        let output = match ph.state {
            State::Complete => Some(&ph.output),
            State::Failed => None,
            _ => continue,
        };
        phases.insert(ph.name.clone(), phase_entry(output, objects.get(&ph.name)));
    }
    phases
}

/// Parameters for the deferPhase, with `.Outcome`; `defer_objects` are the
/// deferPhase's own `objects` (`.DeferPhase.Secrets`).
pub fn for_defer(
    base: &Map<String, Value>,
    st: &ActionStatus,
    rec: &ActionRecord,
    objects: &PhaseObjects,
    defer_objects: Option<&Map<String, Value>>,
) -> Value {
    let mut p = base.clone();
    p.insert(param::PHASES.into(), Value::Object(ran_phases(st, objects)));
    p.insert(param::DEFER_PHASE.into(), phase_entry(None, defer_objects));
    p.insert(param::OUTCOME.into(), json!(outcome(st, rec)));
    Value::Object(p)
}

/// Parameters for rendering output artifacts.
pub fn for_artifacts(
    base: &Map<String, Value>,
    st: &ActionStatus,
    rec: &ActionRecord,
    objects: &PhaseObjects,
) -> Value {
    let mut p = base.clone();
    p.insert(param::PHASES.into(), Value::Object(ran_phases(st, objects)));
    let defer = (st.defer_phase.state == State::Complete).then_some(&st.defer_phase.output);
    p.insert(param::DEFER_PHASE.into(), phase_entry(defer, None));
    p.insert(param::OUTCOME.into(), json!(outcome(st, rec)));
    Value::Object(p)
}

/// Renders output artifacts (`keyValue` values and `kopiaSnapshot`), as
/// Kanister's `renderActionsetArtifacts`.
pub fn render_artifacts(
    artifacts: &BTreeMap<String, Artifact>,
    params: &Value,
) -> Result<BTreeMap<String, Artifact>, ParamError> {
    let prepared = template::Params::new(params);
    let now = chrono::Utc::now();
    let render = |s: &str, what: &str| -> Result<String, ParamError> {
        template::Template::parse(s)
            .and_then(|t| t.render_params(&prepared, now))
            .map_err(|source| ParamError::Render {
                at: format!("outputArtifacts.{what}"),
                source,
            })
    };
    let mut out = BTreeMap::new();
    for (name, a) in artifacts {
        // Fields our model lacks are carried over unrendered.
        let mut r = Artifact {
            extra: a.extra.clone(),
            ..Artifact::default()
        };
        for (k, v) in &a.key_value {
            r.key_value
                .insert(k.clone(), render(v, &format!("{name}.keyValue.{k}"))?);
        }
        if !a.kopia_snapshot.is_empty() {
            r.kopia_snapshot = render(&a.kopia_snapshot, &format!("{name}.kopiaSnapshot"))?;
        }
        out.insert(name.clone(), r);
    }
    Ok(out)
}

/// Renders the phase's `objects` references (name/namespace may be
/// templates), as Kanister does when the action starts.
pub fn render_objects(
    objects: &BTreeMap<String, ObjectReference>,
    params: &Value,
) -> Result<BTreeMap<String, ObjectReference>, ParamError> {
    let mut out = BTreeMap::new();
    for (k, r) in objects {
        let at = || format!("objects.{k}");
        let json = |source| ParamError::Json { at: at(), source };
        let v = serde_json::to_value(r).map_err(json)?;
        let rendered = template::render_args(&v, params, "")
            .map_err(|source| ParamError::Render { at: at(), source })?;
        let r: ObjectReference = serde_json::from_value(rendered).map_err(json)?;
        out.insert(k.clone(), r);
    }
    Ok(out)
}

/// Fetches `objects` of kind Secret/ConfigMap into `{Secrets, ConfigMaps}`.
/// A reference outside the ActionSet's namespace is refused when `scope`
/// is confined.
pub async fn fetch_phase_objects(
    client: &kube::Client,
    namespace: &str,
    objects: &BTreeMap<String, ObjectReference>,
    scope: &Scope,
) -> Result<Map<String, Value>, ParamError> {
    let mut secrets = Map::new();
    let mut cms = Map::new();
    for (k, r) in objects {
        let ns = or_ns(&r.namespace, namespace);
        let kind = r.kind.to_ascii_lowercase();
        if kind == "secret" || kind == "configmap" {
            scope
                .check(&r.kind, ns, &r.name, &format!("objects.{k}"))
                .map_err(ParamError::from)?;
        }
        match kind.as_str() {
            "secret" => {
                secrets.insert(k.clone(), get_secret(client, ns, &r.name).await?);
            }
            "configmap" => {
                let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
                let cm = api
                    .get(&r.name)
                    .await
                    .map_err(get(format!("ConfigMap {ns}/{} (objects.{k})", r.name)))?;
                cms.insert(k.clone(), json!(cm));
            }
            _ => {}
        }
    }
    let mut m = Map::new();
    m.insert(param::SECRETS.into(), Value::Object(secrets));
    m.insert(param::CONFIG_MAPS.into(), Value::Object(cms));
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Phase;

    fn status() -> ActionStatus {
        let ph = |n: &str, s: State, out: Value| Phase {
            name: n.into(),
            state: s,
            output: out.as_object().cloned().unwrap_or_default(),
            ..Phase::default()
        };
        ActionStatus {
            name: "backup".into(),
            phases: vec![
                ph("one", State::Complete, json!({"value": "mainValue"})),
                ph("two", State::Failed, json!({})),
                ph("three", State::Pending, json!({})),
            ],
            defer_phase: ph("cleanup", State::Complete, json!({"value": "deferValue"})),
            ..ActionStatus::default()
        }
    }

    fn render(t: &str, p: &Value) -> Result<String, template::TemplateError> {
        template::render_str(t, p)
    }

    /// Every name the executor fills is one of `param.TemplateParams`.
    #[test]
    fn params_are_fields_of_the_schema() {
        let base = Map::new();
        let (st, rec) = (status(), ActionRecord::default());
        let objs = PhaseObjects::new();
        for p in [
            for_phase(&base, &st, 1, &objs),
            for_defer(&base, &st, &rec, &objs, None),
            for_artifacts(&base, &st, &rec, &objs),
        ] {
            for k in p.as_object().unwrap().keys() {
                assert!(param::top_level_names().contains(&k.as_str()), "{k}");
            }
        }
    }

    #[test]
    fn phase_params_see_earlier_outputs_only() {
        let base = json!({"Options": {"o": "x"}, "Time": "t"})
            .as_object()
            .unwrap()
            .clone();
        let st = status();
        let p = for_phase(&base, &st, 1, &PhaseObjects::new());
        assert_eq!(
            render("{{ .Phases.one.Output.value }}", &p).unwrap(),
            "mainValue"
        );
        assert_eq!(render("{{ .Options.o }}", &p).unwrap(), "x");
        let err = render("{{ .Phases.three.Output.value }}", &p).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Failed to render template: \"three\" not found"
        );
    }

    #[test]
    fn defer_params_have_ran_phases_and_outcome() {
        let base = Map::new();
        let st = status();
        let rec = ActionRecord {
            error: "exit 1".into(),
            failed_phase: "two".into(),
            ..ActionRecord::default()
        };
        let p = for_defer(&base, &st, &rec, &PhaseObjects::new(), None);
        assert_eq!(
            render("{{ .Phases.one.Output.value }}", &p).unwrap(),
            "mainValue"
        );
        assert!(render("{{ .Phases.three.Output.value }}", &p).is_err());
        assert!(p["Phases"].get("two").is_some());
        assert_eq!(
            p["Outcome"],
            json!({"State": "failed", "FailedPhase": "two", "Error": "exit 1"})
        );
        // The template engine knows `.Outcome` (it is typed like Kanister's params).
        assert_eq!(
            render(
                "{{ .Outcome.State }} at {{ .Outcome.FailedPhase }}: {{ .Outcome.Error }}",
                &p
            )
            .unwrap(),
            "failed at two: exit 1"
        );
    }

    #[test]
    fn artifacts_render_from_phase_and_defer_output() {
        let st = status();
        let p = for_artifacts(
            &Map::new(),
            &st,
            &ActionRecord::default(),
            &PhaseObjects::new(),
        );
        let arts = BTreeMap::from([(
            "a".to_string(),
            Artifact {
                key_value: BTreeMap::from([
                    (
                        "main".to_string(),
                        "{{ .Phases.one.Output.value }}".to_string(),
                    ),
                    (
                        "defer".to_string(),
                        "{{ .DeferPhase.Output.value }}".to_string(),
                    ),
                ]),
                kopia_snapshot: "{{ .Phases.one.Output.value }}-snap".into(),
                ..Artifact::default()
            },
        )]);
        let r = render_artifacts(&arts, &p).unwrap();
        assert_eq!(r["a"].key_value["main"], "mainValue");
        assert_eq!(r["a"].key_value["defer"], "deferValue");
        assert_eq!(r["a"].kopia_snapshot, "mainValue-snap");
        let bad = BTreeMap::from([(
            "b".to_string(),
            Artifact {
                key_value: BTreeMap::from([(
                    "k".to_string(),
                    "{{ .Phases.one.Output.nope }}".to_string(),
                )]),
                ..Artifact::default()
            },
        )]);
        let e = render_artifacts(&bad, &p).unwrap_err().to_string();
        assert!(
            e.contains("\"nope\" not found") && e.contains("outputArtifacts.b.keyValue.k"),
            "{e}"
        );
    }

    fn objects(secret_value: &str) -> Map<String, Value> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(secret_value);
        json!({
            "Secrets": {"elasticSecret": {"data": {"elastic": b64}}},
            "ConfigMaps": {"cfg": {"data": {"k": "v"}}},
        })
        .as_object()
        .unwrap()
        .clone()
    }

    /// A later phase (and the deferPhase, and output artifacts)
    /// reads `.Phases.<earlier>.Secrets` / `.ConfigMaps`, as the corpus
    /// elasticsearch-incremental and mongodb-atlas Blueprints do.
    #[test]
    fn earlier_phase_objects_stay_in_phases() {
        let st = status();
        let objs = PhaseObjects::from([("one".to_string(), objects("pw"))]);
        let t = r#"{{ index .Phases.one.Secrets.elasticSecret.Data "elastic" | toString }}/{{ .Phases.one.ConfigMaps.cfg.Data.k }}"#;
        let p = for_phase(&Map::new(), &st, 1, &objs);
        assert_eq!(render(t, &p).unwrap(), "pw/v");
        // The earlier phase keeps its output next to its objects.
        assert_eq!(
            render("{{ .Phases.one.Output.value }}", &p).unwrap(),
            "mainValue"
        );
        // The current phase's own objects are there too (and in .CurrentPhase).
        let objs2 = PhaseObjects::from([("two".to_string(), objects("x"))]);
        let p = for_phase(&Map::new(), &st, 1, &objs2);
        assert_eq!(
            render(
                r#"{{ index .CurrentPhase.Secrets.elasticSecret.Data "elastic" | toString }}"#,
                &p
            )
            .unwrap(),
            "x"
        );
        let rec = ActionRecord::default();
        let p = for_defer(&Map::new(), &st, &rec, &objs, Some(&objects("d")));
        assert_eq!(render(t, &p).unwrap(), "pw/v");
        assert_eq!(
            render(
                r#"{{ index .DeferPhase.Secrets.elasticSecret.Data "elastic" | toString }}"#,
                &p
            )
            .unwrap(),
            "d"
        );
        let p = for_artifacts(&Map::new(), &st, &rec, &objs);
        assert_eq!(render(t, &p).unwrap(), "pw/v");
    }

    /// A keyPair Secret without the named key is Kanister's error, not "".
    #[test]
    fn key_pair_keys_must_exist() {
        use base64::Engine;
        let b = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let secret = json!({
            "metadata": {"name": "s3", "namespace": "ns"},
            "data": {"id": b("AKID"), "key": b("SK"), "empty": ""},
        });
        assert_eq!(
            key_pair(&secret, "id", "key").unwrap(),
            ("AKID".to_string(), "SK".to_string())
        );
        assert_eq!(
            key_pair(&secret, "nope", "key").unwrap_err().to_string(),
            "Key 'nope' not found in secret 'ns:s3'"
        );
        assert_eq!(
            key_pair(&secret, "id", "nope").unwrap_err().to_string(),
            "Value 'nope' not found in secret 'ns:s3'"
        );
        // Present but empty is not this error (ValidateProfile says "... is not set").
        assert_eq!(key_pair(&secret, "id", "empty").unwrap().1, "");
        let no_data = json!({"metadata": {"name": "s3", "namespace": "ns"}});
        assert!(key_pair(&no_data, "id", "key").is_err());
    }

    #[test]
    fn workload_value_lists_pods_containers_and_claims() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "app-0"},
            "spec": {
                "containers": [{"name": "c", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "pvc-0"}}]
            }
        }))
        .unwrap();
        let v = workload_value("app", "ns", &[pod]);
        assert_eq!(
            render(
                "{{ index .StatefulSet.Pods 0 }}",
                &json!({"StatefulSet": v})
            )
            .unwrap(),
            "app-0"
        );
        assert_eq!(v["PersistentVolumeClaims"]["app-0"]["pvc-0"], "/data");
        assert_eq!(v["Containers"], json!([["c"]]));
    }
}
