//! Creating a pod for a phase: what every pod a function makes gets on top of what its
//! function built, and its cleanup.
//!
//! - labels linking it to its ActionSet ([`LABEL_ACTIONSET_UID`],
//!   [`LABEL_ACTIONSET_NAMESPACE`]; the name in [`ANNOTATION_ACTIONSET`], too
//!   long for a label value), so that pods a killed controller left behind
//!   can be found and deleted (`executor::pod_sweep`), and to the phase that
//!   created it ([`LABEL_PHASE`]), so that a restarted controller finds the
//!   pod of the phase that was running and re-attaches to it
//!   ([`super::run_pod`]);
//! - its `<namespace>/<name>` is handed to the executor right after the
//!   create ([`crate::step::StepHook`]), which records it in the ActionSet: after a
//!   restart, a pod recorded but gone was deleted or evicted (the phase
//!   fails), a pod never recorded nor found was never created (the phase
//!   runs);
//! - the controller's ServiceAccount when the pod runs in the controller's
//!   namespace and neither the function nor `podOverride` chose one, as
//!   Kanister's `GetPodObjectFromPodOptions` / MultiContainerRun's
//!   `setPodSpecServiceAccount` do (Blueprints run `kubectl` in such pods);
//! - a guard ([`PodGuard`]) that deletes it when the phase ends or is dropped; in an
//!   executor's step, where the pod is recorded as it is created, a dropped guard (the phase
//!   was cancelled, by its timeout or a deletion) leaves the pod to the executor, which keeps
//!   its last log lines once the failure is recorded and then deletes it
//!   (`executor::pod_logs`).

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};

use super::PodError;
use crate::model::labels::{
    ANNOTATION_ACTIONSET, LABEL_ACTIONSET_NAMESPACE, LABEL_ACTIONSET_UID, LABEL_PHASE,
};
use crate::step::{ActionSetRef, ControllerIdentity, StepEvent};

/// What creating a pod needs from the running action: the cluster, the ActionSet step it is
/// created for (labels, a resumed step's pod, the step hook) and the controller's identity.
#[derive(Clone, Copy)]
pub struct PodEnv<'a> {
    pub client: &'a kube::Client,
    pub actionset: Option<&'a ActionSetRef>,
    pub controller: Option<&'a ControllerIdentity>,
}

impl<'a> PodEnv<'a> {
    /// The ActionSet, when running one of its phases.
    pub fn phase(&self) -> Option<&'a ActionSetRef> {
        self.actionset.filter(|a| !a.phase.is_empty())
    }

    async fn note(&self, event: StepEvent) {
        if let Some(a) = self.actionset {
            a.note(event).await;
        }
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
    env: PodEnv<'_>,
    function: &'static str,
    namespace: &str,
    mut pod: Pod,
) -> Result<(Api<Pod>, String, PodGuard), PodError> {
    stamp(&mut pod, namespace, env.actionset, env.controller);
    let api: Api<Pod> = Api::namespaced(env.client.clone(), namespace);
    let created = api
        .create(&PostParams::default(), &pod)
        .await
        .map_err(|e| {
            PodError::kube(
                function,
                format!("creating pod in namespace {namespace}"),
                e,
            )
        })?;
    let name = created.metadata.name.clone().unwrap_or_default();
    let guard = PodGuard::for_step(env, api.clone(), name.clone());
    env.note(StepEvent::PodCreated(format!("{namespace}/{name}")))
        .await;
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
    env: PodEnv<'_>,
    function: &'static str,
    namespace: &str,
) -> Result<Option<(Api<Pod>, String, PodGuard)>, PodError> {
    let Some(a) = env.phase() else {
        return Ok(None);
    };
    let Some(recorded) = a.resume.as_ref() else {
        return Ok(None);
    };
    let api: Api<Pod> = Api::namespaced(env.client.clone(), namespace);
    let selector = format!("{LABEL_ACTIONSET_UID}={},{LABEL_PHASE}={}", a.uid, a.phase);
    let pods = api
        .list(&kube::api::ListParams::default().labels(&selector))
        .await
        .map_err(|e| {
            PodError::kube(
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
        let guard = PodGuard::for_step(env, api.clone(), name.clone());
        let full = format!("{namespace}/{name}");
        // Created but not recorded (the restart came in between): record it.
        if !recorded.contains(&full) {
            env.note(StepEvent::PodCreated(full)).await;
        }
        return Ok(Some((api, name, guard)));
    }
    if let Some(gone) = recorded.first() {
        let why = if pods.items.is_empty() {
            "is gone (deleted, or evicted and removed)"
        } else {
            "is being deleted"
        };
        return Err(PodError::failed(
            function,
            format!(
                "the controller restarted while this phase ran, and its pod {gone} {why}: the phase was not re-run because it may not be idempotent"
            ),
        ));
    }
    Ok(None)
}

/// Deletes the pod when dropped unless [`PodGuard::delete`] ran: the executor
/// may drop the phase future at any await point. The delete runs as a task
/// on the current Tokio runtime (best effort; nothing runs if there is none).
/// A guard made [`PodGuard::for_step`] in an executor's step leaves a dropped pod to the
/// executor instead: deleting it here would race the capture of its last log lines.
pub struct PodGuard {
    api: Api<Pod>,
    name: Option<String>,
    /// Delete on drop (false: the executor recorded the pod and deletes it once the step's
    /// result and the pod's log lines are recorded).
    on_drop: bool,
}

impl PodGuard {
    pub fn new(api: Api<Pod>, name: String) -> Self {
        PodGuard {
            api,
            name: Some(name),
            on_drop: true,
        }
    }

    /// The guard of a pod `env`'s step created: outside an executor's step (no step hook
    /// records the pod) as [`PodGuard::new`]; inside, dropping it leaves the pod to the
    /// executor.
    pub fn for_step(env: PodEnv<'_>, api: Api<Pod>, name: String) -> Self {
        let recorded = env.phase().is_some_and(|a| a.on_step.is_some());
        PodGuard {
            api,
            name: Some(name),
            on_drop: !recorded,
        }
    }

    /// Leave the pod (someone else deletes it).
    pub fn keep(mut self) {
        self.name = None;
    }

    /// Delete the pod now (errors are logged: the phase result does not depend on them).
    pub async fn delete(mut self) {
        if let Some(name) = self.name.take() {
            delete_pod(&self.api, &name).await;
        }
    }
}

impl Drop for PodGuard {
    fn drop(&mut self) {
        if let Some(name) = self.name.take().filter(|_| self.on_drop)
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            let api = self.api.clone();
            handle.spawn(async move { delete_pod(&api, &name).await });
        }
    }
}

async fn delete_pod(api: &Api<Pod>, name: &str) {
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => tracing::debug!(pod = name, "deleted task pod"),
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => tracing::warn!(pod = name, error = %e, "could not delete task pod"),
    }
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
            phase: crate::model::labels::phase_key(0, Some(2)),
            ..ActionSetRef::default()
        };
        stamp(&mut p, "app", Some(&a), None);
        let labels = p.metadata.labels.unwrap();
        assert_eq!(labels[LABEL_PHASE], "0.2");
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
