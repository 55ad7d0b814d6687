//! What a function gets from the running action ([`Context`]): the client, the ActionSet's
//! namespace, object and pod settings, and the link to the ActionSet and step it runs for
//! ([`ActionSetRef`]), through which it records what it did ([`StepEvent`]) before going on.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// What a function needs from the running action.
#[derive(Clone)]
pub struct Context {
    pub client: kube::Client,
    /// ActionSet namespace: default for `namespace` args.
    pub namespace: String,
    /// The action's target object.
    pub object: crate::model::ObjectReference,
    /// The ActionSet's `podOverride` (wins over the Blueprint's).
    pub pod_override: Option<Map<String, Value>>,
    pub pod_labels: BTreeMap<String, String>,
    pub pod_annotations: BTreeMap<String, String>,
    /// The ActionSet being run: every pod a function creates is labelled
    /// with it ([`super::pod`]); `None` outside the executor.
    pub actionset: Option<ActionSetRef>,
    /// The controller's namespace and ServiceAccount: pods created in that
    /// namespace run as that ServiceAccount unless they name one.
    pub controller: Option<ControllerIdentity>,
}

pub use crate::step::{
    ActionSetRef, ControllerIdentity, NAMESPACE_FILE, SERVICE_ACCOUNT_ENV, StepEvent, StepHook,
};

impl Context {
    /// What the pods this action creates need from it.
    pub fn pods(&self) -> crate::pods::PodEnv<'_> {
        crate::pods::PodEnv {
            client: &self.client,
            actionset: self.actionset.as_ref(),
            controller: self.controller.as_ref(),
        }
    }
}

/// Records `event` through the context's hook (nothing outside a phase).
pub async fn note(ctx: &Context, event: StepEvent) {
    if let Some(a) = &ctx.actionset {
        a.note(event).await;
    }
}
