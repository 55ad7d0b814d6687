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

use std::borrow::Cow;
use std::collections::BTreeSet;

use base64::Engine as _;
use json_patch::Patch;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use serde_json::Value;
use serde_json::value::RawValue;

use super::answers::{Answer, Answers};
use super::metrics::Verdict;
use super::response::{BlueprintRef, Lookup, deny, limit_warnings};
use crate::blueprint::{self, AsTree, Problem, Rule, Tree};

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
    /// Answered from [`Answers`] (an object seen before).
    pub remembered: bool,
}

impl Outcome {
    pub(super) fn bad_request(reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Outcome {
            status: 400,
            body: reason.clone().into_bytes(),
            verdict: Verdict::BadRequest,
            uid: None,
            dry_run: false,
            summary: reason,
            remembered: false,
        }
    }

    pub fn is_json(&self) -> bool {
        self.status == 200
    }
}

/// A readable review: the typed request (with `object`/`oldObject` taken out) and the object
/// exactly as received.
#[derive(Debug)]
pub struct Parsed<'a> {
    pub route: Route,
    pub request: AdmissionRequest<DynamicObject>,
    /// `request.object` as received (never re-serialized from a typed struct, so the patch is
    /// computed against exactly what the API server holds, unknown fields included).
    pub object: Option<Object<'a>>,
}

/// `request.object`, decoded as its route reads it.
#[derive(Debug)]
pub enum Object<'a> {
    /// `/validate/blueprint`: the tree the checks read, borrowing from the request body (about
    /// half the cost of decoding a `Value`, see [`blueprint::decode`]).
    Tree(Tree<'a>),
    /// `/mutate/blueprint` (normalized, and patched against it) and ActionSchedules.
    Value(Value),
}

impl Object<'_> {
    /// The object as a `Value` (copied from a tree, which only `/validate/blueprint` reads).
    fn value(&self) -> Cow<'_, Value> {
        match self {
            Object::Tree(tree) => Cow::Owned(tree.into()),
            Object::Value(value) => Cow::Borrowed(value),
        }
    }

    /// Whether `metadata.deletionTimestamp` is set.
    fn is_being_deleted(&self) -> bool {
        match self {
            Object::Tree(tree) => !tree.get("metadata").get("deletionTimestamp").is_null(),
            Object::Value(value) => blueprint::get(value, "metadata")
                .and_then(|m| blueprint::get(m, "deletionTimestamp"))
                .is_some_and(|t| !t.is_null()),
        }
    }
}

impl AsTree for Object<'_> {
    fn tree(&self) -> Cow<'_, Tree<'_>> {
        match self {
            Object::Tree(tree) => tree.tree(),
            Object::Value(value) => value.tree(),
        }
    }
}

/// A review read up to its object: the typed request, and the object's JSON text not yet
/// decoded (a remembered answer needs no more, see [`super::answers`]).
#[derive(Debug)]
pub struct Envelope<'a> {
    pub route: Route,
    pub request: AdmissionRequest<DynamicObject>,
    /// `request.object` exactly as received; `None` when absent or null.
    pub object: Option<&'a RawValue>,
}

/// The fields of a JSON object in their order, values not decoded. Kept in order (and a
/// repeated name twice) so that decoding them gives what decoding the object would: the same
/// value, and the same first error for the same body.
type RawFields<'a> = Vec<(String, &'a RawValue)>;

/// The last value of `name`, as a JSON decoder keeps it.
fn field<'a>(fields: &[(String, &'a RawValue)], name: &str) -> Option<&'a RawValue> {
    fields
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| *v)
}

/// An AdmissionReview's fields and its `request`'s, read in one pass, values not decoded.
struct ReviewFields<'a> {
    top: RawFields<'a>,
    /// The request's fields, or the JSON type it has instead of an object.
    request: Option<Result<RawFields<'a>, &'static str>>,
}

impl<'de> serde::Deserialize<'de> for ReviewFields<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TopVisitor)
    }
}

struct TopVisitor;

impl<'de> serde::de::Visitor<'de> for TopVisitor {
    type Value = ReviewFields<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut top = RawFields::new();
        let mut request = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "request" {
                request = Some(map.next_value::<MaybeFields>()?.0);
            } else {
                top.push((key, map.next_value()?));
            }
        }
        Ok(ReviewFields { top, request })
    }
}

/// An object's fields, or the JSON type of what is there instead.
struct MaybeFields<'a>(Result<RawFields<'a>, &'static str>);

impl<'de> serde::Deserialize<'de> for MaybeFields<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FieldsVisitor)
    }
}

struct FieldsVisitor;

impl<'de> serde::de::Visitor<'de> for FieldsVisitor {
    type Value = MaybeFields<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = RawFields::new();
        while let Some(key) = map.next_key::<String>()? {
            fields.push((key, map.next_value()?));
        }
        Ok(MaybeFields(Ok(fields)))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(MaybeFields(Err("array")))
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(MaybeFields(Err("string")))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(MaybeFields(Err("boolean")))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(MaybeFields(Err("number")))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(MaybeFields(Err("number")))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(MaybeFields(Err("number")))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(MaybeFields(Err("null")))
    }
}

fn not_json(e: serde_json::Error) -> Outcome {
    Outcome::bad_request(format!("request body is not valid JSON: {e}"))
}

/// Reads a review for `route` up to its object; `Err` is the 400 answer.
///
/// One pass over the body: the object (most of the bytes) is checked to be JSON but not
/// decoded, and `oldObject` is skipped, nothing here uses it. The small rest is decoded through
/// a `Value` into kube's typed request.
pub fn parse_envelope(route: Route, body: &[u8]) -> Result<Envelope<'_>, Outcome> {
    let ReviewFields { top, request } = match serde_json::from_slice(body) {
        Ok(fields) => fields,
        // Not an object, or not JSON: decoded again only to say which.
        Err(e) => {
            return Err(match serde_json::from_slice::<Value>(body) {
                Err(e) => not_json(e),
                Ok(v) if !v.is_object() => Outcome::bad_request(format!(
                    "expected an {ADMISSION_API_VERSION} {ADMISSION_KIND} object, got a JSON {}",
                    json_type(&v)
                )),
                Ok(_) => not_json(e),
            });
        }
    };
    let text_of = |raw: Option<&RawValue>| {
        raw.and_then(|r| serde_json::from_str::<String>(r.get()).ok())
            .unwrap_or_default()
    };
    let api_version = text_of(field(&top, "apiVersion"));
    let review_kind = text_of(field(&top, "kind"));
    if api_version != ADMISSION_API_VERSION || review_kind != ADMISSION_KIND {
        return Err(Outcome::bad_request(format!(
            "expected apiVersion {ADMISSION_API_VERSION:?} and kind {ADMISSION_KIND:?}, got apiVersion {api_version:?} and kind {review_kind:?}; list \"v1\" first in admissionReviewVersions"
        )));
    }
    let fields = match request {
        Some(Ok(fields)) => fields,
        Some(Err(_)) => {
            return Err(Outcome::bad_request(
                "AdmissionReview.request must be an object",
            ));
        }
        None => return Err(Outcome::bad_request("AdmissionReview has no request")),
    };
    let object = field(&fields, "object").filter(|o| raw_type(o) != "null");
    // The request without its objects, written back as JSON from the received bytes and
    // decoded straight into kube's typed request (no `Value` in between).
    let mut rest = String::with_capacity(
        fields
            .iter()
            .map(|(k, v)| k.len() + v.get().len() + 4)
            .sum(),
    );
    for (name, value) in fields
        .iter()
        .filter(|(k, _)| k != "object" && k != "oldObject")
    {
        rest.push(if rest.is_empty() { '{' } else { ',' });
        // A name is written back escaped (it was unescaped when read); the usual names need
        // no escape (serde_json escapes only `"`, `\\` and control characters).
        if name.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
            rest.push_str(&serde_json::to_string(name).map_err(not_json)?);
        } else {
            rest.push('"');
            rest.push_str(name);
            rest.push('"');
        }
        rest.push(':');
        rest.push_str(value.get());
    }
    rest.push_str(if rest.is_empty() { "{}" } else { "}" });
    let mut request: AdmissionRequest<DynamicObject> = serde_json::from_str(&rest)
        .map_err(|e| Outcome::bad_request(format!("AdmissionReview does not decode: {e}")))?;
    // The response names the review's own type, as kube's conversion from the review does.
    request.types = kube::core::TypeMeta {
        api_version,
        kind: review_kind,
    };

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
    if let Some(obj) = object
        && raw_type(obj) != "object"
    {
        let mut out = Outcome::bad_request(format!(
            "request.object must be a JSON object, got a JSON {}",
            raw_type(obj)
        ));
        out.uid = Some(request.uid.clone());
        return Err(out);
    }
    Ok(Envelope {
        route,
        request,
        object,
    })
}

impl<'a> Envelope<'a> {
    /// Decodes the object: into a borrowed tree for `/validate/blueprint`, else into a `Value`.
    pub fn parse(self) -> Result<Parsed<'a>, Outcome> {
        let decoded = |raw: &'a RawValue| match self.route {
            Route::ValidateBlueprint => blueprint::decode(raw.get()).map(Object::Tree),
            _ => serde_json::from_str(raw.get()).map(Object::Value),
        };
        let object = match self.object {
            Some(raw) => Some(decoded(raw).map_err(|e| {
                let mut out = not_json(e);
                out.uid = Some(self.request.uid.clone());
                out
            })?),
            None => None,
        };
        Ok(Parsed {
            route: self.route,
            request: self.request,
            object,
        })
    }
}

/// Parses and checks a review for `route`; `Err` is the 400 answer.
pub fn parse(route: Route, body: &[u8]) -> Result<Parsed<'_>, Outcome> {
    parse_envelope(route, body)?.parse()
}

/// The pure handler used by the fuzz target and the property tests: parse and decide, with no
/// Blueprint lookup for ActionSchedules. Returns the HTTP status and body.
pub fn handle_review(route: Route, body: &[u8]) -> (u16, Vec<u8>) {
    let out = review(route, body, |_| {
        Lookup::NotChecked("no API access in this context".into())
    });
    (out.status, out.body)
}

/// Parses, looks up what is needed through `lookup` (called with `(namespace, name)` of each
/// Blueprint an ActionSchedule refers to) and decides.
pub fn review(
    route: Route,
    body: &[u8],
    mut lookup: impl FnMut(&BlueprintRef) -> Lookup,
) -> Outcome {
    if body.len() > MAX_BODY_BYTES {
        return Outcome {
            status: 413,
            body: too_large_message(body.len()).into_bytes(),
            verdict: Verdict::TooLarge,
            uid: None,
            dry_run: false,
            summary: "body over the limit".into(),
            remembered: false,
        };
    }
    if route == Route::MutateActionSet {
        // Without the server's flags, only labelled ActionSets are ours.
        return super::claim::review(body, &Default::default());
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
            decide(parsed, &found)
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

impl Parsed<'_> {
    /// The same review, not borrowing from the body (its tree, if any, made a `Value`).
    pub fn into_owned(self) -> Parsed<'static> {
        Parsed {
            route: self.route,
            request: self.request,
            object: self.object.map(|o| match o {
                Object::Tree(tree) => Object::Value(tree.into()),
                Object::Value(value) => Object::Value(value),
            }),
        }
    }

    /// For an ActionSchedule: the Blueprints its ActionSet template uses (deduplicated).
    pub fn blueprint_refs(&self) -> Vec<BlueprintRef> {
        match (&self.object, self.route) {
            (Some(obj), Route::ValidateActionSchedule) if self.needs_review() => {
                super::schedule::blueprint_refs(&obj.value(), self.request.namespace.as_deref())
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
        ) && !self.object.as_ref().is_some_and(Object::is_being_deleted)
    }
}

/// Decides on a parsed review. `lookups` holds the result for each of
/// [`Parsed::blueprint_refs`] (missing entries count as not checked).
pub fn decide(parsed: Parsed, lookups: &[(BlueprintRef, Lookup)]) -> Outcome {
    let uid = parsed.request.uid.clone();
    let dry_run = parsed.request.dry_run;
    match judge(&parsed, lookups) {
        Ok(answer) => answered(&answer, uid, dry_run),
        Err(reason) => refused(reason, uid, dry_run),
    }
}

/// The answer to a parsed review, or why it cannot be answered (a 400).
fn judge(parsed: &Parsed, lookups: &[(BlueprintRef, Lookup)]) -> Result<Answer, String> {
    let base = AdmissionResponse::from(&parsed.request);
    let (response, verdict, summary) = if !parsed.needs_review() {
        (
            base,
            Verdict::Allowed,
            "not reviewed (operation or deletion)".to_owned(),
        )
    } else {
        match (&parsed.object, parsed.route) {
            (None, _) => {
                return Err(format!(
                    "request.object is missing for a {} request",
                    serde_json::to_value(&parsed.request.operation)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                ));
            }
            // Each route's object is decoded as the route reads it ([`Envelope::parse`]).
            (Some(obj), Route::MutateBlueprint) => mutate_blueprint(base, &obj.value()),
            (Some(obj), Route::ValidateBlueprint) => validate_blueprint(base, obj),
            (Some(obj), Route::ValidateActionSchedule) => {
                super::schedule::validate(base, &obj.value(), lookups)
            }
            (Some(_), Route::MutateActionSet) => {
                return Err("ActionSet reviews are answered by webhook::claim::review".into());
            }
        }
    };
    Ok(Answer {
        response,
        verdict,
        summary,
    })
}

/// The 400 answer to the request `uid` that [`judge`] could not answer.
fn refused(reason: String, uid: String, dry_run: bool) -> Outcome {
    let mut out = Outcome::bad_request(reason);
    out.uid = Some(uid);
    out.dry_run = dry_run;
    out
}

/// The HTTP answer carrying `answer` for the request `uid`.
fn answered(answer: &Answer, uid: String, dry_run: bool) -> Outcome {
    let mut response = answer.response.clone();
    response.uid.clone_from(&uid);
    match encode_review(response) {
        Ok(body) => Outcome {
            status: 200,
            body,
            verdict: answer.verdict,
            uid: Some(uid),
            dry_run,
            summary: answer.summary.clone(),
            remembered: false,
        },
        Err(e) => Outcome {
            status: 500,
            body: format!("could not encode the AdmissionReview: {e}").into_bytes(),
            verdict: Verdict::Error,
            uid: Some(uid),
            dry_run,
            summary: e.to_string(),
            remembered: false,
        },
    }
}

/// [`review`] of a Blueprint route, answering an object seen before from `answers`.
///
/// Only CREATE and UPDATE reviews are remembered: what they are answered depends on the route
/// and the object alone (see [`judge`]).
pub fn review_blueprint(route: Route, body: &[u8], answers: &Answers) -> Outcome {
    if body.len() > MAX_BODY_BYTES {
        return review(route, body, |_| Lookup::NotChecked("not needed".into()));
    }
    let envelope = match parse_envelope(route, body) {
        Ok(e) => e,
        Err(out) => return out,
    };
    let remember = route != Route::ValidateActionSchedule
        && matches!(
            envelope.request.operation,
            Operation::Create | Operation::Update
        );
    let object = envelope.object.map(|o| o.get().as_bytes());
    let uid = envelope.request.uid.clone();
    let dry_run = envelope.request.dry_run;
    if remember
        && let Some(object) = object
        && let Some(answer) = answers.get(route, object)
    {
        let mut out = answered(&answer, uid, dry_run);
        out.summary.push_str(" (answered before)");
        out.remembered = true;
        return out;
    }
    let parsed = match envelope.parse() {
        Ok(p) => p,
        Err(out) => return out,
    };
    match judge(&parsed, &[]) {
        Ok(answer) => {
            let out = answered(&answer, uid, dry_run);
            if remember
                && out.status == 200
                && let Some(object) = object
            {
                answers.put(route, object, answer);
            }
            out
        }
        Err(reason) => refused(reason, uid, dry_run),
    }
}

/// The AdmissionReview JSON. kube serializes `response.patch` (a `Vec<u8>`) as an array of
/// numbers, which Go decodes too; we send the canonical form, a base64 string, as Go clients
/// do (a third of the size, and what people reading logs expect).
pub(super) fn encode_review(response: AdmissionResponse) -> serde_json::Result<Vec<u8>> {
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

fn object_name(obj: &Tree) -> String {
    let metadata = obj.get("metadata");
    metadata
        .get("name")
        .as_str()
        .filter(|n| !n.is_empty())
        .or_else(|| metadata.get("generateName").as_str())
        .unwrap_or("")
        .to_owned()
}

/// `/mutate/blueprint`: the normalization patch, or a denial for what cannot be normalized
/// (a deferPhase list of two or more phases, or of phases emptied by the CRD's schema).
fn mutate_blueprint(base: AdmissionResponse, obj: &Value) -> (AdmissionResponse, Verdict, String) {
    let lists = defer_phase_lists(obj);
    if !lists.is_empty() {
        let obj = obj.tree();
        let report = blueprint::validate(&*obj);
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
            deny(base, &object_name(&obj), "cannot be normalized", &problems),
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
            blueprint::get(action, "deferPhase")
                .and_then(Value::as_array)
                .is_some_and(|l| l.len() >= 2 || blueprint::is_pruned_list(l))
        })
        .map(|(name, _)| format!("actions.{name}.deferPhase"))
        .collect()
}

/// `/validate/blueprint`: deny with every error; warnings go into the response.
fn validate_blueprint(
    base: AdmissionResponse,
    obj: &(impl AsTree + ?Sized),
) -> (AdmissionResponse, Verdict, String) {
    let obj = obj.tree();
    let report = blueprint::validate(&*obj);
    let warnings = limit_warnings(report.warnings.iter().map(|w| w.to_string()));
    if !report.errors.is_empty() {
        let n = report.errors.len();
        let mut resp = deny(base, &object_name(&obj), "is invalid", &report.errors);
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

/// The JSON type of a value that parsed, from its first byte.
fn raw_type(raw: &RawValue) -> &'static str {
    match raw.get().as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "boolean",
        Some(b'n') => "null",
        _ => "number",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(object: Value) -> Parsed<'static> {
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
        .into_owned()
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
