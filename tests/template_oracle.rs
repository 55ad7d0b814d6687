//! Differential test: our template engine against real Go text/template +
//! sprig v2.22.0 (`tools/template-oracle`), on every template string of the
//! Kanister corpus Blueprints plus hand-written semantic cases.

#[path = "support/template_cases.rs"]
mod support;

use blueprint_operator::template::{Template, TemplateError};
use serde_json::{Value, json};

/// Hand-written cases exercising the Go semantics Kanister relies on.
const CASES: &[&str] = &[
    // fields, maps, structs, nil pointers
    "{{ .StatefulSet.Name }}/{{ .StatefulSet.Namespace }}",
    "{{ .StatefulSet.Pods }}",
    "{{ .StatefulSet.Containers }}",
    "{{ .StatefulSet.PersistentVolumeClaims }}",
    "{{ .Deployment.Name }}",
    "{{ .Deployment }}",
    "{{ if .Deployment }}dep{{ else }}no-dep{{ end }}",
    "{{ .PVC.Name }}",
    "{{ .Options.missing }}",
    "{{ .Options.pitr }}",
    "{{ index .Options \"missing\" }}|",
    "{{ index .Options \"pitr\" }}",
    "{{ .Object.metadata.name }}",
    "{{ .Object.metadata.nope }}",
    "{{ .Object.spec.replicas }}",
    "{{ .Object.status.ratio }}",
    "{{ .Object.spec.nodeSets }}",
    "{{ .Object.metadata.labels }}",
    "{{ .Object.spec }}",
    "{{ index .Object.metadata.labels \"app\" }}",
    "{{ index .Object.metadata.labels \"nope\" }}",
    "{{ index .Object.spec.nodeSets 1 }}",
    "{{ (index .Object.spec.nodeSets 0).name }}",
    "{{ index .Object.spec.nodeSets 5 }}",
    "{{ .Phases.nope.Output.x }}",
    "{{ .DeferPhase.Output.x }}",
    "{{ .Nope }}",
    "{{ .StatefulSet.Nope }}",
    "{{ .Time }}",
    "{{ .Profile.Location.Bucket }} {{ .Profile.Location.Endpoint }} {{ .Profile.SkipSSLVerify }}",
    "{{ .Profile.Credential.KeyPair.ID }}",
    "{{ .Profile.Credential.Secret.Data }}",
    "{{ .Profile.Location }}",
    "{{ .Secrets.aws.Data.aws_access_key_id }}",
    "{{ .Secrets.aws.Data.aws_access_key_id | toString }}",
    "{{ .Secrets.aws.Data.nope | toString }}",
    "{{ index .Secrets.aws.Data \"nope\" | toString }}|",
    "{{ .Secrets.aws.Name }}|{{ .Secrets.aws.ObjectMeta.Name }}",
    "{{ .ConfigMaps.location.Data.bucket }}",
    "{{ .ConfigMaps.location.BinaryData }}",
    "{{ .PodAnnotations }} {{ .PodLabels.tier }}",
    "{{ .StatefulSet.Name.Foo }}",
    "{{ $.StatefulSet.Name }}",
    // json
    "{{ toJson .Profile }}",
    "{{ toJson .StatefulSet }}",
    "{{ toJson .Object.metadata }}",
    "{{ toJson .Options }}",
    "{{ toJson .Deployment }}",
    "{{ toJson .Secrets }}",
    "{{ toJson .ConfigMaps }}",
    "{{ toJson .ArtifactsIn }}",
    "{{ toJson .Object.status.ratio }}",
    "{{ toJson \"<a&b>\\u2028\" }}",
    "{{ toJson 1e21 }} {{ toJson 1e-7 }} {{ toJson 0.000001 }} {{ toJson 123456789.5 }}",
    "{{ toJson (list 1 \"a\" nil true 2.5) }}",
    "{{ toJson (dict \"b\" 1 \"a\" (list)) }}",
    "{{ toJson .Secrets.aws.Data.aws_access_key_id }}",
    "{{ toJson .Phases }}",
    "{{ toPrettyJson .Object.metadata.labels }}",
    // printing
    "{{ 1.5 }} {{ 1e6 }} {{ 100000.0 }} {{ 1e-5 }} {{ 0.0001 }} {{ 3.0 }} {{ -2.25 }} {{ 1234567.0 }}",
    "{{ 0x1F }} {{ 0o17 }} {{ 017 }} {{ 0b101 }} {{ 1_000 }} {{ 'a' }} {{ -5 }} {{ +5 }}",
    "{{ true }} {{ false }} {{ \"str\" }} {{ `raw\\n` }}",
    "{{ list 1 2 3 }} {{ list \"a\" \"b\" }} {{ list }} {{ list nil }}",
    "{{ dict \"a\" 1 \"b\" \"x\" }}",
    "{{ print 1 2 \"a\" \"b\" 3 }}|{{ print \"a\" 1 \"b\" }}|{{ print nil }}",
    "{{ println 1 \"a\" 2 }}",
    "{{ printf \"%s-%d-%v-%q\" \"a\" 42 .StatefulSet.Pods \"q\" }}",
    "{{ printf \"%5s|%-5s|%05d|%x|%X|%o|%t|%c\" \"a\" \"b\" 42 255 255 8 true 65 }}",
    "{{ printf \"%.2f %e %g %v\" 3.14159 1234.5 0.5 2.0 }}",
    "{{ printf \"%d\" \"x\" }} {{ printf \"%s\" 5 }} {{ printf \"%d %d\" 1 }} {{ printf \"%d\" 1 2 }}",
    "{{ printf \"%v %s\" .Options .Object.metadata.labels }}",
    "{{ printf \"%q\" .StatefulSet.Pods }} {{ printf \"%x\" \"hi\" }} {{ printf \"%%\" }}",
    "{{ printf \"%v\" nil }} {{ printf \"%s\" nil }} {{ printf \"%z\" 1 }}",
    "{{ printf \"%+d %+v\" 5 .PVC }}",
    "{{ printf \"%d\" .Secrets.aws.Data.aws_access_key_id }}",
    "{{ printf \"%s\" .Secrets.aws.Data.aws_access_key_id }}",
    // pipelines, variables, control flow
    "{{ .StatefulSet.Name | upper | replace \"-\" \"_\" }}",
    "{{ $x := 1 }}{{ $x }}{{ $x = 2 }}{{ $x }}",
    "{{ $x := \"a\" }}{{ if true }}{{ $x = \"b\" }}{{ $y := 3 }}{{ end }}{{ $x }}",
    "{{ $v := false }}{{ range .StatefulSet.Pods }}{{ if eq . \"my-statefulset-1\" }}{{ $v = true }}{{ end }}{{ end }}{{ $v }}",
    "{{ range $i, $p := .StatefulSet.Pods }}{{ $i }}={{ $p }};{{ end }}",
    "{{ range .StatefulSet.Pods }}{{ . }},{{ else }}none{{ end }}",
    "{{ range .Options }}{{ . }};{{ end }}",
    "{{ range $k, $v := .Object.metadata.labels }}{{ $k }}:{{ $v }} {{ end }}",
    "{{ range $k, $_ := index .StatefulSet.PersistentVolumeClaims (index .StatefulSet.Pods 0) }}{{ $k }}{{ break }}{{ end }}",
    "{{ range .StatefulSet.Pods }}{{ if eq . \"my-statefulset-0\" }}{{ continue }}{{ end }}{{ . }}{{ end }}",
    "{{ range .Phases }}x{{ else }}empty{{ end }}",
    "{{ range 3 }}{{ . }}{{ end }}",
    "{{ range $x := list 1 2 }}{{ $x }}{{ end }}",
    "{{ range .StatefulSet.Name }}{{ . }}{{ end }}",
    "{{ range .Deployment }}{{ . }}{{ end }}",
    "{{ range $i, $c := .StatefulSet.Containers }}{{ $i }}{{ range $c }}[{{ . }}]{{ end }}{{ end }}",
    "{{ with .Object.metadata }}{{ .name }}{{ end }}",
    "{{ with .Options.nope }}x{{ else }}y{{ end }}",
    "{{ with $x := .StatefulSet }}{{ $x.Name }}{{ .Namespace }}{{ end }}",
    "{{ with .Deployment }}x{{ else with .StatefulSet }}{{ .Name }}{{ end }}",
    "{{ if eq 1 2 }}a{{ else if eq 2 2 }}b{{ else }}c{{ end }}",
    "{{ if .Profile.Location.Region }}{{ .Profile.Location.Region | quote }}{{ end }}",
    "{{ if and .Deployment .Deployment.Name }}x{{ else }}y{{ end }}",
    "{{ if or .StatefulSet .Deployment.Name }}x{{ end }}",
    "{{ and 1 0 2 }} {{ or 0 \"\" \"z\" }} {{ and }}",
    "{{ not true }} {{ not 0 }} {{ not .Options }}",
    "{{ eq 1 1 2 }} {{ eq \"a\" \"b\" \"a\" }} {{ ne 1 2 }} {{ lt 1 2 }} {{ le 2 2 }} {{ gt \"b\" \"a\" }} {{ ge 1.5 2.5 }}",
    "{{ eq 1 \"1\" }}",
    "{{ eq 1 1.0 }}",
    "{{ eq .Options.pitr nil }}",
    "{{ eq .StatefulSet.Pods .StatefulSet.Pods }}",
    "{{ lt true false }}",
    "{{ len .StatefulSet.Pods }} {{ len .Options }} {{ len \"héllo\" }} {{ len .Secrets.aws.Data.aws_access_key_id }}",
    "{{ len 3 }}",
    "{{ index \"abc\" 1 }} {{ index .StatefulSet.Containers 0 1 }}",
    "{{ index .Phases \"nope\" }}",
    "{{ index nil 1 }}",
    // whitespace trimming and comments
    "a  {{- \"b\" -}}  c",
    "a\n  {{- /* comment */ -}}\n  b",
    "{{/* only a comment */}}x",
    "{{- 3 }} {{ 4 -}} \n\n",
    "x{{-3}}",
    "x {{- 3}}",
    "line1\n{{ if true -}}\n  yes\n{{- end }}\nline3",
    // sprig strings
    "{{ quote \"a\" 1 nil \"b\\\"c\" }} {{ squote \"x\" }}",
    "{{ \"héllo wörld\" | upper }} {{ \"ABC\" | lower }} {{ title \"hello world-x\" }}",
    "{{ replace \"a\" \"b\" \"banana\" }} {{ replace \"\" \"-\" \"ab\" }}",
    "{{ trim \"  x y \\n\" }}|{{ trimSuffix \".sql\" \"dump.sql\" }}|{{ trimPrefix \"s3://\" \"s3://b/p\" }}|{{ trimAll \"/\" \"//a/b//\" }}",
    "{{ contains \"ell\" \"hello\" }} {{ hasPrefix \"he\" \"hello\" }} {{ hasSuffix \"lo\" \"hello\" }}",
    "{{ split \"/\" \"a/b/c\" }} {{ (split \"/\" \"a/b/c\")._1 }} {{ splitList \",\" \"x,y\" }}",
    "{{ join \",\" .StatefulSet.Pods }} {{ join \"-\" (list 1 nil \"b\") }} {{ join \",\" \"solo\" }}",
    "{{ nospace \" a b \" }} {{ repeat 3 \"ab\" }} {{ cat \"a\" 1 nil \"b\" }}",
    "{{ indent 2 \"a\\nb\" }}|{{ nindent 2 \"a\" }}",
    "{{ upper 5 }}",
    "{{ upper .StatefulSet.Pods }}",
    "{{ upper .Object.metadata.nothere }}",
    // sprig encoding / hashing
    "{{ b64enc \"hello\" }} {{ b64dec \"aGVsbG8=\" }} {{ b64dec \"aGVsbG8\" }} {{ b64dec \"!!\" }}",
    "{{ .Object.data.orgid | toString | b64dec }}",
    "{{ sha256sum \"abc\" }} {{ sha1sum \"abc\" }} {{ b32enc \"foobar\" }}",
    "{{ toString 5 }} {{ toString 1.5 }} {{ toString nil }} {{ toString .StatefulSet.Pods }} {{ toString true }}",
    // sprig lists, dicts, defaults
    "{{ hasKey .Object.metadata \"name\" }} {{ hasKey (dict \"a\" 1) \"b\" }}",
    "{{ hasKey .Options \"pitr\" }}",
    "{{ get .Object.metadata \"name\" }}",
    "{{ default \"d\" \"\" }} {{ default \"d\" \"v\" }} {{ default \"d\" 0 }} {{ default \"d\" .Options.pitr }} {{ default \"d\" }}",
    "{{ .Options.nope | default \"fallback\" }}",
    "{{ index .Options \"nope\" | default \"fallback\" }}",
    "{{ empty \"\" }} {{ empty (list) }} {{ empty .StatefulSet }} {{ coalesce \"\" 0 \"x\" }} {{ ternary \"y\" \"n\" true }}",
    "{{ first .StatefulSet.Pods }} {{ last .StatefulSet.Pods }} {{ first (list) }}",
    "{{ list 1 2 | len }} {{ dict \"a\" }} {{ dict 1 2 }}",
    // sprig numbers
    "{{ int \"42\" }} {{ int 3.9 }} {{ int \"x\" }} {{ int64 \"7\" }} {{ float64 \"1.5\" }} {{ atoi \"12\" }} {{ int true }}",
    "{{ add 1 2 3 }} {{ add1 5 }} {{ sub 5 3 }} {{ mul 2 3 4 }} {{ div 7 2 }} {{ mod 7 3 }} {{ max 1 5 3 }} {{ min 4 2 }}",
    "{{ add \"2\" 3.7 }} {{ add .Object.spec.replicas 1 }}",
    "{{ div 1 0 }}",
    "{{ len .StatefulSet.Pods | add 1 }}",
    // dates
    "{{ toDate \"2006-01-02T15:04:05.999999999Z07:00\" .Time | date \"2006-01-02T15-04-05\" }}",
    "{{ toDate \"2006-01-02T15:04:05.999999999Z07:00\" .Time }}",
    "{{ toDate \"2006-01-02T15:04:05Z07:00\" \"2024-01-02T03:04:05+02:00\" }}",
    "{{ toDate \"2006-01-02T15:04:05Z07:00\" \"2024-01-02T03:04:05+02:00\" | date \"2006-01-02 15:04:05 MST\" }}",
    "{{ toDate \"2006-01-02T15:04:05Z\" \"2024-01-02T03:04:05Z\" }}",
    "{{ toDate \"2006-01-02\" \"not a date\" }}",
    "{{ toDate \"2006-01-02\" \"not a date\" | date \"2006-01-02\" }}",
    "{{ toDate \"2006-01-02 MST\" \"2024-05-06 GMT\" }}",
    "{{ toDate \"Jan 2, 2006 3:04pm\" \"Feb 29, 2024 11:30pm\" | date \"Monday January 2 15:04:05.000 -07:00 2006 _2 __2 002 PM pm 06 01 1 03 3 4 5\" }}",
    "{{ toDate \"2006-01-02T15:04:05.000Z07:00\" \"2024-01-02T03:04:05.120Z\" | date \"05.000 05.999 05,999999999 .9 Z0700 Z07 -07:00:00\" }}",
    "{{ toDate \"2006-01-02T15:04:05Z07:00\" \"2024-01-02T03:04:05.5Z\" }}",
    "{{ toDate \"2006-01-02\" \"2023-02-30\" }}",
    "{{ toDate \"2006-01-02\" .Time }}",
    "{{ .Time | date \"2006-01-02\" }}",
    "{{ now | date \"2006-01-02T15:04:05Z07:00\" }} {{ now }}",
    "{{ date \"2006-01-02t15:04:05z07:00\" now }} {{ date \"3:04PM\" now }} {{ date \"2006-01-02 15:04:05 GMT\" now }}",
    "{{ date \"2006-01-02\" 86400 }}",
    "{{ dateInZone \"2006-01-02 15:04\" now \"UTC\" }}",
    "{{ unixEpoch now }}",
    "{{ toJson now }} {{ toJson (toDate \"2006-01-02T15:04:05Z07:00\" \"2024-01-02T03:04:05+02:00\") }}",
    // define / template / block
    "{{ define \"p\" }}{{ . }}-x{{ end }}{{ template \"p\" \"a\" }},{{ template \"p\" .StatefulSet.Name }}",
    "{{ define \"t\" }}[{{ $ }}]{{ end }}{{ template \"t\" }}{{ template \"t\" 2 }}",
    "{{ block \"b\" .Options }}{{ .pitr }}{{ end }}|{{ template \"b\" (dict \"pitr\" 9) }}",
    "{{ define \"t\" }}x{{ end }}{{ define \"t\" }} {{ end }}{{ template \"t\" }}",
    "{{ define \"t\" }}x{{ end }}{{ define \"t\" }}y{{ end }}",
    "{{ if 1 }}{{ define \"t\" }}{{ end }}{{ end }}",
    "{{ $v := 1 }}{{ define \"t\" }}{{ $v }}{{ end }}",
    "{{ define \"config\" }}c{{ end }}  ",
    "{{ define \"r\" }}{{ if gt . 0 }}{{ . }}{{ template \"r\" (sub . 1) }}{{ end }}{{ end }}{{ template \"r\" 5 }}",
    "{{ template \"nope\" }}",
    // sprig strings added for issue 18.4
    "{{ abbrev 5 \"hello world\" }}|{{ abbrev 3 \"hello\" }}|{{ abbrevboth 5 10 \"1234 5678 9123 4567\" }}|{{ abbrevboth 0 3 \"abc\" }}",
    "{{ trunc 5 \"hello world\" }}|{{ trunc 50 \"hi\" }}|{{ trunc -1 \"hi\" }}",
    "{{ substr 0 5 \"hello world\" }}|{{ substr 6 -1 \"hello world\" }}|{{ substr -1 3 \"hello\" }}|{{ substr 2 99 \"hello\" }}",
    "{{ substr 3 1 \"hello\" }}",
    "{{ untitle \"Hello World\" }}|{{ swapcase \"This Is A.Test\" }}|{{ initials \"First Try here\" }}",
    "{{ wrap 5 \"Hello World foo barbazqux\" }}|{{ wrapWith 5 \"\\t\" \"Hello World verylongword\" }}",
    "{{ plural \"one\" \"many\" 1 }} {{ plural \"one\" \"many\" 2 }} {{ len .StatefulSet.Pods | plural \"pod\" \"pods\" }}",
    "{{ adler32sum \"Hello world\" }} {{ b32dec \"MZXW6YTBOI======\" }} {{ b32enc \"hi\" | b32dec }}",
    "{{ splitn \"$\" 2 \"foo$bar$baz\" }} {{ (splitn \"/\" 3 \"a/b/c/d\")._2 }} {{ splitn \"\" 2 \"abc\" }} {{ splitn \",\" 0 \"a,b\" }}",
    "{{ hello }} {{ html \"<a href='x'>&\\\"</a>\" }} {{ js \"it's <b> \\\"q\\\" = \\n\" }} {{ urlquery \"a b&c=d/é\" }}",
    "{{ html 1 2 }} {{ urlquery .StatefulSet.Pods }}",
    // lists and dicts
    "{{ tuple 1 \"a\" }} {{ append (list 1 2) 3 }} {{ push .StatefulSet.Pods \"x\" }} {{ prepend (list 1) 0 }}",
    "{{ rest (list 1 2 3) }} {{ initial (list 1 2 3) }} {{ reverse (list 1 2 3) }} {{ reverse .StatefulSet.Pods }}",
    "{{ uniq (list 1 2 1 \"a\" \"a\") }} {{ without (list 1 2 3 2) 2 3 }} {{ has 2 (list 1 2) }} {{ has \"z\" .StatefulSet.Pods }} {{ has 1 nil }}",
    "{{ slice (list 1 2 3 4) 1 3 }} {{ slice .StatefulSet.Pods 1 }} {{ slice (list 1 2) }} {{ slice (list) }}",
    "{{ slice (list 1 2) 3 }}",
    "{{ concat (list 1 2) .StatefulSet.Pods (list) }} {{ compact (list 1 0 \"\" \"a\" nil false) }}",
    "{{ sortAlpha (list \"b\" \"a\" \"C\" 10 2) }} {{ sortAlpha \"x\" }} {{ sortAlpha .StatefulSet.Pods }}",
    "{{ append \"x\" 1 }}",
    "{{ first \"x\" }}",
    "{{ $d := dict \"a\" 1 }}{{ $_ := set $d \"b\" 2 }}{{ $d }} {{ $_ = unset $d \"a\" }}{{ $d }}",
    "{{ set (dict) \"k\" \"v\" }} {{ unset (dict \"a\" 1 \"b\" 2) \"a\" }} {{ hasKey (set (dict) \"x\" 1) \"x\" }}",
    "{{ pluck \"a\" (dict \"a\" 1) (dict \"b\" 2) (dict \"a\" 3) }} {{ keys (dict \"b\" 1 \"a\" 2) | sortAlpha }} {{ keys (dict \"a\" 1) (dict \"b\" 2) }}",
    "{{ pick (dict \"a\" 1 \"b\" 2 \"c\" 3) \"a\" \"c\" \"z\" }} {{ omit (dict \"a\" 1 \"b\" 2) \"a\" }} {{ values (dict \"a\" 1) }}",
    "{{ merge (dict \"a\" 1 \"n\" (dict \"x\" 1)) (dict \"a\" 2 \"b\" 3 \"n\" (dict \"y\" 2)) }}",
    "{{ mergeOverwrite (dict \"a\" 1 \"n\" (dict \"x\" 1 \"z\" 0)) (dict \"a\" 2 \"b\" 3 \"n\" (dict \"x\" 5)) }}",
    "{{ merge (dict \"a\" \"\" \"b\" 0 \"c\" (list)) (dict \"a\" \"A\" \"b\" 7 \"c\" (list 1)) }} {{ merge (dict \"l\" (list 1)) (dict \"l\" (list 2)) }}",
    "{{ mergeOverwrite (dict \"a\" 1 \"l\" (list 1)) (dict \"a\" nil \"l\" (list 2)) }} {{ merge (dict \"a\" 1) (dict \"a\" nil \"b\" nil) }}",
    "{{ $d := dict \"a\" 1 }}{{ $_ := merge $d (dict \"b\" 2) }}{{ $d }}",
    "{{ set .Options \"x\" \"y\" }}",
    "{{ deepCopy (dict \"a\" (list 1 2)) }} {{ deepEqual (list 1 2) (list 1 2) }} {{ deepEqual (list 1) (list \"1\") }} {{ deepEqual .StatefulSet.Pods (list \"a\") }}",
    "{{ until 5 }} {{ until -3 }} {{ until 0 }} {{ untilStep 0 10 3 }} {{ untilStep 10 0 -4 }} {{ untilStep 0 10 0 }} {{ untilStep 5 1 1 }}",
    "{{ range until 3 }}{{ . }}{{ end }}",
    "{{ typeOf 1 }} {{ typeOf \"a\" }} {{ typeOf (list) }} {{ typeOf (dict) }} {{ typeOf nil }} {{ typeOf 1.5 }} {{ typeOf .StatefulSet.Pods }}",
    "{{ kindOf 1 }} {{ kindOf \"a\" }} {{ kindOf (list) }} {{ kindOf (dict) }} {{ kindOf nil }} {{ kindOf true }} {{ kindOf .Options }}",
    "{{ typeIs \"string\" \"a\" }} {{ typeIsLike \"string\" \"a\" }} {{ kindIs \"slice\" (list) }} {{ kindIs \"map\" 1 }}",
    // numbers, paths, regex, dates, urls, env
    "{{ toDecimal \"0777\" }} {{ toDecimal 10 }} {{ toDecimal \"x\" }} {{ biggest 1 5 3 }} {{ ceil 1.2 }} {{ floor \"1.8\" }} {{ ceil 2 }}",
    "{{ round 3.14159 2 }} {{ round 2.5 0 }} {{ round \"1.25\" 1 }} {{ round 1.4 0 0.3 }} {{ round -1.5 0 }}",
    "{{ base \"a/b/c.txt\" }} {{ base \"/\" }} {{ base \"\" }} {{ dir \"a/b/c\" }} {{ dir \"c\" }} {{ dir \"/a\" }} {{ clean \"a//b/../c/./d/\" }} {{ clean \"../../x\" }} {{ clean \"/../x\" }} {{ ext \"f.tar.gz\" }} {{ ext \"a.b/c\" }} {{ isAbs \"/x\" }} {{ isAbs \"x\" }}",
    "{{ regexMatch \"^[a-z]+-[0-9]+$\" \"pod-12\" }} {{ regexMatch \"(\" \"x\" }} {{ regexFind \"[0-9]+\" \"ab12cd34\" }} {{ regexFindAll \"[0-9]\" \"a1b2c3\" -1 }} {{ regexFindAll \"[0-9]\" \"a1b2c3\" 2 }}",
    "{{ regexReplaceAll \"a(x*)b\" \"-ab-axxb-\" \"${1}W\" }} {{ regexReplaceAll \"a(x*)b\" \"-ab-axxb-\" \"$1W\" }} {{ regexReplaceAllLiteral \"a(x*)b\" \"-ab-axxb-\" \"${1}\" }}",
    "{{ regexSplit \",\" \"a,b,c\" -1 }} {{ regexSplit \",\" \"a,b,c\" 2 }} {{ regexSplit \",\" \"a,b,c\" 0 }} {{ regexSplit \"x*\" \"axbc\" -1 }}",
    "{{ regexFind \"(\" \"x\" }}",
    "{{ now | dateModify \"-1.5h\" | date \"2006-01-02 15:04\" }} {{ now | date_modify \"90m\" | date \"15:04\" }} {{ now | dateModify \"bogus\" | date \"15:04\" }}",
    "{{ htmlDate now }} {{ htmlDateInZone now \"UTC\" }} {{ htmlDate 86400 }}",
    "{{ dateInZone \"2006-01-02 15:04 MST -0700\" now \"America/New_York\" }} {{ dateInZone \"15:04 MST\" now \"Asia/Kolkata\" }} {{ dateInZone \"15:04 MST\" now \"Nowhere/City\" }}",
    "{{ date_in_zone \"2006-01-02 15:04 MST\" (toDate \"2006-01-02\" \"2024-07-01\") \"Europe/Paris\" }}",
    "{{ urlParse \"https://user:pw@example.com:8443/a/b?x=1&y=2#frag\" }}",
    "{{ urlParse \"mailto:joe@example.com\" }} {{ (urlParse \"s3://bucket/prefix/key\").host }} {{ (urlParse \"/just/path\").path }}",
    "{{ urlJoin (dict \"scheme\" \"https\" \"host\" \"h:1\" \"path\" \"/p\" \"query\" \"a=1\" \"fragment\" \"f\" \"userinfo\" \"u:p\") }} {{ urlJoin (urlParse \"http://x.io/y?z#w\") }} {{ urlJoin (dict \"path\" \"a/b\") }}",
    "{{ env \"BPO_SURELY_UNSET_VARIABLE\" }}|{{ expandenv \"a-${BPO_SURELY_UNSET}-$BPO_NOPE-b\" }}|",
    "{{ call nil }}",
    "{{ call \"x\" }}",
    "{{ derivePassword 1 \"long\" \"password\" \"user\" \"example.com\" }}",
    "{{ bcrypt \"x\" }}",
    "{{ genPrivateKey \"dsa\" }}",
    "{{ genPrivateKey \"ed25519\" }}",
    // FIPS stubs and errors
    "{{ bcrypt \"x\" }}",
    "{{ htpasswd \"u\" \"p\" }}",
    "{{ fail \"boom\" }}",
    "{{ nosuchfunc 1 }}",
    "{{ $undefined }}",
    "{{ if }}{{ end }}",
    "{{ end }}",
    "{{ range . }}{{ break }}{{ end }}",
    "{{ break }}",
    "{{ .Options.pitr \"arg\" }}",
    "{{ \"a\" | \"b\" }}",
    "{{ 1 2 }}",
    "{{ nil }}",
    "{{ (1) }} {{ (.StatefulSet).Name }} {{ (list 1 2) }}",
    "{{ .StatefulSet.Name | printf \"%s-%s\" \"x\" }}",
    "{{ \"unclosed",
    "{{ .A.B",
    "{{ template \"x\" }}",
    "plain text only",
    "",
    "{{ 1 | print }}",
    "{{ .Object.metadata.name | print \"n:\" }}",
    "{{ .Phases.nope }}",
    "{{ .Object.spec.nodeSets.x }}",
    "{{ .Object.spec.replicas.x }}",
    "{{ .DeferPhase.Output }}",
    "{{ toJson .DeferPhase }}",
    "{{ with .CurrentPhase }}x{{ else }}none{{ end }}",
    "{{ .Profile.Credential.Type | upper }}",
];

#[derive(Debug)]
struct Outcome {
    ok: bool,
    output: String,
    error: String,
}

#[test]
fn differential_against_go() {
    let Some(corpus) = support::corpus_dir() else {
        return;
    };
    let Some(bin) = support::oracle_binary() else {
        return;
    };
    let templates = support::corpus_templates(&corpus);
    assert!(
        templates.len() > 200,
        "expected the corpus to hold hundreds of templates, found {}",
        templates.len()
    );
    let kinds = ["StatefulSet", "Deployment", "DeploymentConfig"];
    let mut cases: Vec<Value> = Vec::new();
    for kind in kinds {
        let params = support::params(kind, &templates);
        for t in &templates {
            cases.push(json!({"template": t, "params": params, "now": support::NOW}));
        }
    }
    let params = support::params("StatefulSet", &templates);
    for t in CASES {
        cases.push(json!({"template": t, "params": params, "now": support::NOW}));
    }
    // Parameters with a nil Profile and no phases.
    let bare = json!({"Time": support::NOW, "Object": {"metadata": {"name": "x"}}});
    for t in CASES.iter().take(60) {
        cases.push(json!({"template": t, "params": bare, "now": support::NOW}));
    }

    let raw = support::run_oracle(&bin, &cases, &[]);
    let go: Vec<Value> = serde_json::from_slice(&raw).expect("oracle JSON");
    assert_eq!(go.len(), cases.len());

    let now: chrono::DateTime<chrono::Utc> = support::NOW.parse().expect("now");
    let mut failures = Vec::new();
    let mut go_errors = 0;
    for (c, g) in cases.iter().zip(&go) {
        let t = c["template"].as_str().unwrap_or_default();
        let expected = Outcome {
            ok: g["ok"].as_bool().unwrap_or(false),
            output: g["output"].as_str().unwrap_or_default().to_string(),
            error: g["error"].as_str().unwrap_or_default().to_string(),
        };
        if !expected.ok {
            go_errors += 1;
        }
        let got = Template::parse(t).and_then(|tpl| tpl.render_at(&c["params"], now));
        let good = match (&got, expected.ok) {
            (Ok(out), true) => *out == expected.output,
            (Err(e), false) => {
                // A missing map key must be reported with Kanister's text.
                let go_missing = expected.error.contains("map has no entry for key");
                go_missing == matches!(e, TemplateError::MissingKey { .. })
            }
            _ => false,
        };
        if !good {
            failures.push(format!(
                "template: {t:?}\n  go:   {expected:?}\n  rust: {got:?}"
            ));
        }
    }
    let total = cases.len();
    println!(
        "template oracle: {}/{} cases identical to Go ({} corpus templates x {} kinds, {} hand-written; Go errored on {})",
        total - failures.len(),
        total,
        templates.len(),
        kinds.len(),
        CASES.len(),
        go_errors
    );
    if !failures.is_empty() {
        panic!(
            "{} of {} cases differ from Go:\n{}",
            failures.len(),
            total,
            failures.join("\n")
        );
    }
}
