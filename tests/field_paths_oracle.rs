//! Differential test of the validator's template field-path checks against Go: every template
//! of the main phases of the corpus Blueprints, and thousands of mutated field paths (typos,
//! another kind's object, undeclared artifacts and objects), are judged by `validate` and
//! rendered by Go's text/template (`tools/template-oracle`, Kanister's parameter types) over the
//! parameters Kanister would give that phase: the declared kind's object only, the declared
//! artifacts, ConfigMaps and Secrets only, the earlier phases' outputs and the phases' own
//! `objects`. Every template the validator refuses must fail in Go; every one Go renders must
//! pass. (Go failing where we pass is allowed: function errors, values, guards.)

#[path = "support/template_cases.rs"]
mod support;
// What support/template_cases.rs uses.
#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/go_oracle.rs"]
mod go_oracle;
#[path = "support/prerequisite.rs"]
mod prerequisite;

use std::collections::BTreeSet;

use blueprint_operator::blueprint::{normalize, validate};
use blueprint_operator::documents;
use blueprint_operator::param::{self, Ty};
use blueprint_operator::template;
use serde_json::{Map, Value, json};

/// Parameters this test does not model for a main phase (ours, the deferPhase's, released
/// Kanister's repository server): templates naming them are left out.
const UNMODELLED: &[&str] = &["DeferPhase", "CurrentPhase", "Outcome", "RepositoryServer"];

/// How many mutated paths are judged at most (the first ones, in a fixed order).
const MAX_CASES: usize = 6000;

struct Case {
    /// The Blueprint with the template in place, and where its error would be reported.
    blueprint: Value,
    at: String,
    template: String,
    params: Value,
    /// A corpus template, not a mutation.
    original: bool,
}

fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// Kanister's `param.New` switch: the parameter its ActionSet object's kind fills.
fn parameter_of_kind(kind: &str) -> Option<&'static str> {
    Some(match kind.to_ascii_lowercase().as_str() {
        "statefulset" => "StatefulSet",
        "deployment" => "Deployment",
        "deploymentconfig" => "DeploymentConfig",
        "pvc" => "PVC",
        "namespace" => "Namespace",
        _ => return None,
    })
}

fn names(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `.Phases.<name>` of a phase with these `objects`: what Kanister fetched for it.
fn phase_entry(phase: &Value, output: bool) -> Value {
    let mut secrets = Map::new();
    let mut config_maps = Map::new();
    for (key, obj) in phase
        .get("objects")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        let templated = kind.contains("{{");
        if templated || kind.eq_ignore_ascii_case("secret") {
            secrets.insert(key.clone(), json!({"Data": {}}));
        }
        if templated || kind.eq_ignore_ascii_case("configmap") {
            config_maps.insert(key.clone(), json!({"Data": {}}));
        }
    }
    let mut e = json!({"Secrets": secrets, "ConfigMaps": config_maps});
    if output {
        e["Output"] = json!({});
    }
    e
}

/// The parameters Kanister renders phase `i` of `action` with, before the template's own
/// map keys are filled in. An action that declares no kind runs on a StatefulSet here.
fn base_params(action: &Map<String, Value>, phases: &[Value], i: usize) -> Value {
    let kind = action
        .get("kind")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .unwrap_or("StatefulSet");
    let mut p = json!({
        "Time": "2024-03-05T07:08:09Z",
        "Profile": {
            "Location": {"Type": "s3Compliant", "Bucket": "b", "Endpoint": "e", "Prefix": "p", "Region": "r"},
            "Credential": {"Type": "keyPair", "KeyPair": {"ID": "id", "Secret": "s"},
                           "Secret": {"Data": {}}, "KopiaServerSecret": {"ConnectOptions": {}}},
            "SkipSSLVerify": false
        },
        "Options": {}, "Object": {}, "PodOverride": {}, "PodAnnotations": {}, "PodLabels": {},
    });
    match parameter_of_kind(kind) {
        Some(top @ ("PVC" | "Namespace")) => {
            p[top] = json!({"Name": "n", "Namespace": "ns"});
        }
        Some(top) => {
            p[top] = json!({"Name": "w", "Namespace": "ns", "Pods": ["w-0"], "Containers": [["c"]],
                            "PersistentVolumeClaims": {}});
        }
        None => {}
    }
    let declared = |field: &str, entry: Value| -> Value {
        Value::Object(
            names(action.get(field))
                .into_iter()
                .map(|n| (n, entry.clone()))
                .collect(),
        )
    };
    p["ArtifactsIn"] = declared(
        "inputArtifactNames",
        json!({"KeyValue": {}, "KopiaSnapshot": "snap"}),
    );
    p["ConfigMaps"] = declared("configMapNames", json!({"Data": {}}));
    p["Secrets"] = declared("secretNames", json!({"Data": {}}));
    let mut ran = Map::new();
    for (j, phase) in phases.iter().enumerate().take(i + 1) {
        let name = phase
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // The current phase's objects exist; its output does not yet.
        ran.insert(name.to_owned(), phase_entry(phase, j < i));
    }
    p["Phases"] = Value::Object(ran);
    p
}

/// A value of `ty` for a field the template reads (nil pointers stay nil: only declared
/// objects exist).
fn zero(ty: &Ty) -> Value {
    match ty {
        Ty::Str => json!("v"),
        Ty::Bool => json!(true),
        Ty::Int => json!(1),
        Ty::Bytes => json!(b64("v")),
        Ty::Any | Ty::Map(..) | Ty::Struct(..) => json!({}),
        Ty::Slice(..) => json!([]),
        Ty::Ptr(_) => Value::Null,
    }
}

/// Fill in what `segs` reads, as an ActionSet, the objects and the phases' outputs could
/// supply it: map keys of free maps (Options, Data, KeyValue, Output, Object). The keys of
/// declared maps (artifacts, ConfigMaps, Secrets, phases, phase objects) are never added.
fn fill(v: &mut Value, ty: &Ty, segs: &[&str], declared: bool) {
    let Some((first, rest)) = segs.split_first() else {
        return;
    };
    match ty {
        Ty::Ptr(inner) if !v.is_null() => fill(v, inner, segs, declared),
        Ty::Struct(_, fields) => {
            let Some(obj) = v.as_object_mut() else { return };
            if let Some(f) = fields.iter().find(|f| f.name == *first) {
                // The current phase has no output yet.
                if f.name == "Output" && !obj.contains_key("Output") {
                    return;
                }
                // A phase's Secrets and ConfigMaps, like the top-level ones, hold only what
                // was declared.
                let child = obj.entry(f.name).or_insert_with(|| zero(&f.ty));
                let top = matches!(*first, "ArtifactsIn" | "ConfigMaps" | "Secrets" | "Phases");
                fill(child, &f.ty, rest, top);
                return;
            }
            // A promoted field of an embedded struct (a Secret's Name): under its JSON key.
            for e in fields.iter().filter(|f| f.embedded) {
                if let Some((_, inner)) = e.ty.as_struct()
                    && inner.iter().any(|f| f.name == *first)
                {
                    let key = e.json.unwrap_or(e.name);
                    let child = obj.entry(key).or_insert_with(|| json!({}));
                    fill(child, &e.ty, segs, false);
                }
            }
        }
        Ty::Map(elem, _) => {
            let Some(obj) = v.as_object_mut() else { return };
            if declared && !obj.contains_key(*first) {
                return;
            }
            let child = obj.entry(*first).or_insert_with(|| zero(elem));
            fill(child, elem, rest, false);
        }
        Ty::Any => {
            let mut at = v;
            for (k, s) in segs.iter().enumerate() {
                let Some(obj) = at.as_object_mut() else {
                    return;
                };
                let leaf = k + 1 == segs.len();
                at = obj
                    .entry(*s)
                    .or_insert_with(|| if leaf { json!("v") } else { json!({}) });
            }
        }
        _ => {}
    }
}

fn params_for(base: &Value, t: &str) -> Value {
    let mut p = base.clone();
    for f in template::check_fields(t).unwrap_or_default() {
        let segs: Vec<&str> = f.trim_start_matches('.').split('.').collect();
        fill(&mut p, param::template_params(), &segs, false);
    }
    p
}

/// Strings with a template inside `v` (map keys too).
fn templates(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) if template::has_action(s) => out.push(s.clone()),
        Value::Array(l) => l.iter().for_each(|x| templates(x, out)),
        Value::Object(m) => {
            for (k, x) in m {
                if template::has_action(k) {
                    out.push(k.clone());
                }
                templates(x, out);
            }
        }
        _ => {}
    }
}

fn typos(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    if chars.len() > 1 {
        // A letter dropped, two swapped, one doubled, the first in the other case.
        let mid = chars.len() / 2;
        out.push(
            chars
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != mid)
                .map(|(_, c)| c)
                .collect(),
        );
        let mut swapped = chars.clone();
        swapped.swap(mid - 1, mid);
        out.push(swapped.into_iter().collect());
    }
    let mut doubled = chars.clone();
    doubled.insert(chars.len() / 2, chars[chars.len() / 2]);
    out.push(doubled.into_iter().collect());
    let first: String = chars[0]
        .to_lowercase()
        .chain(chars[1..].iter().copied())
        .collect();
    let first_upper: String = chars[0]
        .to_uppercase()
        .chain(chars[1..].iter().copied())
        .collect();
    out.push(if first == s { first_upper } else { first });
    out.retain(|t| t != s);
    out
}

/// Mutations of field path `segs`: a typo in each segment, another kind's object, the
/// Kubernetes fields the model leaves out.
fn mutations(segs: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..segs.len() {
        if segs[i].is_empty() {
            continue;
        }
        for t in typos(segs[i]) {
            let mut m: Vec<String> = segs.iter().map(|s| s.to_string()).collect();
            m[i] = t;
            out.push(format!(".{}", m.join(".")));
        }
    }
    let rest = segs[1..].join(".");
    if [
        "StatefulSet",
        "Deployment",
        "DeploymentConfig",
        "PVC",
        "Namespace",
    ]
    .contains(&segs[0])
    {
        for other in [
            "StatefulSet",
            "Deployment",
            "DeploymentConfig",
            "PVC",
            "Namespace",
        ] {
            out.push(format!(".{other}.{rest}"));
        }
    }
    // Deeper and sideways: a field of the value read, Kubernetes' fields of Secrets.
    out.push(format!(".{}.Name", segs.join(".")));
    if segs.len() >= 2 && matches!(segs[0], "Secrets" | "ConfigMaps") {
        for f in ["UID", "Kind", "Immutable", "Labels", "Dat"] {
            out.push(format!(".{}.{}.{f}", segs[0], segs[1]));
        }
    }
    out
}

fn cases() -> Option<(Vec<Case>, usize)> {
    let dir = support::corpus_dir()?;
    let (docs, errors) = documents::read(dir.to_str().unwrap());
    assert!(errors.is_empty(), "{errors:?}");
    let mut out = Vec::new();
    let mut corpus_templates = 0;
    let mut seen = BTreeSet::new();
    for doc in docs.iter().filter(|d| d.is_blueprint()) {
        let bp = normalize(&doc.value);
        let Some(actions) = bp.get("actions").and_then(Value::as_object) else {
            continue;
        };
        for (name, action) in actions {
            let Some(action) = action.as_object() else {
                continue;
            };
            let phases = action
                .get("phases")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for (i, phase) in phases.iter().enumerate() {
                let func = phase
                    .get("func")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if func.starts_with("Wait") {
                    continue;
                }
                let mut found = Vec::new();
                templates(phase.get("args").unwrap_or(&Value::Null), &mut found);
                let mut texts: Vec<(String, bool)> = Vec::new();
                for t in found {
                    let Ok(fields) = template::check_fields(&t) else {
                        continue;
                    };
                    if fields.iter().any(|f| {
                        UNMODELLED
                            .contains(&f.trim_start_matches('.').split('.').next().unwrap_or(""))
                    }) {
                        continue;
                    }
                    for f in &fields {
                        let segs: Vec<&str> = f.trim_start_matches('.').split('.').collect();
                        for m in mutations(&segs) {
                            texts.push((format!("{{{{ {m} }}}}"), false));
                        }
                    }
                    texts.push((t, true));
                }
                let base = base_params(action, &phases, i);
                for (t, original) in texts {
                    // The same text in the same action and phase is judged once.
                    if !seen.insert((doc.source.clone(), name.clone(), i, t.clone())) {
                        continue;
                    }
                    if original {
                        corpus_templates += 1;
                    }
                    let mut one = bp.clone();
                    let mut ph = json!({"func": "KubeTask", "name": phase.get("name").cloned().unwrap_or(Value::Null),
                                        "args": {"image": "x", "command": [t]}});
                    if let Some(o) = phase.get("objects") {
                        ph["objects"] = o.clone();
                    }
                    one["actions"][name]["phases"][i] = ph;
                    let params = params_for(&base, &t);
                    out.push(Case {
                        blueprint: one,
                        at: format!("actions.{name}.phases[{i}].args.command[0]"),
                        template: t,
                        params,
                        original,
                    });
                }
            }
        }
    }
    // Originals first, then mutations, so the cap keeps every corpus template.
    out.sort_by_key(|c| !c.original);
    Some((out, corpus_templates))
}

#[test]
fn every_path_refused_fails_in_go_and_every_path_go_renders_passes() {
    let Some((mut cases, corpus_templates)) = cases() else {
        return;
    };
    let Some(bin) = support::oracle_binary() else {
        return;
    };
    // A fixed spread over all the mutations when there are more than the cap.
    if cases.len() > MAX_CASES {
        let step = cases.len().div_ceil(MAX_CASES);
        cases = cases
            .into_iter()
            .enumerate()
            .filter(|(i, c)| i % step == 0 || c.original)
            .map(|(_, c)| c)
            .collect();
    }
    let go_cases: Vec<Value> = cases
        .iter()
        .map(|c| json!({"template": c.template, "params": c.params, "now": support::NOW}))
        .collect();
    let go: Vec<Value> =
        serde_json::from_slice(&support::run_oracle(&bin, &go_cases, &[])).expect("oracle JSON");
    assert_eq!(go.len(), cases.len());
    let (mut refused, mut rendered) = (0, 0);
    // Refusals by the type checks (not the parameter-name, `.Phases` scope or syntax ones).
    let (mut no_field, mut other_kind, mut no_object) = (0, 0, 0);
    let mut wrong = Vec::new();
    for (c, g) in cases.iter().zip(&go) {
        let report = validate(&c.blueprint);
        let errors: Vec<_> = report.errors.iter().filter(|e| e.path == c.at).collect();
        let go_ok = g["ok"].as_bool().unwrap_or(false);
        match (errors.is_empty(), go_ok) {
            (false, true) => wrong.push(format!(
                "refused but Go renders {:?}: {}\n  params: {}",
                c.template, errors[0].message, c.params
            )),
            (false, false) => {
                refused += 1;
                let m = &errors[0].message;
                no_field += usize::from(m.contains("has no field"));
                other_kind += usize::from(m.contains("the action declares kind"));
                no_object += usize::from(m.contains("objects have no"));
            }
            (true, true) => rendered += 1,
            (true, false) => {}
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} disagree:\n{}",
        wrong.len(),
        cases.len(),
        wrong[..wrong.len().min(20)].join("\n")
    );
    eprintln!(
        "{} cases ({corpus_templates} corpus templates): {refused} refused, all failing in Go \
         ({no_field} unknown fields, {other_kind} another kind's object, {no_object} missing \
         phase objects); {rendered} rendered by Go, all passing",
        cases.len()
    );
    // Each rule was exercised, and both sides have cases.
    assert!(
        corpus_templates >= 300,
        "{corpus_templates} corpus templates"
    );
    assert!(rendered >= 300, "only {rendered} rendered");
    assert!(no_field >= 300, "only {no_field} unknown fields");
    assert!(other_kind >= 20, "only {other_kind} of another kind");
    assert!(no_object >= 50, "only {no_object} missing objects");
}
