//! Hostile templates: every limit of `limits.rs` is reached
//! with an error that names it, never a crash, on a webhook-sized stack.

use super::limits::*;
use super::*;
use serde_json::json;

/// Run `f` on a thread with a 2 MiB stack, the size of tokio's workers
/// (the webhook and the controller render there).
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .expect("no stack overflow or panic")
}

fn render(t: &str) -> Result<String, TemplateError> {
    let now = "2024-01-02T03:04:05Z".parse().unwrap();
    Template::parse(t).and_then(|x| x.render_at(&json!({"Options": {"a": "1"}}), now))
}

fn render_err(t: &str) -> String {
    match render(t) {
        Ok(out) => panic!(
            "{}: expected an error, got {} bytes",
            &t[..t.len().min(80)],
            out.len()
        ),
        Err(e) => e.to_string(),
    }
}

#[test]
fn hundred_thousand_nested_parentheses_are_a_parse_error() {
    let t = format!(
        "{}1{}",
        "{{ ".to_string() + &"(".repeat(100_000),
        ")".repeat(100_000) + " }}"
    );
    assert!(t.len() > 200_000);
    let err = on_small_stack(move || render(&t).unwrap_err());
    assert!(matches!(err, TemplateError::Parse { line: 1, .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("nests deeper than 100 levels"), "{msg}");
    assert!(msg.contains("flatten it"), "says how to fix: {msg}");
}

#[test]
fn nesting_up_to_the_limit_works_on_a_small_stack() {
    let parens = format!(
        "{{{{ {}1{} }}}}",
        "(".repeat(MAX_NESTING),
        ")".repeat(MAX_NESTING)
    );
    let out = on_small_stack(move || render(&parens));
    assert_eq!(out.unwrap(), "1");
    let blocks = format!(
        "{}x{}",
        "{{ if 1 }}".repeat(MAX_NESTING),
        "{{ end }}".repeat(MAX_NESTING)
    );
    let out = on_small_stack(move || render(&blocks));
    assert_eq!(out.unwrap(), "x");
    let too_deep = format!(
        "\n{}x{}",
        "{{ with 1 }}".repeat(MAX_NESTING + 1),
        "{{ end }}".repeat(MAX_NESTING + 1)
    );
    let err = on_small_stack(move || render(&too_deep).unwrap_err());
    assert!(matches!(err, TemplateError::Parse { line: 2, .. }), "{err}");
}

#[test]
fn deeply_nested_blocks_are_a_parse_error() {
    let t = format!(
        "{}x{}",
        "{{ range 1 }}".repeat(50_000),
        "{{ end }}".repeat(50_000)
    );
    let err = on_small_stack(move || render_err(&t));
    assert!(err.contains("nests deeper than 100 levels"), "{err}");
}

#[test]
fn recursive_template_calls_stop_at_the_depth_limit() {
    let err = on_small_stack(|| {
        render_err(r#"{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" . }}"#)
    });
    assert!(
        err.contains("exceeded maximum template depth (300)"),
        "{err}"
    );
    // The main template is "config": calling it recurses too.
    let err = on_small_stack(|| render_err(r#"x{{ template "config" }}"#));
    assert!(err.contains("exceeded maximum template depth"), "{err}");
    // Each call as deep as the parser allows, still within a 2 MiB stack.
    let body = format!(
        "{}{{{{ template \"r\" . }}}}{}",
        "{{ if 1 }}".repeat(MAX_NESTING - 1),
        "{{ end }}".repeat(MAX_NESTING - 1)
    );
    let t = format!("{{{{ define \"r\" }}}}{body}{{{{ end }}}}{{{{ template \"r\" . }}}}");
    let err = on_small_stack(move || render_err(&t));
    assert!(err.contains("exceeded maximum template depth"), "{err}");
}

#[test]
fn values_nested_by_a_loop_are_bounded() {
    let err =
        render_err("{{ $x := list }}{{ range 100000 }}{{ $x = list $x }}{{ end }}{{ len $x }}");
    assert!(err.contains("more than 200 deep"), "{err}");
    let ok = render("{{ $x := list }}{{ range 150 }}{{ $x = list $x }}{{ end }}{{ len $x }}");
    assert_eq!(ok.unwrap(), "1");
}

#[test]
fn repeat_indent_replace_are_bounded_before_allocating() {
    assert_eq!(render("{{ repeat 1000 \"ab\" | len }}").unwrap(), "2000");
    let err = render_err("{{ repeat 9000000000000000000 \"ab\" }}");
    assert!(
        err.contains("result of repeat") && err.contains("16 MiB"),
        "{err}"
    );
    let err = render_err("{{ indent 60000 (repeat 1000 \"\\n\") }}");
    assert!(err.contains("result of indent"), "{err}");
    let err = render_err("{{ nindent 60000 (repeat 1000 \"\\n\") }}");
    assert!(err.contains("result of nindent"), "{err}");
    let err = render_err("{{ replace \"a\" (repeat 1000 \"b\") (repeat 100000 \"a\") }}");
    assert!(err.contains("result of replace"), "{err}");
    let err = render_err("{{ replace \"\" (repeat 1000 \"b\") (repeat 100000 \"a\") }}");
    assert!(err.contains("result of replace"), "{err}");
}

#[test]
fn printf_widths_and_concatenation_are_bounded() {
    let t = format!(
        "{{{{ printf \"{}\"{} }}}}",
        "%65536d".repeat(300),
        " 1".repeat(300)
    );
    let err = render_err(&t);
    assert!(
        err.contains("error calling printf: the result would be longer than the 16 MiB"),
        "{err}"
    );
    let big = "{{ $s := repeat 10000000 \"a\" }}";
    for (f, limit) in [
        ("cat $s $s", "16 MiB"),
        ("join \"\" (list $s $s)", "16 MiB"),
        ("print $s $s", "16 MiB"),
        ("quote $s $s", "16 MiB"),
        ("toStrings (list $s $s)", "16 MiB"),
        ("splitList \"\" (repeat 2000000 \"a\")", "1048576 elements"),
        ("printf \"%s%s\" $s $s", "16 MiB"),
    ] {
        let err = render_err(&format!("{big}{{{{ {f} }}}}"));
        let func = f.split(' ').next().unwrap();
        assert!(err.contains(&format!("error calling {func}")), "{f}: {err}");
        assert!(err.contains(limit), "{f}: {err}");
    }
}

#[test]
fn shared_values_cannot_blow_up_printing() {
    let grow = "{{ $x := list 1 }}{{ range 60 }}{{ $x = list $x $x }}{{ end }}";
    for f in [
        "{{ $x }}",
        "{{ toJson $x }}",
        "{{ toPrettyJson $x }}",
        "{{ printf \"%v\" $x }}",
        "{{ toString $x }}",
    ] {
        let err = render_err(&format!("{grow}{f}"));
        assert!(err.contains("16 MiB"), "{f}: {err}");
    }
}

#[test]
fn total_output_and_total_work_are_bounded() {
    let err = render_err("{{ $s := repeat 10000000 \"a\" }}{{ $s }}{{ $s }}");
    assert!(
        err.contains("template output is larger than 16 MiB"),
        "{err}"
    );
    let err = render_err("{{ range 100 }}{{ $s := repeat 10000000 \"a\" }}{{ end }}");
    assert!(err.contains("produced more than 256 MiB"), "{err}");
    let err = render_err("{{ range 20000000 }}{{ end }}");
    assert!(err.contains("evaluation steps"), "{err}");
}
