//! Admission handlers: an `AdmissionReview` (bytes) in, an HTTP status and body out.
//!
//! Everything here is pure: no I/O, no clock, no global state, so the same input always gives
//! the same answer (GitOps tools re-apply and dry-run the same manifests many times) and the
//! fuzz target and the property tests can call it directly. The one lookup the webhook needs
//! (the Blueprint an ActionSchedule refers to) is done by the server between [`parse`] and
//! [`decide`] and handed in as a [`Lookup`].
//!
//! HTTP contract (admission.k8s.io/v1):
//! * 200 with an `AdmissionReview` whose `response.uid` echoes the request: allowed, allowed
//!   with a `JSONPatch`, or denied (code 422, reason `Invalid`, every error listed in the
//!   message and in `details.causes` with its field path).
//! * 400 with a plain-text reason when the body is not JSON, not an `admission.k8s.io/v1`
//!   `AdmissionReview`, has no `request`, or is about a kind this route does not handle. The API
//!   server treats that as a call error and applies `failurePolicy`.
//! * 413 (in the server) for bodies over [`MAX_BODY_BYTES`].
//! * `dryRun: true` gets exactly the same answer: the handlers have no side effects.

use std::collections::BTreeSet;

use base64::Engine as _;
use json_patch::Patch;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use serde_json::Value;

use super::metrics::Verdict;
use super::response::{BlueprintRef, Lookup, deny, limit_warnings};
use crate::blueprint::{self, Problem, Rule};
use crate::executor::ownership::Ownership;

/// Largest request body accepted: 7 MiB.
///
/// The API server accepts request bodies up to 3 MiB and etcd stores objects up to ~1.5 MiB. An
/// UPDATE review carries `object` and `oldObject` (each up to ~3 MiB as JSON before the etcd
/// check, since admission runs before storage) plus the request metadata, so a legitimate review
/// stays under 2 × 3 MiB + headroom. Anything larger cannot come from the API server and is
/// refused with 413 before it is parsed.
pub const MAX_BODY_BYTES: usize = 7 * 1024 * 1024;

const ADMISSION_API_VERSION: &str = "admission.k8s.io/v1";
const ADMISSION_KIND: &str = "AdmissionReview";
const KANISTER_GROUP: &str = "cr.kanister.io";
const SCHEDULE_GROUP: &str = "blueprint-operator.io";

/// The webhook's admission routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    MutateBlueprint,
    ValidateBlueprint,
    ValidateActionSchedule,
    /// Claims ActionSets at creation (`super::claim`).
    MutateActionSet,
}

impl Route {
    pub const ALL: [Route; 4] = [
        Route::MutateBlueprint,
        Route::ValidateBlueprint,
        Route::ValidateActionSchedule,
        Route::MutateActionSet,
    ];

    pub fn path(self) -> &'static str {
        match self {
            Route::MutateBlueprint => "/mutate/blueprint",
            Route::ValidateBlueprint => "/validate/blueprint",
            Route::ValidateActionSchedule => "/validate/actionschedule",
            Route::MutateActionSet => "/mutate/actionset",
        }
    }

    pub fn from_path(path: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|r| r.path() == path)
    }

    /// The (group, kind) of objects this route reviews.
    fn expects(self) -> (&'static str, &'static str) {
        match self {
            Route::MutateBlueprint | Route::ValidateBlueprint => (KANISTER_GROUP, "Blueprint"),
            Route::ValidateActionSchedule => (SCHEDULE_GROUP, "ActionSchedule"),
            Route::MutateActionSet => (KANISTER_GROUP, "ActionSet"),
        }
    }
}

/// The answer to one HTTP call.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// HTTP status: 200, 400 or 500.
    pub status: u16,
    /// `application/json` (an AdmissionReview) when `status` is 200, else `text/plain`.
    pub body: Vec<u8>,
    pub verdict: Verdict,
    /// Request uid, when the review could be read (for logs).
    pub uid: Option<String>,
    pub dry_run: bool,
    /// One line for the log: the reason of a 400/denial, or a summary.
    pub summary: String,
}

impl Outcome {
    /// A request answered without a review: `why` is the plain-text body, `summary` the log's.
    pub fn refused(status: u16, verdict: Verdict, why: String, summary: impl Into<String>) -> Self {
        Outcome {
            status,
            body: why.into_bytes(),
            verdict,
            uid: None,
            dry_run: false,
            summary: summary.into(),
        }
    }

    fn bad_request(reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Self::refused(400, Verdict::BadRequest, reason.clone(), reason)
    }

    pub fn is_json(&self) -> bool {
        self.status == 200
    }
}

/// A readable review: the typed request (with `object`/`oldObject` taken out) and the object
/// exactly as received.
#[derive(Debug)]
pub struct Parsed {
    pub route: Route,
    pub request: AdmissionRequest<DynamicObject>,
    /// `request.object` as received (never re-serialized from a typed struct, so the patch is
    /// computed against exactly what the API server holds, unknown fields included).
    pub object: Option<Value>,
}

/// Parses and checks a review for `route`; `Err` is the 400 answer.
pub fn parse(route: Route, body: &[u8]) -> Result<Parsed, Outcome> {
    let mut value: Value = serde_json::from_slice(body)
        .map_err(|e| Outcome::bad_request(format!("request body is not valid JSON: {e}")))?;
    let Some(top) = value.as_object_mut() else {
        return Err(Outcome::bad_request(format!(
            "expected an {ADMISSION_API_VERSION} {ADMISSION_KIND} object, got a JSON {}",
            json_type(&value)
        )));
    };
    let api_version = top.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = top.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != ADMISSION_API_VERSION || kind != ADMISSION_KIND {
        return Err(Outcome::bad_request(format!(
            "expected apiVersion {ADMISSION_API_VERSION:?} and kind {ADMISSION_KIND:?}, got apiVersion {api_version:?} and kind {kind:?}; list \"v1\" first in admissionReviewVersions"
        )));
    }
    // The object is kept as JSON (the checks read it, the patch is computed against it); the
    // typed request gets neither it nor the old object, which nothing here reads.
    let object = match top.get_mut("request") {
        Some(Value::Object(request)) => {
            request.remove("oldObject");
            request.remove("object")
        }
        Some(_) => {
            return Err(Outcome::bad_request(
                "AdmissionReview.request must be an object",
            ));
        }
        None => return Err(Outcome::bad_request("AdmissionReview has no request")),
    };
    let review: AdmissionReview<DynamicObject> = serde_json::from_value(value)
        .map_err(|e| Outcome::bad_request(format!("AdmissionReview does not decode: {e}")))?;
    let request: AdmissionRequest<DynamicObject> = review
        .try_into()
        .map_err(|_| Outcome::bad_request("AdmissionReview has no request"))?;
    let object = object.filter(|o| !o.is_null());

    let (group, kind) = route.expects();
    if request.kind.group != group || request.kind.kind != kind {
        let mut out = Outcome::bad_request(format!(
            "{} reviews {group} {kind} objects, got {:?} {:?} (check the rules of the webhook configuration)",
            route.path(),
            request.kind.group,
            request.kind.kind
        ));
        out.uid = Some(request.uid.clone());
        return Err(out);
    }
    if let Some(obj) = &object
        && !obj.is_object()
    {
        let mut out = Outcome::bad_request(format!(
            "request.object must be a JSON object, got a JSON {}",
            json_type(obj)
        ));
        out.uid = Some(request.uid.clone());
        return Err(out);
    }
    Ok(Parsed {
        route,
        request,
        object,
    })
}

/// The pure handler used by the fuzz target and the property tests: parse and decide, with no
/// Blueprint lookup for ActionSchedules. Returns the HTTP status and body.
pub fn handle_review(route: Route, body: &[u8]) -> (u16, Vec<u8>) {
    // Without the server's flags, only labelled ActionSets are claimed.
    let out = review(route, body, &Ownership::default(), |_| {
        Lookup::NotChecked("no API access in this context".into())
    });
    (out.status, out.body)
}

/// Parses, looks up what is needed through `lookup` (called with `(namespace, name)` of each
/// Blueprint an ActionSchedule refers to) and decides.
pub fn review(
    route: Route,
    body: &[u8],
    claims: &Ownership,
    mut lookup: impl FnMut(&BlueprintRef) -> Lookup,
) -> Outcome {
    if body.len() > MAX_BODY_BYTES {
        let why = too_large_message(body.len());
        return Outcome::refused(413, Verdict::TooLarge, why, "body over the limit");
    }
    match parse(route, body) {
        Ok(parsed) => {
            let found: Vec<(BlueprintRef, Lookup)> = parsed
                .blueprint_refs()
                .into_iter()
                .map(|r| {
                    let l = lookup(&r);
                    (r, l)
                })
                .collect();
            decide(parsed, &found, claims)
        }
        Err(out) => out,
    }
}

/// The 413 text.
pub fn too_large_message(len: usize) -> String {
    format!(
        "request body of {len} bytes is over the webhook's limit of {MAX_BODY_BYTES} bytes (an AdmissionReview from the API server is at most about twice its 3 MiB request limit)"
    )
}

impl Parsed {
    /// For an ActionSchedule: the Blueprints its ActionSet template uses (deduplicated).
    pub fn blueprint_refs(&self) -> Vec<BlueprintRef> {
        match (&self.object, self.route) {
            (Some(obj), Route::ValidateActionSchedule) if self.needs_review() => {
                super::schedule::blueprint_refs(obj, self.request.namespace.as_deref())
            }
            _ => Vec::new(),
        }
    }

    /// DELETE and CONNECT are allowed as they are, and so is an object that is being deleted
    /// (blocking it would keep finalizers from being removed from a Blueprint stored before
    /// the webhook was installed).
    fn needs_review(&self) -> bool {
        matches!(
            self.request.operation,
            Operation::Create | Operation::Update
        ) && self
            .object
            .as_ref()
            .and_then(|o| o.get("metadata"))
            .and_then(|m| m.get("deletionTimestamp"))
            .is_none_or(Value::is_null)
    }
}

/// Decides on a parsed review. `lookups` holds the result for each of
/// [`Parsed::blueprint_refs`] (missing entries count as not checked); `claims` says which
/// ActionSets `/mutate/actionset` claims.
pub fn decide(parsed: Parsed, lookups: &[(BlueprintRef, Lookup)], claims: &Ownership) -> Outcome {
    let uid = parsed.request.uid.clone();
    let dry_run = parsed.request.dry_run;
    let refused = |reason: String| {
        let mut out = Outcome::bad_request(reason);
        out.uid = Some(uid.clone());
        out.dry_run = dry_run;
        out
    };
    let base = AdmissionResponse::from(&parsed.request);
    let (response, verdict, summary) = match (&parsed.object, parsed.route) {
        _ if !parsed.needs_review() => (
            base,
            Verdict::Allowed,
            "not reviewed (operation or deletion)".to_owned(),
        ),
        (None, _) => {
            let operation = serde_json::to_value(&parsed.request.operation)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            return refused(format!(
                "request.object is missing for a {operation} request"
            ));
        }
        (Some(obj), Route::MutateBlueprint) => mutate_blueprint(base, obj),
        (Some(obj), Route::ValidateBlueprint) => validate_blueprint(base, obj),
        (Some(obj), Route::ValidateActionSchedule) => super::schedule::validate(base, obj, lookups),
        (Some(obj), Route::MutateActionSet) => {
            super::claim::review(base, &parsed.request, obj, claims)
        }
    };
    match encode_review(response) {
        Ok(body) => Outcome {
            status: 200,
            body,
            verdict,
            uid: Some(uid),
            dry_run,
            summary,
        },
        Err(e) => Outcome {
            status: 500,
            body: format!("could not encode the AdmissionReview: {e}").into_bytes(),
            verdict: Verdict::Error,
            uid: Some(uid),
            dry_run,
            summary: e.to_string(),
        },
    }
}

/// The AdmissionReview JSON. kube serializes `response.patch` (a `Vec<u8>`) as an array of
/// numbers, which Go decodes too; we send the canonical form, a base64 string, as Go clients
/// do (a third of the size, and what people reading logs expect).
fn encode_review(response: AdmissionResponse) -> serde_json::Result<Vec<u8>> {
    if response.patch.is_none() {
        // Nothing to rewrite: written in one pass, the same bytes as through a `Value` (whose
        // maps keep the fields' order).
        return serde_json::to_vec(&response.into_review());
    }
    let mut value = serde_json::to_value(response.into_review())?;
    if let Some(patch) = value.pointer_mut("/response/patch")
        && let Value::Array(items) = patch
    {
        let bytes: Vec<u8> = items
            .iter()
            .filter_map(Value::as_u64)
            .filter_map(|b| u8::try_from(b).ok())
            .collect();
        *patch = Value::String(base64::engine::general_purpose::STANDARD.encode(bytes));
    }
    serde_json::to_vec(&value)
}

fn object_name(obj: &Value) -> String {
    let metadata = obj.get("metadata");
    metadata
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .or_else(|| {
            metadata
                .and_then(|m| m.get("generateName"))
                .and_then(Value::as_str)
        })
        .unwrap_or("")
        .to_owned()
}

/// `/mutate/blueprint`: the normalization patch, or a denial for what cannot be normalized
/// (a deferPhase list of two or more phases, or of phases emptied by the CRD's schema).
fn mutate_blueprint(base: AdmissionResponse, obj: &Value) -> (AdmissionResponse, Verdict, String) {
    let lists = defer_phase_lists(obj);
    if !lists.is_empty() {
        let report = blueprint::validate(obj);
        let mut problems: Vec<Problem> = report
            .errors
            .into_iter()
            .filter(|p| p.rule == Rule::DeferPhaseList && lists.contains(&p.path))
            .collect();
        if problems.is_empty() {
            // The validator found nothing to say: explain it ourselves.
            problems = lists
                .iter()
                .map(|path| Problem {
                    path: path.clone(),
                    action: None,
                    phase: None,
                    rule: Rule::DeferPhaseList,
                    message: "deferPhase takes exactly one phase, found a list: keep one cleanup phase as deferPhase and move the other steps into it, into the main phases, or into a separate action".into(),
                })
                .collect();
        }
        let n = problems.len();
        return (
            deny(base, &object_name(obj), "cannot be normalized", &problems),
            Verdict::Denied,
            format!("{n} deferPhase list(s) that cannot be normalized"),
        );
    }
    let patch: Patch = blueprint::normalization_patch(obj)
        .unwrap_or_else(|| json_patch::diff(obj, &blueprint::normalize(obj)));
    if patch.0.is_empty() {
        return (base, Verdict::Allowed, "already normalized".into());
    }
    let ops = patch.0.len();
    match base.clone().with_patch(patch) {
        Ok(resp) => (resp, Verdict::Patched, format!("{ops} patch operation(s)")),
        // Serializing a patch of JSON values cannot fail; answer without one if it ever did.
        Err(e) => (base, Verdict::Allowed, format!("patch not sent: {e}")),
    }
}

/// Paths (`actions.<a>.deferPhase`) of deferPhase lists that cannot be normalized: two or more
/// elements, or phases the API server emptied (the CRD's schema check after mutation would
/// refuse such a list with its own words before the validating webhook explains it).
fn defer_phase_lists(obj: &Value) -> BTreeSet<String> {
    obj.get("actions")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, action)| {
            action
                .get("deferPhase")
                .and_then(Value::as_array)
                .is_some_and(|l| l.len() >= 2 || blueprint::is_pruned_list(l))
        })
        .map(|(name, _)| format!("actions.{name}.deferPhase"))
        .collect()
}

/// `/validate/blueprint`: deny with every error; warnings go into the response.
fn validate_blueprint(
    base: AdmissionResponse,
    obj: &Value,
) -> (AdmissionResponse, Verdict, String) {
    let report = blueprint::validate(obj);
    let warnings = limit_warnings(report.warnings.iter().map(|w| w.to_string()));
    if !report.errors.is_empty() {
        let n = report.errors.len();
        let mut resp = deny(base, &object_name(obj), "is invalid", &report.errors);
        resp.warnings = warnings;
        return (resp, Verdict::Denied, format!("{n} error(s)"));
    }
    let mut resp = base;
    let n = report.warnings.len();
    resp.warnings = warnings;
    (resp, Verdict::Allowed, format!("valid, {n} warning(s)"))
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(object: Value) -> Parsed {
        let body = json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u1",
                "kind": {"group": "cr.kanister.io", "version": "v1alpha1", "kind": "Blueprint"},
                "resource": {"group": "cr.kanister.io", "version": "v1alpha1", "resource": "blueprints"},
                "namespace": "default",
                "operation": "CREATE",
                "userInfo": {"username": "tester", "groups": ["a"]},
                "object": object,
            }
        });
        parse(
            Route::ValidateBlueprint,
            &serde_json::to_vec(&body).unwrap(),
        )
        .unwrap()
    }

    /// The one-pass encoding writes the same bytes as the encoding through a `Value`.
    #[test]
    fn one_pass_encoding_is_the_value_encoding() {
        let object = json!({
            "metadata": {"name": "b"},
            "actions": {"backup": {"phases": [
                {"func": "KubeTask", "name": "a b", "args": {"image": "x", "command": "echo {{ .Nope }}"}},
                {"func": "KubeTsk", "args": {}},
            ]}},
        });
        let p = parsed(object.clone());
        let base = AdmissionResponse::from(&p.request);
        let (resp, verdict, _) = validate_blueprint(base, &object);
        assert_eq!(verdict, Verdict::Denied);
        assert!(resp.warnings.is_some());
        let through_value =
            serde_json::to_vec(&serde_json::to_value(resp.clone().into_review()).unwrap()).unwrap();
        assert_eq!(
            String::from_utf8(encode_review(resp).unwrap()).unwrap(),
            String::from_utf8(through_value).unwrap()
        );
    }
}
