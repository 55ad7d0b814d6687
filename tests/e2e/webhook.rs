//! The admission webhook through a real kube-apiserver, with the CRDs our manifests install
//! (manifests/crds and manifests/kanister-crds). The cases are in support/webhook_e2e.rs;
//! e2e_webhook_kanister runs them with Kanister's own CRDs.

mod support;
#[path = "support/webhook_e2e.rs"]
mod webhook_e2e;

webhook_e2e::admission_cases!(webhook_e2e::Crds::Manifests);
