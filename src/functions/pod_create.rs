//! The one place where functions create pods (KubeTask, MultiContainerRun,
//! PrepareData and the data functions' helper pods), and what every such pod
//! gets on top of what its function built:
//!
//! - labels linking it to its ActionSet ([`LABEL_ACTIONSET_UID`],
//!   [`LABEL_ACTIONSET_NAMESPACE`]; the name in [`ANNOTATION_ACTIONSET`], too
//!   long for a label value), so that pods a killed controller left behind
//!   can be found and deleted (`executor::pod_sweep`);
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

/// The ActionSet a function runs for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActionSetRef {
    pub uid: String,
    pub namespace: String,
    pub name: String,
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
    Ok((api, name, guard))
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
        };
        stamp(&mut p, "app", Some(&a), None);
        let labels = p.metadata.labels.unwrap();
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
