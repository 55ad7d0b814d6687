//! The admission webhook through a real kube-apiserver, with the CRDs our manifests install
//! (manifests/crds and manifests/kanister-crds). The cases are in support/webhook_e2e.rs;
//! tests/e2e_webhook_kanister.rs runs them with Kanister's own CRDs.

crate::webhook_e2e::admission_cases!(crate::webhook_e2e::Crds::Manifests);
