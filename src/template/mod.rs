//! Go `text/template` + sprig rendering, compatible with Kanister.
//!
//! Kanister renders every phase argument with
//! `template.New("config").Option("missingkey=error").Funcs(sprig.TxtFuncMap())`
//! over its `param.TemplateParams` Go struct. This module reproduces that:
//! [`Template::parse`], [`Template::render`], [`Template::references`] and
//! [`check`] (the same references without keeping the tree) for static
//! checks, and [`render_args`] for whole argument trees.
//!
//! # Engine choice
//! This is our own engine (lexer, parser, evaluator, sprig), not `gotmpl`.
//! Kanister's data is a typed Go struct, and the differences that matter
//! come from types: struct fields vs map keys (missing field vs
//! `missingkey=error`), nil pointers (`.Deployment.Name` must fail, not print
//! `<no value>`), typed zero values from `index` (`""` for
//! `map[string]string`), `[]byte` Secret data, struct field order and JSON
//! tags in `toJson .Profile`, and undefined functions failing at parse time
//! (needed by the admission validator). `gotmpl`'s untyped `Value` model
//! diverges on each of these, so we would have had to wrap or pre-check
//! around it; owning an engine of ~9k lines whose output is checked
//! byte-for-byte against real Go (`tools/template-oracle`,
//! `tests/template_oracle.rs`) is simpler and keeps the typed data model in
//! one place. The public API below is engine
//! neutral.
//!
//! Differences: `Local` time is UTC (as in Kanister's images); strings are
//! UTF-8 (invalid bytes from `b64dec` become U+FFFD); values are immutable
//! (see `exec::MUTATORS`); hostile input is bounded by [`limits`].

mod args;
mod builtins;
mod encoding;
mod error;
mod exec;
mod funcs;
mod gotime;
mod lexer;
pub mod limits;
mod params;
mod parse;
mod print;
mod semver;
mod sprig_certs;
mod sprig_core;
mod sprig_crypto;
mod sprig_lists;
mod sprig_other;
mod sprig_semver;
mod sprig_strings;
mod value;
mod xstrings;

use parse::{Arg, Node, Pipe, Tree};
/// Go's `json.Marshal` text of a string, as `toJson` and Kanister's `kando output` write it.
pub use print::go_json_string;
use std::fmt;
use std::sync::Arc;

/// Template failure, displayed like Kanister reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateError {
    /// Syntax error, undefined function or variable.
    Parse { line: usize, msg: String },
    /// A map key that does not exist (Go's `missingkey=error`).
    MissingKey { key: String, line: usize },
    /// Any other execution failure (nil pointer, bad types, function error).
    Exec { line: usize, msg: String },
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateError::Parse { line, msg } => write!(f, "template: config:{line}: {msg}"),
            TemplateError::MissingKey { key, .. } => {
                write!(f, "Failed to render template: \"{key}\" not found")
            }
            TemplateError::Exec { line, msg } => {
                write!(f, "template: config:{line}: executing \"config\": {msg}")
            }
        }
    }
}

impl std::error::Error for TemplateError {}

/// What a template refers to, for static checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct References {
    /// Field paths rooted at the template data, e.g. `.Phases.backup.Output.key`.
    /// `index X "a" "b"` with constant string keys extends the path of `X`.
    pub fields: Vec<String>,
    /// Function names called, sorted and deduplicated.
    pub functions: Vec<String>,
}

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    tree: Arc<Tree<'static>>,
}

fn parse_error((line, msg): (usize, String)) -> TemplateError {
    TemplateError::Parse { line, msg }
}

/// Parse `text` and return what it refers to, as `Template::parse(text)?.references()`
/// does, without keeping the tree: nothing of the text is copied but the references.
pub fn check(text: &str) -> Result<References, TemplateError> {
    parse::parse(text)
        .map(|tree| references(&tree))
        .map_err(parse_error)
}

/// The field paths of [`check`]`(text)` alone: the functions are neither collected, sorted
/// nor copied (the admission checks use only the fields).
pub fn check_fields(text: &str) -> Result<Vec<String>, TemplateError> {
    parse::parse(text)
        .map(|tree| collect_refs(&tree, false).fields)
        .map_err(parse_error)
}

/// Whether `text` has a `{{`, i.e. whether it is a template at all.
pub fn has_action(text: &str) -> bool {
    lexer::find_open(text).is_some()
}

impl Template {
    /// Parse template text; undefined functions and variables are errors here.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        parse::parse(text)
            .map(|tree| Template {
                tree: Arc::new(tree.into_owned()),
            })
            .map_err(parse_error)
    }

    /// Render against Kanister-shaped parameters (Go field names, see module docs).
    pub fn render(&self, params: &serde_json::Value) -> Result<String, TemplateError> {
        self.render_at(params, chrono::Utc::now())
    }

    /// Render with a fixed clock for `now` and `date` of non-time values.
    pub fn render_at(
        &self,
        params: &serde_json::Value,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<String, TemplateError> {
        let data = params::template_params_value(params);
        self.render_value(&data, now)
    }

    fn render_value(
        &self,
        data: &value::Value,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<String, TemplateError> {
        exec::execute(&self.tree, data, &gotime::utc(now))
    }

    /// Fields and functions referenced by the template.
    pub fn references(&self) -> References {
        references(&self.tree)
    }
}

fn references(tree: &Tree<'_>) -> References {
    let mut r = collect_refs(tree, true);
    // Sorted and deduplicated while borrowed: only the distinct names are copied.
    r.functions.sort_unstable();
    r.functions.dedup();
    References {
        fields: r.fields,
        functions: r.functions.into_iter().map(str::to_string).collect(),
    }
}

/// The references of a tree: fields deduplicated, functions (when `functions`) as found.
fn collect_refs<'t>(tree: &'t Tree<'_>, functions: bool) -> Refs<'t> {
    let mut r = Refs {
        fields: Vec::new(),
        functions: Vec::new(),
        want_functions: functions,
    };
    refs_nodes(&tree.root, Roots::BOTH, &mut r);
    // A defined template's `.` and `$` are whatever its caller passes.
    for body in tree.defs.values() {
        refs_nodes(body, Roots::NONE, &mut r);
    }
    first_occurrences(&mut r.fields);
    r
}

/// Parameters converted once, for rendering many templates.
#[derive(Debug, Clone)]
pub struct Params {
    data: value::Value,
}

impl Params {
    pub fn new(params: &serde_json::Value) -> Params {
        Params {
            data: params::template_params_value(params),
        }
    }
}

impl Template {
    /// Render against pre-converted parameters.
    pub fn render_params(
        &self,
        params: &Params,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<String, TemplateError> {
        self.render_value(&params.data, now)
    }
}

/// Parse and render in one go.
pub fn render_str(text: &str, params: &serde_json::Value) -> Result<String, TemplateError> {
    Template::parse(text)?.render(params)
}

/// Render a phase's `args` as Kanister does: every string in nested lists and
/// maps (map keys too); other scalars untouched. `Wait`/`WaitV2` args are
/// returned as they are (those functions render their own fields).
pub fn render_args(
    args: &serde_json::Value,
    params: &serde_json::Value,
    function_name: &str,
) -> Result<serde_json::Value, TemplateError> {
    if function_name.eq_ignore_ascii_case("wait") || function_name.eq_ignore_ascii_case("waitv2") {
        return Ok(args.clone());
    }
    let p = Params::new(params);
    let now = chrono::Utc::now();
    render_json(args, &p, now)
}

fn render_json(
    v: &serde_json::Value,
    p: &Params,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<serde_json::Value, TemplateError> {
    use serde_json::Value as J;
    Ok(match v {
        J::String(s) => J::String(render_one(s, p, now)?),
        J::Array(a) => J::Array(
            a.iter()
                .map(|x| render_json(x, p, now))
                .collect::<Result<_, _>>()?,
        ),
        J::Object(o) => {
            let mut m = serde_json::Map::new();
            for (k, x) in o {
                m.insert(render_one(k, p, now)?, render_json(x, p, now)?);
            }
            J::Object(m)
        }
        other => other.clone(),
    })
}

fn render_one(
    s: &str,
    p: &Params,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<String, TemplateError> {
    Template::parse(s)?.render_params(p, now)
}

// ---- references ----

/// Which of `.` and `$` are the template data at this point.
#[derive(Clone, Copy)]
struct Roots {
    dot: bool,
    dollar: bool,
}

impl Roots {
    const BOTH: Roots = Roots {
        dot: true,
        dollar: true,
    };
    const NONE: Roots = Roots {
        dot: false,
        dollar: false,
    };
}

/// Keeps the first occurrence of each string, in order.
fn first_occurrences(fields: &mut Vec<String>) {
    // A template refers to a handful of fields: comparing with the ones kept is cheaper than
    // hashing them. Many (hostile input) are deduplicated through a set, without copying them.
    if fields.len() <= 32 {
        let mut kept = 0;
        for i in 0..fields.len() {
            if !fields[..kept].contains(&fields[i]) {
                fields.swap(kept, i);
                kept += 1;
            }
        }
        fields.truncate(kept);
        return;
    }
    let first: Vec<bool> = {
        let mut seen = std::collections::HashSet::new();
        fields.iter().map(|f| seen.insert(f.as_str())).collect()
    };
    let mut first = first.into_iter();
    fields.retain(|_| first.next().unwrap_or(true));
}

/// References being collected from a tree: function names borrowed from it.
struct Refs<'t> {
    fields: Vec<String>,
    functions: Vec<&'t str>,
    want_functions: bool,
}

impl<'t> Refs<'t> {
    fn function(&mut self, name: &'t str) {
        if self.want_functions {
            self.functions.push(name);
        }
    }
}

fn refs_nodes<'t>(nodes: &'t [Node<'_>], roots: Roots, r: &mut Refs<'t>) {
    for n in nodes {
        match n {
            Node::Text(_) | Node::Break(_) | Node::Continue(_) => {}
            Node::Action(_, p) => refs_pipe(p, roots, r),
            Node::Template(call) => {
                if let Some(p) = &call.pipe {
                    refs_pipe(p, roots, r);
                }
            }
            Node::If(c) | Node::Range(c) | Node::With(c) => {
                refs_pipe(&c.pipe, roots, r);
                let inner = Roots {
                    dot: roots.dot && matches!(n, Node::If(_)),
                    dollar: roots.dollar,
                };
                refs_nodes(&c.list, inner, r);
                if let Some(e) = &c.else_list {
                    refs_nodes(e, roots, r);
                }
            }
        }
    }
}

fn refs_pipe<'t>(p: &'t Pipe<'_>, root_dot: Roots, r: &mut Refs<'t>) {
    for c in &p.cmds {
        if let Some(Arg::Func(name)) = c.args.first() {
            r.function(name);
            if name == "index"
                && let Some(base) = c.args.get(1).and_then(|a| root_path(a, root_dot))
            {
                let mut path = base;
                for k in &c.args[2..] {
                    match k {
                        // A key with a dot (or none) cannot be told apart in a dotted path.
                        Arg::Str(s) if !s.is_empty() && !s.contains('.') => {
                            path.push('.');
                            path.push_str(s);
                        }
                        _ => break,
                    }
                }
                r.fields.push(path);
            }
        }
        for a in &c.args {
            refs_arg(a, root_dot, r);
        }
    }
}

fn root_path(a: &Arg<'_>, roots: Roots) -> Option<String> {
    match a {
        Arg::Field(chain) if roots.dot => Some(dotted(chain)),
        Arg::Variable(v, chain) if roots.dollar && v == "$" && !chain.is_empty() => {
            Some(dotted(chain))
        }
        _ => None,
    }
}

/// `.a.b` from `[a, b]` (`format!(".{}", chain.join("."))` in one allocation).
fn dotted(chain: &[std::borrow::Cow<'_, str>]) -> String {
    let mut path = String::with_capacity(chain.iter().map(|s| s.len() + 1).sum::<usize>().max(1));
    path.push('.');
    for (i, s) in chain.iter().enumerate() {
        if i > 0 {
            path.push('.');
        }
        path.push_str(s);
    }
    path
}

fn refs_arg<'t>(a: &'t Arg<'_>, root_dot: Roots, r: &mut Refs<'t>) {
    if let Some(p) = root_path(a, root_dot) {
        r.fields.push(p);
        return;
    }
    match a {
        Arg::Func(name) => r.function(name),
        Arg::Pipe(p) => refs_pipe(p, root_dot, r),
        Arg::Chain(inner, _) => refs_arg(inner, root_dot, r),
        _ => {}
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod limits_tests;

#[cfg(test)]
mod crypto_tests;
