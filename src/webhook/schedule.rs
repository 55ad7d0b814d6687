//! `/validate/actionschedule`: checks an ActionSchedule as a JSON value, listing every error.
//!
//! * `spec.schedule` parses as Kubernetes CronJob syntax and fires at least once in five years;
//! * `spec.timeZone` is an IANA zone;
//! * `spec.startingDeadlineSeconds` ≥ 1, `concurrencyPolicy`/`missedRunPolicy` known values;
//! * `spec.retention`: counts are non-negative integers; warns when nothing but the newest
//!   complete run would be kept; `onDelete` is `Retain` or `Delete` (warns when `Delete`
//!   has no `deleteAction`: the backups' data would stay behind); `deleteActionKind` is
//!   `Namespace` or the kind of the runs' object; without it, a visible Blueprint's delete
//!   action that renders `.Namespace` and declares no kind is an error (it would fail on the
//!   runs' object every time);
//! * `spec.actionSetTemplate.actions[*]` name an action and a Blueprint; when the Blueprint is
//!   visible to the webhook, the action (and `retention.deleteAction`) must exist in it. A
//!   Blueprint that does not exist yet is only a warning: GitOps tools apply in any order.

use chrono::{DateTime, Utc};
use kube::core::admission::AdmissionResponse;
use serde_json::Value;

use super::metrics::Verdict;
use super::response::{BlueprintRef, Lookup, deny_kind, limit_warnings};
use crate::blueprint::{Problem, Rule};
use crate::scheduler::cron::{Schedule, parse_time_zone};
use crate::scheduler::delete_action::is_namespace;

/// Blueprints referenced by `spec.actionSetTemplate.actions[*].blueprint`, in the schedule's
/// namespace (where its ActionSets are created and Kanister looks Blueprints up).
pub fn blueprint_refs(obj: &Value, namespace: Option<&str>) -> Vec<BlueprintRef> {
    let ns = namespace
        .filter(|n| !n.is_empty())
        .or_else(|| obj.pointer("/metadata/namespace").and_then(Value::as_str))
        .unwrap_or("")
        .to_owned();
    if ns.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<BlueprintRef> = Vec::new();
    for action in actions(obj) {
        if let Some(bp) = action
            .get("blueprint")
            .and_then(Value::as_str)
            .filter(|b| !b.is_empty())
        {
            let r = (ns.clone(), bp.to_owned());
            if !out.contains(&r) {
                out.push(r);
            }
        }
    }
    out
}

fn actions(obj: &Value) -> impl Iterator<Item = &Value> {
    obj.pointer("/spec/actionSetTemplate/actions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn problem(path: &str, message: String) -> Problem {
    Problem {
        path: path.to_owned(),
        action: None,
        phase: None,
        rule: Rule::Structure,
        message,
    }
}

/// A fixed reference time, so the answer never depends on the clock.
fn reference_time() -> DateTime<Utc> {
    DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default() // 2026-01-01T00:00:00Z
}

/// Checks the schedule; returns `(errors, warnings)`.
pub fn check(obj: &Value, lookups: &[(BlueprintRef, Lookup)]) -> (Vec<Problem>, Vec<Problem>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let Some(spec) = obj.get("spec").and_then(Value::as_object) else {
        errors.push(problem(
            "spec",
            "an ActionSchedule needs a spec with schedule and actionSetTemplate".into(),
        ));
        return (errors, warnings);
    };

    // Time zone and schedule, reported separately.
    let tz = match spec.get("timeZone") {
        None | Some(Value::Null) => None,
        Some(Value::String(z)) => match parse_time_zone(Some(z)) {
            Ok(_) => Some(z.as_str()),
            Err(e) => {
                errors.push(problem("spec.timeZone", e.to_string()));
                None
            }
        },
        Some(_) => {
            errors.push(problem(
                "spec.timeZone",
                "timeZone must be a string such as \"Europe/Berlin\"".into(),
            ));
            None
        }
    };
    match spec.get("schedule") {
        Some(Value::String(s)) => {
            match Schedule::parse(s, tz) {
                Ok(schedule) => {
                    if let Some(secs) = schedule.every_seconds() {
                        if secs < 60 {
                            warnings.push(problem(
                            "spec.schedule",
                            format!("{s:?} starts a run every {secs}s; check that retention keeps up"),
                        ));
                        }
                    } else if schedule.next_after(reference_time()).is_none() {
                        errors.push(problem(
                            "spec.schedule",
                            format!(
                                "{s:?} never fires (no matching date): check day-of-month and month"
                            ),
                        ));
                    }
                }
                Err(e) => errors.push(problem("spec.schedule", e.to_string())),
            }
        }
        None | Some(Value::Null) => errors.push(problem(
            "spec.schedule",
            "schedule is required, e.g. \"0 3 * * *\" or \"@daily\"".into(),
        )),
        Some(_) => errors.push(problem(
            "spec.schedule",
            "schedule must be a string, e.g. \"0 3 * * *\"".into(),
        )),
    }

    // Exclusive runs: the wait timeout is a Go duration, and means nothing alone.
    match spec.get("exclusiveWaitTimeout") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) => {
            if let Err(e) = crate::duration::parse_timeout(t) {
                errors.push(problem(
                    "spec.exclusiveWaitTimeout",
                    format!("{t:?} is not a wait timeout ({e}); write a Go duration such as \"2h\", or \"0\" to wait as long as it takes"),
                ));
            } else if spec.get("exclusive") != Some(&Value::Bool(true)) {
                warnings.push(problem(
                    "spec.exclusiveWaitTimeout",
                    "exclusiveWaitTimeout has no effect without exclusive: true".into(),
                ));
            }
        }
        Some(_) => errors.push(problem(
            "spec.exclusiveWaitTimeout",
            "exclusiveWaitTimeout must be a string such as \"2h\"".into(),
        )),
    }

    if let Some(v) = spec.get("startingDeadlineSeconds").filter(|v| !v.is_null())
        && v.as_i64().is_none_or(|n| n < 1)
    {
        errors.push(problem(
            "spec.startingDeadlineSeconds",
            format!("must be a whole number of seconds ≥ 1, got {v}"),
        ));
    }
    enum_field(
        spec,
        "spec",
        "concurrencyPolicy",
        &["Allow", "Forbid", "Replace"],
        &mut errors,
    );
    enum_field(
        spec,
        "spec",
        "missedRunPolicy",
        &["RunLatest", "Skip"],
        &mut errors,
    );

    // Retention.
    let mut delete_action = None;
    let mut delete_kind = None;
    let mut delete_kind_given = false;
    match spec.get("retention") {
        None | Some(Value::Null) => {}
        Some(Value::Object(r)) => {
            let mut keeps_complete = false;
            for key in [
                "keepLast",
                "keepFailed",
                "keepHourly",
                "keepDaily",
                "keepWeekly",
                "keepMonthly",
                "keepYearly",
            ] {
                match r.get(key) {
                    None | Some(Value::Null) => {
                        if key == "keepLast" {
                            keeps_complete = true; // default 3
                        }
                    }
                    Some(v) => match v.as_u64() {
                        Some(n) if n <= u64::from(u32::MAX) => {
                            if key != "keepFailed" && n > 0 {
                                keeps_complete = true;
                            }
                        }
                        _ => errors.push(problem(
                            &format!("spec.retention.{key}"),
                            format!("must be a whole number ≥ 0, got {v}"),
                        )),
                    },
                }
            }
            if !keeps_complete {
                warnings.push(problem(
                    "spec.retention",
                    "keepLast is 0 and no keepHourly/Daily/Weekly/Monthly/Yearly: only the newest complete run is kept".into(),
                ));
            }
            match r.get("deleteAction") {
                None | Some(Value::Null) => {}
                Some(Value::String(a)) if !a.is_empty() => delete_action = Some(a.as_str()),
                Some(v) => errors.push(problem(
                    "spec.retention.deleteAction",
                    format!("must be the name of a Blueprint action, got {v}"),
                )),
            }
            delete_kind_given = r.get("deleteActionKind").is_some_and(|v| !v.is_null());
            match r.get("deleteActionKind") {
                None | Some(Value::Null) => {}
                Some(Value::String(k)) if !k.is_empty() => {
                    delete_kind = Some(k.as_str());
                    if delete_action.is_none() {
                        warnings.push(problem(
                            "spec.retention.deleteActionKind",
                            "deleteActionKind has no effect without deleteAction".into(),
                        ));
                    }
                }
                Some(v) => errors.push(problem(
                    "spec.retention.deleteActionKind",
                    format!("must be Namespace or the kind of the runs' object, got {v}"),
                )),
            }
            enum_field(
                r,
                "spec.retention",
                "onDelete",
                &["Retain", "Delete"],
                &mut errors,
            );
            if r.get("onDelete").and_then(Value::as_str) == Some("Delete")
                && delete_action.is_none()
            {
                warnings.push(problem(
                    "spec.retention.onDelete",
                    "onDelete: Delete without deleteAction removes only the runs' ActionSets when the schedule is deleted; the backups' data stays in the object store. Set deleteAction to the Blueprint's delete action".into(),
                ));
            }
        }
        Some(_) => errors.push(problem(
            "spec.retention",
            "retention must be a map, e.g. {keepLast: 7, keepFailed: 2}".into(),
        )),
    }

    // The ActionSet template and the Blueprints it uses.
    let list = spec
        .get("actionSetTemplate")
        .and_then(|t| t.get("actions"))
        .and_then(Value::as_array);
    match list {
        None => errors.push(problem(
            "spec.actionSetTemplate.actions",
            "actionSetTemplate needs actions: a list of {name, blueprint, object}".into(),
        )),
        Some(l) if l.is_empty() => errors.push(problem(
            "spec.actionSetTemplate.actions",
            "actionSetTemplate.actions is empty: name at least one Blueprint action to run".into(),
        )),
        Some(l) => {
            let ns = lookups
                .first()
                .map(|((ns, _), _)| ns.as_str())
                .unwrap_or("");
            for (i, action) in l.iter().enumerate() {
                let path = format!("spec.actionSetTemplate.actions[{i}]");
                let name = action.get("name").and_then(Value::as_str).unwrap_or("");
                let bp = action
                    .get("blueprint")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if name.is_empty() {
                    errors.push(problem(
                        &format!("{path}.name"),
                        "name the Blueprint action to run, e.g. backup".into(),
                    ));
                }
                if bp.is_empty() {
                    errors.push(problem(
                        &format!("{path}.blueprint"),
                        "name the Blueprint that holds the action".into(),
                    ));
                    continue;
                }
                let kind = action
                    .pointer("/object/kind")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if let Some(k) = delete_kind
                    && !is_namespace(k)
                    && !k.eq_ignore_ascii_case(kind)
                {
                    errors.push(problem(
                        "spec.retention.deleteActionKind",
                        format!(
                            "{k:?} is neither Namespace nor the kind of the runs' object ({path}.object.kind: {kind:?}); the delete action runs on the namespace of that object (Namespace, as kanctl --namespacetargets) or on the object itself ({kind:?})"
                        ),
                    ));
                }
                let found = lookups.iter().find(|((_, b), _)| b == bp).map(|(_, l)| l);
                match found {
                    Some(Lookup::Found(doc)) => {
                        let mut wanted = vec![(format!("{path}.name"), name)];
                        if let Some(d) = delete_action {
                            wanted.push(("spec.retention.deleteAction".into(), d));
                        }
                        for (at, wanted_action) in wanted {
                            if wanted_action.is_empty() {
                                continue;
                            }
                            if let Some(msg) = missing_action(doc, bp, wanted_action) {
                                errors.push(problem(&at, msg));
                            }
                        }
                        if let Some(d) = delete_action
                            && !delete_kind_given
                        {
                            delete_object_problems(doc, bp, d, kind, &mut errors, &mut warnings);
                        }
                    }
                    Some(Lookup::Missing) => warnings.push(problem(
                        &format!("{path}.blueprint"),
                        format!(
                            "Blueprint {bp:?} not found in namespace {ns:?}; runs fail until it exists"
                        ),
                    )),
                    Some(Lookup::NotChecked(_)) | None => {}
                }
            }
        }
    }
    // The same deleteAction error may be found through several actions: report it once.
    errors.dedup_by(|a, b| a.path == b.path && a.message == b.message);
    (errors, warnings)
}

/// Without `deleteActionKind`, the delete action `d` of Blueprint `bp` (`doc`)
/// runs on the kind it declares, else on the runs' object of kind `kind`.
/// Error: it declares nothing and renders `.Namespace`, which only a
/// Namespace object sets, so on the runs' object it would fail every time.
/// Warning: it declares a kind that is neither Namespace nor the runs'
/// (Kanister ignores a declared kind; so does the scheduler then).
fn delete_object_problems(
    doc: &Value,
    bp: &str,
    d: &str,
    kind: &str,
    errors: &mut Vec<Problem>,
    warnings: &mut Vec<Problem>,
) {
    let Some(action) = doc.pointer(&format!(
        "/actions/{}",
        d.replace('~', "~0").replace('/', "~1")
    )) else {
        return;
    };
    let declared = action.get("kind").and_then(Value::as_str).unwrap_or("");
    if is_namespace(kind) || declared.eq_ignore_ascii_case(kind) || is_namespace(declared) {
        return;
    }
    if !declared.is_empty() {
        warnings.push(problem(
            "spec.retention.deleteAction",
            format!(
                "Blueprint {bp:?} declares kind {declared:?} for action {d:?}, but the runs' object is a {kind}; the delete action runs on that object. Set spec.retention.deleteActionKind to Namespace or {kind} to say so"
            ),
        ));
    } else if renders_namespace(action) {
        errors.push(problem(
            "spec.retention.deleteActionKind",
            format!(
                "action {d:?} of Blueprint {bp:?} renders .Namespace, which is set only when it runs on a Namespace, and declares no kind: on the runs' {kind} it would fail. Set deleteActionKind: Namespace (it then runs on the namespace of the runs' object, as kanctl --namespacetargets)"
            ),
        ));
    }
}

/// True when a template in the Blueprint action uses the top-level
/// `.Namespace` (not a field such as `.StatefulSet.Namespace`).
fn renders_namespace(action: &Value) -> bool {
    let text = action.to_string();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(".Namespace").any(|(i, m)| {
        let before = text[..i].chars().next_back();
        let after = text[i + m.len()..].chars().next();
        !before.is_some_and(|c| ident(c) || c == ')' || c == ']') && !after.is_some_and(ident)
    })
}

/// `Some(message)` when `action` is not an action of the Blueprint `doc`.
fn missing_action(doc: &Value, bp: &str, action: &str) -> Option<String> {
    let actions = doc.get("actions").and_then(Value::as_object);
    if actions.is_some_and(|a| a.contains_key(action)) {
        return None;
    }
    let have: Vec<&str> = actions
        .map(|a| a.keys().map(String::as_str).collect())
        .unwrap_or_default();
    Some(format!(
        "Blueprint {bp:?} has no action {action:?} (it has: {})",
        if have.is_empty() {
            "none".to_owned()
        } else {
            have.join(", ")
        }
    ))
}

/// `map.key` (at path `at.key`) is absent or one of `allowed`.
fn enum_field(
    map: &serde_json::Map<String, Value>,
    at: &str,
    key: &str,
    allowed: &[&str],
    errors: &mut Vec<Problem>,
) {
    match map.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => {}
        Some(v) => errors.push(problem(
            &format!("{at}.{key}"),
            format!("must be one of {}, got {v}", allowed.join(", ")),
        )),
    }
}

/// The admission answer for an ActionSchedule.
pub fn validate(
    base: AdmissionResponse,
    obj: &Value,
    lookups: &[(BlueprintRef, Lookup)],
) -> (AdmissionResponse, Verdict, String) {
    let (errors, warnings) = check(obj, lookups);
    let warnings = limit_warnings(warnings.iter().map(|w| w.to_string()));
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !errors.is_empty() {
        let n = errors.len();
        let mut resp = deny_kind(base, "ActionSchedule", name, "is invalid", &errors);
        resp.warnings = warnings;
        return (resp, Verdict::Denied, format!("{n} error(s)"));
    }
    let mut resp = base;
    resp.warnings = warnings;
    (resp, Verdict::Allowed, "valid".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sched(spec: Value) -> Value {
        json!({"metadata": {"name": "s", "namespace": "ns"}, "spec": spec})
    }

    fn paths(p: &[Problem]) -> Vec<&str> {
        p.iter().map(|p| p.path.as_str()).collect()
    }

    #[test]
    fn valid_schedule_with_visible_blueprint() {
        let obj = sched(json!({
            "schedule": "0 3 * * *", "timeZone": "Europe/Berlin",
            "actionSetTemplate": {"actions": [{"name": "backup", "blueprint": "bp"}]},
            "retention": {"keepLast": 7, "deleteAction": "delete", "onDelete": "Delete"}
        }));
        let refs = blueprint_refs(&obj, None);
        assert_eq!(refs, vec![("ns".to_owned(), "bp".to_owned())]);
        let bp = json!({"actions": {"backup": {}, "delete": {}}});
        let (e, w) = check(&obj, &[(refs[0].clone(), Lookup::Found(bp))]);
        assert!(e.is_empty() && w.is_empty(), "{e:?} {w:?}");
    }

    #[test]
    fn exclusive_wait_timeout_is_a_duration_and_needs_exclusive() {
        let check_spec = |extra: serde_json::Value| {
            let mut spec = json!({"schedule": "0 3 * * *",
                "actionSetTemplate": {"actions": [{"name": "backup", "blueprint": "bp"}]}});
            for (k, v) in extra.as_object().unwrap() {
                spec[k] = v.clone();
            }
            let obj = sched(spec);
            let refs = blueprint_refs(&obj, None);
            let bp = json!({"actions": {"backup": {}}});
            check(&obj, &[(refs[0].clone(), Lookup::Found(bp))])
        };
        let (e, w) = check_spec(json!({"exclusive": true, "exclusiveWaitTimeout": "2h"}));
        assert!(e.is_empty() && w.is_empty(), "{e:?} {w:?}");
        let (e, _) = check_spec(json!({"exclusive": true, "exclusiveWaitTimeout": "two hours"}));
        assert_eq!(paths(&e), vec!["spec.exclusiveWaitTimeout"]);
        assert!(e[0].message.contains("Go duration"), "{e:?}");
        let (e, w) = check_spec(json!({"exclusiveWaitTimeout": "2h"}));
        assert!(e.is_empty(), "{e:?}");
        assert!(w[0].message.contains("without exclusive: true"), "{w:?}");
    }

    #[test]
    fn lists_every_error() {
        let obj = sched(json!({
            "schedule": "61 * * * *", "timeZone": "Mars/Olympus",
            "startingDeadlineSeconds": 0, "concurrencyPolicy": "Sometimes",
            "actionSetTemplate": {"actions": [{"name": "backpu", "blueprint": "bp"}, {"name": "x"}]},
            "retention": {"keepLast": -1, "deleteAction": "nope", "onDelete": "Purge"}
        }));
        let refs = blueprint_refs(&obj, Some("ns"));
        let bp = json!({"actions": {"backup": {}}});
        let (e, _) = check(&obj, &[(refs[0].clone(), Lookup::Found(bp))]);
        let p = paths(&e);
        for want in [
            "spec.timeZone",
            "spec.schedule",
            "spec.startingDeadlineSeconds",
            "spec.concurrencyPolicy",
            "spec.retention.keepLast",
            "spec.actionSetTemplate.actions[0].name",
            "spec.actionSetTemplate.actions[1].blueprint",
            "spec.retention.deleteAction",
            "spec.retention.onDelete",
        ] {
            assert!(p.contains(&want), "{want} missing in {p:?}");
        }
        let msg = &e
            .iter()
            .find(|p| p.path.ends_with("[0].name"))
            .unwrap()
            .message;
        assert!(
            msg.contains("has no action \"backpu\" (it has: backup)"),
            "{msg}"
        );
    }

    #[test]
    fn missing_blueprint_is_a_warning_and_impossible_dates_an_error() {
        let obj = sched(json!({
            "schedule": "0 0 30 2 *",
            "actionSetTemplate": {"actions": [{"name": "backup", "blueprint": "bp"}]},
            "retention": {"keepLast": 0}
        }));
        let refs = blueprint_refs(&obj, Some("ns"));
        let (e, w) = check(&obj, &[(refs[0].clone(), Lookup::Missing)]);
        assert_eq!(paths(&e), vec!["spec.schedule"]);
        assert!(e[0].message.contains("never fires"), "{e:?}");
        assert_eq!(
            paths(&w),
            vec![
                "spec.retention",
                "spec.actionSetTemplate.actions[0].blueprint"
            ]
        );
    }

    #[test]
    fn on_delete_delete_without_delete_action_is_a_warning() {
        let obj = sched(json!({
            "schedule": "@daily",
            "actionSetTemplate": {"actions": [{"name": "backup", "blueprint": "bp"}]},
            "retention": {"onDelete": "Delete"}
        }));
        let refs = blueprint_refs(&obj, None);
        let bp = json!({"actions": {"backup": {}}});
        let (e, w) = check(&obj, &[(refs[0].clone(), Lookup::Found(bp))]);
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(paths(&w), vec!["spec.retention.onDelete"]);
        assert!(w[0].message.contains("data stays"), "{w:?}");
    }

    /// The corpus' PostgreSQL Blueprint in short: backup declares StatefulSet, delete declares
    /// nothing and renders `.Namespace.Name`.
    fn pg_blueprint(delete_kind: Option<&str>) -> Value {
        let mut delete = json!({"inputArtifactNames": ["cloudObject"], "phases": [{
            "func": "KubeTask", "name": "deleteDump",
            "args": {"namespace": "{{ .Namespace.Name }}", "command": ["kando", "location", "delete"]}}]});
        if let Some(k) = delete_kind {
            delete["kind"] = json!(k);
        }
        json!({"actions": {"backup": {"kind": "StatefulSet", "phases": [{"func": "KubeTask", "name": "b",
            "args": {"namespace": "{{ .StatefulSet.Namespace }}"}}]}, "delete": delete}})
    }

    fn pg_schedule(retention: Value) -> Value {
        sched(json!({
            "schedule": "@daily",
            "actionSetTemplate": {"actions": [{"name": "backup", "blueprint": "pg",
                "object": {"kind": "StatefulSet", "name": "db", "namespace": "ns"}}]},
            "retention": retention
        }))
    }

    fn check_pg(retention: Value, bp: Value) -> (Vec<Problem>, Vec<Problem>) {
        let obj = pg_schedule(retention);
        let refs = blueprint_refs(&obj, None);
        check(&obj, &[(refs[0].clone(), Lookup::Found(bp))])
    }

    #[test]
    fn a_namespace_delete_action_on_a_workload_needs_delete_action_kind() {
        // As the corpus writes it: refused, naming the field that fixes it.
        let (e, _) = check_pg(
            json!({"keepLast": 1, "deleteAction": "delete"}),
            pg_blueprint(None),
        );
        assert_eq!(paths(&e), vec!["spec.retention.deleteActionKind"], "{e:?}");
        assert!(
            e[0].message.contains("renders .Namespace")
                && e[0].message.contains("deleteActionKind: Namespace"),
            "{e:?}"
        );
        // With the override, or with a Blueprint that declares it: admitted.
        for (retention, bp) in [
            (
                json!({"deleteAction": "delete", "deleteActionKind": "Namespace"}),
                pg_blueprint(None),
            ),
            (
                json!({"deleteAction": "delete", "deleteActionKind": "namespace"}),
                pg_blueprint(None),
            ),
            (
                json!({"deleteAction": "delete"}),
                pg_blueprint(Some("Namespace")),
            ),
            (
                json!({"deleteAction": "delete", "deleteActionKind": "statefulset"}),
                pg_blueprint(None),
            ),
        ] {
            let (e, w) = check_pg(retention.clone(), bp);
            assert!(e.is_empty() && w.is_empty(), "{retention}: {e:?} {w:?}");
        }
        // `.StatefulSet.Namespace` is a field of the object, not `.Namespace`.
        let bp = json!({"actions": {"backup": {}, "delete": {"phases": [{"func": "KubeTask",
            "args": {"namespace": "{{ .StatefulSet.Namespace }}", "x": "{{ $.Namespacex }}"}}]}}});
        let (e, w) = check_pg(json!({"deleteAction": "delete"}), bp);
        assert!(e.is_empty() && w.is_empty(), "{e:?} {w:?}");
        assert!(renders_namespace(&json!("{{ $.Namespace.Name }}")));
        assert!(renders_namespace(&json!("{{.Namespace.Name}}")));
        assert!(!renders_namespace(&json!("{{ .Object.Namespace }}")));
    }

    #[test]
    fn delete_action_kind_is_namespace_or_the_runs_kind() {
        let (e, _) = check_pg(
            json!({"deleteAction": "delete", "deleteActionKind": "Deployment"}),
            pg_blueprint(None),
        );
        assert_eq!(paths(&e), vec!["spec.retention.deleteActionKind"], "{e:?}");
        assert!(
            e[0].message
                .contains("actions[0].object.kind: \"StatefulSet\""),
            "{e:?}"
        );
        let (e, _) = check_pg(
            json!({"deleteAction": "delete", "deleteActionKind": 3}),
            pg_blueprint(None),
        );
        assert_eq!(paths(&e), vec!["spec.retention.deleteActionKind"], "{e:?}");
        // Without deleteAction it does nothing: a warning.
        let (e, w) = check_pg(json!({"deleteActionKind": "Namespace"}), pg_blueprint(None));
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(paths(&w), vec!["spec.retention.deleteActionKind"]);
        // A declared kind that is neither: Kanister ignores it, so do we, with a warning.
        let (e, w) = check_pg(
            json!({"deleteAction": "delete"}),
            pg_blueprint(Some("Deployment")),
        );
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(paths(&w), vec!["spec.retention.deleteAction"]);
    }
}
