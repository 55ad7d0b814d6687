//! Argument values Kanister's decoding admits that only fail, or do something other than meant,
//! when the phase runs. Kanister's webhook and `kanctl validate` accept them, and so does this
//! validator (a Blueprint valid for Kanister stays valid here), with a warning that says what
//! will happen and how to write it instead.

use serde_json::Value;

use crate::functions::kube_ops::parse_operation;
use crate::functions::registry::{ArgType, Function};
use crate::functions::scale_workload::parse_kind;
use crate::functions::weak;
use crate::pods::quantity::parse_quantity;

/// One warning: where inside the argument (`""`, `".key"`, `"[1]"`) and what will happen.
#[derive(Debug, PartialEq, Eq)]
pub struct LateFailure {
    pub at: String,
    pub message: String,
}

impl LateFailure {
    fn new(message: String) -> Self {
        LateFailure {
            at: String::new(),
            message,
        }
    }
}

/// Warnings for argument `name` of `func` with a `value` that already decodes as its type.
pub fn check(func: &Function, name: &str, ty: ArgType, value: &Value) -> Vec<LateFailure> {
    let mut found = Vec::new();
    if let Some(text) = value.as_str().filter(|s| !s.contains("{{")) {
        found.extend(literal_string(func, name, ty, text).map(LateFailure::new));
    }
    match (ty, value) {
        (ArgType::StrList, Value::String(s))
            if is_command(name) && has_spaces_outside_templates(s) =>
        {
            found.push(LateFailure::new(format!(
                "{name} is one string, which Kanister runs as a single program named {:?} (executable file not found); write a list, e.g. [sh, -c, {:?}]",
                shorten(s),
                shorten(s)
            )));
        }
        (ArgType::Str, Value::Bool(b)) => found.push(LateFailure::new(boolean_as_string(*b))),
        (ArgType::StrList, Value::Array(items)) => {
            found.extend(items.iter().enumerate().filter_map(|(i, v)| {
                let b = v.as_bool()?;
                Some(LateFailure {
                    at: format!("[{i}]"),
                    message: boolean_as_string(b),
                })
            }))
        }
        (ArgType::StrMap, _) => {
            if let Ok(entries) = weak::map_entries(value) {
                found.extend(entries.into_iter().filter_map(|e| {
                    let b = e.value.as_bool()?;
                    Some(LateFailure {
                        at: e.at,
                        message: boolean_as_string(b),
                    })
                }));
            }
        }
        (ArgType::Int, _) if func.name == "ScaleWorkload" && name == "replicas" => {
            if let Ok(n) = weak::int(value)
                && n < 0
            {
                found.push(LateFailure::new(format!(
                    "replicas {n} is negative: Kanister admits it and the API server refuses the scale when the phase runs; use 0 or more"
                )));
            }
        }
        _ => {}
    }
    found
}

/// Checks of a plain (template-free) string that Kanister only parses when the phase runs.
fn literal_string(func: &Function, name: &str, ty: ArgType, text: &str) -> Option<String> {
    let required = func.required.iter().any(|(r, _)| *r == name);
    if required && ty == ArgType::Str && text.is_empty() {
        return Some(format!(
            "required argument '{name}' of {} is empty: Kanister admits it and the phase fails when it runs; give it a value",
            func.name
        ));
    }
    match (func.name, name) {
        ("Wait" | "WaitV2", "timeout") => crate::duration::parse(text).err().map(|e| {
            format!("timeout {text:?} is not a Go duration ({e}): Kanister admits it and {} fails when it starts; write e.g. 30s, 10m or 1h30m", func.name)
        }),
        ("MultiContainerRun", "sharedVolumeSizeLimit") | ("RestoreCSISnapshot", "restoreSize") => {
            parse_quantity(text).err().map(|e| {
                format!("{name} {text:?} is not a Kubernetes quantity ({e}): Kanister admits it and the phase fails when it runs; write e.g. 1Gi or 500Mi")
            })
        }
        ("ScaleWorkload", "kind") => parse_kind(text).err().map(|_| {
            format!("kind {text:?} is not a workload ScaleWorkload scales: Kanister admits it and the phase fails when it runs; use Deployment or StatefulSet")
        }),
        ("KubeOps", "operation") => parse_operation(text).err().map(|_| {
            format!("operation {text:?} is not a KubeOps operation: Kanister admits it and the phase fails when it runs; use create, patch or delete")
        }),
        _ => None,
    }
}

fn boolean_as_string(b: bool) -> String {
    format!(
        "Kanister decodes the boolean {b} as the string \"{}\" here; quote it (\"{b}\") if you meant the word",
        if b { 1 } else { 0 }
    )
}

/// Arguments that are a program and its arguments, run without a shell.
fn is_command(name: &str) -> bool {
    name == "command" || name.ends_with("Command")
}

/// Whether the text, each `{{ ... }}` taken as one word, has whitespace: one string lifted into
/// a one-element command list is a program name, and a name with spaces is almost never one.
fn has_spaces_outside_templates(s: &str) -> bool {
    let mut words = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        words.push_str(&rest[..i]);
        words.push('X');
        rest = rest[i..].find("}}").map_or("", |j| &rest[i + j + 2..]);
    }
    words.push_str(rest);
    words.trim().contains(char::is_whitespace)
}

fn shorten(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::functions::registry;

    /// The warnings for one argument, as `at: message`.
    fn warnings(func: &str, arg: &str, value: Value) -> Vec<String> {
        let f = registry::function(func).unwrap();
        let ty = f.arg(arg).unwrap();
        check(f, arg, ty, &value)
            .into_iter()
            .map(|w| format!("{}: {}", w.at, w.message))
            .collect()
    }

    #[test]
    fn a_command_written_as_one_string_with_spaces_is_one_program() {
        let w = warnings(
            "KubeTask",
            "command",
            json!("pg_dumpall -U postgres | gzip"),
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("single program named \"pg_dumpall -U postgres | gzip\""),
            "{w:?}"
        );
        assert!(w[0].contains("[sh, -c,"), "{w:?}");
        assert_eq!(
            warnings("MultiContainerRun", "outputCommand", json!("cat /x/y")).len(),
            1
        );
        assert_eq!(
            warnings("KubeExec", "command", json!("ls {{ .Options.dir }}")).len(),
            1
        );
        // One word, a whole template, or a list: what the user meant.
        assert!(warnings("KubeTask", "command", json!("date")).is_empty());
        assert!(warnings("KubeTask", "command", json!("{{ .Options.cmd }}")).is_empty());
        assert!(warnings("KubeTask", "command", json!(["sh", "-c", "echo hi"])).is_empty());
    }

    #[test]
    fn a_boolean_where_a_string_goes_becomes_1_or_0() {
        let w = warnings(
            "KubeTask",
            "podLabels",
            json!({"backup": true, "app": "db"}),
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with(".backup: "), "{w:?}");
        assert!(w[0].contains("the string \"1\""), "{w:?}");
        let w = warnings(
            "KubeTask",
            "podAnnotations",
            json!([{"a": "x"}, {"b": false}]),
        );
        assert!(
            w[0].starts_with("[1].b: ") && w[0].contains("\"0\""),
            "{w:?}"
        );
        assert_eq!(warnings("KubeExec", "container", json!(true)).len(), 1);
        assert_eq!(warnings("KubeTask", "command", json!(["echo", false])), vec![
            "[1]: Kanister decodes the boolean false as the string \"0\" here; quote it (\"false\") if you meant the word".to_string()
        ]);
        assert!(warnings("KubeTask", "podLabels", json!({"backup": "true"})).is_empty());
    }

    #[test]
    fn an_empty_required_string_fails_when_the_phase_runs() {
        let w = warnings("KubeExec", "pod", json!(""));
        assert!(
            w[0].contains("required argument 'pod' of KubeExec is empty"),
            "{w:?}"
        );
        assert!(
            warnings("KubeExec", "container", json!("")).is_empty(),
            "optional"
        );
        assert!(warnings("KubeExec", "pod", json!("{{ index .Deployment.Pods 0 }}")).is_empty());
    }

    #[test]
    fn values_parsed_only_at_run_time_are_checked_here() {
        let w = warnings("Wait", "timeout", json!("10"));
        assert!(
            w[0].contains("timeout \"10\" is not a Go duration") && w[0].contains("30s"),
            "{w:?}"
        );
        assert!(warnings("WaitV2", "timeout", json!("1h30m")).is_empty());
        assert!(warnings("Wait", "timeout", json!("{{ .Options.t }}")).is_empty());
        let w = warnings("RestoreCSISnapshot", "restoreSize", json!("ten gigs"));
        assert!(w[0].contains("not a Kubernetes quantity"), "{w:?}");
        assert!(warnings("RestoreCSISnapshot", "restoreSize", json!("10Gi")).is_empty());
        assert_eq!(
            warnings("MultiContainerRun", "sharedVolumeSizeLimit", json!("1GB!")).len(),
            1
        );
        let w = warnings("ScaleWorkload", "kind", json!("DaemonSet"));
        assert!(w[0].contains("use Deployment or StatefulSet"), "{w:?}");
        assert!(warnings("ScaleWorkload", "kind", json!("statefulset")).is_empty());
        let w = warnings("KubeOps", "operation", json!("apply"));
        assert!(w[0].contains("use create, patch or delete"), "{w:?}");
        assert!(warnings("KubeOps", "operation", json!("Create")).is_empty());
    }

    #[test]
    fn negative_replicas_are_refused_by_the_api_server_later() {
        let w = warnings("ScaleWorkload", "replicas", json!(-1));
        assert!(w[0].contains("replicas -1 is negative"), "{w:?}");
        assert_eq!(warnings("ScaleWorkload", "replicas", json!("-2")).len(), 1);
        assert!(warnings("ScaleWorkload", "replicas", json!(0)).is_empty());
        assert!(warnings("ScaleWorkload", "replicas", json!("{{ .Options.n }}")).is_empty());
    }
}
