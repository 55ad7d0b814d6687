//! Validation of one Blueprint document. Every
//! problem is collected, none stops the walk, so a user sees all of them at
//! once. Differences from Kanister's `validate.Do`: phase names must be
//! unique per action (not per Blueprint, since `.Phases` is action-scoped),
//! and argument types, templates and `.Phases` references are checked too.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::fields::{self, Finding};
use super::late_failures;
use super::report::{Problem, Report, Rule};
use super::suggest;
use crate::functions::registry::{self, ArgType, Function, Restart};
use crate::functions::weak;
use crate::model::labels::{ANNOTATION_PHASE_TIMEOUTS, ANNOTATION_RERUN_ON_RESTART};
use crate::param;
use crate::template;

/// Released Kanister's template parameter for its RepositoryServer CR (gone from HEAD).
const REPOSITORY_SERVER: &str = "RepositoryServer";

pub fn validate(doc: &Value) -> Report {
    let mut v = Validator {
        scope: fields::Scope::default(),
        no_kind: Vec::new(),
        report: Report {
            name: doc
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            ..Report::default()
        },
    };
    match doc {
        Value::Object(root) => match root.get("actions") {
            None | Some(Value::Null) => {}
            Some(Value::Object(actions)) => {
                for (name, action) in actions {
                    v.action(name, action);
                }
            }
            Some(_) => v.error(
                Ctx::root("actions"),
                Rule::Structure,
                "actions must be a map of action name to action".into(),
            ),
        },
        _ => v.error(
            Ctx::root(""),
            Rule::Structure,
            "a Blueprint must be a YAML/JSON object".into(),
        ),
    }
    v.phase_timeouts(doc);
    v.rerun_on_restart(doc);
    v.report
}

/// Where a problem is: JSON path plus the action and phase names. The path is a chain of
/// borrowed segments on the stack, written out only when a problem is reported: most values
/// visited have none, and building a string per value was a large part of the checks' cost.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    parent: Option<&'a Ctx<'a>>,
    seg: Seg<'a>,
    action: Option<&'a str>,
    phase: Option<&'a str>,
}

/// One step of a [`Ctx`] path.
#[derive(Clone, Copy)]
enum Seg<'a> {
    /// A key (or suffix) joined with `.`, unless it starts with `[` or the path so far is empty.
    Key(&'a str),
    /// `[i]`.
    Index(usize),
    /// Appended as it is.
    Raw(&'a str),
}

impl<'a> Ctx<'a> {
    fn root(path: &'a str) -> Ctx<'a> {
        Ctx {
            parent: None,
            seg: Seg::Raw(path),
            action: None,
            phase: None,
        }
    }
    fn at<'b>(&'b self, suffix: &'b str) -> Ctx<'b> {
        self.child(Seg::Key(suffix))
    }
    /// Element `i` of a list.
    fn index(&self, i: usize) -> Ctx<'_> {
        self.child(Seg::Index(i))
    }
    /// Deeper inside a value, `inner` as weak decoding spells it (`".key"`, `"[1]"`).
    fn inside<'b>(&'b self, inner: &'b str) -> Ctx<'b> {
        self.child(Seg::Raw(inner))
    }
    fn child<'b>(&'b self, seg: Seg<'b>) -> Ctx<'b> {
        Ctx {
            parent: Some(self),
            seg,
            action: self.action,
            phase: self.phase,
        }
    }
    /// The JSON path, e.g. `actions.backup.phases[1].args.command`.
    fn path(&self) -> String {
        let mut segs = Vec::new();
        let mut at = Some(self);
        while let Some(c) = at {
            segs.push(c.seg);
            at = c.parent;
        }
        let mut path = String::new();
        for seg in segs.iter().rev() {
            match seg {
                Seg::Key(k) => {
                    if !k.starts_with('[') && !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k);
                }
                Seg::Index(i) => {
                    // Writing to a String cannot fail.
                    let _ = write!(path, "[{i}]");
                }
                Seg::Raw(r) => path.push_str(r),
            }
        }
        path
    }
}

/// Which phase a template lives in, for `.Phases` / `.DeferPhase` / `.Outcome` rules.
#[derive(Clone, Copy)]
enum Stage<'a> {
    /// Main phase: these earlier phases have run; the current one has
    /// started (its `.Phases.<name>.Secrets` exist, its output does not).
    Main {
        earlier: &'a [&'a str],
        current: &'a str,
    },
    Defer {
        main: &'a [&'a str],
    },
    /// Phase `objects` are rendered when the action starts: no phase has run.
    Objects,
    Artifacts {
        main: &'a [&'a str],
    },
    /// Wait/WaitV2 `condition`: rendered against the fetched object, so
    /// only its syntax can be checked.
    Fetched,
}

struct Validator<'d> {
    report: Report,
    /// What the action being walked declares, for the field path checks.
    scope: fields::Scope<'d>,
    /// Workload parameters read in this action without a declared kind, already warned about.
    no_kind: Vec<&'static str>,
}

impl<'d> Validator<'d> {
    fn error(&mut self, ctx: Ctx<'_>, rule: Rule, message: String) {
        self.report.errors.push(problem(ctx, rule, message));
    }

    fn warn(&mut self, ctx: Ctx<'_>, message: String) {
        self.report
            .warnings
            .push(problem(ctx, Rule::Advice, message));
    }

    /// The per-phase timeouts annotation (see the executor's `deadline`):
    /// a value that is not a duration would fail every run of the action,
    /// so it is an error; a name that is not an action or one of its phases
    /// would silently not apply, so it is a warning.
    fn phase_timeouts(&mut self, doc: &Value) {
        let Some(raw) = doc
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(ANNOTATION_PHASE_TIMEOUTS))
        else {
            return;
        };
        let root = format!("metadata.annotations[{ANNOTATION_PHASE_TIMEOUTS:?}]");
        let ctx = Ctx::root(&root);
        let fix =
            r#"write {"<action>": {"<phase>": "2h"}} with Go durations (0 disables the timeout)"#;
        let parsed = raw.as_str().map(serde_json::from_str::<Map<String, Value>>);
        let all = match parsed {
            Some(Ok(all)) => all,
            Some(Err(e)) => {
                return self.error(
                    ctx,
                    Rule::Structure,
                    format!("not a JSON object ({e}): {fix}"),
                );
            }
            None => {
                return self.error(ctx, Rule::Structure, format!("not a string: {fix}"));
            }
        };
        for (action, phases) in &all {
            let actx = Ctx {
                action: Some(action),
                ..ctx
            };
            let Some(phases) = phases.as_object() else {
                self.error(
                    actx,
                    Rule::Structure,
                    format!("the value of {action:?} is not an object of phase names: {fix}"),
                );
                continue;
            };
            let known = doc.get("actions").and_then(|a| a.get(action));
            let mut names: Vec<&str> = known
                .and_then(|a| a.get("phases"))
                .and_then(Value::as_array)
                .map(|l| l.iter().map(phase_name_of).collect())
                .unwrap_or_default();
            match known.and_then(|a| a.get("deferPhase")) {
                Some(Value::Array(l)) => names.extend(l.iter().map(phase_name_of)),
                Some(d @ Value::Object(_)) => names.push(phase_name_of(d)),
                _ => {}
            }
            if known.is_none() {
                self.warn(
                    actx,
                    format!("names action {action}, which this Blueprint does not have: its timeouts never apply"),
                );
            }
            for (phase, value) in phases {
                let pctx = Ctx {
                    phase: Some(phase),
                    ..actx
                };
                match value.as_str().map(crate::duration::parse_timeout) {
                    Some(Ok(_)) => {}
                    Some(Err(e)) => self.error(
                        pctx,
                        Rule::Structure,
                        format!("{action}.{phase} {value} is not a duration ({e}): {fix}"),
                    ),
                    None => self.error(
                        pctx,
                        Rule::Structure,
                        format!("{action}.{phase} is not a string: {fix}"),
                    ),
                }
                if known.is_some() && !names.contains(&phase.as_str()) {
                    self.warn(
                        pctx,
                        format!(
                            "names phase {phase}, which action {action} does not have (it has {}): its timeout never applies",
                            names.join(", ")
                        ),
                    );
                }
            }
        }
    }

    /// The annotation naming phases safe to re-run after a controller
    /// restart (see the executor's `resume`): a name that is no phase of
    /// the Blueprint, or a phase that goes on after a restart anyway (its
    /// pod is re-attached, or its function is re-entered), has no effect,
    /// so it is a warning.
    fn rerun_on_restart(&mut self, doc: &Value) {
        let Some(raw) = doc
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(ANNOTATION_RERUN_ON_RESTART))
        else {
            return;
        };
        let root = format!("metadata.annotations[{ANNOTATION_RERUN_ON_RESTART:?}]");
        let ctx = Ctx::root(&root);
        let Some(text) = raw.as_str() else {
            return self.error(
                ctx,
                Rule::Structure,
                "not a string: write the names of the phases safe to re-run, separated by commas (phaseA,phaseB)".into(),
            );
        };
        // Every phase of the Blueprint: (action, phase value).
        let mut phases: Vec<(String, &Value)> = Vec::new();
        for (action, a) in doc
            .get("actions")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            for p in a
                .get("phases")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                phases.push((action.clone(), p));
            }
            match a.get("deferPhase") {
                Some(Value::Array(l)) => phases.extend(l.iter().map(|p| (action.clone(), p))),
                Some(d @ Value::Object(_)) => phases.push((action.clone(), d)),
                _ => {}
            }
        }
        for name in crate::model::labels::parse_rerun_on_restart(text) {
            let pctx = Ctx {
                phase: Some(&name),
                ..ctx
            };
            let found: Vec<&(String, &Value)> = phases
                .iter()
                .filter(|(_, p)| phase_name_of(p) == name)
                .collect();
            if found.is_empty() {
                let mut all: Vec<&str> = phases.iter().map(|(_, p)| phase_name_of(p)).collect();
                all.sort();
                all.dedup();
                self.warn(
                    pctx,
                    format!(
                        "names phase {name}, which this Blueprint does not have (it has {}): it is never re-run",
                        all.join(", ")
                    ),
                );
                continue;
            }
            for (action, p) in found {
                let func = p.get("func").and_then(Value::as_str).unwrap_or_default();
                let args = p.get("args").and_then(Value::as_object);
                let what = match registry::after_restart(func, args) {
                    Restart::AtMostOnce => continue,
                    Restart::Reattach => "its pod is re-attached after a restart",
                    Restart::Reenter => "it is entered again after a restart anyway",
                };
                let actx = Ctx {
                    action: Some(action),
                    ..pctx
                };
                self.warn(
                    actx,
                    format!("phase {name} runs {func}: {what}; listing it has no effect"),
                );
            }
        }
    }

    fn action(&mut self, name: &str, action: &'d Value) {
        let path = format!("actions.{name}");
        let ctx = Ctx {
            action: Some(name),
            ..Ctx::root(&path)
        };
        let Some(action) = action.as_object() else {
            return self.error(
                ctx,
                Rule::Structure,
                "an action must be a map with phases".into(),
            );
        };
        self.scope = fields::Scope::of(action);
        self.no_kind.clear();

        let phases: Vec<&Value> = match action.get("phases") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(list)) => list.iter().collect(),
            Some(_) => {
                self.error(
                    ctx.at("phases"),
                    Rule::Structure,
                    "phases must be a list of phases".into(),
                );
                Vec::new()
            }
        };
        let defer = match action.get("deferPhase") {
            None | Some(Value::Null) => None,
            Some(Value::Array(list)) => {
                let message = if super::is_pruned_list(list) {
                    format!(
                        "deferPhase arrived as a list of {} empty phase(s): the Blueprint CRD types deferPhase as one object (Kanister's CRD does) and the API server removed the phases' fields before admission. Write deferPhase as one phase, not a list, or let `blueprint-operator controller --relax-kanister-deferphase-schema` (on by default) relax the CRD",
                        list.len()
                    )
                } else if list.len() == 1 {
                    "deferPhase is one phase, not a list: write the phase itself (`blueprint-operator normalize` and the mutating webhook do this for a one-element list)".to_owned()
                } else {
                    format!(
                        "deferPhase takes exactly one phase, found a list of {}: keep one cleanup phase as deferPhase and move the other steps into it (one KubeTask can run several commands), into the main phases, or into a separate action",
                        list.len()
                    )
                };
                self.error(ctx.at("deferPhase"), Rule::DeferPhaseList, message);
                None
            }
            Some(d) => Some(d),
        };

        // Names first: they scope the `.Phases` checks below.
        let main_names: Vec<&str> = phases.iter().copied().map(phase_name_of).collect();
        let defer_name = defer.map(phase_name_of);
        self.duplicate_names(&ctx, &main_names, defer_name);

        let phases_ctx = ctx.at("phases");
        for (i, phase) in phases.iter().enumerate() {
            let label = label(main_names[i], i);
            let pctx = Ctx {
                phase: Some(&label),
                ..phases_ctx.index(i)
            };
            self.phase(
                pctx,
                phase,
                Stage::Main {
                    earlier: &main_names[..i],
                    current: main_names[i],
                },
                defer.is_some(),
            );
        }
        if let Some(d) = defer {
            let label = label(defer_name.unwrap_or_default(), usize::MAX);
            let dctx = Ctx {
                phase: Some(&label),
                ..ctx.at("deferPhase")
            };
            self.phase(dctx, d, Stage::Defer { main: &main_names }, true);
        }
        if phases.is_empty() && defer.is_none() {
            self.warn(ctx, "action has no phases: running it does nothing".into());
        }

        self.output_artifacts(
            &ctx,
            action.get("outputArtifacts"),
            &main_names,
            defer.is_some(),
        );
        self.scale_to_zero_without_defer(&ctx, &phases, defer.is_some());
    }

    fn duplicate_names(&mut self, ctx: &Ctx, main: &[&str], defer: Option<&str>) {
        // Where each name is: `Some(i)` for `phases[i]`, `None` for the deferPhase; spelled out
        // only for a duplicate.
        let spell = |at: Option<usize>| match at {
            Some(i) => format!("phases[{i}]"),
            None => "deferPhase".to_owned(),
        };
        let mut seen: HashMap<&str, Option<usize>> = HashMap::new();
        let all = main
            .iter()
            .enumerate()
            .map(|(i, n)| (*n, Some(i)))
            .chain(defer.map(|n| (n, None)));
        for (name, at) in all {
            if let Some(&first) = seen.get(name) {
                let shown = if name.is_empty() { "(empty)" } else { name };
                let first = spell(first);
                let at = spell(at);
                let at_ctx = ctx.at(&at);
                self.error(
                    Ctx { phase: Some(shown), ..at_ctx.at("name") },
                    Rule::DuplicatePhaseName,
                    format!("duplicate phase name '{shown}' (also used by {first}): phase names must be unique within an action, rename one of them"),
                );
            } else {
                seen.insert(name, at);
            }
        }
    }

    fn phase(&mut self, ctx: Ctx<'_>, phase: &Value, stage: Stage, has_defer: bool) {
        let Some(phase) = phase.as_object() else {
            return self.error(
                ctx,
                Rule::Structure,
                "a phase must be a map with func, name and args".into(),
            );
        };
        match phase.get("name") {
            None | Some(Value::Null) => {}
            Some(Value::String(n)) if !n.is_empty() && !is_identifier(n) => self.warn(
                ctx.at("name"),
                format!("phase name '{n}' is not a Go template identifier: refer to its output with index .Phases \"{n}\" rather than .Phases.{n}"),
            ),
            Some(Value::String(_)) => {}
            Some(_) => self.error(ctx.at("name"), Rule::Structure, "name must be a string".into()),
        }
        let func =
            match phase.get("func") {
                Some(Value::String(f)) => registry::function(f).ok_or(f.as_str()),
                Some(_) => {
                    return self.error(
                        ctx.at("func"),
                        Rule::Structure,
                        "func must be the name of a Kanister function".into(),
                    );
                }
                None => return self.error(
                    ctx.at("func"),
                    Rule::UnknownFunction,
                    "func is missing: name the Kanister function this phase runs, e.g. KubeTask"
                        .into(),
                ),
            };
        let func = match func {
            Ok(f) => f,
            Err(name) => {
                let unreleased = registry::NEVER_RELEASED.iter().find(|(f, _)| *f == name);
                let message = match (unreleased, closest_function(name)) {
                    (Some((_, pr)), _) => format!(
                        "unknown function '{name}' (proposed in {pr} but never merged: no Kanister release registers it): Kanister functions are {}",
                        function_list()
                    ),
                    // A near miss is a typo: the one name says more than all of them.
                    (None, Some(f)) => format!("unknown function '{name}': did you mean {f}?"),
                    (None, None) => format!(
                        "unknown function '{name}': Kanister functions are {}",
                        function_list()
                    ),
                };
                return self.error(ctx.at("func"), Rule::UnknownFunction, message);
            }
        };
        if !func.runs() {
            self.warn(
                ctx.at("func"),
                format!(
                    "{} is a Kanister function that blueprint-operator's executor does not run{} (it runs {}): use Kanister's controller for this Blueprint, or fail at run time",
                    func.name,
                    func.not_run_hint(),
                    registry::supported().collect::<Vec<_>>().join(", ")
                ),
            );
        }
        if let Some(objects) = phase.get("objects").filter(|o| !o.is_null()) {
            self.templates_in(
                &ctx.at("objects"),
                objects,
                false,
                Stage::Objects,
                has_defer,
            );
        }
        match phase.get("args") {
            None | Some(Value::Null) => self.args(&ctx.at("args"), func, None, stage, has_defer),
            Some(Value::Object(args)) => {
                self.args(&ctx.at("args"), func, Some(args), stage, has_defer)
            }
            Some(_) => self.error(
                ctx.at("args"),
                Rule::Structure,
                "args must be a map of argument name to value".into(),
            ),
        }
    }

    fn args(
        &mut self,
        ctx: &Ctx,
        func: &Function,
        args: Option<&Map<String, Value>>,
        stage: Stage,
        has_defer: bool,
    ) {
        for (name, value) in args.into_iter().flatten() {
            match func.arg(name) {
                None => self.error(
                    ctx.at(name),
                    Rule::UnsupportedArgument,
                    format!(
                        "argument '{name}' is not supported by {}{}: it takes {}",
                        func.name,
                        suggest::hint(name, func.arg_names()),
                        func.arg_names().collect::<Vec<_>>().join(", ")
                    ),
                ),
                Some(ty) => {
                    if let Some(m) = type_mismatch(ty, value) {
                        // Where inside the argument, when the mismatch is in an element.
                        let inside = if m.at.is_empty() {
                            String::new()
                        } else {
                            format!(" ({name}{}: {})", m.at, m.message)
                        };
                        self.error(
                            ctx.at(name),
                            Rule::ArgumentType,
                            format!(
                                "argument '{name}' of {} must be {}, found {}{inside}",
                                func.name,
                                ty.describe(),
                                weak::describe(value)
                            ),
                        );
                    } else {
                        for late in late_failures::check(func, name, ty, value) {
                            let arg = ctx.at(name);
                            self.warn(arg.inside(&late.at), late.message);
                        }
                    }
                    self.templates_in(
                        &ctx.at(name),
                        value,
                        func.renders_own_args(),
                        stage,
                        has_defer,
                    );
                }
            }
        }
        for (name, _) in func.required {
            match args.and_then(|a| a.get(*name)) {
                Some(v) if !v.is_null() => {}
                _ => self.error(
                    ctx.at(name),
                    Rule::MissingArgument,
                    format!("required argument '{name}' of {} is missing", func.name),
                ),
            }
        }
    }

    fn output_artifacts(
        &mut self,
        ctx: &Ctx,
        artifacts: Option<&Value>,
        main: &[&str],
        has_defer: bool,
    ) {
        let ctx = ctx.at("outputArtifacts");
        let artifacts =
            match artifacts {
                None | Some(Value::Null) => return,
                Some(Value::Object(a)) => a,
                Some(_) => return self.error(
                    ctx,
                    Rule::Structure,
                    "outputArtifacts must be a map of artifact name to {keyValue, kopiaSnapshot}"
                        .into(),
                ),
            };
        for (name, artifact) in artifacts {
            let actx = ctx.at(name);
            let Some(artifact) = artifact.as_object() else {
                self.error(
                    actx,
                    Rule::Structure,
                    "an artifact must be a map with keyValue and/or kopiaSnapshot".into(),
                );
                continue;
            };
            match artifact.get("keyValue") {
                None | Some(Value::Null) => {}
                Some(Value::Object(kv)) => {
                    let kv_ctx = actx.at("keyValue");
                    for (k, v) in kv {
                        match v {
                            Value::String(s) => self.template(
                                &kv_ctx.at(k),
                                s,
                                Stage::Artifacts { main },
                                has_defer,
                            ),
                            _ => self.error(
                                kv_ctx.at(k),
                                Rule::ArgumentType,
                                format!(
                                    "artifact values must be strings, found {}",
                                    weak::describe(v)
                                ),
                            ),
                        }
                    }
                }
                Some(_) => self.error(
                    actx.at("keyValue"),
                    Rule::Structure,
                    "keyValue must be a map of strings".into(),
                ),
            }
            match artifact.get("kopiaSnapshot") {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => self.template(
                    &actx.at("kopiaSnapshot"),
                    s,
                    Stage::Artifacts { main },
                    has_defer,
                ),
                Some(v) => self.error(
                    actx.at("kopiaSnapshot"),
                    Rule::ArgumentType,
                    format!(
                        "kopiaSnapshot must be a string, found {}",
                        weak::describe(v)
                    ),
                ),
            }
        }
    }

    fn scale_to_zero_without_defer(&mut self, ctx: &Ctx, phases: &[&Value], has_defer: bool) {
        if has_defer {
            return;
        }
        for (i, p) in phases.iter().enumerate() {
            let zero = p.get("func").and_then(Value::as_str) == Some("ScaleWorkload")
                && matches!(p.get("args").and_then(|a| a.get("replicas")), Some(r) if r == 0 || r == "0");
            if zero && i + 1 < phases.len() {
                let phases_ctx = ctx.at("phases");
                self.warn(
                    phases_ctx.index(i),
                    "scales a workload to 0 and the action has no deferPhase: if a later phase fails the workload stays down; add a deferPhase that scales it back".into(),
                );
            }
        }
    }

    /// Checks every template string inside `value`, map keys too, as
    /// Kanister renders them; `own` marks Wait/WaitV2 args, which render
    /// themselves (keys are not rendered, `condition` sees the object).
    fn templates_in(&mut self, ctx: &Ctx, value: &Value, own: bool, stage: Stage, has_defer: bool) {
        match value {
            Value::String(s) => self.template(ctx, s, stage, has_defer),
            Value::Array(list) => {
                for (i, v) in list.iter().enumerate() {
                    self.templates_in(&ctx.index(i), v, own, stage, has_defer);
                }
            }
            Value::Object(map) => {
                for (k, v) in map {
                    if !own {
                        self.template(&ctx.at(k), k, stage, has_defer);
                    }
                    let inner = if own && k == "condition" {
                        Stage::Fetched
                    } else {
                        stage
                    };
                    self.templates_in(&ctx.at(k), v, own, inner, has_defer);
                }
            }
            _ => {}
        }
    }

    fn template(&mut self, ctx: &Ctx, text: &str, stage: Stage, has_defer: bool) {
        if !is_template(text) {
            return;
        }
        // Parsed borrowed, only for its references: nothing is kept to render.
        let found = template::check_fields(text);
        self.references(ctx, &found, stage, has_defer);
    }

    /// Reports what the check of a template found.
    fn references(
        &mut self,
        ctx: &Ctx,
        found: &Result<Vec<String>, template::TemplateError>,
        stage: Stage,
        has_defer: bool,
    ) {
        let fields = match found {
            Ok(f) => f,
            Err(e) => {
                return self.error(
                    *ctx,
                    Rule::TemplateSyntax,
                    format!("template does not parse: {e}"),
                );
            }
        };
        let mut reported = BTreeSet::new();
        // A workload parameter the template tests on its own (`{{ if .Deployment }}`).
        let tested = |top: &str| fields.iter().any(|f| f.strip_prefix('.') == Some(top));
        for field in fields {
            if fields::path_names(field).next() == Some(REPOSITORY_SERVER) {
                // Released Kanister's parameter for its Kopia repository server: admitted, but
                // this executor has none, so the template fails to render here.
                if reported.insert(REPOSITORY_SERVER.to_string()) {
                    self.warn(
                        *ctx,
                        format!("{field}: .RepositoryServer is released Kanister's Kopia repository server (an ActionSet's repositoryServer); blueprint-operator's executor does not provide it, so this template fails to render here: use Kanister's controller for this Blueprint, or a Profile with BackupData/RestoreData/DeleteData"),
                    );
                }
                continue;
            }
            if let Some(message) = reference_problem(field, stage, has_defer) {
                if reported.insert(message.clone()) {
                    self.error(*ctx, Rule::TemplateReference, message);
                }
                continue;
            }
            if matches!(stage, Stage::Fetched) {
                continue;
            }
            match fields::check(field, &self.scope) {
                Some(Finding::Error(message)) if reported.insert(message.clone()) => {
                    self.error(*ctx, Rule::TemplateReference, message);
                }
                Some(Finding::Warning(message)) if reported.insert(message.clone()) => {
                    self.warn(*ctx, message);
                }
                Some(Finding::NoKind(top)) if !self.no_kind.contains(&top) => {
                    self.no_kind.push(top);
                    self.warn(*ctx, fields::no_kind_message(top));
                }
                Some(Finding::WrongKind(top, message)) if reported.insert(message.clone()) => {
                    if tested(top) {
                        self.warn(*ctx, format!("{message}; the template tests .{top} first, so that part is skipped"));
                    } else {
                        self.error(*ctx, Rule::TemplateReference, message);
                    }
                }
                _ => {}
            }
        }
    }
}

/// Why a `.Field.path` reference cannot resolve at this stage, if it cannot.
fn reference_problem(field: &str, stage: Stage, has_defer: bool) -> Option<String> {
    if matches!(stage, Stage::Fetched) {
        return None;
    }
    let mut parts = fields::path_names(field);
    // Messages name the parameter root, not the whole path, so that
    // `.Phases.x.Output.a` and `.Phases.x.Output.b` report `x` once.
    let top = parts.next().unwrap_or_default();
    if top.is_empty() {
        return None;
    }
    let params = param::top_level_names();
    if !params.contains(&top) {
        return Some(format!(
            "{field}: there is no template parameter .{top}{}; parameters are .{}",
            suggest::hint(top, params.iter().copied()),
            params.join(", .")
        ));
    }
    let second = parts.next();
    match top {
        "Phases" => {
            let name = second?;
            let (visible, when): (&[&str], &str) = match stage {
                Stage::Main { current, .. } if current == name => {
                    return (parts.next() == Some("Output"))
                        .then(|| format!(".Phases.{name}.Output: a phase cannot read its own output; only earlier phases' outputs exist"));
                }
                Stage::Main { earlier, .. } => (earlier, "an earlier phase of this action"),
                Stage::Defer { main } | Stage::Artifacts { main } => (main, "a phase of this action"),
                Stage::Fetched => return None,
                Stage::Objects => return Some(format!("{field}: phase objects are rendered when the action starts, before any phase ran")),
            };
            (!visible.contains(&name)).then(|| format!(".Phases.{name}: '{name}' is not {when}, so .Phases.{name} does not exist here"))
        }
        "DeferPhase" if !has_defer => Some(".DeferPhase: this action has no deferPhase".into()),
        "DeferPhase" if second == Some("Output") && !matches!(stage, Stage::Artifacts { .. }) => {
            Some(".DeferPhase.Output: the deferPhase output exists only after it ran; use it in outputArtifacts".into())
        }
        "Outcome" if !matches!(stage, Stage::Defer { .. }) => {
            Some(".Outcome: the result of the main phases exists only in the deferPhase".into())
        }
        _ => None,
    }
}

fn problem(ctx: Ctx<'_>, rule: Rule, message: String) -> Problem {
    Problem {
        path: ctx.path(),
        action: ctx.action.map(str::to_owned),
        phase: ctx.phase.map(str::to_owned),
        rule,
        message,
    }
}

/// A phase's name, empty when it has none, borrowed.
fn phase_name_of(p: &Value) -> &str {
    p.get("name").and_then(Value::as_str).unwrap_or_default()
}

/// Name shown in `action/phase` locations; unnamed phases by position.
fn label(name: &str, index: usize) -> Cow<'_, str> {
    match (name.is_empty(), index) {
        (false, _) => Cow::Borrowed(name),
        (true, usize::MAX) => "deferPhase".into(),
        (true, i) => format!("phases[{i}]").into(),
    }
}

fn is_template(s: &str) -> bool {
    template::has_action(s)
}

/// Why `v` does not decode as `ty` the way Kanister's `Arg` decodes it ([`weak`]), `None` when
/// it does. A template in an integer or boolean is checked once rendered, at run time.
fn type_mismatch(ty: ArgType, v: &Value) -> Option<weak::Mismatch> {
    // Shapes the decoding always takes, answered without building the decoded value (which
    // copies every string); anything else goes to the decoding itself for its exact message.
    let scalar = |v: &Value| !matches!(v, Value::Array(_) | Value::Object(_));
    let fits = match (ty, v) {
        (ArgType::Str, v) => scalar(v),
        (ArgType::StrList, Value::Array(items)) => items.iter().all(scalar),
        (ArgType::StrList, v) => scalar(v),
        (ArgType::Map, Value::Object(_)) => true,
        (ArgType::StrMap, Value::Object(m)) => m.values().all(scalar),
        _ => false,
    };
    if fits {
        return None;
    }
    let template = v.as_str().is_some_and(is_template);
    match ty {
        _ if v.is_null() => None,
        ArgType::Any => None,
        ArgType::Str => weak::string(v).err(),
        ArgType::StrList => weak::strings(v).err(),
        ArgType::Int if template => None,
        ArgType::Int => weak::int(v).err(),
        ArgType::Bool if template => None,
        ArgType::Bool => weak::boolean(v).err(),
        ArgType::Map => weak::json_map(v).err(),
        ArgType::StrMap => weak::string_map(v).err(),
        ArgType::Struct if v.is_object() => None,
        ArgType::Struct => Some(weak::Mismatch {
            at: String::new(),
            message: format!("expected a map, got {}", weak::describe(v)),
        }),
    }
}

/// Go identifiers: a letter or `_`, then letters, digits and `_`.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// Every function name, sorted.
fn function_list() -> String {
    let mut names: Vec<&str> = registry::FUNCTIONS.iter().map(|f| f.name).collect();
    names.sort_unstable();
    names.join(", ")
}

/// The registered function `name` is most likely a typo of.
fn closest_function(name: &str) -> Option<&'static str> {
    suggest::closest(name, registry::FUNCTIONS.iter().map(|f| f.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bp(annotation: &str) -> Value {
        json!({
            "metadata": {"name": "b", "annotations": {ANNOTATION_PHASE_TIMEOUTS: annotation}},
            "actions": {"backup": {
                "phases": [{"func": "KubeTask", "name": "dump", "args": {"image": "x", "command": ["a"]}}],
                "deferPhase": {"func": "KubeOps", "name": "cleanup", "args": {"operation": "delete"}},
            }},
        })
    }

    fn messages(problems: &[Problem]) -> Vec<String> {
        problems
            .iter()
            .map(|p| format!("{}|{}|{}", p.path, p.location(), p.message))
            .collect()
    }

    fn rerun_bp(annotation: Value) -> Value {
        json!({
            "metadata": {"name": "b", "annotations": {ANNOTATION_RERUN_ON_RESTART: annotation}},
            "actions": {"backup": {
                "phases": [
                    {"func": "KubeExec", "name": "dump", "args": {"namespace": "n", "pod": "p", "command": ["a"]}},
                    {"func": "KubeTask", "name": "upload", "args": {"image": "x", "command": ["a"]}},
                ],
                "deferPhase": {"func": "KubeExec", "name": "cleanup", "args": {"namespace": "n", "pod": "p", "command": ["a"]}},
            }},
        })
    }

    #[test]
    fn rerun_on_restart_names_exec_phases() {
        let r = validate(&rerun_bp(json!("dump, cleanup")));
        assert!(r.errors.is_empty(), "{:?}", messages(&r.errors));
        assert!(r.warnings.is_empty(), "{:?}", messages(&r.warnings));
    }

    #[test]
    fn rerun_on_restart_unknown_or_needless_names_are_warnings() {
        let r = validate(&rerun_bp(json!("dmup,upload")));
        assert!(r.errors.is_empty(), "{:?}", messages(&r.errors));
        let m = messages(&r.warnings);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(
            m[0].starts_with("metadata.annotations[\"blueprint-operator.io/rerun-on-restart\"]||names phase dmup, which this Blueprint does not have (it has cleanup, dump, upload)"),
            "{m:?}"
        );
        assert!(
            m[1].contains("backup/upload|phase upload runs KubeTask: its pod is re-attached after a restart; listing it has no effect"),
            "{m:?}"
        );
        let r = validate(&rerun_bp(json!(["dump"])));
        assert!(
            messages(&r.errors)[0].contains("not a string"),
            "{:?}",
            r.errors
        );
    }

    /// A template text written several times has its references judged where each copy is:
    /// `.Phases.dump` exists in the second phase, not in the first.
    #[test]
    fn a_repeated_template_is_judged_at_each_place() {
        let t = "{{ .Phases.dump.Output.x }} {{ .Nope }}";
        let doc = json!({
            "metadata": {"name": "b"},
            "actions": {"backup": {"phases": [
                {"func": "KubeTask", "name": "dump", "args": {"image": t, "command": [t]}},
                {"func": "KubeTask", "name": "up", "args": {"image": t, "command": ["{{ .Bad"]}},
                {"func": "KubeTask", "name": "again", "args": {"image": "x", "command": ["{{ .Bad"]}},
            ]}},
        });
        let m = messages(&validate(&doc).errors);
        let at = |path: &str| {
            m.iter()
                .filter(|e| e.starts_with(&format!("{path}|")))
                .count()
        };
        assert_eq!(at("actions.backup.phases[0].args.image"), 2, "{m:?}");
        assert_eq!(at("actions.backup.phases[0].args.command[0]"), 2, "{m:?}");
        assert_eq!(at("actions.backup.phases[1].args.image"), 1, "{m:?}");
        assert_eq!(at("actions.backup.phases[1].args.command[0]"), 1, "{m:?}");
        assert_eq!(at("actions.backup.phases[2].args.command[0]"), 1, "{m:?}");
        assert!(
            m.iter().any(|e| e.starts_with(
                "actions.backup.phases[2].args.command[0]|backup/again|template does not parse"
            )),
            "{m:?}"
        );
        assert_eq!(m.len(), 7, "{m:?}");
    }

    #[test]
    fn good_phase_timeouts_pass() {
        let r = validate(&bp(r#"{"backup": {"dump": "6h", "cleanup": "0"}}"#));
        assert!(r.errors.is_empty(), "{:?}", messages(&r.errors));
        assert!(r.warnings.is_empty(), "{:?}", messages(&r.warnings));
    }

    #[test]
    fn bad_phase_timeouts_are_errors_with_the_fix() {
        let r = validate(&bp(r#"{"backup": {"dump": "6 hours", "cleanup": 5}}"#));
        let mut m = messages(&r.errors);
        m.sort();
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(
            m[0].starts_with(
                "metadata.annotations[\"blueprint-operator.io/phase-timeouts\"]|backup/cleanup|backup.cleanup is not a string: write"
            ),
            "{m:?}"
        );
        assert!(
            m[1].contains("backup/dump|backup.dump \"6 hours\" is not a duration"),
            "{m:?}"
        );
        let r = validate(&bp("{not json"));
        assert!(
            messages(&r.errors)[0].contains("not a JSON object"),
            "{:?}",
            r.errors
        );
    }

    #[test]
    fn unknown_names_are_warnings() {
        let r = validate(&bp(r#"{"backup": {"dmup": "1h"}, "restore": {"x": "1h"}}"#));
        assert!(r.errors.is_empty(), "{:?}", messages(&r.errors));
        let mut m = messages(&r.warnings);
        m.sort();
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(m[0].contains("backup/dmup|names phase dmup, which action backup does not have (it has dump, cleanup)"), "{m:?}");
        assert!(
            m[1].contains("names action restore, which this Blueprint does not have"),
            "{m:?}"
        );
    }
}
