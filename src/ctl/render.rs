//! `ctl render`: see before you run. Every phase's arguments, the
//! deferPhase's and the output artifacts, rendered as the executor renders
//! them, with nothing created: the same parameter building
//! (`executor::params`: the object, its pods, Secrets, ConfigMaps, the
//! Profile, each phase's `objects`) and the same template engine
//! (`template::render_args`). What is only known once a phase ran (its
//! output) is shown as `<Phases.NAME.Output.KEY>`; the deferPhase is rendered
//! as it runs after the phases succeeded. Credentials are redacted unless
//! `--show-secrets`.

use std::collections::BTreeMap;

use clap::Args;
use kube::api::Api;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::connect::Conn;
use super::create::{self, CreateArgs, InputArgs};
use super::output::{self, Format};
use super::{CtlError, Done};
use crate::executor::machine::{self, ActionRecord};
use crate::executor::params::{self, PhaseObjects};
use crate::executor::tenancy::Policy;
use crate::model::{
    ActionSet, ActionSetSpec, ActionSpec, ActionStatus, Blueprint, BlueprintAction, BlueprintPhase,
    State,
};
use crate::param;
use crate::redact::Redactor;
use crate::template;

#[derive(Clone, Debug, Default, Args)]
pub struct RenderArgs {
    /// Blueprint in the namespace (or, with -f, which Blueprint of the file).
    #[arg(long)]
    pub blueprint: Option<String>,
    /// Read the Blueprint from this YAML/JSON file (`-` for stdin) instead of the cluster.
    #[arg(long, short = 'f', value_name = "FILE")]
    pub filename: Option<String>,
    /// Action to render (with --from: default the run's action).
    #[arg(long)]
    pub action: Option<String>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Render as an ActionSet restoring from this run would run (its artifacts as input).
    #[arg(long, value_name = "ACTIONSET")]
    pub from: Option<String>,
    /// Render as in a trusted namespace (the controller's --trusted-namespace): references to
    /// other namespaces are allowed. Default: confined to the namespace, as the controller's default.
    #[arg(long)]
    pub trusted: bool,
    /// Print credentials as they are instead of `<redacted>`.
    #[arg(long)]
    pub show_secrets: bool,
}

impl RenderArgs {
    fn create_args(&self, blueprint: &str) -> CreateArgs {
        CreateArgs {
            blueprint: Some(blueprint.to_string()).filter(|b| !b.is_empty()),
            action: self.action.clone(),
            input: self.input.clone(),
            from: self.from.clone(),
            ..CreateArgs::default()
        }
    }
}

/// Where a template failed: `args.command[2]`, `objects.cfg.name`, ...
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Located {
    pub path: String,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepPlan {
    pub name: String,
    pub func: String,
    /// The rendered arguments (absent when rendering failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Located>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionPlan {
    pub name: String,
    pub blueprint: String,
    pub object: String,
    /// Why the executor would fail the action before its first phase (its
    /// deferPhase still runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_error: Option<String>,
    pub phases: Vec<StepPlan>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defer_phase: Option<StepPlan>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_artifacts: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifacts_error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub namespace: String,
    /// The admission rules' findings (`validate`), `blueprint/action/phase: path: message`.
    pub validation_errors: Vec<String>,
    pub validation_warnings: Vec<String>,
    pub actions: Vec<ActionPlan>,
}

impl Plan {
    pub fn failed(&self) -> bool {
        !self.validation_errors.is_empty()
            || self.actions.iter().any(|a| {
                a.launch_error.is_some()
                    || a.artifacts_error.is_some()
                    || a.phases
                        .iter()
                        .chain(&a.defer_phase)
                        .any(|p| p.error.is_some())
            })
    }
}

/// Placeholder of an output that exists only once its phase ran.
fn placeholder(phase: &str, key: &str, defer: bool) -> String {
    if defer {
        format!("<DeferPhase.Output.{key}>")
    } else {
        format!("<Phases.{phase}.Output.{key}>")
    }
}

/// Every template string of a Blueprint action (args, objects, artifacts).
fn template_strings(bp: &BlueprintAction) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.iter().for_each(|(k, x)| {
                out.push(k.clone());
                walk(x, out)
            }),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for p in bp.phases.iter().chain(&bp.defer_phase) {
        walk(&Value::Object(p.args.clone().unwrap_or_default()), &mut out);
        walk(&json!(p.objects), &mut out);
    }
    walk(&json!(bp.output_artifacts), &mut out);
    out
}

/// Output keys the action's templates read: `.Phases.<p>.Output.<k>` and
/// `.DeferPhase.Output.<k>` (`None` as phase).
fn output_keys(bp: &BlueprintAction) -> BTreeMap<Option<String>, Vec<String>> {
    let mut keys: BTreeMap<Option<String>, Vec<String>> = BTreeMap::new();
    for text in template_strings(bp) {
        // Only the field paths are needed: checked, not compiled to render.
        let Ok(fields) = template::check_fields(&text) else {
            continue;
        };
        for f in fields {
            let parts: Vec<&str> = f.trim_start_matches('.').split('.').collect();
            match parts.as_slice() {
                [param::PHASES, p, "Output", k, ..] => keys
                    .entry(Some(p.to_string()))
                    .or_default()
                    .push(k.to_string()),
                [param::DEFER_PHASE, "Output", k, ..] => {
                    keys.entry(None).or_default().push(k.to_string())
                }
                _ => {}
            }
        }
    }
    keys
}

/// The status the executor starts with, each phase given placeholder
/// outputs; `ran`: phases (and the deferPhase) marked complete, as seen
/// after a successful run.
fn status_with_placeholders(
    st: &ActionStatus,
    keys: &BTreeMap<Option<String>, Vec<String>>,
    ran: bool,
) -> ActionStatus {
    let mut st = st.clone();
    let fill = |name: &str, defer: bool| -> Map<String, Value> {
        let key = if defer { None } else { Some(name.to_string()) };
        keys.get(&key)
            .into_iter()
            .flatten()
            .map(|k| (k.clone(), Value::String(placeholder(name, k, defer))))
            .collect()
    };
    for p in &mut st.phases {
        p.output = fill(&p.name, false);
        if ran {
            p.state = State::Complete;
        }
    }
    if ran && !st.defer_phase.name.is_empty() {
        st.defer_phase.output = fill("", true);
        st.defer_phase.state = State::Complete;
    }
    st
}

/// Renders `args` as the executor does; on failure, finds the first string
/// that fails (in document order) to say where.
fn render_located(args: &Value, params: &Value, func: &str) -> Result<Value, Located> {
    match template::render_args(args, params, func) {
        Ok(v) => Ok(v),
        Err(e) => {
            let mut found = None;
            locate(args, "args", params, func, &mut found);
            Err(found.unwrap_or(Located {
                path: "args".into(),
                message: e.to_string(),
            }))
        }
    }
}

fn locate(v: &Value, path: &str, params: &Value, func: &str, found: &mut Option<Located>) {
    if found.is_some() {
        return;
    }
    let fails = |s: &str| template::render_args(&Value::String(s.into()), params, func).err();
    match v {
        Value::String(s) => {
            if let Some(e) = fails(s) {
                *found = Some(Located {
                    path: path.to_string(),
                    message: e.to_string(),
                });
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                locate(x, &format!("{path}[{i}]"), params, func, found);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                if let Some(e) = fails(k) {
                    *found = Some(Located {
                        path: format!("{path} (key {k:?})"),
                        message: e.to_string(),
                    });
                    return;
                }
                locate(x, &format!("{path}.{k}"), params, func, found);
            }
        }
        _ => {}
    }
}

fn wait_note(func: &str) -> Option<String> {
    (func.eq_ignore_ascii_case("wait") || func.eq_ignore_ascii_case("waitv2"))
        .then(|| format!("{func} renders its own conditions while it waits; shown as written"))
}

/// One action, rendered.
pub async fn plan_action(
    client: &kube::Client,
    namespace: &str,
    spec: &ActionSpec,
    bp: &BlueprintAction,
    policy: &Policy,
    show_secrets: bool,
) -> ActionPlan {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let set = ActionSetSpec {
        actions: vec![spec.clone()],
        ..ActionSetSpec::default()
    };
    let init = machine::init("render", Some(&set), &[Ok(bp.clone())], &now);
    let st = init.status.actions.first().cloned().unwrap_or_default();
    let (base, launch_error) = params::fetch_base_with(client, namespace, spec, &now, policy).await;
    let scope = policy.scope(namespace);
    let keys = output_keys(bp);
    let before = status_with_placeholders(&st, &keys, false);
    let after = status_with_placeholders(&st, &keys, true);
    let mut objects = PhaseObjects::new();
    let mut redact_params = Value::Object(base.clone());
    let mut phases = Vec::new();
    for (i, phase) in bp.phases.iter().enumerate() {
        let mut step = step_plan(phase);
        if !phase.objects.is_empty() {
            let p = params::for_phase(&base, &before, i, &objects);
            match params::render_objects(&phase.objects, &p) {
                Err(e) => {
                    step.error = Some(Located {
                        path: "objects".into(),
                        message: e.to_string(),
                    })
                }
                Ok(refs) => {
                    match params::fetch_phase_objects(client, namespace, &refs, &scope).await {
                        Ok(fetched) => {
                            objects.insert(phase.name.clone(), fetched);
                        }
                        Err(e) => {
                            step.error = Some(Located {
                                path: "objects".into(),
                                message: e.to_string(),
                            })
                        }
                    }
                }
            }
        }
        if step.error.is_none() {
            let p = params::for_phase(&base, &before, i, &objects);
            merge_params(&mut redact_params, &p);
            let args = Value::Object(phase.args.clone().unwrap_or_default());
            match render_located(&args, &p, &phase.func) {
                Ok(v) => step.args = Some(v),
                Err(l) => step.error = Some(l),
            }
        }
        phases.push(step);
    }
    let rec = ActionRecord::default();
    let defer_phase = match &bp.defer_phase {
        None => None,
        Some(d) => {
            let mut step = step_plan(d);
            step.note = step.note.or(Some(
                "as it runs after the phases succeeded (.Outcome.State complete)".into(),
            ));
            let p = params::for_defer(&base, &after_main(&after), &rec, &objects, None);
            let own = match params::render_objects(&d.objects, &p) {
                Err(e) => Err(e),
                Ok(refs) if refs.is_empty() => Ok(None),
                Ok(refs) => params::fetch_phase_objects(client, namespace, &refs, &scope)
                    .await
                    .map(Some),
            };
            match own {
                Err(e) => {
                    step.error = Some(Located {
                        path: "objects".into(),
                        message: e.to_string(),
                    })
                }
                Ok(own) => {
                    let p =
                        params::for_defer(&base, &after_main(&after), &rec, &objects, own.as_ref());
                    merge_params(&mut redact_params, &p);
                    let args = Value::Object(d.args.clone().unwrap_or_default());
                    match render_located(&args, &p, &d.func) {
                        Ok(v) => step.args = Some(v),
                        Err(l) => step.error = Some(l),
                    }
                }
            }
            Some(step)
        }
    };
    let (output_artifacts, artifacts_error) = if bp.output_artifacts.is_empty() {
        (None, None)
    } else {
        let p = params::for_artifacts(&base, &after, &rec, &objects);
        match params::render_artifacts(&bp.output_artifacts, &p) {
            Ok(a) => (Some(json!(a)), None),
            Err(e) => (None, Some(e.to_string())),
        }
    };
    let mut plan = ActionPlan {
        name: spec.name.clone(),
        blueprint: spec.blueprint.clone(),
        object: super::describe::object_text(&spec.object),
        launch_error,
        phases,
        defer_phase,
        output_artifacts,
        artifacts_error,
    };
    if !show_secrets {
        let r = Redactor::from_params(&redact_params);
        for s in plan.phases.iter_mut().chain(plan.defer_phase.as_mut()) {
            s.args = s.args.as_ref().map(|a| r.redact_json(a));
        }
        plan.output_artifacts = plan.output_artifacts.as_ref().map(|a| r.redact_json(a));
    }
    plan
}

/// The deferPhase's view: the main phases complete, the deferPhase not yet run.
fn after_main(after: &ActionStatus) -> ActionStatus {
    let mut st = after.clone();
    st.defer_phase.state = State::Pending;
    st.defer_phase.output = Map::new();
    st
}

/// Collects the Secrets each step saw, for redaction.
fn merge_params(into: &mut Value, p: &Value) {
    if let (Some(into), Some(p)) = (into.as_object_mut(), p.as_object()) {
        for k in [param::PHASES, param::CURRENT_PHASE, param::DEFER_PHASE] {
            if let Some(v) = p.get(k) {
                let entry = into.entry(k.to_string()).or_insert_with(|| json!({}));
                if let (Some(e), Some(v)) = (entry.as_object_mut(), v.as_object()) {
                    for (name, x) in v {
                        e.insert(name.clone(), x.clone());
                    }
                }
            }
        }
    }
}

fn step_plan(p: &BlueprintPhase) -> StepPlan {
    StepPlan {
        name: p.name.clone(),
        func: p.func.clone(),
        args: None,
        error: None,
        note: wait_note(&p.func),
    }
}

/// The Blueprint: from `-f` (the one named `--blueprint`, else the only one),
/// else from the cluster.
async fn blueprint(conn: &Conn, args: &RenderArgs) -> Result<(Blueprint, Value), CtlError> {
    if let Some(file) = &args.filename {
        let (docs, errors) = crate::documents::read(file);
        if let Some(e) = errors.first() {
            return Err(CtlError::Read(e.to_string()));
        }
        let bps: Vec<_> = docs.iter().filter(|d| d.is_blueprint()).collect();
        let chosen = match &args.blueprint {
            Some(name) => bps.iter().find(|d| d.name() == name),
            None if bps.len() == 1 => bps.first(),
            None => None,
        };
        let Some(doc) = chosen else {
            let names: Vec<&str> = bps.iter().map(|d| d.name()).collect();
            return Err(CtlError::Input(format!(
                "{file}: {} Blueprint(s) ({}); name one with --blueprint",
                bps.len(),
                names.join(", ")
            )));
        };
        let normalized = crate::blueprint::normalize(&doc.value);
        let bp: Blueprint = serde_json::from_value(normalized.clone())
            .map_err(|e| CtlError::Input(format!("{file}: Blueprint {}: {e}", doc.name())))?;
        return Ok((bp, normalized));
    }
    let Some(name) = &args.blueprint else {
        return Err(CtlError::Input(
            "--blueprint NAME (in the namespace) or -f FILE is required".into(),
        ));
    };
    let api: Api<Blueprint> = Api::namespaced(conn.client.clone(), &conn.namespace);
    let bp = api.get(name).await.map_err(CtlError::kube(format!(
        "cannot read Blueprint {}/{name}",
        conn.namespace
    )))?;
    let value = serde_json::to_value(&bp).unwrap_or_default();
    Ok((bp, crate::blueprint::normalize(&value)))
}

pub async fn plan(conn: &Conn, args: &RenderArgs) -> Result<Plan, CtlError> {
    let ns = &conn.namespace;
    let (bp, bp_value) = blueprint(conn, args).await?;
    let bp_name = bp.metadata.name.clone().unwrap_or_default();
    let cargs = args.create_args(&bp_name);
    let req = create::request(&cargs, ns)?;
    let spec = match &args.from {
        Some(from) => {
            let api: Api<ActionSet> = Api::namespaced(conn.client.clone(), ns);
            let parent = api
                .get(from)
                .await
                .map_err(CtlError::kube(format!("cannot read ActionSet {ns}/{from}")))?;
            let mut spec = create::child_spec(&parent, &req)?;
            // The Blueprint rendered is the one given here.
            for a in &mut spec.actions {
                a.blueprint = bp_name.clone();
            }
            spec
        }
        None => create::new_spec(&req)?,
    };
    let report = crate::cli::validate_document(&bp_value);
    let line = |p: &crate::blueprint::Problem| {
        let loc = p.location();
        let sep = if loc.is_empty() { "" } else { "/" };
        format!("{bp_name}{sep}{loc}: {}: {}", p.path, p.message)
    };
    let mut policy = Policy::default();
    if args.trusted {
        policy.trusted_namespaces.insert(ns.clone());
    }
    let mut actions = Vec::new();
    for a in &spec.actions {
        let Some(bpa) = bp.actions.get(&a.name) else {
            let has: Vec<&str> = bp.actions.keys().map(String::as_str).collect();
            return Err(CtlError::Input(format!(
                "Blueprint {bp_name} has no action {:?}; it has: {}",
                a.name,
                has.join(", ")
            )));
        };
        actions.push(plan_action(&conn.client, ns, a, bpa, &policy, args.show_secrets).await);
    }
    Ok(Plan {
        namespace: ns.clone(),
        validation_errors: report.errors.iter().map(line).collect(),
        validation_warnings: report.warnings.iter().map(line).collect(),
        actions,
    })
}

fn indent(text: &str, by: &str) -> String {
    text.lines().map(|l| format!("{by}{l}\n")).collect()
}

fn yaml(v: &Value) -> String {
    serde_yaml::to_string(v).unwrap_or_else(|e| format!("(cannot print: {e})\n"))
}

/// The table (text) form.
pub fn text(plan: &Plan) -> String {
    let mut out = String::new();
    for e in &plan.validation_errors {
        out.push_str(&format!("validation error: {e}\n"));
    }
    for w in &plan.validation_warnings {
        out.push_str(&format!("validation warning: {w}\n"));
    }
    for a in &plan.actions {
        out.push_str(&format!(
            "Action {} of Blueprint {} on {} (namespace {})\n",
            a.name, a.blueprint, a.object, plan.namespace
        ));
        if let Some(e) = &a.launch_error {
            out.push_str(&format!(
                "  error: the action would fail before its first phase (its deferPhase still runs): {e}\n"
            ));
        }
        let n = a.phases.len();
        let steps = a
            .phases
            .iter()
            .enumerate()
            .map(|(i, p)| (format!("phase {}/{n} {}", i + 1, p.name), p))
            .chain(
                a.defer_phase
                    .iter()
                    .map(|d| (format!("deferPhase {}", d.name), d)),
            );
        for (title, s) in steps {
            out.push_str(&format!("\n{title} ({})", s.func));
            if let Some(n) = &s.note {
                out.push_str(&format!(", {n}"));
            }
            out.push('\n');
            if let Some(e) = &s.error {
                out.push_str(&format!(
                    "  error at {}/{} {}: {}\n",
                    a.name, s.name, e.path, e.message
                ));
            }
            if let Some(args) = &s.args {
                out.push_str(&indent(&yaml(args), "  "));
            }
        }
        if let Some(arts) = &a.output_artifacts {
            out.push_str("\noutputArtifacts\n");
            out.push_str(&indent(&yaml(arts), "  "));
        }
        if let Some(e) = &a.artifacts_error {
            out.push_str(&format!("\noutputArtifacts\n  error: {e}\n"));
        }
        out.push('\n');
    }
    out
}

pub async fn run(conn: &Conn, args: &RenderArgs, format: Format) -> Result<Done, CtlError> {
    let plan = plan(conn, args).await?;
    let shown = match format {
        Format::Table => text(&plan),
        f => output::structured(f, &plan)?,
    };
    output::print(&shown)?;
    Ok(if plan.failed() {
        Done::Failed
    } else {
        Done::Ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action() -> BlueprintAction {
        serde_json::from_value(json!({
            "phases": [
                {"func": "KubeTask", "name": "dump", "args": {"command": ["echo", "{{ .Options.x }}"]}},
                {"func": "KubeTask", "name": "upload", "args": {"command": ["up", "{{ .Phases.dump.Output.path }}"]}}],
            "deferPhase": {"func": "KubeTask", "name": "done", "args": {"command": ["{{ .Outcome.State }}"]}},
            "outputArtifacts": {"a": {"keyValue": {"p": "{{ .Phases.upload.Output.where }}", "d": "{{ .DeferPhase.Output.t }}"}}}
        }))
        .unwrap()
    }

    #[test]
    fn outputs_a_later_step_reads_are_placeholders() {
        let keys = output_keys(&action());
        assert_eq!(keys[&Some("dump".to_string())], vec!["path"]);
        assert_eq!(keys[&None], vec!["t"]);
        let set = ActionSetSpec {
            actions: vec![ActionSpec {
                name: "backup".into(),
                ..ActionSpec::default()
            }],
            ..ActionSetSpec::default()
        };
        let init = machine::init("x", Some(&set), &[Ok(action())], "t");
        let st = status_with_placeholders(&init.status.actions[0], &keys, false);
        let base = json!({"Options": {"x": "1"}}).as_object().cloned().unwrap();
        let p = params::for_phase(&base, &st, 1, &PhaseObjects::new());
        let args = json!({"command": ["up", "{{ .Phases.dump.Output.path }}"]});
        assert_eq!(
            render_located(&args, &p, "KubeTask").unwrap(),
            json!({"command": ["up", "<Phases.dump.Output.path>"]})
        );
    }

    #[test]
    fn a_failing_template_is_located() {
        let p = json!({"Options": {}});
        let args = json!({"image": "x", "command": ["sh", "-c", "echo {{ .Options.missing }}"]});
        let e = render_located(&args, &p, "KubeTask").unwrap_err();
        assert_eq!(e.path, "args.command[2]");
        assert!(e.message.contains("\"missing\" not found"), "{}", e.message);
        let e = render_located(&json!({"x": "{{ .Nope"}), &p, "KubeTask").unwrap_err();
        assert_eq!(e.path, "args.x");
        // Wait renders its own conditions: passed through.
        let w = json!({"conditions": {"anyOf": [{"condition": "{{ .Nope }}"}]}});
        assert_eq!(render_located(&w, &p, "WaitV2").unwrap(), w);
    }
}
