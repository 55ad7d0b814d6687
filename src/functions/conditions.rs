//! What Wait and WaitV2 share: their arguments, their conditions and the poll until they hold.
//!
//! Args are not pre-rendered: `timeout` (Go duration such as `10m`, `1h30m`)
//! and `conditions` with `anyOf` or `allOf` (when `anyOf` is non-empty it is
//! used and `allOf` ignored, as in Kanister), each `{condition,
//! objectReference}`. The `objectReference` fields are rendered once with the
//! template params; the object is then fetched (dynamic API + discovery) until
//! the conditions hold or the timeout expires, polling with backoff 100 ms →
//! 5 s. A missing object or a condition that fails to evaluate counts as
//! "not yet" (the last reason is reported on timeout); syntax errors fail at
//! once.
//!
//! Wait: every `{$.path}` / `{ $.path }` in the condition is replaced with the
//! value of that JSONPath in the object (Kubernetes JSONPath printing, missing
//! keys give an empty string), then the text is rendered as a Go template;
//! the condition holds when the trimmed output is `true`. The JSONPath is
//! read by jsonpath-rust (RFC 9535) after two Kubernetes spellings are turned
//! into RFC 9535's: dotted names with any character but `.` and `[`, and `[]`.
//!
//! WaitV2: the condition is a Go template rendered with the object as `.` and
//! `$`; it holds when the trimmed output is `true`.

use std::time::Duration;

use jsonpath_rust::JsonPath;
use kube::api::DynamicObject;
use serde_json::{Map, Value};

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use super::objref;
use crate::model::ObjectReference;
use crate::phase_output::Output;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `Wait`: JSONPath placeholders, then a Go template with no data.
    JsonPath,
    /// `WaitV2`: a Go template over the object.
    Template,
}

impl Flavor {
    fn name(self) -> &'static str {
        match self {
            Flavor::JsonPath => "Wait",
            Flavor::Template => "WaitV2",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Condition {
    pub condition: String,
    pub object: ObjectReference,
}

#[derive(Debug, Clone)]
pub struct Conditions {
    /// true: any must hold; false: all must hold.
    pub any: bool,
    pub list: Vec<Condition>,
}

pub async fn run_flavor(
    ctx: &Context,
    a: &Args<'_>,
    params: &Value,
    flavor: Flavor,
) -> Result<Output, FunctionError> {
    let f = flavor.name();
    let timeout_text = a.string("timeout")?;
    let timeout = crate::duration::parse_std(&timeout_text).map_err(|e| {
        FunctionError::arg(
            f,
            "timeout",
            format!(
                "{timeout_text:?} is not a duration ({e}); use Go syntax such as 30s, 10m or 1h30m"
            ),
        )
    })?;
    let conds = decode_conditions(f, a.get("conditions"), params)?;
    // Fail fast on syntax errors.
    for (i, c) in conds.list.iter().enumerate() {
        check_syntax(flavor, &c.condition).map_err(|e| {
            FunctionError::arg(f, &format!("conditions[{i}].condition"), e.to_string())
        })?;
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let mut delay = Duration::from_millis(100);
    let mut resolved: Vec<Option<objref::Resolved>> = vec![None; conds.list.len()];
    loop {
        let mut reasons = Vec::new();
        let mut results = Vec::new();
        for (i, c) in conds.list.iter().enumerate() {
            let r = evaluate(ctx, flavor, c, &mut resolved[i]).await;
            match r {
                Ok(true) => results.push(true),
                Ok(false) => {
                    results.push(false);
                    reasons.push(format!(
                        "{}: condition is not true yet",
                        describe(&c.object)
                    ));
                }
                Err(Eval::Fatal(m)) => {
                    return Err(FunctionError::failed(
                        f,
                        format!("{}: {m}", describe(&c.object)),
                    ));
                }
                Err(Eval::NotYet(m)) => {
                    results.push(false);
                    reasons.push(format!("{}: {m}", describe(&c.object)));
                }
            }
        }
        let met = if conds.any {
            results.iter().any(|b| *b)
        } else {
            results.iter().all(|b| *b)
        };
        if met {
            return Ok(Output::new());
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Err(FunctionError::failed(
                f,
                format!(
                    "Failed to wait for the {} condition(s) to be met within {timeout_text}: {}",
                    if conds.any { "anyOf" } else { "allOf" },
                    reasons.join("; ")
                ),
            ));
        }
        tokio::time::sleep(delay.min(deadline - now)).await;
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

fn describe(r: &ObjectReference) -> String {
    let what = if r.resource.is_empty() {
        &r.kind
    } else {
        &r.resource
    };
    if r.namespace.is_empty() {
        format!("{what} {}", r.name)
    } else {
        format!("{what} {}/{}", r.namespace, r.name)
    }
}

enum Eval {
    NotYet(String),
    Fatal(String),
}

async fn evaluate(
    ctx: &Context,
    flavor: Flavor,
    c: &Condition,
    resolved: &mut Option<objref::Resolved>,
) -> Result<bool, Eval> {
    if resolved.is_none() {
        *resolved = Some(
            objref::resolve(&ctx.client, &c.object)
                .await
                .map_err(|e| Eval::NotYet(e.to_string()))?,
        );
    }
    let res = resolved
        .as_ref()
        .ok_or_else(|| Eval::NotYet("unresolved".into()))?;
    let ns = if c.object.namespace.is_empty() {
        ctx.namespace.as_str()
    } else {
        c.object.namespace.as_str()
    };
    let obj: DynamicObject = match res.api(&ctx.client, ns).get(&c.object.name).await {
        Ok(o) => o,
        Err(kube::Error::Api(s)) if s.code == 404 => {
            return Err(Eval::NotYet("object not found".into()));
        }
        Err(e) => {
            return Err(Eval::NotYet(format!(
                "getting the object: {}",
                crate::kube_error::Describe(&e)
            )));
        }
    };
    let json = serde_json::to_value(&obj).map_err(|e| Eval::Fatal(e.to_string()))?;
    let out = match flavor {
        Flavor::JsonPath => evaluate_jsonpath_condition(&c.condition, &json),
        Flavor::Template => evaluate_template_condition(&c.condition, &json),
    }
    .map_err(|e| Eval::NotYet(e.to_string()))?;
    Ok(out.trim() == "true")
}

/// Why a condition does not parse or render; the text is the JSONPath's or the template's.
#[derive(Debug, thiserror::Error)]
pub enum ConditionError {
    #[error(transparent)]
    JsonPath(#[from] JsonPathError),
    #[error(transparent)]
    Template(#[from] crate::template::TemplateError),
}

fn check_syntax(flavor: Flavor, cond: &str) -> Result<(), ConditionError> {
    let text = match flavor {
        Flavor::JsonPath => {
            for (_, path) in find_placeholders(cond) {
                query(&path, &Value::Null)?;
            }
            // Placeholders replaced by empty strings must leave a valid template.
            substitute(cond, &Value::Null)?
        }
        Flavor::Template => v2_text(cond),
    };
    crate::template::Template::parse(&text)?;
    Ok(())
}

/// Wait: substitute the JSONPath placeholders, render the rest with no data.
pub fn evaluate_jsonpath_condition(cond: &str, obj: &Value) -> Result<String, ConditionError> {
    let text = substitute(cond, obj)?;
    Ok(crate::template::render_str(
        &text,
        &Value::Object(Map::new()),
    )?)
}

/// WaitV2: render the template with the object as `.` and `$`.
pub fn evaluate_template_condition(cond: &str, obj: &Value) -> Result<String, ConditionError> {
    let mut params = Map::new();
    params.insert("Object".into(), obj.clone());
    Ok(crate::template::render_str(
        &v2_text(cond),
        &Value::Object(params),
    )?)
}

/// The template engine renders Kanister's params, where an arbitrary object is
/// reachable as `.Object`: run the condition inside `{{with .Object}}` and
/// point `$` at `.Object` too.
fn v2_text(cond: &str) -> String {
    format!("{{{{with .Object}}}}{}{{{{end}}}}", rewrite_root(cond))
}

/// Inside `{{ }}` actions and outside string literals, `$` that is not the
/// start of a variable name becomes `$.Object`.
pub fn rewrite_root(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    let mut in_action = false;
    let mut quote: Option<u8> = None;
    let mut last = 0;
    while i < b.len() {
        if !in_action {
            if b[i..].starts_with(b"{{") {
                in_action = true;
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        if let Some(q) = quote {
            if b[i] == b'\\' && q != b'`' {
                i += 2;
                continue;
            }
            if b[i] == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match b[i] {
            b'"' | b'`' | b'\'' => {
                quote = Some(b[i]);
                i += 1;
            }
            b'}' if b[i..].starts_with(b"}}") => {
                in_action = false;
                i += 2;
            }
            b'$' => {
                let next = b.get(i + 1).copied();
                let is_var = next.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_');
                if !is_var {
                    out.push_str(&text[last..=i]);
                    out.push_str(".Object");
                    last = i + 1;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[last.min(text.len())..]);
    out
}

/// `(range, path)` of each `{$...}` / `{ $... }` placeholder (not `{{`).
fn find_placeholders(text: &str) -> Vec<(std::ops::Range<usize>, String)> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' {
            if b.get(i + 1) == Some(&b'{') {
                i += 2;
                continue;
            }
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if b.get(j) == Some(&b'$')
                && matches!(b.get(j + 1), Some(b'.' | b'[') | None)
                && let Some(end) = text[j..].find('}')
            {
                let path = text[j..j + end].trim().to_string();
                found.push((i..j + end + 1, path));
                i = j + end + 1;
                continue;
            }
        }
        i += 1;
    }
    found
}

fn substitute(cond: &str, obj: &Value) -> Result<String, JsonPathError> {
    let mut out = String::new();
    let mut last = 0;
    for (range, path) in find_placeholders(cond) {
        out.push_str(&cond[last..range.start]);
        let printed: Vec<String> = query(&path, obj)?.into_iter().map(print_value).collect();
        out.push_str(&printed.join(" "));
        last = range.end;
    }
    out.push_str(&cond[last..]);
    Ok(out)
}

fn print_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A JSONPath of a Wait condition that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("JSONPath {path:?} does not parse: {why}")]
pub struct JsonPathError {
    path: String,
    why: String,
}

/// The values at `path` (Kubernetes JSONPath, as `kubectl -o jsonpath` reads it) in `root`.
pub fn query<'v>(path: &str, root: &'v Value) -> Result<Vec<&'v Value>, JsonPathError> {
    let error = |why: String| JsonPathError {
        path: path.to_string(),
        why,
    };
    let rfc = to_rfc9535(path.trim()).ok_or_else(|| error("unclosed `[`".into()))?;
    root.query(&rfc).map_err(|e| error(e.to_string()))
}

/// Kubernetes JSONPath as RFC 9535, which jsonpath-rust reads: a dotted name there is anything
/// up to the next `.` or `[` (`.app-name`), and `[]` means every element.
fn to_rfc9535(path: &str) -> Option<String> {
    let mut out = String::with_capacity(path.len() + 8);
    let mut rest = path;
    while let Some(c) = rest.chars().next() {
        if let Some(r) = rest.strip_prefix("..") {
            out.push_str("..");
            rest = r;
        } else if let Some(r) = rest.strip_prefix('.').filter(|r| !r.starts_with('*')) {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out.push_str(&format!("[{}]", Value::from(&r[..end])));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = matching_bracket(r)?;
            let inner = r[..end].trim();
            out.push_str(if inner.is_empty() {
                "[*]"
            } else {
                &rest[..end + 2]
            });
            rest = &r[end + 1..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    Some(out)
}

fn matching_bracket(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') if depth == 0 => return Some(i),
            (None, ']') => depth -= 1,
            _ => {}
        }
    }
    None
}

fn decode_conditions(
    f: &'static str,
    v: Option<&Value>,
    params: &Value,
) -> Result<Conditions, FunctionError> {
    let err = |path: &str, m: String| FunctionError::arg(f, path, m);
    let m = match v {
        Some(Value::Object(m)) => m.clone(),
        Some(Value::String(s)) => {
            super::args::parse_yaml_object(s).map_err(|e| err("conditions", e.to_string()))?
        }
        None => return Err(err("conditions", "required argument is missing".into())),
        Some(other) => {
            return Err(err(
                "conditions",
                format!(
                    "expected an object with anyOf or allOf, got {}",
                    super::args::type_name(other)
                ),
            ));
        }
    };
    for k in m.keys() {
        if k != "anyOf" && k != "allOf" {
            return Err(err(
                &format!("conditions.{k}"),
                "unknown key; use anyOf or allOf".into(),
            ));
        }
    }
    let list = |key: &str| -> Result<Vec<Condition>, FunctionError> {
        let Some(v) = m.get(key).filter(|v| !v.is_null()) else {
            return Ok(Vec::new());
        };
        // mapstructure's weak decoding of `[]Condition`: an empty map is an empty list, and a
        // single condition a list of one.
        let items: Vec<&Value> = match v {
            Value::Array(items) => items.iter().collect(),
            Value::Object(o) if o.is_empty() => Vec::new(),
            Value::Object(_) => vec![v],
            _ => return Err(err(&format!("conditions.{key}"), "expected a list".into())),
        };
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| decode_condition(f, &format!("conditions.{key}[{i}]"), item, params))
            .collect()
    };
    let any = list("anyOf")?;
    if !any.is_empty() {
        return Ok(Conditions {
            any: true,
            list: any,
        });
    }
    let all = list("allOf")?;
    if all.is_empty() {
        return Err(err(
            "conditions",
            "needs a non-empty anyOf or allOf list".into(),
        ));
    }
    Ok(Conditions {
        any: false,
        list: all,
    })
}

fn decode_condition(
    f: &'static str,
    path: &str,
    item: &Value,
    params: &Value,
) -> Result<Condition, FunctionError> {
    let err = |p: String, m: String| FunctionError::arg(f, &p, m);
    let Value::Object(m) = item else {
        return Err(err(
            path.into(),
            "expected {condition, objectReference}".into(),
        ));
    };
    let condition = match m.get("condition") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(err(format!("{path}.condition"), "required string".into())),
    };
    let Some(Value::Object(r)) = m.get("objectReference") else {
        return Err(err(
            format!("{path}.objectReference"),
            "required object (apiVersion, group, resource, name, namespace)".into(),
        ));
    };
    let mut fields = Map::new();
    for (k, v) in r {
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Null => continue,
            other => other.to_string(),
        };
        let rendered = crate::template::render_str(&text, params)
            .map_err(|e| err(format!("{path}.objectReference.{k}"), e.to_string()))?;
        fields.insert(k.clone(), Value::String(rendered));
    }
    let object: ObjectReference = serde_json::from_value(Value::Object(fields))
        .map_err(|e| err(format!("{path}.objectReference"), e.to_string()))?;
    if object.name.is_empty() {
        return Err(err(
            format!("{path}.objectReference.name"),
            "is empty".into(),
        ));
    }
    Ok(Condition { condition, object })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deploy() -> Value {
        json!({
            "metadata": {"name": "web"},
            "spec": {"replicas": 2},
            "status": {
                "readyReplicas": 2,
                "health": "green",
                "conditions": [
                    {"type": "Available", "status": "True"},
                    {"type": "Progressing", "status": "False"}
                ],
                "finished": ["a", "b"]
            }
        })
    }

    #[test]
    fn kubernetes_jsonpath() {
        let o = deploy();
        let get = |p: &str| {
            let found = query(p, &o).unwrap();
            found
                .into_iter()
                .map(print_value)
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(get("$.status.readyReplicas"), "2");
        assert_eq!(get("$.status.health"), "green");
        assert_eq!(get("$.status.missing.deeper"), "");
        assert_eq!(get("$.status.finished[]"), "a b");
        assert_eq!(get("$.status.finished[*]"), "a b");
        assert_eq!(get("$.status.finished[-1]"), "b");
        assert_eq!(get("$.status.finished[0:1]"), "a");
        assert_eq!(get("$['metadata']['name']"), "web");
        assert_eq!(get("$..name"), "web");
        assert_eq!(get("$.metadata.app-name"), "");
        assert_eq!(
            get("$.status.conditions[?(@.type==\"Available\")].status"),
            "True"
        );
        assert_eq!(
            get("$.status.conditions[?(@.type != 'Available')].type"),
            "Progressing"
        );
        assert!(query("$.a[1", &o).is_err());
        assert!(query("$.a[?(@.x ==)]", &o).is_err());
        assert!(query("status", &o).is_err());
    }

    /// `anyOf`/`allOf` decode as Go's `[]Condition` with mapstructure's weak rules: one condition
    /// is a list of one, an empty map an empty list.
    #[test]
    fn a_single_condition_is_a_list_of_one() {
        let one = json!({"condition": "{{ true }}", "objectReference": {"apiVersion": "v1", "resource": "pods", "name": "p"}});
        let c = decode_conditions(
            "Wait",
            Some(&json!({"anyOf": {}, "allOf": one})),
            &json!({}),
        )
        .unwrap();
        assert!(!c.any);
        assert_eq!(c.list.len(), 1);
        assert_eq!(c.list[0].object.name, "p");
        let e = decode_conditions("Wait", Some(&json!({"anyOf": "x"})), &json!({})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Wait: argument `conditions.anyOf`: expected a list"
        );
    }

    #[test]
    fn wait_conditions_from_the_kanister_corpus() {
        let o = deploy();
        // elasticsearch-incremental
        let c = r#"{{ if  or (eq "{ $.status.health }" "green") (eq "{ $.status.health }" "yellow")}}true{{ else }}false{{ end }}"#;
        assert_eq!(evaluate_jsonpath_condition(c, &o).unwrap(), "true");
        let red = json!({"status": {"health": "red"}});
        assert_eq!(evaluate_jsonpath_condition(c, &red).unwrap(), "false");
        // k8ssandra
        let c = "{{ if \"{$.status.finishTime}\" }}\n  {{ if \"{$.status.finished[]}\" }}\n    true\n  {{ end }}\n{{ else }}\n  false\n{{ end }}";
        assert_eq!(evaluate_jsonpath_condition(c, &o).unwrap().trim(), "false");
        let done = json!({"status": {"finishTime": "2024", "finished": ["x"]}});
        assert_eq!(
            evaluate_jsonpath_condition(c, &done).unwrap().trim(),
            "true"
        );
        // postgresql-ha (a constant string: always true in Kanister too)
        let c = r#"{{ if "$.status.containerStatuses[].ready"}}true{{ else }}false{{ end }}"#;
        assert_eq!(evaluate_jsonpath_condition(c, &o).unwrap(), "true");
        // numeric comparison through the template
        let c = "{{ if eq \"{$.status.readyReplicas}\" \"{$.spec.replicas}\" }}true{{ end }}";
        assert_eq!(evaluate_jsonpath_condition(c, &o).unwrap(), "true");
        assert!(check_syntax(Flavor::JsonPath, "{{ if }}").is_err());
        assert!(check_syntax(Flavor::JsonPath, "{$.x[}").is_err());
    }

    #[test]
    fn wait_v2_conditions_render_against_the_object() {
        let o = deploy();
        // postgres start-stop blueprint, adapted to a Deployment condition
        let c = r#"{{ $available := false }}{{ range $condition := $.status.conditions }}{{ if and (eq .type "Available") (eq .status "True") }}{{ $available = true }}{{ end }}{{ end }}{{ $available }}"#;
        assert_eq!(evaluate_template_condition(c, &o).unwrap(), "true");
        let c = "{{ if eq .status.readyReplicas .spec.replicas }}true{{ else }}false{{ end }}";
        assert_eq!(evaluate_template_condition(c, &o).unwrap(), "true");
        let c = "{{ eq $.metadata.name \"web\" }}";
        assert_eq!(evaluate_template_condition(c, &o).unwrap(), "true");
        let c = "{{ eq (index $ \"metadata\").name \"web\" }}";
        assert_eq!(evaluate_template_condition(c, &o).unwrap(), "true");
        // a missing field is "not yet", reported as an error message
        assert!(evaluate_template_condition("{{ .status.nope.deeper }}", &o).is_err());
        assert!(check_syntax(Flavor::Template, "{{ if }}").is_err());
    }

    #[test]
    fn root_rewrite_leaves_variables_and_strings_alone() {
        assert_eq!(
            rewrite_root("{{ $.a }} $.b {{ $x := \"$.c\" }}{{ $ }}"),
            "{{ $.Object.a }} $.b {{ $x := \"$.c\" }}{{ $.Object }}"
        );
    }

    #[test]
    fn conditions_decoding_renders_object_references() {
        let params = json!({"Object": {"metadata": {"name": "web", "namespace": "prod"}}});
        let v = json!({"anyOf": [{"condition": "x", "objectReference": {
            "apiVersion": "v1", "group": "apps", "resource": "deployments",
            "name": "{{ .Object.metadata.name }}", "namespace": "{{ .Object.metadata.namespace }}"}}]});
        let c = decode_conditions("Wait", Some(&v), &params).unwrap();
        assert!(c.any);
        assert_eq!(c.list[0].object.name, "web");
        assert_eq!(c.list[0].object.namespace, "prod");
        let v = json!({"allOf": []});
        assert!(decode_conditions("Wait", Some(&v), &params).is_err());
        let v = json!({"oneOf": []});
        assert!(decode_conditions("Wait", Some(&v), &params).is_err());
        let v = json!({"allOf": [{"condition": "x", "objectReference": {"name": "{{ .Nope }}"}}]});
        let e = decode_conditions("Wait", Some(&v), &params)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("conditions.allOf[0].objectReference.name"),
            "{e}"
        );
    }
}
