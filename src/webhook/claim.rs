//! `/mutate/actionset`: claims, on CREATE, an ActionSet that is ours (the executor label, or a
//! namespace the controller runs whole), so that Kanister's controller never starts it
//! ([`crate::executor::claim`] says what a claim is and which ActionSets get one). Pure: the
//! same review always gets the same answer, and a dry run the same patch.

use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};

use super::admission::{Outcome, encode_review};
use super::metrics::Verdict;
use crate::executor::claim::{self, By};
use crate::executor::ownership::Ownership;

/// Reviews one ActionSet `AdmissionReview`.
pub fn review(body: &[u8], ownership: &Ownership) -> Outcome {
    let review: AdmissionReview<DynamicObject> = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => return Outcome::bad_request(format!("body is not an AdmissionReview: {e}")),
    };
    let request: AdmissionRequest<DynamicObject> = match review.try_into() {
        Ok(r) => r,
        Err(e) => return Outcome::bad_request(format!("AdmissionReview has no request: {e}")),
    };
    if (request.kind.group.as_str(), request.kind.kind.as_str()) != ("cr.kanister.io", "ActionSet")
    {
        return Outcome::bad_request(format!(
            "/mutate/actionset reviews cr.kanister.io ActionSets, not {}/{}",
            request.kind.group, request.kind.kind
        ));
    }
    let base = AdmissionResponse::from(&request);
    let (response, verdict, summary) = match (&request.operation, &request.object) {
        (Operation::Create, Some(obj)) => {
            let obj = serde_json::to_value(obj).unwrap_or_default();
            let ns = request.namespace.as_deref().unwrap_or_default();
            if claim::at_admission(ownership, ns, &obj) {
                match base.clone().with_patch(claim::patch(&obj, By::Admission)) {
                    Ok(r) => (r, Verdict::Patched, "claimed for blueprint-operator".into()),
                    Err(e) => (base, Verdict::Allowed, format!("patch not sent: {e}")),
                }
            } else {
                (base, Verdict::Allowed, "not claimed".to_string())
            }
        }
        (Operation::Create, None) => {
            return Outcome::bad_request("request.object is missing for a CREATE request");
        }
        _ => (base, Verdict::Allowed, "not reviewed (operation)".into()),
    };
    let uid = request.uid.clone();
    let dry_run = request.dry_run;
    match encode_review(response) {
        Ok(body) => Outcome {
            status: 200,
            body,
            verdict,
            uid: Some(uid),
            dry_run,
            summary,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::labels::ANNOTATION_CLAIMED;
    use crate::model::{EXECUTOR_LABEL_VALUE, LABEL_EXECUTOR};
    use base64::Engine as _;
    use serde_json::{Value, json};

    fn body(operation: &str, labelled: bool, dry_run: bool) -> Vec<u8> {
        let mut obj = json!({
            "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
            "metadata": {"generateName": "b-"},
            "spec": {"actions": [{"name": "backup", "blueprint": "bp", "object": {"kind": "Namespace", "name": "app"}}]}
        });
        if labelled {
            obj["metadata"]["labels"] = json!({ LABEL_EXECUTOR: EXECUTOR_LABEL_VALUE });
        }
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "u-1",
                "kind": {"group": "cr.kanister.io", "version": "v1alpha1", "kind": "ActionSet"},
                "resource": {"group": "cr.kanister.io", "version": "v1alpha1", "resource": "actionsets"},
                "namespace": "kanister", "operation": operation, "dryRun": dry_run,
                "userInfo": {"username": "alice"},
                "object": obj,
            }
        }))
        .unwrap()
    }

    fn answer(out: &Outcome) -> Value {
        assert_eq!(out.status, 200, "{}", String::from_utf8_lossy(&out.body));
        serde_json::from_slice::<Value>(&out.body).unwrap()["response"].clone()
    }

    #[test]
    fn a_labelled_create_is_claimed_with_a_patch_a_dry_run_too() {
        let o = Ownership::new(None, &[]);
        for dry_run in [false, true] {
            let out = review(&body("CREATE", true, dry_run), &o);
            let r = answer(&out);
            assert_eq!(r["uid"], "u-1");
            assert_eq!(r["allowed"], true);
            let patch = base64::engine::general_purpose::STANDARD
                .decode(r["patch"].as_str().expect("a base64 patch"))
                .unwrap();
            let patch: Value = serde_json::from_slice(&patch).unwrap();
            let text = patch.to_string();
            assert!(text.contains(ANNOTATION_CLAIMED), "{text}");
            assert!(text.contains(r#""state":"running""#), "{text}");
        }
    }

    #[test]
    fn kanisters_own_and_updates_are_allowed_unchanged() {
        let o = Ownership::new(None, &[]);
        for b in [body("CREATE", false, false), body("UPDATE", true, false)] {
            let r = answer(&review(&b, &o));
            assert_eq!(r["allowed"], true);
            assert!(r.get("patch").is_none(), "{r}");
        }
        // The controller runs namespace kanister whole: unlabelled ones are ours there.
        let whole = Ownership::new(None, &["kanister".into()]);
        assert!(
            answer(&review(&body("CREATE", false, false), &whole))
                .get("patch")
                .is_some()
        );
    }

    #[test]
    fn what_is_not_an_actionset_review_is_a_400() {
        let o = Ownership::new(None, &[]);
        assert_eq!(review(b"{", &o).status, 400);
        let bp = String::from_utf8(body("CREATE", true, false))
            .unwrap()
            .replace(r#""kind":"ActionSet"}"#, r#""kind":"Blueprint"}"#);
        let out = review(bp.as_bytes(), &o);
        assert_eq!(out.status, 400, "{}", String::from_utf8_lossy(&out.body));
    }
}
