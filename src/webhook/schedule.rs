//! `/validate/actionschedule`: decodes each section of the spec as its model type, checks it
//! and lists every error.
//!
//! * `spec.schedule` parses as Kubernetes CronJob syntax and fires at least once in five years;
//! * `spec.timeZone` is an IANA zone;
//! * `spec.startingDeadlineSeconds` ≥ 1, `concurrencyPolicy`/`missedRunPolicy` known values,
//!   `suspendAfterFailures` ≥ 1;
//! * `spec.jitter` is a Go duration shorter than the schedule's shortest interval;
//! * `spec.window`: `start`/`end` are `HH:MM` and differ, `days` (if given) is not empty,
//!   `outside` is `Skip` or `Wait`; with `Skip`, some tick of the schedule must fall inside;
//! * `spec.retention`: counts are non-negative integers; warns when nothing but the newest
//!   complete run would be kept; `onDelete` is `Retain` or `Delete` (warns when `Delete`
//!   has no `deleteAction`: the backups' data would stay behind); `deleteActionKind` is
//!   `Namespace` or the kind of the runs' object; without it, a visible Blueprint's delete
//!   action that renders `.Namespace` and declares no kind is an error (it would fail on the
//!   runs' object every time);
//! * `spec.verify`: `every` ≥ 1 or `schedule` (a cron line), not both; `action` and `object`
//!   given; the object is not one the backups are taken of; `action` and `checkAction` exist
//!   in the Blueprint (`verify.blueprint`, else the template's) when it is visible;
//!   `retention.keepVerified` without `verify` warns;
//! * `spec.actionSetTemplate.actions[*]` name an action and a Blueprint; when the Blueprint is
//!   visible to the webhook, the action (and `retention.deleteAction`) must exist in it. A
//!   Blueprint that does not exist yet is only a warning: GitOps tools apply in any order.

use chrono::{DateTime, Utc};
use kube::core::admission::AdmissionResponse;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

type Object = Map<String, Value>;

use super::metrics::Verdict;
use super::response::{BlueprintRef, Lookup, deny_kind, limit_warnings};
use crate::blueprint::{Problem, Rule};
use crate::model::{
    ActionSpec, ConcurrencyPolicy, MissedRunPolicy, OnDelete, OutsideWindow, Retention, RunWindow,
    WindowDay,
};
use crate::scheduler::cron::{Schedule, parse_time_zone};
use crate::scheduler::delete_action::is_namespace;
use crate::scheduler::window::{self, Window};

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
    let actions = obj
        .pointer("/spec/actionSetTemplate/actions")
        .and_then(Value::as_array);
    let mut out: Vec<BlueprintRef> = Vec::new();
    let verify = obj
        .pointer("/spec/verify/blueprint")
        .and_then(Value::as_str);
    for bp in actions
        .into_iter()
        .flatten()
        .filter_map(|a| a.get("blueprint")?.as_str())
        .chain(verify)
    {
        let r = (ns.clone(), bp.to_owned());
        if !bp.is_empty() && !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// Errors (the answer is a denial) and warnings, in the order they were found.
#[derive(Default)]
struct Report {
    errors: Vec<Problem>,
    warnings: Vec<Problem>,
}

impl Report {
    fn error(&mut self, path: &str, message: impl Into<String>) {
        self.errors.push(problem(path, message.into()));
    }
    fn warn(&mut self, path: &str, message: impl Into<String>) {
        self.warnings.push(problem(path, message.into()));
    }
    /// `map[key]` as its model type (absent or null: `None`); a value that does not decode,
    /// or that `valid` refuses, is reported at `at.key` as "`why`, got `value`".
    fn decode<T: DeserializeOwned>(
        &mut self,
        map: &Object,
        at: &str,
        key: &str,
        why: &str,
        valid: fn(&T) -> bool,
    ) -> Option<T> {
        match field(map, key) {
            Ok(t) if t.as_ref().is_none_or(valid) => t,
            _ => {
                self.error(&format!("{at}.{key}"), format!("{why}, got {}", map[key]));
                None
            }
        }
    }
    /// `map[key]` as a value of the model's enum `E`, whose values the error lists.
    fn choice<E: DeserializeOwned>(&mut self, map: &Object, at: &str, key: &str) -> Option<E> {
        let why = format!("must be one of {}", variants::<E>().join(", "));
        self.decode(map, at, key, &why, |_| true)
    }
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

/// `map[key]` decoded as its model type: `Ok(None)` when absent or null. Each field is
/// decoded on its own so that every bad one is reported, not only the first serde meets.
fn field<'a, T: DeserializeOwned>(map: &'a Object, key: &str) -> Result<Option<T>, &'a Value> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => T::deserialize(v).map(Some).map_err(|_| v),
    }
}

/// A fixed reference time, so the answer never depends on the clock.
fn reference_time() -> DateTime<Utc> {
    DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default() // 2026-01-01T00:00:00Z
}

/// Checks the schedule; returns `(errors, warnings)`.
pub fn check(obj: &Value, lookups: &[(BlueprintRef, Lookup)]) -> (Vec<Problem>, Vec<Problem>) {
    let mut report = Report::default();
    let Some(spec) = obj.get("spec").and_then(Value::as_object) else {
        report.error(
            "spec",
            "an ActionSchedule needs a spec with schedule and actionSetTemplate",
        );
        return (report.errors, report.warnings);
    };
    let tz = check_time_zone(spec, &mut report);
    let schedule = check_schedule(spec, tz.as_deref(), &mut report);
    check_jitter(spec, schedule.as_ref(), &mut report);
    check_window(spec, schedule.as_ref(), &mut report);
    check_exclusive(spec, &mut report);
    check_run_policies(spec, &mut report);
    let deletion = check_retention(spec, &mut report);
    check_actions(spec, &deletion, lookups, &mut report);
    let ns = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .or_else(|| lookups.first().map(|((ns, _), _)| ns.as_str()));
    check_verify(spec, tz.as_deref(), ns, lookups, &mut report);
    // The same deleteAction error may be found through several actions: report it once.
    report
        .errors
        .dedup_by(|a, b| a.path == b.path && a.message == b.message);
    (report.errors, report.warnings)
}

/// `spec.timeZone`, when it is a valid zone (an invalid one is reported apart from the schedule).
fn check_time_zone(spec: &Object, report: &mut Report) -> Option<String> {
    let at = "spec.timeZone";
    let z = field::<String>(spec, "timeZone")
        .map_err(|_| report.error(at, "timeZone must be a string such as \"Europe/Berlin\""))
        .ok()??;
    let valid = parse_time_zone(Some(&z)).map_err(|e| report.error(at, e.to_string()));
    valid.ok().map(|_| z)
}

/// `spec.schedule`, parsed when valid (in the zone, when that is valid).
fn check_schedule(spec: &Object, tz: Option<&str>, report: &mut Report) -> Option<Schedule> {
    let at = "spec.schedule";
    let s = match field::<String>(spec, "schedule") {
        Ok(Some(s)) => s,
        Ok(None) => {
            report.error(at, "schedule is required, e.g. \"0 3 * * *\" or \"@daily\"");
            return None;
        }
        Err(_) => {
            report.error(at, "schedule must be a string, e.g. \"0 3 * * *\"");
            return None;
        }
    };
    match Schedule::parse(&s, tz) {
        Err(e) => {
            report.error(at, e.to_string());
            None
        }
        Ok(schedule) => {
            check_fires(&s, &schedule, report);
            Some(schedule)
        }
    }
}

/// A warning for a schedule faster than a minute, an error for one that never fires.
fn check_fires(s: &str, schedule: &Schedule, report: &mut Report) {
    let at = "spec.schedule";
    match schedule.every_seconds() {
        Some(secs) if secs < 60 => report.warn(
            at,
            format!("{s:?} starts a run every {secs}s; check that retention keeps up"),
        ),
        Some(_) => {}
        None if schedule.next_after(reference_time()).is_none() => report.error(
            at,
            format!("{s:?} never fires (no matching date): check day-of-month and month"),
        ),
        None => {}
    }
}

/// `spec.jitter`: a Go duration shorter than the schedule's shortest interval (a longer one
/// would move a run past the next tick's).
fn check_jitter(spec: &Object, schedule: Option<&Schedule>, report: &mut Report) {
    let at = "spec.jitter";
    let text = match field::<String>(spec, "jitter") {
        Ok(None) => return,
        Ok(Some(t)) => t,
        Err(v) => {
            return report.error(
                at,
                format!("jitter must be a Go duration such as \"30m\", got {v}"),
            );
        }
    };
    let secs = match window::parse_jitter(&text) {
        Ok(s) => s,
        Err(e) => {
            return report.error(
                at,
                format!("{text:?} is not a jitter ({e}); write a Go duration such as \"30m\""),
            );
        }
    };
    let Some(s) = spec
        .get("schedule")
        .and_then(Value::as_str)
        .filter(|_| schedule.is_some())
    else {
        return;
    };
    if let Some(interval) = window::shortest_interval(s, reference_time())
        && secs >= interval
    {
        report.error(
            at,
            format!(
                "jitter {text:?} ({secs}s) is not shorter than the shortest interval of {s:?} ({interval}s between two ticks): a run could start after the next tick's; use less than {interval}s"
            ),
        );
    }
}

/// `spec.window`: each field typed and located; a window that never opens, and (with
/// `outside: Skip`) one that no tick of the schedule falls in, are refused.
fn check_window(spec: &Object, schedule: Option<&Schedule>, report: &mut Report) {
    let at = "spec.window";
    let w = match spec.get("window") {
        None | Some(Value::Null) => return,
        Some(Value::Object(w)) => w,
        Some(v) => {
            return report.error(
                at,
                format!(
                    "window must be a map such as {{start: \"01:00\", end: \"05:00\"}}, got {v}"
                ),
            );
        }
    };
    let hhmm = "must be a wall-clock time HH:MM (00:00 to 23:59)";
    let time = |report: &mut Report, key: &str| {
        let t = report.decode::<String>(w, at, key, hhmm, |t| window::is_wall_time(t));
        if t.is_none() && w.get(key).is_none_or(Value::is_null) {
            report.error(&format!("{at}.{key}"), format!("{key} is required: {hhmm}"));
        }
        t
    };
    let start = time(report, "start");
    let end = time(report, "end");
    let why = format!("must be a list of {}", variants::<WindowDay>().join(", "));
    let days_ok = field::<Vec<WindowDay>>(w, "days").is_ok();
    let days = report.decode::<Vec<WindowDay>>(w, at, "days", &why, |_| true);
    let outside = report.choice::<OutsideWindow>(w, at, "outside");
    let outside_ok = field::<OutsideWindow>(w, "outside").is_ok();
    let (Some(start), Some(end), true, true) = (start, end, days_ok, outside_ok) else {
        return;
    };
    let run_window = RunWindow {
        start,
        end,
        days,
        outside: outside.unwrap_or_default(),
    };
    let errors = Window::errors(&run_window);
    for e in &errors {
        report.error(&format!("{at}.{}", e.field()), e.to_string());
    }
    if !errors.is_empty() || run_window.outside != OutsideWindow::Skip {
        return;
    }
    if let (Some(s), Ok(parsed)) = (schedule, Window::parse(&run_window))
        && !window::some_tick_inside(s, &parsed, reference_time())
    {
        report.error(
            at,
            format!(
                "no tick of {s} falls in the window {}-{}: with outside: Skip every tick would be skipped; widen the window, change the schedule, or use outside: Wait",
                run_window.start, run_window.end
            ),
        );
    }
}

/// The wait timeout is a Go duration, and means nothing without `exclusive`.
fn check_exclusive(spec: &Object, report: &mut Report) {
    let at = "spec.exclusiveWaitTimeout";
    match field::<String>(spec, "exclusiveWaitTimeout") {
        Err(_) => report.error(at, "exclusiveWaitTimeout must be a string such as \"2h\""),
        Ok(None) => {}
        Ok(Some(t)) => match crate::duration::parse_timeout(&t) {
            Err(e) => report.error(
                at,
                format!("{t:?} is not a wait timeout ({e}); write a Go duration such as \"2h\", or \"0\" to wait as long as it takes"),
            ),
            Ok(_) if field::<bool>(spec, "exclusive") != Ok(Some(true)) => {
                report.warn(at, "exclusiveWaitTimeout has no effect without exclusive: true")
            }
            Ok(_) => {}
        },
    }
}

/// `startingDeadlineSeconds`, `concurrencyPolicy` and `missedRunPolicy`.
fn check_run_policies(spec: &Object, report: &mut Report) {
    let whole = "must be a whole number of seconds ≥ 1";
    report.decode::<i64>(spec, "spec", "startingDeadlineSeconds", whole, |n| *n >= 1);
    let why = "must be a whole number of failed runs ≥ 1 (leave it out to never suspend)";
    report.decode::<u32>(spec, "spec", "suspendAfterFailures", why, |n| *n >= 1);
    report.choice::<ConcurrencyPolicy>(spec, "spec", "concurrencyPolicy");
    report.choice::<MissedRunPolicy>(spec, "spec", "missedRunPolicy");
}

/// What the actions' checks need from `spec.retention`.
#[derive(Default)]
struct Deletion {
    action: Option<String>,
    kind: Option<String>,
    /// `deleteActionKind` is set, valid or not: the Blueprint's declared kind is then not used.
    kind_given: bool,
}

fn check_retention(spec: &Object, report: &mut Report) -> Deletion {
    let r = match spec.get("retention") {
        None | Some(Value::Null) => return Deletion::default(),
        Some(Value::Object(r)) => r,
        Some(_) => {
            report.error(
                "spec.retention",
                "retention must be a map, e.g. {keepLast: 7, keepFailed: 2}",
            );
            return Deletion::default();
        }
    };
    let given = |key: &str| r.get(key).is_some_and(|v| !v.is_null());
    let at = "spec.retention";
    // A count that does not decode keeps nothing.
    let mut count = |key: &str| {
        let why = "must be a whole number ≥ 0";
        report.decode::<u32>(r, at, key, why, |_| true).unwrap_or(0)
    };
    let keep_last = if given("keepLast") {
        count("keepLast")
    } else {
        Retention::default().keep_last
    };
    count("keepFailed");
    count("keepVerified");
    let buckets =
        ["Hourly", "Daily", "Weekly", "Monthly", "Yearly"].map(|b| count(&format!("keep{b}")));
    if keep_last == 0 && buckets.iter().all(|n| *n == 0) {
        report.warn(
            at,
            "keepLast is 0 and no keepHourly/Daily/Weekly/Monthly/Yearly: only the newest complete run is kept",
        );
    }
    let named = |s: &String| !s.is_empty();
    let why = "must be the name of a Blueprint action";
    let action = report.decode(r, at, "deleteAction", why, named);
    let why = "must be Namespace or the kind of the runs' object";
    let kind = report.decode(r, at, "deleteActionKind", why, named);
    if kind.is_some() && action.is_none() {
        report.warn(
            "spec.retention.deleteActionKind",
            "deleteActionKind has no effect without deleteAction",
        );
    }
    let on_delete = report.choice(r, at, "onDelete");
    if on_delete == Some(OnDelete::Delete) && action.is_none() {
        report.warn(
            "spec.retention.onDelete",
            "onDelete: Delete without deleteAction removes only the runs' ActionSets when the schedule is deleted; the backups' data stays in the object store. Set deleteAction to the Blueprint's delete action",
        );
    }
    Deletion {
        action,
        kind,
        kind_given: given("deleteActionKind"),
    }
}

/// `spec.actionSetTemplate.actions` and the Blueprints they use. Each action is decoded as the
/// ActionSpec the scheduler copies into its runs, on its own, so that every bad one is reported.
fn check_actions(
    spec: &Object,
    deletion: &Deletion,
    lookups: &[(BlueprintRef, Lookup)],
    report: &mut Report,
) {
    let at = "spec.actionSetTemplate.actions";
    let Some(list) = spec
        .get("actionSetTemplate")
        .and_then(|t| t.get("actions"))
        .and_then(Value::as_array)
    else {
        return report.error(
            at,
            "actionSetTemplate needs actions: a list of {name, blueprint, object}",
        );
    };
    if list.is_empty() {
        return report.error(
            at,
            "actionSetTemplate.actions is empty: name at least one Blueprint action to run",
        );
    }
    let ns = lookups
        .first()
        .map(|((ns, _), _)| ns.as_str())
        .unwrap_or("");
    for (i, action) in list.iter().enumerate() {
        let path = format!("{at}[{i}]");
        let action = match ActionSpec::deserialize(action) {
            Ok(a) => a,
            Err(e) => {
                report.error(
                    &path,
                    format!("not an ActionSet action ({{name, blueprint, object, ...}}): {e}"),
                );
                continue;
            }
        };
        let (name, bp, kind) = (
            action.name.as_str(),
            action.blueprint.as_str(),
            action.object.kind.as_str(),
        );
        if name.is_empty() {
            report.error(
                &format!("{path}.name"),
                "name the Blueprint action to run, e.g. backup",
            );
        }
        if bp.is_empty() {
            report.error(
                &format!("{path}.blueprint"),
                "name the Blueprint that holds the action",
            );
            continue;
        }
        if let Some(k) = &deletion.kind
            && !is_namespace(k)
            && !k.eq_ignore_ascii_case(kind)
        {
            report.error(
                "spec.retention.deleteActionKind",
                format!(
                    "{k:?} is neither Namespace nor the kind of the runs' object ({path}.object.kind: {kind:?}); the delete action runs on the namespace of that object (Namespace, as kanctl --namespacetargets) or on the object itself ({kind:?})"
                ),
            );
        }
        match lookups.iter().find(|((_, b), _)| b == bp).map(|(_, l)| l) {
            Some(Lookup::Found(doc)) => {
                let delete_action = deletion.action.as_deref().unwrap_or("");
                let wanted = [
                    (format!("{path}.name"), name),
                    ("spec.retention.deleteAction".into(), delete_action),
                ];
                for (at, wanted_action) in wanted {
                    if !wanted_action.is_empty()
                        && let Some(msg) = missing_action(doc, bp, wanted_action)
                    {
                        report.error(&at, msg);
                    }
                }
                if let Some(d) = &deletion.action
                    && !deletion.kind_given
                {
                    delete_object_problems(doc, bp, d, kind, report);
                }
            }
            Some(Lookup::Missing) => report.warn(
                &format!("{path}.blueprint"),
                format!(
                    "Blueprint {bp:?} not found in namespace {ns:?}; runs fail until it exists"
                ),
            ),
            Some(Lookup::NotChecked(_)) | None => {}
        }
    }
}

/// `spec.verify`: typed fields, `every` or `schedule` (a valid cron line), a scratch object
/// that is not one the backups are taken of (never restore over production: same kind, name
/// and namespace, an empty namespace being the schedule's), and actions its Blueprint has (when
/// visible). `retention.keepVerified` without it is a warning.
fn check_verify(
    spec: &Object,
    tz: Option<&str>,
    ns: Option<&str>,
    lookups: &[(BlueprintRef, Lookup)],
    report: &mut Report,
) {
    let at = "spec.verify";
    let v = match spec.get("verify") {
        None | Some(Value::Null) => {
            if spec
                .get("retention")
                .and_then(|r| r.get("keepVerified"))
                .is_some_and(|k| !k.is_null())
            {
                report.warn(
                    "spec.retention.keepVerified",
                    "keepVerified has no effect without spec.verify: no run is ever verified",
                );
            }
            return;
        }
        Some(Value::Object(v)) => v,
        Some(v) => {
            return report.error(
                at,
                format!("verify must be a map such as {{action: restore, object: {{kind: StatefulSet, name: scratch}}}}, got {v}"),
            );
        }
    };
    let named = |s: &String| !s.is_empty();
    let why = "must be a whole number of complete runs ≥ 1";
    let every = report.decode::<u32>(v, at, "every", why, |n| *n >= 1);
    let cron = report.decode::<String>(
        v,
        at,
        "schedule",
        "must be a cron line such as \"0 4 * * 0\"",
        named,
    );
    if every.is_some() && cron.is_some() {
        report.error(
            &format!("{at}.schedule"),
            "set either every (every Nth complete run) or schedule (a cron line), not both",
        );
    }
    if let Some(c) = &cron
        && let Err(e) = Schedule::parse(c, tz)
    {
        report.error(&format!("{at}.schedule"), e.to_string());
    }
    let why = "must name a Blueprint action, e.g. restore";
    let action = report.decode::<String>(v, at, "action", why, named);
    if v.get("action").is_none_or(Value::is_null) {
        report.error(
            &format!("{at}.action"),
            format!("action is required: it {why}"),
        );
    }
    let check = report.decode::<String>(v, at, "checkAction", why, named);
    let blueprint = report.decode::<String>(v, at, "blueprint", "must name a Blueprint", named);
    match v.get("object") {
        None | Some(Value::Null) => report.error(
            &format!("{at}.object"),
            "object is required: the scratch target to restore into, e.g. {kind: StatefulSet, name: db-scratch}",
        ),
        Some(o) => match crate::model::ObjectReference::deserialize(o) {
            Ok(o) if o.kind.is_empty() || o.name.is_empty() => report.error(
                &format!("{at}.object"),
                "object needs kind and name (and namespace, default the schedule's)",
            ),
            Ok(o) => verify_target_problems(spec, &o, ns, report),
            Err(e) => report.error(&format!("{at}.object"), format!("not an object reference ({{kind, name, namespace}}): {e}")),
        },
    }
    // The Blueprints the actions come from: verify.blueprint, else each backup action's.
    let template: Vec<String> = spec
        .get("actionSetTemplate")
        .and_then(|t| t.get("actions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.get("blueprint")?.as_str().map(str::to_owned))
        .collect();
    let blueprints = match &blueprint {
        Some(b) => vec![b.clone()],
        None => template,
    };
    for bp in &blueprints {
        let wanted = [
            (format!("{at}.action"), &action),
            (format!("{at}.checkAction"), &check),
        ];
        match lookups.iter().find(|((_, b), _)| b == bp).map(|(_, l)| l) {
            Some(Lookup::Found(doc)) => {
                for (path, a) in &wanted {
                    if let Some(a) = a
                        && let Some(msg) = missing_action(doc, bp, a)
                    {
                        report.error(path, msg);
                    }
                }
            }
            Some(Lookup::Missing) if blueprint.is_some() => report.warn(
                &format!("{at}.blueprint"),
                format!("Blueprint {bp:?} not found in namespace {:?}; verifications fail until it exists", ns.unwrap_or("")),
            ),
            _ => {}
        }
    }
}

/// The scratch object must not be an object of the backup template's actions; one in another
/// namespace is reachable only from a trusted namespace.
fn verify_target_problems(
    spec: &Object,
    target: &crate::model::ObjectReference,
    ns: Option<&str>,
    report: &mut Report,
) {
    if let Some(ns) = ns
        && !target.namespace.is_empty()
        && target.namespace != ns
        && !is_namespace(&target.kind)
    {
        report.warn(
            "spec.verify.object.namespace",
            format!(
                "the verification runs in namespace {ns}, and an ActionSet may act only in its own namespace unless the controller trusts it (--trusted-namespace): verifications into {} fail otherwise. Put the scratch target in {ns}",
                target.namespace
            ),
        );
    }
    let actions = spec
        .get("actionSetTemplate")
        .and_then(|t| t.get("actions"))
        .and_then(Value::as_array);
    // An empty namespace is the schedule's; when that is unknown, it may be anything.
    let same_ns = |a: &str, b: &str| {
        let (a, b) = (
            Some(a).filter(|a| !a.is_empty()).or(ns),
            Some(b).filter(|b| !b.is_empty()).or(ns),
        );
        a.is_none() || b.is_none() || a == b
    };
    for (i, a) in actions.into_iter().flatten().enumerate() {
        let Ok(a) = ActionSpec::deserialize(a) else {
            continue;
        };
        let o = &a.object;
        if o.kind.eq_ignore_ascii_case(&target.kind)
            && o.name == target.name
            && same_ns(&o.namespace, &target.namespace)
        {
            report.error(
                "spec.verify.object",
                format!(
                    "{} {}/{} is the object the backups are taken of (spec.actionSetTemplate.actions[{i}].object): a verification restores into it, so it would overwrite it. Name a scratch target (another {} or namespace)",
                    target.kind,
                    ns.filter(|_| target.namespace.is_empty()).unwrap_or(&target.namespace),
                    target.name,
                    target.kind
                ),
            );
        }
    }
}

/// Without `deleteActionKind`, the delete action `d` of Blueprint `bp` (`doc`)
/// runs on the kind it declares, else on the runs' object of kind `kind`.
/// Error: it declares nothing and renders `.Namespace`, which only a
/// Namespace object sets, so on the runs' object it would fail every time.
/// Warning: it declares a kind that is neither Namespace nor the runs'
/// (Kanister ignores a declared kind; so does the scheduler then).
fn delete_object_problems(doc: &Value, bp: &str, d: &str, kind: &str, report: &mut Report) {
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
        report.warn(
            "spec.retention.deleteAction",
            format!(
                "Blueprint {bp:?} declares kind {declared:?} for action {d:?}, but the runs' object is a {kind}; the delete action runs on that object. Set spec.retention.deleteActionKind to Namespace or {kind} to say so"
            ),
        );
    } else if renders_namespace(action) {
        report.error(
            "spec.retention.deleteActionKind",
            format!(
                "action {d:?} of Blueprint {bp:?} renders .Namespace, which is set only when it runs on a Namespace, and declares no kind: on the runs' {kind} it would fail. Set deleteActionKind: Namespace (it then runs on the namespace of the runs' object, as kanctl --namespacetargets)"
            ),
        );
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

/// The names of enum `E`'s variants as serde reads them, so the model's type
/// is the one list of allowed values.
fn variants<E: DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{Error, Visitor, value};
    struct Names<'a>(&'a mut &'static [&'static str]);
    impl<'de> serde::Deserializer<'de> for Names<'_> {
        type Error = value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, value::Error> {
            Err(value::Error::custom("not an enum"))
        }
        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _: &'static str,
            variants: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, value::Error> {
            *self.0 = variants;
            Err(value::Error::custom("names read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier
            ignored_any
        }
    }
    let mut names: &'static [&'static str] = &[];
    let _ = E::deserialize(Names(&mut names));
    names
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

    /// `check` of `obj` with its first Blueprint found as `bp`.
    fn check_found(obj: &Value, bp: Value) -> (Vec<Problem>, Vec<Problem>) {
        let refs = blueprint_refs(obj, None);
        check(obj, &[(refs[0].clone(), Lookup::Found(bp))])
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

    /// A daily schedule backing up StatefulSet ns/db with Blueprint `bp`, verified by `verify`.
    fn verified(verify: Value) -> Value {
        sched(json!({
            "schedule": "0 3 * * *",
            "actionSetTemplate": {"actions": [{"name": "backup", "blueprint": "bp",
                "object": {"kind": "StatefulSet", "name": "db", "namespace": "ns"}}]},
            "verify": verify,
        }))
    }

    #[test]
    fn verify_restores_into_a_scratch_object_with_actions_the_blueprint_has() {
        let bp = json!({"actions": {"backup": {}, "restore": {}, "count": {}}});
        let scratch = json!({"kind": "StatefulSet", "name": "scratch", "namespace": "ns"});
        let ok = verified(json!({"action": "restore", "checkAction": "count", "object": scratch}));
        let (e, w) = check_found(&ok, bp.clone());
        assert!(e.is_empty() && w.is_empty(), "{e:?} {w:?}");
        // The backups' own object, also with the namespace left to default, or another case.
        for object in [
            json!({"kind": "StatefulSet", "name": "db", "namespace": "ns"}),
            json!({"kind": "statefulset", "name": "db"}),
        ] {
            let (e, _) = check_found(
                &verified(json!({"action": "restore", "object": object})),
                bp.clone(),
            );
            assert_eq!(paths(&e), ["spec.verify.object"], "{e:?}");
            assert!(
                e[0].message.contains("StatefulSet ns/db")
                    || e[0].message.contains("statefulset ns/db"),
                "{e:?}"
            );
        }
        // Same name in another namespace is a scratch target, which only a trusted namespace
        // may reach: a warning.
        let other = json!({"kind": "StatefulSet", "name": "db", "namespace": "verify"});
        let (e, w) = check_found(
            &verified(json!({"action": "restore", "object": other})),
            bp.clone(),
        );
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(paths(&w), ["spec.verify.object.namespace"], "{w:?}");
        assert!(w[0].message.contains("--trusted-namespace"), "{w:?}");
        // Actions the Blueprint lacks, both cadences, a bad cron, a missing action and object.
        let (e, _) = check_found(
            &verified(json!({"action": "restor", "checkAction": "rows", "object": scratch})),
            bp.clone(),
        );
        assert_eq!(
            paths(&e),
            ["spec.verify.action", "spec.verify.checkAction"],
            "{e:?}"
        );
        assert!(e[0].message.contains("has no action \"restor\""), "{e:?}");
        let (e, _) = check_found(
            &verified(
                json!({"every": 2, "schedule": "0 4 * * 0", "action": "restore", "object": scratch}),
            ),
            bp.clone(),
        );
        assert_eq!(paths(&e), ["spec.verify.schedule"], "{e:?}");
        let (e, _) = check_found(
            &verified(json!({"schedule": "0 4 * *", "every": 0})),
            bp.clone(),
        );
        assert_eq!(
            paths(&e),
            [
                "spec.verify.every",
                "spec.verify.schedule",
                "spec.verify.action",
                "spec.verify.object"
            ],
            "{e:?}"
        );
        // verify.blueprint is looked up instead of the template's.
        let obj =
            verified(json!({"action": "restore", "object": scratch, "blueprint": "verify-bp"}));
        let refs = blueprint_refs(&obj, None);
        assert_eq!(refs[1], ("ns".to_owned(), "verify-bp".to_owned()));
        let (e, _) = check(
            &obj,
            &[
                (refs[0].clone(), Lookup::Found(bp.clone())),
                (
                    refs[1].clone(),
                    Lookup::Found(json!({"actions": {"other": {}}})),
                ),
            ],
        );
        assert_eq!(paths(&e), ["spec.verify.action"], "{e:?}");
        // keepVerified without verify is a warning.
        let obj = sched(json!({"schedule": "0 3 * * *",
            "actionSetTemplate": {"actions": [{"name": "backup", "blueprint": "bp"}]},
            "retention": {"keepVerified": 2}}));
        let (e, w) = check_found(&obj, bp);
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(paths(&w), ["spec.retention.keepVerified"]);
    }

    #[test]
    fn exclusive_wait_timeout_is_a_duration_and_needs_exclusive() {
        let (e, w) = check_timing(
            "0 3 * * *",
            json!({"exclusive": true, "exclusiveWaitTimeout": "2h"}),
        );
        assert!(e.is_empty() && w.is_empty(), "{e:?} {w:?}");
        let (e, _) = check_timing(
            "0 3 * * *",
            json!({"exclusive": true, "exclusiveWaitTimeout": "two hours"}),
        );
        assert_eq!(paths(&e), vec!["spec.exclusiveWaitTimeout"]);
        assert!(e[0].message.contains("Go duration"), "{e:?}");
        let (e, w) = check_timing("0 3 * * *", json!({"exclusiveWaitTimeout": "2h"}));
        assert!(e.is_empty(), "{e:?}");
        assert!(w[0].message.contains("without exclusive: true"), "{w:?}");
    }

    /// `check` of a schedule `schedule` with the spec fields `extra` and a visible Blueprint.
    fn check_timing(schedule: &str, extra: Value) -> (Vec<Problem>, Vec<Problem>) {
        let mut spec = json!({"schedule": schedule,
            "actionSetTemplate": {"actions": [{"name": "backup", "blueprint": "bp"}]}});
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        check_found(&sched(spec), json!({"actions": {"backup": {}}}))
    }

    #[test]
    fn jitter_is_a_duration_shorter_than_the_shortest_interval() {
        let (e, w) = check_timing("0 2 * * *", json!({"jitter": "30m"}));
        assert!(e.is_empty() && w.is_empty(), "{e:?} {w:?}");
        let (e, _) = check_timing("0 2 * * *", json!({"jitter": "24h"}));
        assert_eq!(paths(&e), ["spec.jitter"]);
        assert!(e[0].message.contains("86400s between two ticks"), "{e:?}");
        // Two ticks an hour apart on weekdays: the hour is what counts.
        let (e, _) = check_timing("0 2,3 * * 1-5", json!({"jitter": "90m"}));
        assert_eq!(paths(&e), ["spec.jitter"]);
        let (e, _) = check_timing("@every 10s", json!({"jitter": "10s"}));
        assert_eq!(paths(&e), ["spec.jitter"]);
        for bad in [json!("soon"), json!("-5m"), json!(30)] {
            let (e, _) = check_timing("@daily", json!({"jitter": bad}));
            assert_eq!(paths(&e), ["spec.jitter"], "{bad}");
        }
        // A bad schedule is reported once, at the schedule.
        let (e, _) = check_timing("61 * * * *", json!({"jitter": "1h"}));
        assert_eq!(paths(&e), ["spec.schedule"]);
    }

    #[test]
    fn a_window_that_never_opens_or_that_no_tick_falls_in_is_refused_where_it_is_wrong() {
        let ok = json!({"timeZone": "Europe/Berlin",
            "window": {"start": "22:00", "end": "04:00", "days": ["Fri", "Sat"], "outside": "Skip"}});
        let (e, w) = check_timing("30 23 * * *", ok);
        assert!(e.is_empty() && w.is_empty(), "{e:?} {w:?}");
        let (e, _) = check_timing(
            "@daily",
            json!({"window": {"start": "01:00", "end": "01:00", "days": []}}),
        );
        assert_eq!(paths(&e), ["spec.window.end", "spec.window.days"]);
        assert!(e[0].message.contains("never opens"), "{e:?}");
        let (e, _) = check_timing(
            "@daily",
            json!({"window": {"start": "1am", "days": ["Monday"], "outside": "Later"}}),
        );
        assert_eq!(
            paths(&e),
            [
                "spec.window.start",
                "spec.window.end",
                "spec.window.days",
                "spec.window.outside"
            ]
        );
        assert!(e[2].message.contains("Mon, Tue"), "{e:?}");
        assert!(e[3].message.contains("Skip, Wait"), "{e:?}");
        // 12:00 never lies in 01:00-05:00: with Skip nothing would ever run; Wait is fine.
        let window = |outside: &str| json!({"window": {"start": "01:00", "end": "05:00", "outside": outside}});
        let (e, _) = check_timing("0 12 * * *", window("Skip"));
        assert_eq!(paths(&e), ["spec.window"]);
        assert!(e[0].message.contains("outside: Wait"), "{e:?}");
        let (e, _) = check_timing("0 12 * * *", window("Wait"));
        assert!(e.is_empty(), "{e:?}");
        let (e, _) = check_timing("@daily", json!({"window": "nightly"}));
        assert_eq!(paths(&e), ["spec.window"]);
    }

    #[test]
    fn suspend_after_failures_is_at_least_one() {
        for (n, bad) in [
            (json!(3), false),
            (json!(0), true),
            (json!(-1), true),
            (json!("3"), true),
        ] {
            let (e, _) = check_timing("@daily", json!({"suspendAfterFailures": n}));
            let want: &[&str] = if bad {
                &["spec.suspendAfterFailures"]
            } else {
                &[]
            };
            assert_eq!(paths(&e), want, "{n}");
        }
    }

    #[test]
    fn enum_values_come_from_the_model() {
        assert_eq!(
            variants::<ConcurrencyPolicy>(),
            ["Allow", "Forbid", "Replace"]
        );
        assert_eq!(variants::<MissedRunPolicy>(), ["RunLatest", "Skip"]);
        assert_eq!(variants::<OnDelete>(), ["Retain", "Delete"]);
        assert_eq!(variants::<OutsideWindow>(), ["Skip", "Wait"]);
    }

    #[test]
    fn an_action_that_is_no_actionset_action_is_located_and_the_others_still_checked() {
        let obj = sched(json!({
            "schedule": "@daily",
            "actionSetTemplate": {"actions": [
                {"name": "backup", "blueprint": "bp", "secrets": "not-a-map"},
                {"name": "backup"},
            ]},
        }));
        let (e, _) = check(&obj, &[]);
        assert_eq!(
            paths(&e),
            [
                "spec.actionSetTemplate.actions[0]",
                "spec.actionSetTemplate.actions[1].blueprint"
            ]
        );
        assert!(e[0].message.contains("not an ActionSet action"), "{e:?}");
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
        let (e, w) = check_found(&obj, json!({"actions": {"backup": {}}}));
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
        check_found(&pg_schedule(retention), bp)
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
