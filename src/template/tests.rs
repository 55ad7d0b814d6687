//! Unit tests for the Go text/template semantics Kanister relies on.

use super::*;
use serde_json::json;

fn params() -> serde_json::Value {
    json!({
        "StatefulSet": {"Name": "pg", "Namespace": "ns", "Pods": ["pg-0", "pg-1"],
            "PersistentVolumeClaims": {"pg-0": {"data-pg-0": "/data"}}},
        "Options": {"a": "1", "b": "2"},
        "Object": {"metadata": {"name": "obj", "labels": {"z": "1", "a": "2"}},
                   "spec": {"replicas": 3, "list": [1, "x", null]}},
        "Phases": {"backup": {"Output": {"key": "k1"}}},
        "Secrets": {"aws": {"Data": {"id": "czM="}}},
        "Profile": {"Location": {"Type": "s3Compliant", "Bucket": "b"},
                    "Credential": {"Type": "keyPair", "KeyPair": {"ID": "i", "Secret": "s"}}},
        "Time": "2024-03-05T07:08:09.123456789Z"
    })
}

fn r(t: &str) -> String {
    let now = "2024-01-02T03:04:05Z".parse().unwrap();
    Template::parse(t)
        .and_then(|x| x.render_at(&params(), now))
        .unwrap_or_else(|e| panic!("{t}: {e}"))
}

fn e(t: &str) -> TemplateError {
    let now = "2024-01-02T03:04:05Z".parse().unwrap();
    match Template::parse(t).and_then(|x| x.render_at(&params(), now)) {
        Ok(out) => panic!("{t}: expected an error, got {out:?}"),
        Err(err) => err,
    }
}

#[test]
fn fields_and_missing_keys() {
    assert_eq!(
        r("{{ .StatefulSet.Name }}.{{ .Phases.backup.Output.key }}"),
        "pg.k1"
    );
    let err = e("{{ .Options.nope }}");
    assert_eq!(
        err.to_string(),
        "Failed to render template: \"nope\" not found"
    );
    assert!(
        matches!(e("{{ .Phases.restore.Output.x }}"), TemplateError::MissingKey { ref key, .. } if key == "restore")
    );
    // Struct field missing and nil pointers are errors, not missing keys.
    assert!(matches!(
        e("{{ .StatefulSet.Nope }}"),
        TemplateError::Exec { .. }
    ));
    assert!(
        e("{{ .Deployment.Name }}")
            .to_string()
            .contains("nil pointer")
    );
    assert_eq!(r("{{ if .Deployment }}y{{ else }}n{{ end }}"), "n");
    // index gives the typed zero value.
    assert_eq!(r("[{{ index .Options \"nope\" }}]"), "[]");
    assert_eq!(r("{{ index .Object.metadata \"nope\" }}"), "<no value>");
}

#[test]
fn printing_like_go() {
    assert_eq!(r("{{ .StatefulSet.Pods }}"), "[pg-0 pg-1]");
    assert_eq!(r("{{ .Object.metadata.labels }}"), "map[a:2 z:1]");
    assert_eq!(r("{{ .Object.spec.list }}"), "[1 x <nil>]");
    assert_eq!(r("{{ .Secrets.aws.Data.id }}"), "[115 51]");
    assert_eq!(r("{{ .Secrets.aws.Data.id | toString }}"), "s3");
    assert_eq!(r("{{ 1.5 }} {{ 1e6 }} {{ 0.0001 }}"), "1.5 1e+06 0.0001");
    assert_eq!(r("{{ print 1 2 \"a\" 3 }}"), "1 2a3");
    assert_eq!(r("{{ println 1 \"a\" }}"), "1 a\n");
    assert_eq!(
        r("{{ printf \"%s|%d|%v|%q|%5s|%-3d|\" \"a\" 7 .Options \"q\" \"b\" 1 }}"),
        "a|7|map[a:1 b:2]|\"q\"|    b|1  |"
    );
    assert_eq!(r("{{ printf \"%d\" \"x\" }}"), "%!d(string=x)");
    assert_eq!(r("{{ printf \"%d\" }}"), "%!d(MISSING)");
}

#[test]
fn control_flow() {
    assert_eq!(
        r("{{ if eq 1 2 }}a{{ else if eq 1 1 }}b{{ else }}c{{ end }}"),
        "b"
    );
    assert_eq!(
        r("{{ range $k, $v := .Options }}{{ $k }}={{ $v }};{{ end }}"),
        "a=1;b=2;"
    );
    assert_eq!(
        r("{{ range .Phases.backup.Secrets }}{{ else }}e{{ end }}"),
        "e"
    );
    assert_eq!(
        r("{{ range $i, $p := .StatefulSet.Pods }}{{ $i }}{{ $p }}{{ break }}{{ end }}"),
        "0pg-0"
    );
    assert_eq!(
        r(
            "{{ range .StatefulSet.Pods }}{{ if eq . \"pg-0\" }}{{ continue }}{{ end }}{{ . }}{{ end }}"
        ),
        "pg-1"
    );
    assert_eq!(
        r("{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}"),
        "2"
    );
    assert_eq!(r("{{ with .Object.metadata }}{{ .name }}{{ end }}"), "obj");
    assert_eq!(
        r("{{ with .Options.a }}{{ . }}{{ else }}none{{ end }}"),
        "1"
    );
    assert_eq!(r("a  {{- 1 -}}  b"), "a1b");
    assert_eq!(r("x{{/* c */}}y {{- /* c */ -}} z"), "xyz");
    assert_eq!(r("{{ and 1 0 }} {{ or 0 \"\" 3 }} {{ not 0 }}"), "0 3 true");
    // Short-circuit: the nil pointer is never dereferenced.
    assert_eq!(r("{{ and .Deployment .Deployment.Name }}"), "<nil>");
    assert_eq!(
        r("{{ eq 1 3 2 1 }} {{ ne \"a\" \"b\" }} {{ lt 1 2 }} {{ ge 2 3 }}"),
        "true true true false"
    );
    assert!(e("{{ eq 1 \"1\" }}").to_string().contains("incompatible"));
    assert_eq!(r("{{ len .StatefulSet.Pods }} {{ len .Options }}"), "2 2");
    assert_eq!(r("{{ index .StatefulSet.Pods 1 }}"), "pg-1");
    assert_eq!(
        r(
            "{{ range $k, $_ := index .StatefulSet.PersistentVolumeClaims (index .StatefulSet.Pods 0) }}{{ $k }}{{ end }}"
        ),
        "data-pg-0"
    );
}

#[test]
fn sprig_subset() {
    assert_eq!(
        r("{{ toJson .Profile }}"),
        "{\"Location\":{\"type\":\"s3Compliant\",\"bucket\":\"b\",\"endpoint\":\"\",\"prefix\":\"\",\"region\":\"\"},\"Credential\":{\"Type\":\"keyPair\",\"KeyPair\":{\"ID\":\"i\",\"Secret\":\"s\"},\"Secret\":null,\"KopiaServerSecret\":null},\"SkipSSLVerify\":false}"
    );
    assert_eq!(r("{{ toJson \"<&>\" }}"), "\"\\u003c\\u0026\\u003e\"");
    assert_eq!(
        r(
            "{{ toDate \"2006-01-02T15:04:05.999999999Z07:00\" .Time | date \"2006-01-02T15-04-05\" }}"
        ),
        "2024-03-05T07-08-09"
    );
    assert_eq!(
        r("{{ toDate \"2006-01-02T15:04:05.999999999Z07:00\" .Time }}"),
        "2024-03-05 07:08:09.123456789 +0000 UTC"
    );
    assert_eq!(
        r("{{ toDate \"2006-01-02\" \"bad\" }}"),
        "0001-01-01 00:00:00 +0000 UTC"
    );
    assert_eq!(
        r("{{ now | date \"2006-01-02 3:04PM\" }}"),
        "2024-01-02 3:04AM"
    );
    assert_eq!(r("{{ .Time | date \"2006\" }}"), "2024");
    assert_eq!(
        r("{{ b64enc \"hi\" }} {{ b64dec \"aGk=\" }} {{ b64dec \"a\" }}"),
        "aGk= hi illegal base64 data at input byte 0"
    );
    assert_eq!(
        r("{{ quote \"a\" 1 }} {{ \"a-b\" | upper | replace \"-\" \"_\" }}"),
        "\"a\" \"1\" A_B"
    );
    assert_eq!(
        r("{{ default \"d\" .Options.a }} {{ default \"d\" \"\" }}"),
        "1 d"
    );
    assert_eq!(
        r("{{ trim \" x \" }}{{ trimSuffix \"b\" \"ab\" }}{{ trimPrefix \"a\" \"ab\" }}"),
        "xab"
    );
    assert_eq!(
        r("{{ join \",\" (splitList \"/\" \"a/b\") }} {{ split \"/\" \"a/b\" }}"),
        "a,b map[_0:a _1:b]"
    );
    assert_eq!(
        r("{{ hasKey (dict \"a\" 1) \"a\" }} {{ list 1 \"a\" }} {{ contains \"b\" \"abc\" }}"),
        "true [1 a] true"
    );
    assert_eq!(
        r("{{ sha256sum \"\" }}"),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        r("{{ int \"12\" | add 1 }} {{ add .Object.spec.replicas 1 }}"),
        "13 4"
    );
    assert!(
        e("{{ derivePassword 1 \"long\" \"p\" \"u\" \"s\" }}")
            .to_string()
            .contains("sprig usage of 'derivePassword' is not allowed by kanister as it is not FIPS compatible")
    );
    // sprig v2.22.0 has no bcrypt: undefined in Kanister too.
    assert!(
        Template::parse("{{ bcrypt \"x\" }}")
            .unwrap_err()
            .to_string()
            .contains("function \"bcrypt\" not defined")
    );
}

#[test]
fn parse_time_checks_and_references() {
    assert!(matches!(
        Template::parse("{{ nosuch 1 }}"),
        Err(TemplateError::Parse { .. })
    ));
    assert!(Template::parse("{{ $x }}").is_err());
    assert!(Template::parse("{{ break }}").is_err());
    assert!(Template::parse("{{ if 1 }}").is_err());
    assert!(Template::parse("{{ end }}").is_err());
    let t = Template::parse(
        "{{ .Phases.backup.Output.key | toString }} {{ index .ArtifactsIn.snap.KeyValue \"id\" }} \
         {{ range .StatefulSet.Pods }}{{ .Ignored }}{{ $.Object.metadata.name }}{{ end }} {{ toJson .DeferPhase.Output.x }}",
    )
    .unwrap();
    let refs = t.references();
    for f in [
        ".Phases.backup.Output.key",
        ".ArtifactsIn.snap.KeyValue.id",
        ".StatefulSet.Pods",
        ".Object.metadata.name",
        ".DeferPhase.Output.x",
    ] {
        assert!(
            refs.fields.contains(&f.to_string()),
            "{f} in {:?}",
            refs.fields
        );
    }
    assert!(!refs.fields.iter().any(|f| f == ".Ignored"));
    assert_eq!(refs.functions, vec!["index", "toJson", "toString"]);
    // A key with a dot would read as two fields: the path stops before it.
    let t = Template::parse(
        "{{ index .Secrets \"my.secret\" \"Data\" }} {{ index .Object.metadata.labels \"app.kubernetes.io/name\" }}",
    )
    .unwrap();
    assert_eq!(
        t.references().fields,
        [".Secrets", ".Object.metadata.labels"]
    );
}

#[test]
fn check_fields_are_the_fields_of_check() {
    for text in [
        "{{ .A.B }} {{ .A.B }} {{ index .Phases.p.Output \"k\" | toString }}",
        "{{ range $i, $e := .X }}{{ $e.Y }}{{ $.Z.W }}{{ end }}{{ define \"d\" }}{{ .Q }}{{ end }}",
        "{{ with .W }}{{ .Inner }}{{ else }}{{ .Outer }}{{ end }}{{ (.P).Q | printf \"%s\" }}",
        "no template",
        "{{ .Broken",
    ] {
        assert_eq!(
            super::check_fields(text),
            super::check(text).map(|r| r.fields),
            "{text}"
        );
    }
}

#[test]
fn render_args_walks_like_kanister() {
    let args = json!({
        "command": ["sh", "-c", "echo {{ .StatefulSet.Name }}"],
        "volumes": {"{{ index .StatefulSet.Pods 0 }}": "/mnt/{{ .Options.a }}"},
        "replicas": 3,
        "flag": true
    });
    let out = render_args(&args, &params(), "KubeTask").unwrap();
    assert_eq!(
        out,
        json!({"command": ["sh", "-c", "echo pg"], "volumes": {"pg-0": "/mnt/1"}, "replicas": 3, "flag": true})
    );
    let wait = json!({"condition": "{{ .Nope }}"});
    assert_eq!(render_args(&wait, &params(), "WaitV2").unwrap(), wait);
    assert_eq!(render_args(&wait, &params(), "wait").unwrap(), wait);
    assert!(render_args(&wait, &params(), "KubeExec").is_err());
    assert_eq!(render_str("{{ .Options.b }}", &params()).unwrap(), "2");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
    /// The in-place deduplication keeps what a set of seen strings keeps, short lists or long.
    #[test]
    fn first_occurrences_in_order(v in proptest::collection::vec("[a-e]{0,2}", 0..80)) {
        let mut seen = std::collections::HashSet::new();
        let want: Vec<String> = v.iter().filter(|s| seen.insert(s.as_str())).cloned().collect();
        let mut got = v.clone();
        first_occurrences(&mut got);
        proptest::prop_assert_eq!(got, want);
    }

    #[test]
    fn never_panics(s in "(\\{\\{-? ?|[ .$a-zA-Z0-9_\"'`|():=,-]|if |range |else|end|with |break|index |printf |define \"t\" |template \"t\" |block \"t\" |\\}\\}| ?-?\\}\\}|\\n|/\\*|\\*/){0,30}") {
        let now = "2024-01-02T03:04:05Z".parse().unwrap();
        if let Ok(t) = Template::parse(&s) {
            let _ = t.render_at(&params(), now);
            let _ = t.references();
        }
        // The borrowed check agrees with the owned tree, errors included.
        proptest::prop_assert_eq!(check(&s), Template::parse(&s).map(|t| t.references()));
        proptest::prop_assert_eq!(has_action(&s), s.contains("{{"));
    }

    /// Any text around template actions with real-looking pipelines (fields, variables,
    /// functions with arguments, pipes, parentheses, control keywords, trim markers) whose
    /// pieces may be any characters: parsing, rendering and the checks never panic, and the
    /// borrowed check agrees with the owned tree.
    #[test]
    fn never_panics_any_string(s in text_with_actions()) {
        proptest::prop_assert!(s.contains("{{"));
        let _ = render_str(&s, &params());
        let now = "2024-01-02T03:04:05Z".parse().unwrap();
        if let Ok(t) = Template::parse(&s) {
            let _ = t.render_at(&params(), now);
        }
        proptest::prop_assert_eq!(check(&s), Template::parse(&s).map(|t| t.references()));
    }

    /// Every function with hostile arguments, called directly and as the
    /// last stage of a pipeline: errors are fine, panics are not.
    #[test]
    fn no_function_panics_on_any_arguments(
        f in proptest::sample::select(funcs::all_names()),
        args in proptest::collection::vec(proptest::sample::select(HOSTILE_ARGS), 0..4),
        piped in proptest::bool::ANY,
    ) {
        let t = match (piped, args.split_last()) {
            (true, Some((last, init))) => format!("{{{{ {last} | {f} {} }}}}", init.join(" ")),
            _ => format!("{{{{ {f} {} }}}}", args.join(" ")),
        };
        let now = "2024-01-02T03:04:05Z".parse().unwrap();
        if let Ok(t) = Template::parse(&t) {
            let _ = t.render_at(&params(), now);
        }
    }
}

/// Operands of [`text_with_actions`] besides [`HOSTILE_ARGS`].
const FIELDS: &[&str] = &[
    ".",
    "$",
    ".StatefulSet.Name",
    ".Options.a",
    ".Phases.backup.Output.key",
    ".Nope.x",
];

/// Text (any characters) with at least one action `{{ ... }}` whose pipeline looks like a real
/// one: fields, [`HOSTILE_ARGS`], quoted or bare characters, and calls of every function but the
/// key and certificate generators (slow in a debug build; `no_function_panics_on_any_arguments`
/// calls them), piped; in plain actions, assignments, `if`/`with`/`range` blocks with `else`,
/// and stray keywords.
fn text_with_actions() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::collection::vec;
    use proptest::prelude::*;
    use proptest::sample::select;
    let names: Vec<&str> = funcs::all_names()
        .into_iter()
        .filter(|f| !f.starts_with("gen"))
        .collect();
    let operand = prop_oneof![
        3 => select(FIELDS).prop_map(String::from),
        3 => select(HOSTILE_ARGS).prop_map(String::from),
        2 => "\\PC{0,6}".prop_map(|s| format!("\"{}\"", s.replace(['"', '\\'], ""))),
        1 => "\\PC{0,6}",
    ];
    let call = (select(names), vec(operand.clone(), 0..3))
        .prop_map(|(f, args)| format!("{f} {}", args.join(" ")));
    let command = prop_oneof![2 => call, 1 => operand];
    let pipeline = vec(command, 1..4).prop_map(|c| c.join(" | "));
    let text = "\\PC{0,10}";
    let open = |l: bool| if l { "{{- " } else { "{{ " };
    let close = |r: bool| if r { " -}}" } else { " }}" };
    let plain = prop_oneof![
        4 => pipeline.clone(),
        1 => pipeline.clone().prop_map(|p| format!("({p}).Field")),
        1 => pipeline.clone().prop_map(|p| format!("$x := {p}")),
        1 => select(&["else", "end", "break", "/* c */", "template \"t\" ."][..]).prop_map(String::from),
    ];
    let plain = (any::<bool>(), plain, any::<bool>())
        .prop_map(move |(l, body, r)| format!("{}{body}{}", open(l), close(r)));
    let block = (
        select(&["if", "with", "range", "range $i, $e :="][..]),
        pipeline,
        text,
        proptest::option::of(text),
        any::<bool>(),
    )
        .prop_map(move |(kw, p, body, other, trim)| {
            let other = other.map(|o| format!("{}else{}{o}", open(trim), close(trim)));
            format!(
                "{{{{ {kw} {p} }}}}{body}{}{{{{ end }}}}",
                other.unwrap_or_default()
            )
        });
    let action = prop_oneof![3 => plain, 1 => block];
    let piece = prop_oneof![text, action.clone()];
    (text, action, vec(piece, 0..6))
        .prop_map(|(text, action, rest)| format!("{text}{action}{}", rest.concat()))
}

const HOSTILE_ARGS: &[&str] = &[
    "0",
    "1",
    "-1",
    "3",
    "64",
    "-100",
    "9223372036854775807",
    "-9223372036854775808",
    "1.5",
    "-2.5",
    "1e300",
    "nil",
    "true",
    "false",
    "\"\"",
    "\"a\"",
    "\"a-b_c D e\"",
    "\"héllo wörld ünïcode\"",
    "\"日本語テキスト\"",
    "\"[\"",
    "\"(a\"",
    "\"*\"",
    "\"\\\\\"",
    "\"2006-01-02\"",
    "\"2024-03-05T07:08:09Z\"",
    "\"1.2.3\"",
    "\">= 1.0\"",
    "\"1 - 2 || ~3.x, !=3.1.*\"",
    "\"v1.2.3-rc.1+b\"",
    "\"HTTPServer2xx\"",
    "(semver \"1.2.3\")",
    "((semver \"1.2.3\").IncPatch)",
    "\"-1h\"",
    "\"rsa\"",
    "\"dsa\"",
    "\"https://u:p@h:1/p?q=1#f\"",
    "\"a/b/../c.txt\"",
    "\"$HOME\"",
    "\"=\"",
    "\"ab==\"",
    "\"MZXW6===\"",
    "(list)",
    "(list 1 \"a\" nil)",
    "(list \"b\" \"a\" \"b\")",
    "(dict)",
    "(dict \"a\" 1 \"b\" (dict \"c\" 2))",
    ".Options",
    ".StatefulSet",
    ".StatefulSet.Pods",
    ".Secrets.aws.Data.id",
    ".Object",
    ".Object.spec.list",
    ".Deployment",
    "now",
    "(toDate \"2006\" \"2024\")",
    "$",
    "(split \"/\" \"a/b\")",
];

#[test]
fn number_followed_by_multibyte_letter_is_an_error_not_a_panic() {
    // Found by never_panics_any_string: the error message sliced inside a char.
    let err = Template::parse("{{ 6ၗ }}").unwrap_err();
    assert!(err.to_string().contains("bad number syntax"), "{err}");
}

#[test]
fn define_template_and_block() {
    assert_eq!(
        r(
            r#"{{ define "pod" }}{{ . }}-x{{ end }}{{ template "pod" "a" }},{{ template "pod" .StatefulSet.Name }}"#
        ),
        "a-x,pg-x"
    );
    // A defined template sees only what it is given: `$` is its dot.
    assert_eq!(
        r(
            r#"{{ define "t" }}[{{ $ }}]{{ end }}{{ $x := 1 }}{{ template "t" }}{{ template "t" 2 }}"#
        ),
        "[<no value>][2]"
    );
    assert_eq!(
        r(r#"{{ block "b" .Options }}{{ .a }}{{ end }}|{{ template "b" (dict "a" 9) }}"#),
        "1|9"
    );
    // An empty definition does not replace a non-empty one; two non-empty ones conflict.
    assert_eq!(
        r(r#"{{ define "t" }}x{{ end }}{{ define "t" }} {{ end }}{{ template "t" }}"#),
        "x"
    );
    assert!(
        Template::parse(r#"{{ define "t" }}x{{ end }}{{ define "t" }}y{{ end }}"#)
            .unwrap_err()
            .to_string()
            .contains("multiple definition of template \"t\"")
    );
    // define only at the top level; a body has its own variables.
    assert!(Template::parse(r#"{{ if 1 }}{{ define "t" }}{{ end }}{{ end }}"#).is_err());
    assert!(Template::parse(r#"{{ $v := 1 }}{{ define "t" }}{{ $v }}{{ end }}"#).is_err());
    assert!(
        Template::parse(r#"{{ range . }}{{ define "t" }}{{ break }}{{ end }}{{ end }}"#).is_err()
    );
    // A missing template is an execution error, as in Go.
    assert!(Template::parse(r#"{{ template "nope" }}"#).is_ok());
    assert!(
        e(r#"{{ template "nope" }}"#)
            .to_string()
            .contains("template \"nope\" not defined")
    );
    // The main template is "config"; a define of it replaces an empty main template.
    assert_eq!(r(r#"{{ define "config" }}c{{ end }}  "#), "c");
    // The validator sees references inside definitions, relative to nothing.
    let t = Template::parse(r#"{{ define "t" }}{{ .X }}{{ $.Y }}{{ upper "a" }}{{ end }}{{ template "t" .Phases.p.Output }}"#).unwrap();
    let refs = t.references();
    assert_eq!(refs.fields, vec![".Phases.p.Output".to_string()]);
    assert_eq!(refs.functions, vec!["upper"]);
}

#[test]
fn non_deterministic_functions_have_the_right_shape() {
    let out = r(
        // Newlines separate the values: randAscii may print any printable character, '|' too.
        "{{ randAlpha 12 }}\n{{ randAlphaNum 12 }}\n{{ randNumeric 12 }}\n{{ randAscii 12 }}\n{{ randAlpha -1 }}",
    );
    let parts: Vec<&str> = out.split('\n').collect();
    assert_eq!(parts.len(), 5, "{out}");
    assert!(
        parts[0].len() == 12 && parts[0].chars().all(|c| c.is_ascii_alphabetic()),
        "{out}"
    );
    assert!(
        parts[1].len() == 12 && parts[1].chars().all(|c| c.is_ascii_alphanumeric()),
        "{out}"
    );
    assert!(
        parts[2].len() == 12 && parts[2].chars().all(|c| c.is_ascii_digit()),
        "{out}"
    );
    assert_eq!(
        parts[3].chars().filter(|c| (' '..='~').contains(c)).count(),
        12,
        "{out}"
    );
    assert_eq!(parts[4], "");
    assert_ne!(r("{{ randAlphaNum 32 }}"), r("{{ randAlphaNum 32 }}"));

    let u = r("{{ uuidv4 }}");
    let groups: Vec<usize> = u.split('-').map(str::len).collect();
    assert_eq!(groups, vec![8, 4, 4, 4, 12], "{u}");
    assert_eq!(&u[14..15], "4", "version 4: {u}");
    assert!("89ab".contains(&u[19..20]), "RFC 4122 variant: {u}");
    assert_ne!(u, r("{{ uuidv4 }}"));

    let mut shuffled: Vec<char> = r("{{ shuffle \"abcdefgh\" }}").chars().collect();
    shuffled.sort();
    assert_eq!(shuffled.into_iter().collect::<String>(), "abcdefgh");

    // now is 2024-01-02T03:04:05Z in these tests.
    assert_eq!(r("{{ ago now }}"), "0s");
    assert_eq!(r("{{ now | dateModify \"-90m\" | ago }}"), "1h30m0s");
    assert_eq!(r("{{ now | dateModify \"45s\" | ago }}"), "-45s");

    // The operator's environment is not visible to Blueprints.
    assert_eq!(
        r("{{ env \"PATH\" }}|{{ expandenv \"x$HOME${PATH}y\" }}"),
        "|xy"
    );
    assert_eq!(
        r("{{ getHostByName \"localhost\" }}")
            .parse::<std::net::IpAddr>()
            .map(|a| a.is_loopback()),
        Ok(true)
    );
}
