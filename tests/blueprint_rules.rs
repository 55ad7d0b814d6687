//! Every rejection rule of the validator, with its message and location,
//! and the `validate` / `normalize` CLI contract (output lines, exit codes).

use std::process::Command;

use blueprint_operator::blueprint::{Report, Rule, normalize, validate};
use serde_json::{Value, json};

#[path = "support/manifests.rs"]
mod manifests;

fn bp(actions: Value) -> Value {
    json!({"apiVersion": "cr.kanister.io/v1alpha1", "kind": "Blueprint", "metadata": {"name": "bp"}, "actions": actions})
}

fn task(name: &str, cmd: &str) -> Value {
    json!({"func": "KubeTask", "name": name, "args": {"image": "busybox", "command": ["sh", "-c", cmd]}})
}

fn check(doc: Value) -> Report {
    validate(&normalize(&doc))
}

/// The single error of `report`, asserting its rule, path and message text.
fn only_error(report: &Report, rule: Rule, path: &str, text: &str) {
    assert_eq!(report.errors.len(), 1, "{:#?}", report.errors);
    let e = &report.errors[0];
    assert_eq!(e.rule, rule, "{e:?}");
    assert_eq!(e.path, path, "{e:?}");
    assert!(e.message.contains(text), "{:?} lacks {text:?}", e.message);
}

#[test]
fn valid_blueprint_with_defer_phase_passes() {
    let r = check(bp(json!({"backup": {
        "phases": [task("one", "echo {{ .Object.metadata.name }}"), task("two", "echo {{ .Phases.one.Output.v }}")],
        "deferPhase": task("cleanup", "echo {{ .Outcome.State }} {{ .Phases.two.Output.v }}"),
        "outputArtifacts": {"a": {"keyValue": {"k": "{{ .DeferPhase.Output.v }} {{ .Phases.one.Output.v }}"}}}
    }})));
    assert!(r.is_valid(), "{r}");
}

#[test]
fn defer_phase_list_of_two_is_rejected_with_the_fix() {
    let r = check(bp(
        json!({"backup": {"phases": [task("one", "x")], "deferPhase": [task("a", "x"), task("b", "y")]}}),
    ));
    only_error(
        &r,
        Rule::DeferPhaseList,
        "actions.backup.deferPhase",
        "exactly one phase, found a list of 2",
    );
    assert!(r.errors[0].message.contains("separate action"));
}

#[test]
fn one_element_defer_list_is_normalized_not_rejected() {
    let doc = bp(json!({"backup": {"phases": [task("one", "x")], "deferPhase": [task("a", "x")]}}));
    assert!(check(doc.clone()).is_valid());
    // Without normalization the validator explains what normalization does.
    let raw = validate(&doc);
    assert_eq!(raw.errors[0].rule, Rule::DeferPhaseList);
    assert!(raw.errors[0].message.contains("normalize"));
}

#[test]
fn unknown_function_names_the_close_match() {
    let r = check(bp(
        json!({"a": {"phases": [{"func": "kubetask", "name": "p", "args": {}}]}}),
    ));
    only_error(
        &r,
        Rule::UnknownFunction,
        "actions.a.phases[0].func",
        "did you mean KubeTask?",
    );
    assert_eq!(r.errors[0].location(), "a/p");
}

#[test]
fn missing_func_is_rejected() {
    let r = check(bp(json!({"a": {"phases": [{"name": "p", "args": {}}]}})));
    only_error(
        &r,
        Rule::UnknownFunction,
        "actions.a.phases[0].func",
        "func is missing",
    );
}

#[test]
fn missing_required_argument_is_located() {
    let r = check(bp(
        json!({"a": {"phases": [{"func": "KubeTask", "name": "p", "args": {"image": "x"}}]}}),
    ));
    only_error(
        &r,
        Rule::MissingArgument,
        "actions.a.phases[0].args.command",
        "required argument 'command' of KubeTask is missing",
    );
}

#[test]
fn unsupported_argument_lists_the_supported_ones() {
    let r = check(bp(
        json!({"a": {"phases": [{"func": "ScaleWorkload", "name": "p", "args": {"replicas": 1, "wait": true}}]}}),
    ));
    only_error(
        &r,
        Rule::UnsupportedArgument,
        "actions.a.phases[0].args.wait",
        "waitForReady",
    );
}

#[test]
fn argument_types_are_checked_with_weak_decoding() {
    let r = check(bp(
        json!({"a": {"phases": [{"func": "KubeTask", "name": "p", "args": {"image": "x", "command": {"sh": "-c"}}}]}}),
    ));
    only_error(
        &r,
        Rule::ArgumentType,
        "actions.a.phases[0].args.command",
        "must be a list of strings",
    );
    let r = check(bp(
        json!({"a": {"phases": [{"func": "ScaleWorkload", "name": "p", "args": {"replicas": "two"}}]}}),
    ));
    only_error(
        &r,
        Rule::ArgumentType,
        "actions.a.phases[0].args.replicas",
        "an integer",
    );
    // Numeric strings and templates stay acceptable, as Kanister's weak decoding allows.
    for replicas in [json!("2"), json!(2), json!("{{ len .StatefulSet.Pods }}")] {
        let r = check(bp(
            json!({"a": {"phases": [{"func": "ScaleWorkload", "name": "p", "args": {"replicas": replicas, "waitForReady": "false"}}]}}),
        ));
        assert!(r.is_valid(), "{r}");
    }
}

#[test]
fn duplicate_names_within_an_action_are_rejected_across_actions_allowed() {
    let r = check(bp(
        json!({"a": {"phases": [task("same", "x")], "deferPhase": task("same", "y")}}),
    ));
    only_error(
        &r,
        Rule::DuplicatePhaseName,
        "actions.a.deferPhase.name",
        "duplicate phase name 'same' (also used by phases[0])",
    );
    let r = check(bp(
        json!({"a": {"phases": [task("same", "x")]}, "b": {"phases": [task("same", "x")]}}),
    ));
    assert!(r.is_valid(), "{r}");
}

#[test]
fn template_syntax_errors_are_located() {
    let r = check(bp(
        json!({"a": {"phases": [task("p", "echo {{ .Object.metadata.name ")]}}),
    ));
    only_error(
        &r,
        Rule::TemplateSyntax,
        "actions.a.phases[0].args.command[2]",
        "template does not parse",
    );
    let r = check(bp(
        json!({"a": {"phases": [task("p", "{{ nosuchfunc 1 }}")]}}),
    ));
    only_error(
        &r,
        Rule::TemplateSyntax,
        "actions.a.phases[0].args.command[2]",
        "nosuchfunc",
    );
}

#[test]
fn phases_references_must_be_earlier_phases_of_the_same_action() {
    let r = check(bp(
        json!({"a": {"phases": [task("one", "{{ .Phases.two.Output.v }}"), task("two", "x")]}}),
    ));
    only_error(
        &r,
        Rule::TemplateReference,
        "actions.a.phases[0].args.command[2]",
        "'two' is not an earlier phase",
    );
    let r = check(bp(
        json!({"a": {"phases": [task("one", "x")]}, "b": {"phases": [task("p", "{{ .Phases.one.Output.v }}")]}}),
    ));
    only_error(
        &r,
        Rule::TemplateReference,
        "actions.b.phases[0].args.command[2]",
        "'one'",
    );
    let r = check(bp(
        json!({"a": {"phases": [task("one", "{{ .Phases.one.Output.v }}")]}}),
    ));
    only_error(
        &r,
        Rule::TemplateReference,
        "actions.a.phases[0].args.command[2]",
        "its own output",
    );
    // A phase's own objects (Secrets) are fine.
    let mut one = task("one", "{{ .Phases.one.Secrets.s.Data.k | toString }}");
    one["objects"] = json!({"s": {"kind": "Secret", "name": "creds"}});
    let r = check(bp(json!({"a": {"phases": [one]}})));
    assert!(r.is_valid(), "{r}");
}

#[test]
fn defer_phase_and_outcome_references_are_scoped() {
    let r = check(bp(
        json!({"a": {"phases": [task("one", "x")], "outputArtifacts": {"o": {"keyValue": {"k": "{{ .DeferPhase.Output.v }}"}}}}}),
    ));
    only_error(
        &r,
        Rule::TemplateReference,
        "actions.a.outputArtifacts.o.keyValue.k",
        "no deferPhase",
    );
    let r = check(bp(
        json!({"a": {"phases": [task("one", "{{ .Outcome.State }}")], "deferPhase": task("d", "x")}}),
    ));
    only_error(
        &r,
        Rule::TemplateReference,
        "actions.a.phases[0].args.command[2]",
        "only in the deferPhase",
    );
    let r = check(bp(
        json!({"a": {"phases": [task("one", "{{ .DeferPhase.Output.v }}")], "deferPhase": task("d", "x")}}),
    ));
    only_error(
        &r,
        Rule::TemplateReference,
        "actions.a.phases[0].args.command[2]",
        "use it in outputArtifacts",
    );
    let r = check(bp(
        json!({"a": {"phases": [task("one", "{{ .Bogus.x }}")]}}),
    ));
    only_error(
        &r,
        Rule::TemplateReference,
        "actions.a.phases[0].args.command[2]",
        "no template parameter .Bogus",
    );
}

#[test]
fn output_artifacts_must_resolve() {
    let r = check(bp(
        json!({"a": {"phases": [task("one", "x")], "outputArtifacts": {"o": {"keyValue": {"k": "{{ .Phases.missing.Output.v }}"}, "kopiaSnapshot": "{{ .Phases.one.Output.s }}"}}}}),
    ));
    only_error(
        &r,
        Rule::TemplateReference,
        "actions.a.outputArtifacts.o.keyValue.k",
        "'missing'",
    );
}

#[test]
fn all_errors_are_reported_at_once() {
    let r = check(bp(json!({
        "a": {"phases": [{"func": "Nope", "name": "x"}, {"func": "KubeTask", "name": "y", "args": {"image": 1, "bad": 2}}],
              "deferPhase": [task("d1", "x"), task("d2", "x")]},
        "b": "not an action"
    })));
    let rules: Vec<Rule> = r.errors.iter().map(|e| e.rule).collect();
    for expected in [
        Rule::UnknownFunction,
        Rule::UnsupportedArgument,
        Rule::MissingArgument,
        Rule::DeferPhaseList,
        Rule::Structure,
    ] {
        assert!(
            rules.contains(&expected),
            "{expected:?} missing from {rules:?}"
        );
    }
}

#[test]
fn scale_to_zero_without_defer_is_a_warning_not_an_error() {
    let doc = bp(json!({"restore": {"phases": [
        {"func": "ScaleWorkload", "name": "down", "args": {"replicas": 0}}, task("restore", "x")]}}));
    let r = check(doc);
    assert!(r.is_valid());
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings[0].message.contains("add a deferPhase"));
}

/// Values Kanister's decoding admits that only fail when the phase runs: admitted as Kanister
/// admits them, each with a warning at its own path saying what will happen and what to write.
#[test]
fn values_that_fail_only_at_run_time_are_admitted_with_located_warnings() {
    let r = check(bp(json!({"backup": {"phases": [
        {"func": "KubeTask", "name": "dump", "args": {
            "image": "busybox", "command": "pg_dumpall -U postgres", "podLabels": {"backup": true}}},
        {"func": "Wait", "name": "ready", "args": {"timeout": "10", "conditions": {}}},
        {"func": "ScaleWorkload", "name": "up", "args": {"replicas": -1, "kind": "DaemonSet"}},
        {"func": "KubeExec", "name": "run", "args": {"namespace": "", "pod": "p", "command": ["true"]}}
    ]}})));
    assert!(r.is_valid(), "{r}");
    let paths: Vec<&str> = r.warnings.iter().map(|w| w.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "actions.backup.phases[0].args.command",
            "actions.backup.phases[0].args.podLabels.backup",
            "actions.backup.phases[1].args.timeout",
            "actions.backup.phases[2].args.replicas",
            "actions.backup.phases[2].args.kind",
            "actions.backup.phases[3].args.namespace",
        ],
        "{:#?}",
        r.warnings
    );
    for (w, text) in r.warnings.iter().zip([
        "[sh, -c,",
        "quote it (\"true\")",
        "write e.g. 30s",
        "use 0 or more",
        "use Deployment or StatefulSet",
        "give it a value",
    ]) {
        assert!(w.message.contains(text), "{w:?} lacks {text:?}");
    }
    // A template is rendered first: nothing to say about it before the run.
    let r = check(bp(json!({"backup": {"phases": [
        {"func": "Wait", "name": "w", "args": {"timeout": "{{ .Options.t }}", "conditions": {}}}]}})));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

// ------------------------------------------------------------------ CLI

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// A directory of the test's files, removed when dropped.
struct TempDir(std::path::PathBuf);

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir(tag: &str) -> TempDir {
    let d = std::env::temp_dir().join(format!("bpo-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

const GOOD: &str = "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\nmetadata: {name: good}\nactions:\n  backup:\n    phases:\n    - func: KubeTask\n      args: {image: busybox, command: [echo]}\n    deferPhase:\n    - func: KubeTask\n      args: {image: busybox, command: [echo]}\n";
const BAD: &str = "kind: ConfigMap\nmetadata: {name: cm}\n---\nkind: Blueprint\nmetadata: {name: bad}\nactions:\n  backup:\n    phases:\n    - func: KubeTask\n      name: p\n      args: {image: busybox}\n";

#[test]
fn cli_validate_exit_codes_and_lines() {
    let dir = tempdir("validate");
    let good = write(&dir, "good.yaml", GOOD);
    let bad = write(&dir, "bad.yaml", BAD);
    let broken = write(&dir, "broken.yaml", "kind: Blueprint\nactions: [unclosed\n");

    let out = bin().args(["validate", &good]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let out = bin().args(["validate", &bad]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("{bad}: bad/backup/p: error: actions.backup.phases[0].args.command: required argument 'command' of KubeTask is missing")), "{stdout}");
    assert!(
        stdout.contains("1 blueprints checked"),
        "ConfigMap must be skipped: {stdout}"
    );

    // A value that only fails at run time: valid, with a warning; `--strict` fails on it.
    let late_dir = tempdir("validate-late");
    let late = write(
        &late_dir,
        "late.yaml",
        &GOOD.replace(
            "command: [echo]}\n    deferPhase",
            "command: \"echo hi\"}\n    deferPhase",
        ),
    );
    let out = bin().args(["validate", &late]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("warning: actions.backup.phases[0].args.command: command is one string"),
        "{stdout}"
    );
    let out = bin()
        .args(["validate", "--strict", &late])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let out = bin().args(["validate", &broken]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("not valid YAML or JSON"));

    let out = bin()
        .args(["validate", "/nonexistent/file.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));

    // A directory is searched; JSON output is machine-readable.
    let out = bin()
        .args(["validate", "--output", "json", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "broken.yaml makes it a read error"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["blueprints"].as_array().unwrap().len(), 2);
    assert_eq!(v["readErrors"].as_array().unwrap().len(), 1);
    let bad_entry = manifests::find(&v["blueprints"], "name", "bad").unwrap();
    assert_eq!(bad_entry["valid"], false);
    assert_eq!(bad_entry["errors"][0]["rule"], "missingArgument");

    let out = bin().arg("validate").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "usage error");
}

#[test]
fn cli_normalize_prints_yaml_and_json() {
    let dir = tempdir("normalize");
    let good = write(&dir, "good.yaml", GOOD);
    let out = bin().args(["normalize", &good]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let docs = blueprint_operator::documents::parse(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(docs[0]["actions"]["backup"]["phases"][0]["name"], "phase0");
    assert_eq!(
        docs[0]["actions"]["backup"]["deferPhase"]["name"],
        "deferPhase"
    );

    let out = bin()
        .args(["normalize", "-o", "json", &good])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["actions"]["backup"]["deferPhase"].is_object());

    let out = bin()
        .args(["normalize", "/nonexistent.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn functions_this_executor_does_not_run_are_warned_about() {
    let r = check(bp(
        json!({"a": {"phases": [{"func": "BackupDataUsingKopiaServer", "name": "p", "args": {
        "container": "c", "includePath": "/d", "namespace": "n", "pod": "p"}}]}}),
    ));
    assert!(r.is_valid(), "{r}");
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert_eq!(r.warnings[0].path, "actions.a.phases[0].func");
    assert!(r.warnings[0].message.contains(
        "BackupDataUsingKopiaServer is a Kanister function that blueprint-operator's executor does not run"
    ));
    let r = check(bp(json!({"a": {"phases": [task("p", "x")]}})));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

/// Every message the validator produces over a spread of bad input reads as text: no Rust
/// Debug of tokens (`Some(Comma)`), options or structs.
#[test]
fn messages_over_bad_input_contain_no_rust_debug_dumps() {
    let templates = [
        "{{ a , b }}",
        "{{ .A , }}",
        "{{ ( }}",
        "{{ ) }}",
        "{{ | }}",
        "{{ .A | }}",
        "{{ if }}",
        "{{ end }}",
        "{{ else }}",
        "{{ range }}",
        "{{ $x := }}",
        "{{ := }}",
        "{{ = }}",
        "{{ 1 . }}",
        "{{ \"s\".A }}",
        "{{ true.A }}",
        "{{ nil }}",
        "{{ 3 4 }}",
        "{{ \"text\" 1 }}",
        "{{ .A.B 1",
        "{{ printf \"%d\" 1 2 ,}}",
        "{{ index .A 1 }}}}{{",
        "{{ 0x }}",
        "{{ 'ab' }}",
        "{{ @ }}",
        "{{ `raw",
        "{{ \"open",
        "{{ $undefined }}",
        "{{ noSuchFunc 1 }}",
        "{{ .Phases.later.Output.x }}",
        "{{ .Nope }}",
        "{{ (1).A }}",
        "{{ with $x := 1 }}{{ end }}{{ $x }}",
    ];
    let mut messages = Vec::new();
    for t in templates {
        // Some only fail when rendered; the rest must explain themselves.
        let r = check(bp(json!({"backup": {"phases": [task("one", t)]}})));
        messages.extend(
            r.errors
                .iter()
                .chain(&r.warnings)
                .map(|p| p.message.clone()),
        );
    }
    // Arguments of the wrong shape, unknown functions, bad deferPhase.
    for doc in [
        bp(
            json!({"backup": {"phases": [{"func": "KubeTask", "args": {"image": 1, "command": {"a": 1}}}]}}),
        ),
        bp(json!({"backup": {"phases": [{"func": "ScaleWorkload", "args": {"replicas": [1]}}]}})),
        bp(json!({"backup": {"phases": [{"func": "KubeTsk", "args": {}}]}})),
        bp(json!({"backup": {"phases": [{"args": {}}], "deferPhase": [{}, {}]}})),
        bp(json!({"backup": {"phases": "x"}})),
        bp(json!({"backup": {"phases": [{"func": "KubeTask", "args": "x"}]}})),
        json!({"kind": "Blueprint", "actions": []}),
    ] {
        let r = check(doc);
        messages.extend(
            r.errors
                .iter()
                .chain(&r.warnings)
                .map(|p| p.message.clone()),
        );
    }
    assert!(messages.len() > 25, "{messages:#?}");
    for m in &messages {
        for dump in [
            "Some(",
            "None",
            "Tok::",
            "Comma",
            "RightDelim",
            "LeftDelim",
            "LParen",
            "RParen",
            "Ident(",
            "Field(",
            "Str(",
            "Int(",
            "Bool(",
            "Number(",
            "{ ",
            "Object {",
            "Array [",
        ] {
            assert!(!m.contains(dump), "Debug dump {dump:?} in message: {m}");
        }
    }
    // Go's wording for the commonest slip.
    let r = check(bp(
        json!({"backup": {"phases": [task("one", "{{ .A , .B }}")]}}),
    ));
    assert!(
        r.errors
            .iter()
            .any(|e| e.message.contains(r#"unexpected "," in operand"#)),
        "{r}"
    );
}

/// Kanister decodes arguments with mapstructure's WeaklyTypedInput: a single value where a list
/// is expected is a one-element list.
#[test]
fn a_single_string_where_a_list_is_expected_is_a_one_element_list() {
    for command in [json!("echo hi"), json!("{{ .Options.cmd }}"), json!(7)] {
        let r = check(bp(json!({"a": {"phases": [
            {"func": "KubeTask", "name": "p", "args": {"image": "x", "command": command}},
            {"func": "KubeExec", "name": "q", "args": {"namespace": "n", "pod": "p", "command": "date"}}
        ]}})));
        assert!(r.is_valid(), "{r}");
    }
    let r = check(bp(json!({"a": {"phases": [
        {"func": "KubeTask", "name": "p", "args": {"image": "x", "command": [["nested"]]}}
    ]}})));
    only_error(
        &r,
        Rule::ArgumentType,
        "actions.a.phases[0].args.command",
        "list of strings",
    );
}

/// Booleans as Go's strconv.ParseBool reads them (mapstructure's weak decoding), plus numbers
/// and the empty string; integers as ScaleWorkload reads them.
#[test]
fn bool_and_int_spellings_kanister_accepts() {
    for b in [
        json!("true"),
        json!("True"),
        json!("TRUE"),
        json!("t"),
        json!("T"),
        json!("1"),
        json!("false"),
        json!("False"),
        json!("FALSE"),
        json!("f"),
        json!("F"),
        json!("0"),
        json!(""),
        json!(0),
        json!(1),
        json!(true),
    ] {
        let r = check(bp(
            json!({"a": {"phases": [{"func": "ScaleWorkload", "name": "p",
            "args": {"replicas": 1, "waitForReady": b.clone()}}]}}),
        ));
        assert!(r.is_valid(), "waitForReady {b}: {r}");
    }
    for b in [json!("yes"), json!("on"), json!([true]), json!({"a": 1})] {
        let r = check(bp(
            json!({"a": {"phases": [{"func": "ScaleWorkload", "name": "p",
            "args": {"replicas": 1, "waitForReady": b.clone()}}]}}),
        ));
        only_error(
            &r,
            Rule::ArgumentType,
            "actions.a.phases[0].args.waitForReady",
            "ParseBool",
        );
    }
    // ScaleWorkload reads replicas itself: an integer, or a string strconv.Atoi reads.
    for n in [json!(2.0), json!("3"), json!("+3")] {
        let r = check(bp(
            json!({"a": {"phases": [{"func": "ScaleWorkload", "name": "p",
            "args": {"replicas": n.clone()}}]}}),
        ));
        assert!(r.is_valid(), "replicas {n}: {r}");
    }
    for n in [json!(2.5), json!(true), json!(" 3 ")] {
        let r = check(bp(
            json!({"a": {"phases": [{"func": "ScaleWorkload", "name": "p",
            "args": {"replicas": n.clone()}}]}}),
        ));
        only_error(
            &r,
            Rule::ArgumentType,
            "actions.a.phases[0].args.replicas",
            "an integer",
        );
    }
}

/// mapstructure's other weak conversions: an empty map is an empty list, a list of maps is one
/// merged map (an empty list an empty map), numbers and booleans are strings, inside lists and
/// maps too; what it refuses is located inside the argument.
#[test]
fn weak_decoding_of_lists_and_maps_as_kanister() {
    let r = check(bp(json!({"a": {"phases": [
        {"func": "MultiContainerRun", "name": "p", "args": {
            "backgroundImage": "b", "backgroundCommand": ["sleep", 60], "outputImage": "o",
            "outputCommand": "date", "initCommand": {}, "namespace": 7,
            "podLabels": [{"app": "db"}, {"tier": 1}], "podAnnotations": [], "podOverride": []}},
        {"func": "CreateCSISnapshot", "name": "q", "args": {
            "pvc": "data", "namespace": "ns", "snapshotClass": "csi", "labels": {"keep": true}}}
    ]}})));
    assert!(r.is_valid(), "{r}");
    let r = check(bp(json!({"a": {"phases": [
        {"func": "KubeTask", "name": "p", "args": {
            "image": "x", "command": ["sh"], "podLabels": [{"app": ["db"]}]}}
    ]}})));
    only_error(
        &r,
        Rule::ArgumentType,
        "actions.a.phases[0].args.podLabels",
        "must be a map of strings (or a list of such maps, merged), found a list (podLabels[0].app: expected a string, got a list)",
    );
    // Wait's conditions is a Go struct: a list is not read as one.
    let r = check(bp(json!({"a": {"phases": [
        {"func": "Wait", "name": "p", "args": {"timeout": "1m", "conditions": []}}
    ]}})));
    only_error(
        &r,
        Rule::ArgumentType,
        "actions.a.phases[0].args.conditions",
        "must be a map, found a list",
    );
}

/// The *UsingKopiaServer functions of released Kanister are admitted with their arguments;
/// `validate` warns that this executor does not run them, and why.
#[test]
fn kopia_server_functions_of_released_kanister_are_admitted_with_a_warning() {
    let r = check(bp(json!({
        "backup": {"phases": [{"func": "BackupDataUsingKopiaServer", "name": "b", "args": {
            "namespace": "ns", "pod": "p", "container": "kanister-tools", "includePath": "/data",
            "snapshotTags": "a,b", "repositoryServerUserHostname": "host"}}]},
        "restore": {"inputArtifactNames": ["backupIdentifier"], "phases": [{"func": "RestoreDataUsingKopiaServer", "name": "r", "args": {
            "namespace": "ns", "image": "ghcr.io/kanisterio/kanister-tools:0.116.0",
            "backupIdentifier": "{{ .ArtifactsIn.backupIdentifier.KeyValue.id }}",
            "restorePath": "/data", "pod": "p", "podLabels": {"a": "b"}}}]},
        "delete": {"phases": [{"func": "DeleteDataUsingKopiaServer", "name": "d", "args": {
            "namespace": "ns", "backupID": "id", "image": "i",
            "podAnnotations": {"a": "b"}}}]}
    })));
    assert!(r.is_valid(), "{r}");
    assert_eq!(r.warnings.len(), 3, "{:?}", r.warnings);
    for w in &r.warnings {
        assert!(w.message.contains("executor does not run"), "{w}");
        assert!(w.message.contains("Kopia RepositoryServer"), "{w}");
    }
    // Their arguments are checked like any other function's.
    let r = check(bp(
        json!({"backup": {"phases": [{"func": "DeleteDataUsingKopiaServer",
        "name": "d", "args": {"namespace": "ns", "image": "i", "backupArtifactPrefix": "x"}}]}}),
    ));
    assert_eq!(r.errors.len(), 2, "{r}");
    assert!(
        r.errors
            .iter()
            .any(|e| e.rule == Rule::MissingArgument && e.path.ends_with("args.backupID")),
        "{r}"
    );
    assert!(
        r.errors.iter().any(|e| e.rule == Rule::UnsupportedArgument),
        "{r}"
    );
}

/// CopyVolumeDataUsingKopiaServer, BackupDataAllUsingKopiaServer and
/// BackupDataStatsUsingKopiaServer were proposed for Kanister and never merged: no release
/// registers them, so they are unknown functions, and the error says so.
#[test]
fn never_released_kopia_server_functions_are_unknown() {
    for (func, pr) in [
        ("CopyVolumeDataUsingKopiaServer", "#2143"),
        ("BackupDataAllUsingKopiaServer", "#1968"),
        ("BackupDataStatsUsingKopiaServer", "#1972"),
    ] {
        let r = check(bp(json!({"a": {"phases": [
            {"func": func, "name": "p", "args": {"namespace": "ns"}}
        ]}})));
        only_error(
            &r,
            Rule::UnknownFunction,
            "actions.a.phases[0].func",
            &format!(
                "unknown function '{func}' (proposed in kanisterio/kanister{pr} but never merged: no Kanister release registers it)"
            ),
        );
    }
}

/// `.RepositoryServer` (released Kanister's template parameter) is admitted with a warning; a
/// misspelling of it is still an error.
#[test]
fn repository_server_template_parameter_is_admitted_with_a_warning() {
    let r = check(bp(
        json!({"a": {"phases": [task("p", "echo {{ .RepositoryServer.Address }} {{ .RepositoryServer.Username }}")]}}),
    ));
    assert!(r.is_valid(), "{r}");
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(
        r.warnings[0]
            .message
            .contains(".RepositoryServer is released Kanister's Kopia repository server"),
        "{}",
        r.warnings[0]
    );
    let r = check(bp(
        json!({"a": {"phases": [task("p", "echo {{ .RepositoryServers.Address }}")]}}),
    ));
    assert!(!r.is_valid(), "{r}");
}

#[test]
fn templates_using_the_whole_sprig_library_and_define_are_accepted() {
    // Kanister accepts every sprig v2.22.0 function and
    // define/template/block; so does the validator.
    let cmd = r#"{{ define "p" }}{{ . | trunc 3 }}{{ end }}{{ template "p" (regexReplaceAll "-[0-9]+$" (index .StatefulSet.Pods 0) "") }} {{ until 3 | join "," }} {{ uuidv4 | len }} {{ merge (dict "a" 1) (dict "b" 2) | keys | sortAlpha }} {{ semverCompare ">=1.0" "1.2.0" }} {{ (semver "1.2.3").Minor }} {{ snakecase .StatefulSet.Name }} {{ encryptAES "key" "text" | decryptAES "key" }} {{ (genCA "ca" 365).Cert | b64enc }}"#;
    let r = check(bp(json!({"backup": {"phases": [task("dump", cmd)]}})));
    assert!(r.is_valid(), "{r}");
}

/// Each template Kanister fails to render once the phase runs is refused (or warned about
/// when an ActionSet may still supply what it reads), located at its argument.
#[test]
fn field_paths_are_checked_against_kanisters_parameter_types() {
    let action = |kind: &str, cmd: &str| json!({"a": {"kind": kind, "phases": [task("p", cmd)]}});
    let at = "actions.a.phases[0].args.command[2]";
    for (cmd, text) in [
        (
            "{{ .StatefulSet.Nmespace }}",
            "param.StatefulSetParams has no field Nmespace (did you mean Namespace?)",
        ),
        (
            "{{ .Profile.Locaton.Bucket }}",
            "param.Profile has no field Locaton (did you mean Location?)",
        ),
        (
            "{{ .Namespace.Nme }}",
            "param.NamespaceParams has no field Nme (did you mean Name?)",
        ),
        (
            "{{ .Deployment.Name }}",
            "declares kind: StatefulSet, so .Deployment is nil",
        ),
        (
            "{{ .Phases.p.Secrets.creds.Data.k }}",
            "phase p's objects have no Secret creds",
        ),
        (
            "{{ .Tme }}",
            "there is no template parameter .Tme (did you mean Time?)",
        ),
    ] {
        let r = check(bp(action("StatefulSet", cmd)));
        only_error(&r, Rule::TemplateReference, at, text);
        assert_eq!(r.errors[0].location(), "a/p");
    }
    // Paths an ActionSet may satisfy are admitted with a warning.
    for (kind, cmd, text) in [
        (
            "StatefulSet",
            "{{ .ArtifactsIn.foo.KeyValue.x }}",
            "foo is not in the action's inputArtifactNames",
        ),
        (
            "",
            "{{ .Deployment.Name }}",
            "declares no kind, so .Deployment is nil",
        ),
        // Go skips a branch whose condition is the nil parameter.
        (
            "StatefulSet",
            "{{ if .Deployment }}{{ .Deployment.Name }}{{ end }}",
            "the template tests .Deployment first",
        ),
    ] {
        let r = check(bp(action(kind, cmd)));
        assert!(r.is_valid(), "{r}");
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        assert_eq!(r.warnings[0].path, at);
        assert!(r.warnings[0].message.contains(text), "{:?}", r.warnings[0]);
    }
    // Declared names, objects and untyped JSON pass.
    let mut p = task(
        "p",
        "{{ .ArtifactsIn.foo.KeyValue.x }} {{ .Phases.p.Secrets.creds.Data.k }} {{ .Object.spec.x.y }} {{ .StatefulSet.Pods }}",
    );
    p["objects"] = json!({"creds": {"kind": "Secret", "name": "c"}});
    let r = check(bp(
        json!({"a": {"kind": "StatefulSet", "inputArtifactNames": ["foo"], "phases": [p]}}),
    ));
    assert!(r.is_valid(), "{r}");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn unknown_functions_and_arguments_suggest_the_close_name() {
    let r = check(bp(
        json!({"a": {"phases": [{"func": "KubeTsk", "name": "p", "args": {"image": "x", "command": ["a"]}}]}}),
    ));
    only_error(
        &r,
        Rule::UnknownFunction,
        "actions.a.phases[0].func",
        "unknown function 'KubeTsk': did you mean KubeTask?",
    );
    // Only the suggestion, not all the functions.
    assert!(
        !r.errors[0].message.contains("ScaleWorkload"),
        "{}",
        r.errors[0]
    );
    let r = check(bp(
        json!({"a": {"phases": [{"func": "Nothing", "name": "p", "args": {}}]}}),
    ));
    assert!(
        r.errors[0].message.contains("Kanister functions are "),
        "{r}"
    );
    let r = check(bp(
        json!({"a": {"phases": [{"func": "KubeTask", "name": "p", "args": {"image": "x", "command": ["a"], "namespce": "n"}}]}}),
    ));
    only_error(
        &r,
        Rule::UnsupportedArgument,
        "actions.a.phases[0].args.namespce",
        "not supported by KubeTask (did you mean namespace?): it takes",
    );
}
