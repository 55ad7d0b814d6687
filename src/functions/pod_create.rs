//! The one place where functions create pods (KubeTask, MultiContainerRun,
//! PrepareData and the data functions' helper pods), and what every such pod
//! gets on top of what its function built:
//!
//! - labels linking it to its ActionSet ([`LABEL_ACTIONSET_UID`],
//!   [`LABEL_ACTIONSET_NAMESPACE`]; the name in [`ANNOTATION_ACTIONSET`], too
//!   long for a label value), so that pods a killed controller left behind
//!   can be found and deleted (`executor::pod_sweep`), and to the phase that
//!   created it ([`LABEL_PHASE`]), so that a restarted controller finds the
//!   pod of the phase that was running and re-attaches to it
//!   ([`super::kube_task::run_pod`]);
//! - its `<namespace>/<name>` is handed to the executor right after the
//!   create ([`StepHook`]), which records it in the ActionSet: after a
//!   restart, a pod recorded but gone was deleted or evicted (the phase
//!   fails), a pod never recorded nor found was never created (the phase
//!   runs);
//! - the controller's ServiceAccount when the pod runs in the controller's
//!   namespace and neither the function nor `podOverride` chose one, as
//!   Kanister's `GetPodObjectFromPodOptions` / MultiContainerRun's
//!   `setPodSpecServiceAccount` do (Blueprints run `kubectl` in such pods).

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};

use super::kube_task::PodGuard;
use super::{Context, FunctionError};

/// Label: the UID of the ActionSet whose phase created the pod.
pub const LABEL_ACTIONSET_UID: &str = "blueprint-operator.io/actionset-uid";
/// Label: the namespace of that ActionSet (the sweeper's scope with `--namespace`).
pub const LABEL_ACTIONSET_NAMESPACE: &str = "blueprint-operator.io/actionset-namespace";
/// Annotation: `<namespace>/<name>` of that ActionSet.
pub const ANNOTATION_ACTIONSET: &str = "blueprint-operator.io/actionset";
/// Label: the step of the ActionSet that created the pod, `<action index>.<phase index>`
/// or `<action index>.defer` ([`phase_key`]).
pub const LABEL_PHASE: &str = "blueprint-operator.io/phase";

/// The value of [`LABEL_PHASE`] for main phase `phase` (`None`: the deferPhase) of action
/// `action` (indexes in the ActionSet's status, which never reorders).
pub fn phase_key(action: usize, phase: Option<usize>) -> String {
    match phase {
        Some(p) => format!("{action}.{p}"),
        None => format!("{action}.defer"),
    }
}

/// The ActionSet a function runs for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActionSetRef {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    /// The running step ([`phase_key`]); "" outside a phase.
    pub phase: String,
    /// `Some` when the step is resumed after a controller restart: the pods
    /// (`<namespace>/<name>`) the ActionSet records it created before.
    pub resume: Option<Vec<String>>,
    /// The step is entered again after a controller restart (its function
    /// drives a desired state): what it created may exist already.
    pub reentered: bool,
    /// When the step is entered again after a restart: what its first run
    /// recorded with [`StepEvent::Output`].
    pub resume_output: serde_json::Map<String, serde_json::Value>,
    /// The executor's callback that records what the step did so far.
    pub on_step: Option<StepHook>,
}

/// What a step records in its ActionSet before going on, so that a
/// restarted controller knows it.
#[derive(Clone, Debug, PartialEq)]
pub enum StepEvent {
    /// A pod `<namespace>/<name>` was created.
    PodCreated(String),
    /// A value the step will output, known before its effect (ScaleWorkload's
    /// `originalReplicaCount` before it scales).
    Output(String, serde_json::Value),
}

/// The executor's callback for [`StepEvent`]s; awaited before the function
/// goes on.
#[derive(Clone)]
pub struct StepHook(
    pub std::sync::Arc<dyn Fn(StepEvent) -> futures::future::BoxFuture<'static, ()> + Send + Sync>,
);

impl std::fmt::Debug for StepHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StepHook")
    }
}

/// Hooks compare equal: the reference is about which ActionSet and step.
impl PartialEq for StepHook {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for StepHook {}

/// Records `event` through the context's hook (nothing outside a phase).
pub async fn note(ctx: &Context, event: StepEvent) {
    if let Some(hook) = ctx.actionset.as_ref().and_then(|a| a.on_step.as_ref()) {
        (hook.0)(event).await;
    }
}

/// Where the controller runs and as whom (Kanister's `GetControllerNamespace`
/// and `GetControllerServiceAccount`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ControllerIdentity {
    pub namespace: String,
    pub service_account: String,
}

/// Env naming the controller's ServiceAccount (Kanister's name; our
/// Deployment sets it from `spec.serviceAccountName`).
pub const SERVICE_ACCOUNT_ENV: &str = "POD_SERVICE_ACCOUNT";
/// The namespace file of an in-cluster ServiceAccount token mount.
pub const NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

impl ControllerIdentity {
    /// From `POD_NAMESPACE` (else the in-cluster namespace file) and
    /// `POD_SERVICE_ACCOUNT` (else `spec.serviceAccountName` of the pod
    /// `POD_NAME`, as Kanister falls back to). `None` when either is unknown:
    /// pods then get their namespace's default ServiceAccount.
    pub async fn discover(client: &kube::Client) -> Option<ControllerIdentity> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let namespace = env("POD_NAMESPACE").or_else(|| {
            std::fs::read_to_string(NAMESPACE_FILE)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        })?;
        let service_account = match env(SERVICE_ACCOUNT_ENV) {
            Some(sa) => sa,
            None => {
                let pod = env("POD_NAME")?;
                let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
                match api.get(&pod).await {
                    Ok(p) => p
                        .spec
                        .and_then(|s| s.service_account_name)
                        .filter(|s| !s.is_empty())?,
                    Err(e) => {
                        tracing::warn!(pod = %pod, namespace = %namespace, error = %e,
                            "cannot read the controller's pod to find its ServiceAccount (set {SERVICE_ACCOUNT_ENV})");
                        return None;
                    }
                }
            }
        };
        Some(ControllerIdentity {
            namespace,
            service_account,
        })
    }
}

/// Adds the ActionSet link and, in the controller's namespace, the
/// controller's ServiceAccount (unless the pod names one already).
pub fn stamp(
    pod: &mut Pod,
    namespace: &str,
    actionset: Option<&ActionSetRef>,
    controller: Option<&ControllerIdentity>,
) {
    if let Some(a) = actionset {
        let labels = pod.metadata.labels.get_or_insert_with(Default::default);
        labels.insert(LABEL_ACTIONSET_UID.into(), a.uid.clone());
        labels.insert(LABEL_ACTIONSET_NAMESPACE.into(), a.namespace.clone());
        if !a.phase.is_empty() {
            labels.insert(LABEL_PHASE.into(), a.phase.clone());
        }
        pod.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(
                ANNOTATION_ACTIONSET.into(),
                format!("{}/{}", a.namespace, a.name),
            );
    }
    if let Some(c) = controller
        && c.namespace == namespace
        && let Some(spec) = pod.spec.as_mut()
    {
        let named = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
        if !named(&spec.service_account_name) && !named(&spec.service_account) {
            spec.service_account_name = Some(c.service_account.clone());
        }
    }
}

/// Creates `pod` (stamped, see [`stamp`]) in `namespace`; the guard deletes
/// it when dropped unless [`PodGuard::delete`] ran first.
pub async fn create(
    ctx: &Context,
    function: &'static str,
    namespace: &str,
    mut pod: Pod,
) -> Result<(Api<Pod>, String, PodGuard), FunctionError> {
    stamp(
        &mut pod,
        namespace,
        ctx.actionset.as_ref(),
        ctx.controller.as_ref(),
    );
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let created = api
        .create(&PostParams::default(), &pod)
        .await
        .map_err(|e| {
            FunctionError::kube(
                function,
                format!("creating pod in namespace {namespace}"),
                e,
            )
        })?;
    let name = created.metadata.name.clone().unwrap_or_default();
    let guard = PodGuard::new(api.clone(), name.clone());
    note(ctx, StepEvent::PodCreated(format!("{namespace}/{name}"))).await;
    Ok((api, name, guard))
}

/// For a resumed step ([`ActionSetRef::resume`]): its pod in `namespace`
/// (by [`LABEL_ACTIONSET_UID`] and [`LABEL_PHASE`]) to wait for instead of
/// creating one; `None`: not resumed, or no pod was created before (create
/// one); an error when the
/// ActionSet records a pod that is gone or being deleted (it was deleted or
/// evicted while no controller watched it: re-creating it would run the
/// work twice).
pub async fn find_resumed(
    ctx: &Context,
    function: &'static str,
    namespace: &str,
) -> Result<Option<(Api<Pod>, String, PodGuard)>, FunctionError> {
    let Some(a) = ctx.actionset.as_ref().filter(|a| !a.phase.is_empty()) else {
        return Ok(None);
    };
    let Some(recorded) = a.resume.as_ref() else {
        return Ok(None);
    };
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let selector = format!("{LABEL_ACTIONSET_UID}={},{LABEL_PHASE}={}", a.uid, a.phase);
    let pods = api
        .list(&kube::api::ListParams::default().labels(&selector))
        .await
        .map_err(|e| {
            FunctionError::kube(
                function,
                format!("looking for the pod of the resumed phase in namespace {namespace}"),
                e,
            )
        })?;
    let mut live = pods
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none());
    if let Some(p) = live.next() {
        let name = p.metadata.name.clone().unwrap_or_default();
        tracing::info!(pod = %name, namespace, "re-attached to the pod of a phase that ran across a controller restart");
        let guard = PodGuard::new(api.clone(), name.clone());
        let full = format!("{namespace}/{name}");
        // Created but not recorded (the restart came in between): record it.
        if !recorded.contains(&full) {
            note(ctx, StepEvent::PodCreated(full)).await;
        }
        return Ok(Some((api, name, guard)));
    }
    if let Some(gone) = recorded.first() {
        let why = if pods.items.is_empty() {
            "is gone (deleted, or evicted and removed)"
        } else {
            "is being deleted"
        };
        return Err(FunctionError::failed(
            function,
            format!(
                "the controller restarted while this phase ran, and its pod {gone} {why}: the phase was not re-run because it may not be idempotent"
            ),
        ));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(
            json!({"metadata": {"labels": {"createdBy": "kanister"}}, "spec": spec}),
        )
        .unwrap()
    }

    fn ctl() -> ControllerIdentity {
        ControllerIdentity {
            namespace: "kanister".into(),
            service_account: "controller-sa".into(),
        }
    }

    #[test]
    fn actionset_link_is_added_and_kept_with_other_labels() {
        let mut p = pod(json!({"containers": []}));
        let a = ActionSetRef {
            uid: "u-1".into(),
            namespace: "app".into(),
            name: "backup-x".into(),
            phase: phase_key(0, Some(2)),
            ..ActionSetRef::default()
        };
        stamp(&mut p, "app", Some(&a), None);
        let labels = p.metadata.labels.unwrap();
        assert_eq!(labels[LABEL_PHASE], "0.2");
        assert_eq!(phase_key(1, None), "1.defer");
        assert_eq!(labels[LABEL_ACTIONSET_UID], "u-1");
        assert_eq!(labels[LABEL_ACTIONSET_NAMESPACE], "app");
        assert_eq!(labels["createdBy"], "kanister");
        assert_eq!(
            p.metadata.annotations.unwrap()[ANNOTATION_ACTIONSET],
            "app/backup-x"
        );
        let mut q = pod(json!({"containers": []}));
        stamp(&mut q, "app", None, None);
        assert!(!q.metadata.labels.unwrap().contains_key(LABEL_ACTIONSET_UID));
    }

    #[test]
    fn controller_service_account_only_in_its_namespace_and_only_when_unset() {
        let sa = |p: &Pod| p.spec.as_ref().unwrap().service_account_name.clone();
        let mut p = pod(json!({"containers": []}));
        stamp(&mut p, "kanister", None, Some(&ctl()));
        assert_eq!(sa(&p).as_deref(), Some("controller-sa"));

        let mut p = pod(json!({"containers": []}));
        stamp(&mut p, "app", None, Some(&ctl()));
        assert_eq!(sa(&p), None, "another namespace keeps its default");

        let mut p = pod(json!({"containers": [], "serviceAccountName": "mine"}));
        stamp(&mut p, "kanister", None, Some(&ctl()));
        assert_eq!(sa(&p).as_deref(), Some("mine"), "a chosen one wins");

        let mut p = pod(json!({"containers": [], "serviceAccount": "old-field"}));
        stamp(&mut p, "kanister", None, Some(&ctl()));
        assert_eq!(sa(&p), None, "the deprecated field counts as chosen");

        let mut p = pod(json!({"containers": []}));
        stamp(&mut p, "kanister", None, None);
        assert_eq!(sa(&p), None, "unknown controller identity: nothing set");
    }
}
