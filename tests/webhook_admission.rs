//! The admission handlers called as plain functions: review bytes in, status and body out.

use base64::Engine as _;
use blueprint_operator::blueprint;
use blueprint_operator::webhook::admission::{self, MAX_BODY_BYTES, Route, handle_review};
use blueprint_operator::webhook::response::{Lookup, MAX_WARNING_CHARS, limit_warnings};
use proptest::prelude::*;
use serde_json::{Value, json};

#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/prerequisite.rs"]
mod prerequisite;
#[path = "support/webhook_client.rs"]
mod webhook_client;
use webhook_client::{blueprint_review, review};

fn bp(actions: Value) -> Value {
    json!({
        "apiVersion": "cr.kanister.io/v1alpha1",
        "kind": "Blueprint",
        "metadata": {"name": "demo", "namespace": "default"},
        "actions": actions,
    })
}

fn kubetask(name: Option<&str>) -> Value {
    let mut p =
        json!({"func": "KubeTask", "args": {"image": "busybox", "command": ["sh", "-c", "true"]}});
    if let Some(n) = name {
        p["name"] = json!(n);
    }
    p
}

/// (status, response) for a Blueprint review on `route`.
fn call(route: Route, obj: &Value) -> (u16, Value) {
    let (status, body) = handle_review(route, &blueprint_review("uid-1", obj));
    let v = if status == 200 {
        serde_json::from_slice(&body).expect("JSON body")
    } else {
        Value::String(String::from_utf8_lossy(&body).into_owned())
    };
    (status, v)
}

fn patch_of(resp: &Value) -> Option<json_patch::Patch> {
    let b64 = resp["response"]["patch"].as_str()?;
    assert_eq!(resp["response"]["patchType"], "JSONPatch");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("base64 patch");
    Some(serde_json::from_slice(&bytes).expect("JSON patch"))
}

fn apply(obj: &Value, patch: &json_patch::Patch) -> Value {
    let mut out = obj.clone();
    json_patch::patch(&mut out, patch).expect("patch applies");
    out
}

/// The first field cause of a denial.
fn first_cause(resp: &Value) -> &Value {
    &resp["status"]["details"]["causes"][0]
}

#[test]
fn mutate_defaults_names_and_keeps_unknown_fields() {
    let obj = bp(json!({
        "backup": {
            "phases": [kubetask(None), kubetask(Some("second"))],
            "deferPhase": [kubetask(None)],
            "x-custom": {"kept": true},
        }
    }));
    let (status, resp) = call(Route::MutateBlueprint, &obj);
    assert_eq!(status, 200);
    assert_eq!(resp["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(resp["kind"], "AdmissionReview");
    assert_eq!(resp["response"]["uid"], "uid-1");
    assert_eq!(resp["response"]["allowed"], true);
    let patch = patch_of(&resp).expect("a patch");
    let patched = apply(&obj, &patch);
    assert_eq!(patched, blueprint::normalize(&obj));
    let action = &patched["actions"]["backup"];
    assert_eq!(action["phases"][0]["name"], "phase0");
    assert_eq!(action["phases"][1]["name"], "second");
    assert!(action["deferPhase"].is_object(), "{action}");
    assert_eq!(action["deferPhase"]["name"], "deferPhase");
    assert_eq!(action["x-custom"], json!({"kept": true}));

    // Applying the same manifest again: the stored object is already normal, no patch.
    let (status, again) = call(Route::MutateBlueprint, &patched);
    assert_eq!(status, 200);
    assert_eq!(again["response"]["allowed"], true);
    assert!(again["response"].get("patch").is_none(), "{again}");
    assert!(again["response"].get("patchType").is_none(), "{again}");
}

#[test]
fn mutate_denies_a_defer_phase_list_and_explains_the_fix() {
    let obj = bp(json!({
        "backup": {"phases": [kubetask(Some("a"))], "deferPhase": [kubetask(Some("x")), kubetask(Some("y"))]},
        "restore": {"phases": [kubetask(None)]},
    }));
    let (status, resp) = call(Route::MutateBlueprint, &obj);
    assert_eq!(status, 200);
    let r = &resp["response"];
    assert_eq!(r["allowed"], false);
    assert!(r.get("patch").is_none(), "a denial carries no patch: {r}");
    assert_eq!(r["status"]["code"], 422);
    let msg = r["status"]["message"].as_str().unwrap();
    assert!(msg.contains("actions.backup.deferPhase"), "{msg}");
    assert!(msg.contains("exactly one phase"), "{msg}");
    assert!(msg.contains("list of 2"), "{msg}");
    assert_eq!(first_cause(r)["field"], "actions.backup.deferPhase");
}

/// What the API server leaves of a deferPhase list when the CRD types deferPhase as one object
/// (Kanister's, not relaxed) and field validation is not strict: the phases emptied. Nothing to
/// normalize; the mutating webhook says why (the schema check would refuse the list next, in
/// its own words, before the validating webhook runs).
#[test]
fn mutate_denies_a_list_of_pruned_phases_and_names_the_cause() {
    for n in [1, 2] {
        let obj = bp(
            json!({"backup": {"phases": [kubetask(Some("a"))], "deferPhase": vec![json!({}); n]}}),
        );
        let (status, resp) = call(Route::MutateBlueprint, &obj);
        assert_eq!(status, 200);
        let r = &resp["response"];
        assert_eq!(r["allowed"], false, "{r}");
        let msg = r["status"]["message"].as_str().unwrap();
        assert!(
            msg.contains(&format!(
                "deferPhase arrived as a list of {n} empty phase(s)"
            )),
            "{msg}"
        );
        assert!(msg.contains("--relax-kanister-deferphase-schema"), "{msg}");
        assert_eq!(first_cause(r)["field"], "actions.backup.deferPhase");
    }
}

#[test]
fn validate_lists_every_error_with_its_location() {
    let obj = bp(json!({
        "backup": {"phases": [
            {"name": "a", "func": "KubeTask", "args": {"image": "busybox"}},
            {"name": "b", "func": "NoSuchFunction", "args": {}},
        ]},
    }));
    let (status, resp) = call(Route::ValidateBlueprint, &obj);
    assert_eq!(status, 200);
    let r = &resp["response"];
    assert_eq!(r["allowed"], false);
    assert!(r.get("patch").is_none());
    assert_eq!(r["status"]["code"], 422);
    assert_eq!(r["status"]["reason"], "Invalid");
    let msg = r["status"]["message"].as_str().unwrap();
    assert!(msg.starts_with("Blueprint \"demo\" is invalid ("), "{msg}");
    assert!(
        msg.contains("actions.backup.phases[0].args.command"),
        "{msg}"
    );
    assert!(msg.contains("'command'"), "{msg}");
    assert!(msg.contains("actions.backup.phases[1]"), "{msg}");
    assert!(msg.contains("NoSuchFunction"), "{msg}");
    let causes = r["status"]["details"]["causes"].as_array().unwrap();
    assert!(causes.len() >= 2, "{causes:?}");
    assert!(
        causes
            .iter()
            .any(|c| c["field"] == "actions.backup.phases[0].args.command")
    );
}

/// A value Kanister admits but that fails when the phase runs is admitted here too, and the
/// API server passes the warning on to kubectl with its location.
#[test]
fn values_that_fail_only_at_run_time_are_admitted_with_a_warning() {
    let mut task = kubetask(Some("dump"));
    task["args"]["command"] = json!("pg_dumpall -U postgres");
    let (status, resp) = call(
        Route::ValidateBlueprint,
        &bp(json!({"backup": {"phases": [task]}})),
    );
    assert_eq!(status, 200);
    assert_eq!(resp["response"]["allowed"], true, "{resp}");
    let warning = resp["response"]["warnings"][0].as_str().unwrap_or_default();
    assert!(
        warning.contains("actions.backup.phases[0].args.command")
            && warning.contains("single program named"),
        "{resp}"
    );
}

/// A template field Kanister's parameter types do not have is refused on apply, located at
/// its argument, with the close field.
#[test]
fn a_misspelt_template_field_is_denied_with_the_close_one() {
    let mut task = kubetask(Some("dump"));
    task["args"]["command"] = json!(["sh", "-c", "echo {{ .Profile.Locaton.Bucket }}"]);
    let (status, resp) = call(
        Route::ValidateBlueprint,
        &bp(json!({"backup": {"phases": [task]}})),
    );
    assert_eq!(status, 200);
    let r = &resp["response"];
    assert_eq!(r["allowed"], false, "{resp}");
    assert_eq!(
        first_cause(r)["field"],
        "actions.backup.phases[0].args.command[2]"
    );
    let msg = r["status"]["message"].as_str().unwrap();
    assert!(
        msg.contains("param.Profile has no field Locaton (did you mean Location?)"),
        "{msg}"
    );
}

#[test]
fn dry_run_gets_the_same_answer() {
    let good = bp(json!({"backup": {"phases": [kubetask(None)]}}));
    let bad = bp(json!({"backup": {"phases": [{"func": "KubeTask", "args": {}}]}}));
    for route in [Route::MutateBlueprint, Route::ValidateBlueprint] {
        for obj in [&good, &bad] {
            let normal = handle_review(
                route,
                &review("u", "cr.kanister.io", "Blueprint", obj, false),
            );
            let dry = handle_review(
                route,
                &review("u", "cr.kanister.io", "Blueprint", obj, true),
            );
            assert_eq!(normal, dry, "{route:?}");
        }
    }
}

#[test]
fn malformed_or_foreign_reviews_get_400_with_the_reason() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{not json".to_vec(), "not valid JSON"),
        (b"[]".to_vec(), "got a JSON array"),
        (
            br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{}}"#
                .to_vec(),
            "admission.k8s.io/v1beta1",
        ),
        (
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
            "has no request",
        ),
        (
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":5}}"#
                .to_vec(),
            "does not decode",
        ),
        (
            review("u", "", "Pod", &json!({"metadata": {"name": "p"}}), false),
            "reviews cr.kanister.io Blueprint objects",
        ),
        (
            review("u", "cr.kanister.io", "Blueprint", &json!([1, 2]), false),
            "request.object must be a JSON object",
        ),
    ];
    for (body, want) in cases {
        let (status, out) = handle_review(Route::ValidateBlueprint, &body);
        let text = String::from_utf8_lossy(&out);
        assert_eq!(status, 400, "{text}");
        assert!(text.contains(want), "{want:?} not in {text:?}");
    }
}

#[test]
fn delete_and_objects_being_deleted_are_allowed() {
    let bad = bp(json!({"backup": {"phases": [{"func": "Nope"}]}}));
    let mut v: Value = serde_json::from_slice(&blueprint_review("u", &bad)).unwrap();
    v["request"]["operation"] = json!("DELETE");
    v["request"]["oldObject"] = bad.clone();
    v["request"]["object"] = Value::Null;
    let (status, body) = handle_review(Route::ValidateBlueprint, &serde_json::to_vec(&v).unwrap());
    assert_eq!(status, 200);
    let resp: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(resp["response"]["allowed"], true);

    let mut deleting = bad.clone();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let (_, resp) = call(Route::ValidateBlueprint, &deleting);
    assert_eq!(resp["response"]["allowed"], true);
    let (_, resp) = call(Route::ValidateBlueprint, &bad);
    assert_eq!(resp["response"]["allowed"], false);
}

#[test]
fn oversized_bodies_get_413() {
    let body = vec![b' '; MAX_BODY_BYTES + 1];
    let out = admission::review(Route::ValidateBlueprint, &body, &Default::default(), |_| {
        Lookup::Missing
    });
    assert_eq!(out.status, 413);
}

#[test]
fn warnings_fit_the_api_server_limits() {
    let many: Vec<String> = (0..200)
        .map(|i| format!("warning {i}\nwith a newline {}", "x".repeat(300)))
        .collect();
    let out = limit_warnings(many).unwrap();
    let total: usize = out.iter().map(|w| w.chars().count()).sum();
    assert!(total <= 4096, "{total}");
    assert!(out.iter().all(|w| w.chars().count() <= MAX_WARNING_CHARS));
    assert!(out.iter().all(|w| !w.chars().any(char::is_control)));
    assert!(
        out.last().unwrap().contains("more warning(s) not shown"),
        "{out:?}"
    );
    // Identical texts once; short lists untouched.
    let out = limit_warnings(vec!["a".into(), "a".into(), "b".into()]).unwrap();
    assert_eq!(out, vec!["a".to_owned(), "b".to_owned()]);
    assert_eq!(limit_warnings(Vec::<String>::new()), None);
}

#[test]
fn actionschedule_route_checks_the_schedule() {
    let sched = json!({
        "apiVersion": "blueprint-operator.io/v1alpha1",
        "kind": "ActionSchedule",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {
            "schedule": "0 25 * * *",
            "actionSetTemplate": {"actions": [{"name": "backup", "blueprint": "bp"}]}
        }
    });
    let body = review(
        "u",
        "blueprint-operator.io",
        "ActionSchedule",
        &sched,
        false,
    );
    let (status, out) = handle_review(Route::ValidateActionSchedule, &body);
    assert_eq!(status, 200);
    let resp: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(resp["response"]["allowed"], false);
    let msg = resp["response"]["status"]["message"].as_str().unwrap();
    assert!(
        msg.contains("spec.schedule") && msg.contains("hour"),
        "{msg}"
    );

    // With the Blueprint visible, a wrong action name is an error.
    let mut fixed = sched.clone();
    fixed["spec"]["schedule"] = json!("@daily");
    let body = review(
        "u",
        "blueprint-operator.io",
        "ActionSchedule",
        &fixed,
        false,
    );
    let out = admission::review(
        Route::ValidateActionSchedule,
        &body,
        &Default::default(),
        |(ns, name)| {
            assert_eq!((ns.as_str(), name.as_str()), ("default", "bp"));
            Lookup::Found(json!({"actions": {"restore": {}}}))
        },
    );
    let resp: Value = serde_json::from_slice(&out.body).unwrap();
    assert_eq!(resp["response"]["allowed"], false, "{resp}");
    let msg = resp["response"]["status"]["message"].as_str().unwrap();
    assert!(
        msg.contains("has no action \"backup\" (it has: restore)"),
        "{msg}"
    );
    // Not visible: allowed with a warning.
    let out = admission::review(
        Route::ValidateActionSchedule,
        &body,
        &Default::default(),
        |_| Lookup::Missing,
    );
    let resp: Value = serde_json::from_slice(&out.body).unwrap();
    assert_eq!(resp["response"]["allowed"], true, "{resp}");
    assert!(
        resp["response"]["warnings"][0]
            .as_str()
            .unwrap()
            .contains("not found")
    );
    // A Blueprint review on the schedule route is refused.
    let (status, _) = handle_review(
        Route::ValidateActionSchedule,
        &blueprint_review("u", &bp(json!({}))),
    );
    assert_eq!(status, 400);
}

#[test]
fn corpus_blueprints_are_accepted_and_patches_reach_the_normal_form() {
    let docs = corpus::blueprints();
    if docs.is_empty() {
        return;
    }
    assert!(docs.len() > 40, "only {} Blueprints found", docs.len());
    for (path, doc) in &docs {
        let (status, resp) = call(Route::MutateBlueprint, doc);
        assert_eq!(status, 200, "{}", path.display());
        assert_eq!(
            resp["response"]["allowed"],
            true,
            "{}: {resp}",
            path.display()
        );
        let patched = match patch_of(&resp) {
            Some(p) => apply(doc, &p),
            None => doc.clone(),
        };
        assert_eq!(patched, blueprint::normalize(doc), "{}", path.display());
        let (status, resp) = call(Route::ValidateBlueprint, &patched);
        assert_eq!(status, 200);
        assert_eq!(
            resp["response"]["allowed"],
            true,
            "{}: {}",
            path.display(),
            resp["response"]["status"]["message"]
        );
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-zA-Z{}. ]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("KubeTask"),
            Just("phases"),
            Just("deferPhase"),
            Just("{{ .Phases.a.Output.x }}"),
            Just("{{"),
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("actions".to_owned()),
                        Just("phases".to_owned()),
                        Just("deferPhase".to_owned()),
                        Just("func".to_owned()),
                        Just("name".to_owned()),
                        Just("args".to_owned()),
                        Just("outputArtifacts".to_owned()),
                        Just("schedule".to_owned()),
                        Just("spec".to_owned()),
                        "[a-z]{1,6}",
                    ],
                    inner
                ),
                0..5
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(body in prop::collection::vec(any::<u8>(), 0..512)) {
        for route in Route::ALL {
            let (status, _) = handle_review(route, &body);
            prop_assert_eq!(status, 400);
        }
    }

    #[test]
    fn mutated_reviews_never_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8)
    ) {
        let obj = bp(json!({"backup": {"phases": [kubetask(None)], "deferPhase": [kubetask(None)]}}));
        let mut body = blueprint_review("u", &obj);
        for (at, byte, op) in edits {
            let i = at.index(body.len());
            match op {
                0 => body[i] = byte,
                1 => body.insert(i, byte),
                _ => { body.remove(i); }
            }
        }
        for route in Route::ALL {
            let (status, _) = handle_review(route, &body);
            prop_assert!(status == 200 || status == 400, "status {}", status);
        }
    }

    #[test]
    fn random_objects_never_panic_and_mutation_is_idempotent(actions in arb_json(), spec in arb_json()) {
        let mut obj = bp(actions);
        obj["spec"] = spec;
        for route in Route::ALL {
            let kind = match route {
                Route::ValidateActionSchedule => ("blueprint-operator.io", "ActionSchedule"),
                Route::MutateActionSet => ("cr.kanister.io", "ActionSet"),
                _ => ("cr.kanister.io", "Blueprint"),
            };
            let (status, body) = handle_review(route, &review("u", kind.0, kind.1, &obj, false));
            prop_assert_eq!(status, 200);
            let resp: Value = serde_json::from_slice(&body).unwrap();
            if route == Route::MutateBlueprint
                && let Some(p) = patch_of(&resp)
            {
                let patched = apply(&obj, &p);
                let (_, again) = call(Route::MutateBlueprint, &patched);
                prop_assert!(again["response"].get("patch").is_none(), "second patch: {}", again);
            }
        }
    }
}
