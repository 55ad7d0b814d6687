//! The ActionSet step an action runs for ([`ActionSetRef`]), through which it records what it
//! did ([`StepEvent`]) before going on, and the controller's identity ([`ControllerIdentity`]):
//! what the executor hands the functions and what every pod they create is stamped with.

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

/// The ActionSet a function runs for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActionSetRef {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    /// The running step ([`crate::model::labels::phase_key`]); "" outside a phase.
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

impl ActionSetRef {
    /// Records `event` through the step hook (nothing outside a phase).
    pub async fn note(&self, event: StepEvent) {
        if let Some(hook) = &self.on_step {
            (hook.0)(event).await;
        }
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
