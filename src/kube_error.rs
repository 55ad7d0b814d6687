//! How a Kubernetes API error reads where a person sees it: Events, ActionSet and ActionSchedule
//! status messages, CLI output, webhook answers.
//!
//! kube's own `Display` of a refused request appends the Rust Debug dump of the Status
//! (`ApiError: ... (Status { status: Some(Failure), code: 403, ... })`), and transport errors
//! start with variant names (`ServiceError: client error (Connect)`). [`describe`] says instead
//! what the API server answered, with its reason and code, and what usually fixes it. Logs may
//! keep kube's text; anything a user reads goes through here.

use std::fmt;
use std::time::{Duration, Instant};

use kube::core::Status;

/// `format!("...: {}", Describe(&e))` without allocating first.
pub struct Describe<'a>(pub &'a kube::Error);

impl fmt::Display for Describe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            kube::Error::Api(s) => f.write_str(&describe_status(s)),
            kube::Error::HyperError(e) => {
                write!(f, "cannot reach the API server: {}", describe_chain(e))
            }
            kube::Error::Service(e) => {
                write!(
                    f,
                    "cannot reach the API server: {}",
                    describe_chain(e.as_ref())
                )
            }
            kube::Error::SerdeError(e) => write!(
                f,
                "the API server's answer did not decode ({e}); is the CRD installed in the version this operator reads?"
            ),
            kube::Error::Auth(e) => write!(
                f,
                "cannot authenticate to the API server: {}; check the kubeconfig or the ServiceAccount token",
                describe_chain(e)
            ),
            kube::Error::InferConfig(e) => write!(
                f,
                "no Kubernetes configuration: {}; run in a pod or set KUBECONFIG",
                describe_chain(e)
            ),
            other => f.write_str(&chain(other, false)),
        }
    }
}

/// The text of a kube error for a person: see the module documentation.
pub fn describe(e: &kube::Error) -> String {
    Describe(e).to_string()
}

/// The one chain formatter: an error and its causes as `context: cause: ...` (the CLI's last
/// words, Events, status messages), leaving out a cause whose text is already there (hyper and
/// std errors often repeat their source), with a kube error anywhere in the chain described as
/// [`describe`] does, also where a wrapper pasted kube's text
/// into its own.
pub fn describe_chain(e: &(dyn std::error::Error + 'static)) -> String {
    chain(e, true)
}

/// [`describe_chain`]; `describe_kube: false` for the text of a kube error itself (whose
/// description is what calls this).
fn chain(e: &(dyn std::error::Error + 'static), describe_kube: bool) -> String {
    let mut causes = Vec::new();
    let mut cur = Some(e);
    while let Some(c) = cur {
        causes.push(c);
        cur = c.source();
    }
    let kube = causes
        .iter()
        .filter(|_| describe_kube)
        .find_map(|c| c.downcast_ref::<kube::Error>())
        .map(|k| (k.to_string(), describe(k)));
    let mut out: Vec<String> = Vec::new();
    for c in causes {
        if let (Some(_), Some((_, nice))) = (c.downcast_ref::<kube::Error>(), &kube) {
            if !out.iter().any(|o| o.contains(nice.as_str())) {
                out.push(nice.clone());
            }
            break;
        }
        let mut text = c.to_string();
        if let Some((raw, nice)) = &kube {
            text = text.replace(raw.as_str(), nice);
        }
        if !out.iter().any(|o| o.contains(&text)) {
            out.push(text);
        }
    }
    out.join(": ")
}

/// An error a retry may get past: the API server unreachable (restarting, its etcd away) or
/// answering 429 or 5xx. A refusal (403, 404, 422...) is not.
pub fn is_transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// How long a wait rides out an API server that does not answer (restarting, its etcd away)
/// before it fails: what it waits for goes on meanwhile.
pub const API_OUTAGE_LIMIT: Duration = Duration::from_secs(300);

/// Since when a wait's reads have failed as an API server that is away fails them.
#[derive(Debug, Default)]
pub struct Outage {
    since: Option<Instant>,
}

impl Outage {
    /// Whether the wait goes on after its read failed with `e` at `now`: the error is
    /// [`is_transient`] or a 401/403 (an API server that has just started refuses every request
    /// until its authorizer has read the RBAC objects), and the failures began less than
    /// [`API_OUTAGE_LIMIT`] ago.
    pub fn rides_out(&mut self, e: &kube::Error, now: Instant) -> bool {
        let refused_for_now = matches!(e, kube::Error::Api(s) if s.code == 401 || s.code == 403);
        if !(is_transient(e) || refused_for_now) {
            return false;
        }
        now.duration_since(*self.since.get_or_insert(now)) < API_OUTAGE_LIMIT
    }

    /// Whether the failures began at least [`API_OUTAGE_LIMIT`] before `now`.
    pub fn ran_out(&self, now: Instant) -> bool {
        self.since
            .is_some_and(|s| now.duration_since(s) >= API_OUTAGE_LIMIT)
    }

    /// A read succeeded: the next failure starts a new outage.
    pub fn over(&mut self) {
        self.since = None;
    }
}

/// "the API server refused ...: <message> (<reason>, <code>)" and, for the common codes, what
/// to do about it.
pub fn describe_status(s: &Status) -> String {
    let message = if s.message.is_empty() {
        "no message"
    } else {
        s.message.as_str()
    };
    let reason = if s.reason.is_empty() {
        String::new()
    } else {
        format!("{}, ", s.reason)
    };
    let hint = match s.code {
        401 => "; the credentials were rejected: check the kubeconfig or the ServiceAccount token",
        403 => {
            "; grant the operator's ServiceAccount this permission (a ClusterRole labelled blueprint-operator.io/aggregate-to-controller: \"true\")"
        }
        404 => "; check the name, namespace and kind, and that its CRD is installed",
        409 => "; the object already exists or changed meanwhile",
        422 | 400 => "; the object was refused as invalid: fix the field named above",
        429 | 500..=599 => "; the API server is overloaded or failing, try again later",
        _ => "",
    };
    format!(
        "the API server refused the request: {message} ({reason}{}){hint}",
        s.code
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What no user-facing message may contain: Rust Debug of kube's or std's types.
    pub(crate) fn assert_no_debug_dump(text: &str) {
        for dump in [
            "Some(",
            "None",
            "Status {",
            "ErrorResponse {",
            "ApiError",
            "Error {",
        ] {
            assert!(!text.contains(dump), "Debug dump {dump:?} in: {text}");
        }
    }

    fn status(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(
            Status {
                code,
                reason: reason.into(),
                message: message.into(),
                ..Default::default()
            }
            .boxed(),
        )
    }

    #[test]
    fn kube_display_dumps_the_status_and_ours_does_not() {
        let e = status(
            403,
            "Forbidden",
            "pods is forbidden: User \"system:serviceaccount:bpo:controller\" cannot list resource \"pods\"",
        );
        assert!(
            e.to_string().contains("Status {"),
            "kube's Display changed: {e}"
        );
        let text = describe(&e);
        assert_no_debug_dump(&text);
        assert!(
            text.starts_with("the API server refused the request: pods is forbidden: User \"system:serviceaccount:bpo:controller\" cannot list resource \"pods\" (Forbidden, 403)"),
            "{text}"
        );
        assert!(
            text.contains("grant the operator's ServiceAccount"),
            "{text}"
        );
    }

    #[test]
    fn a_function_failure_on_a_refused_call_reads_as_text() {
        // What the ActionSet status and the "Failed to execute phase" Event carry.
        let e = crate::functions::FunctionError::kube(
            "KubeOps",
            "creating ConfigMap app/cm",
            status(409, "AlreadyExists", "configmaps \"cm\" already exists"),
        );
        let text = e.to_string();
        assert_no_debug_dump(&text);
        assert!(
            text.starts_with("KubeOps: creating ConfigMap app/cm: the API server refused the request: configmaps \"cm\" already exists (AlreadyExists, 409)"),
            "{text}"
        );
    }

    #[test]
    fn overload_and_server_errors_are_transient_refusals_are_not() {
        for code in [429, 500, 503, 504] {
            assert!(is_transient(&status(code, "", "")), "{code}");
        }
        for code in [400, 401, 403, 404, 409, 422] {
            assert!(!is_transient(&status(code, "", "")), "{code}");
        }
        let unreachable = kube::Error::Service(Box::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert!(is_transient(&unreachable));
        let undecodable = serde_json::from_str::<u8>("x").unwrap_err();
        assert!(!is_transient(&kube::Error::SerdeError(undecodable)));
    }

    #[test]
    fn an_outage_is_ridden_out_for_its_limit_and_a_refusal_not_at_all() {
        let t0 = Instant::now();
        let mut o = Outage::default();
        assert!(!o.rides_out(&status(404, "NotFound", ""), t0));
        assert!(o.rides_out(&status(503, "", ""), t0));
        assert!(o.rides_out(&status(403, "Forbidden", ""), t0 + Duration::from_secs(200)));
        assert!(!o.rides_out(&status(503, "", ""), t0 + API_OUTAGE_LIMIT));
        o.over();
        assert!(o.rides_out(&status(503, "", ""), t0 + API_OUTAGE_LIMIT));
    }

    #[test]
    fn every_common_code_reads_without_debug() {
        for (code, reason) in [
            (400, "BadRequest"),
            (401, "Unauthorized"),
            (404, "NotFound"),
            (409, "AlreadyExists"),
            (422, "Invalid"),
            (429, "TooManyRequests"),
            (500, "InternalError"),
            (418, ""),
        ] {
            let text = describe(&status(code, reason, ""));
            assert_no_debug_dump(&text);
            assert!(text.contains(&format!("{code})")), "{text}");
        }
    }

    #[test]
    fn a_kube_error_inside_an_anyhow_chain_is_described_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("lease error: {0}")]
        struct Wrapper(#[source] kube::Error);
        let e = anyhow::Error::new(Wrapper(status(403, "Forbidden", "leases is forbidden")))
            .context("creating Lease bpo/blueprint-operator-executor");
        let text = describe_chain(e.as_ref());
        assert_no_debug_dump(&text);
        assert!(
            text.starts_with("creating Lease bpo/blueprint-operator-executor: lease error: the API server refused the request: leases is forbidden (Forbidden, 403)"),
            "{text}"
        );
        assert_eq!(text.matches("leases is forbidden").count(), 1, "{text}");
    }

    #[test]
    fn transport_and_decode_errors_read_without_variant_names() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let e = kube::Error::Service(Box::new(io));
        let text = describe(&e);
        assert_no_debug_dump(&text);
        assert!(!text.contains("ServiceError"), "{text}");
        assert_eq!(text, "cannot reach the API server: connection refused");

        let serde = serde_json::from_str::<u8>("\"x\"").unwrap_err();
        let text = describe(&kube::Error::SerdeError(serde));
        assert_no_debug_dump(&text);
        assert!(
            text.starts_with("the API server's answer did not decode"),
            "{text}"
        );
    }
}
