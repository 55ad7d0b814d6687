//! Differential test: our template engine against real Go text/template +
//! sprig v2.22.0 (`tools/template-oracle`), on every template string of the
//! Kanister corpus Blueprints plus hand-written semantic cases.

#[path = "support/template_cases.rs"]
mod support;
// What support/template_cases.rs uses.
#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/go_oracle.rs"]
mod go_oracle;
#[path = "support/prerequisite.rs"]
mod prerequisite;

use blueprint_operator::template::{Template, TemplateError};
use serde_json::{Value, json};
use std::path::Path;

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
    "{{ -9223372036854775808 }} {{ -0x8000000000000000 }} {{ 9223372036854775807 }} {{ add -9223372036854775808 1 }}",
    "{{ -9223372036854775809 }}",
    "{{ 9223372036854775808 }}",
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
    "{{ printf \"%3d|%-4s|%+s|%05s|%3x\" \"ab\" 7 5 true (list 1 \"a\") }}",
    "{{ printf \"%05s|%05v|%05t|%05q|%-05s|%05d|%05s\" \"ab\" \"-a\" true \"a\" \"b\" -3 (list \"a\") }}",
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
    // sprig strings beyond the original subset
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
    // semver (Masterminds/semver v1.5.0) and xstrings case conversions
    "{{ semver \"1.2.3\" }} {{ semver \"v1.2.3-beta.1+c0ff33\" }} {{ semver \"1\" }} {{ semver \"v1.2\" }} {{ semver \"01.002.0003-01\" }}",
    "{{ $s := semver \"v1.2.3-beta.1+c0ff33\" }}{{ $s.Major }}.{{ $s.Minor }}.{{ $s.Patch }}|{{ $s.Prerelease }}|{{ $s.Metadata }}|{{ $s.Original }}|{{ $s.String }}|{{ $s }}",
    "{{ with semver \"1.5\" }}{{ .Minor }}{{ .Original }}{{ end }} {{ (semver \"1.2.3\").Major | add 1 }} {{ eq (semver \"1\").Major 1 }}",
    "{{ semver \"1.2.3\" | (semver \"1.2.3\").Compare }} {{ semver \"1.2.3\" | (semver \"1.3.3\").Compare }} {{ semver \"1.4.3\" | (semver \"1.2.3\").Compare }}",
    "{{ (semver \"1.2.3\").LessThan (semver \"1.2.4\") }} {{ (semver \"1.2.3\").GreaterThan (semver \"1.2.3-rc\") }} {{ (semver \"1.2.3\").Equal (semver \"1.2.3+x\") }}",
    "{{ (semver \"1.2.3-a.10\").Compare (semver \"1.2.3-a.9\") }} {{ (semver \"1.2.3-01\").Compare (semver \"1.2.3-1\") }} {{ (semver \"1.2.3-a\").Compare (semver \"1.2.3-a.0\") }}",
    "{{ (semver \"1.2.3\").IncPatch }} {{ (semver \"v1.2.3-rc\").IncPatch }} {{ (semver \"1.2.3+m\").IncMinor }} {{ (semver \"1.2.3\").IncMajor.IncMinor }}",
    "{{ (semver \"v1.2.3\").SetPrerelease \"rc.1\" }} {{ ((semver \"1.2.3\").SetMetadata \"b.7\").IncMajor }} {{ (semver \"1.2.3-a+b\").SetPrerelease \"\" }}",
    "{{ (semver \"1.2.3\").SetPrerelease \"rc..1\" }}",
    "{{ (semver \"1.2.3\").SetMetadata \"a b\" }}",
    "{{ printf \"%v|%s|%q|%x|%X|%5v|%-7s|%+v\" (semver \"1.2.3\") (semver \"1.2.3\") (semver \"1.2.3\") (semver \"1.2.3\") (semver \"1.2.3\") (semver \"1\") (semver \"1\") (semver \"1\") }}",
    "{{ printf \"%d\" (semver \"1.2.3-a\") }} {{ printf \"%v|%s|%d|%+v|%q|%x|%3d\" (semver \"1.2.3\").IncPatch (semver \"1.2.3\").IncPatch (semver \"1.2.3\").IncPatch (semver \"1.2.3\").IncPatch (semver \"1\").IncPatch (semver \"1\").IncPatch (semver \"1\").IncPatch }}",
    "{{ toJson (semver \"v1.2.3-rc\") }} {{ toJson (semver \"1.2.3\").IncMinor }} {{ toPrettyJson (list (semver \"1\") (semver \"2\").IncPatch) }} {{ (semver \"1.2\").MarshalJSON }}",
    "{{ typeOf (semver \"1\") }} {{ kindOf (semver \"1\") }} {{ typeOf (semver \"1\").IncMajor }} {{ kindOf (semver \"1\").IncMajor }} {{ typeIsLike \"semver.Version\" (semver \"1\") }}",
    "{{ toString (semver \"1.2.3\") }} {{ toString (semver \"1.2.3\").IncPatch }} {{ empty (semver \"1\") }} {{ empty (semver \"1\").IncPatch }} {{ quote (semver \"1\") }} {{ cat (semver \"1\") \"x\" }}",
    "{{ print (semver \"1\") (semver \"2\") }} {{ println (semver \"1\") (semver \"1\").IncPatch }} {{ list (semver \"1\") }} {{ dict \"a\" (semver \"1\") }} {{ if semver \"0\" }}t{{ end }}",
    "{{ $v := semver \"1.2.3\" }}{{ eq $v $v }} {{ eq (semver \"1\") (semver \"1\") }} {{ eq (semver \"1\").IncPatch (semver \"1\").IncPatch }} {{ ne $v (semver \"1.2.3\") }}",
    "{{ deepEqual (semver \"1\") (semver \"1\") }} {{ deepEqual (semver \"1\") (semver \"1.0.0\") }} {{ default \"d\" (semver \"1\") }} {{ coalesce (semver \"1\") }} {{ deepCopy (semver \"1.2.3\") }}",
    "{{ semver \"1.2.x\" }}",
    "{{ semver \"\" }}",
    "{{ semver \"1.2.x.y\" }}",
    "{{ semver \"99999999999999999999\" }}",
    "{{ semver \"1.9223372036854775808\" }}",
    "{{ semver \"9223372036854775807\" }} {{ (semver \"9223372036854775807\").IncMajor.IncPatch }}",
    "{{ semver 1 }}",
    "{{ semver }}",
    "{{ (semver \"1.2.3\").IncPatch.Major }}",
    "{{ (semver \"1.2.3\").major }}",
    "{{ (semver \"1.2.3\").Nope }}",
    "{{ (semver \"1.2.3\").Major 1 }}",
    "{{ (semver \"1.2.3\").Compare }}",
    "{{ (semver \"1.2.3\").Compare \"1.2.3\" }}",
    "{{ (semver \"1.2.3\").Compare nil }}",
    "{{ (semver \"1.2.3\").Compare (semver \"1.2.3\").IncPatch }}",
    "{{ (semver \"1.2.3\").String.x }}",
    "{{ eq (semver \"1\") 1 }}",
    "{{ lt (semver \"1\") (semver \"2\") }}",
    "{{ len (semver \"1\") }}",
    "{{ index (semver \"1\") 0 }}",
    "{{ range semver \"1\" }}{{ end }}",
    "{{ semverCompare \"1.2.3\" \"1.2.3\" }} {{ semverCompare \"^1.2.0\" \"1.2.3\" }} {{ semverCompare \"^1.2.0\" \"2.2.3\" }} {{ semverCompare \">= 1.2, < 2.0\" \"1.9.9\" }} {{ semverCompare \"<1.2.0 || >=2.0\" \"2.1.0\" }}",
    "{{ semverCompare \"1.2.3 - 1.4.5\" \"1.4.5\" }} {{ semverCompare \"1.2.3 - 1.4.5\" \"1.4.6\" }} {{ semverCompare \"1.2 - 1.4\" \"1.4.9\" }} {{ semverCompare \"1 - 2||3\" \"3.0.0\" }} {{ semverCompare \"1 -2\" \"1.0.0\" }}",
    "{{ semverCompare \"~1.2.3\" \"1.2.9\" }} {{ semverCompare \"~1.2.3\" \"1.3.0\" }} {{ semverCompare \"~1\" \"1.9.0\" }} {{ semverCompare \"~>1.2\" \"1.2.5\" }} {{ semverCompare \"~0.0.0\" \"0.0.1\" }} {{ semverCompare \"~0\" \"1.0.0\" }}",
    "{{ semverCompare \"^1.2.3\" \"1.9.0\" }} {{ semverCompare \"^0.2.3\" \"0.9.0\" }} {{ semverCompare \"^0.2.3\" \"1.0.0\" }} {{ semverCompare \"^*\" \"3.0.0\" }} {{ semverCompare \"^1.x\" \"1.0.0\" }}",
    "{{ semverCompare \"1.2.x\" \"1.2.7\" }} {{ semverCompare \"1.2.X\" \"1.3.0\" }} {{ semverCompare \"*\" \"42.0.0\" }} {{ semverCompare \"x\" \"0.0.0\" }} {{ semverCompare \"1.*\" \"1.99.0\" }} {{ semverCompare \"1.x.x\" \"1.2.3\" }}",
    "{{ semverCompare \"=1.2\" \"1.2.0\" }} {{ semverCompare \"=1.2\" \"1.2.1\" }} {{ semverCompare \"1\" \"1.5.0\" }} {{ semverCompare \"v1.2.3\" \"1.2.3\" }} {{ semverCompare \"1.2.3+meta\" \"1.2.3\" }}",
    "{{ semverCompare \"!=1.x\" \"2.0.0\" }} {{ semverCompare \"!=1.x\" \"1.5.0\" }} {{ semverCompare \"!=1.2.3\" \"1.2.3-rc\" }} {{ semverCompare \"!=1.2.x\" \"1.2.3-rc\" }} {{ semverCompare \"!=1.2\" \"1.2.0\" }}",
    "{{ semverCompare \"<2.x\" \"2.5.0\" }} {{ semverCompare \"<=1.2.x\" \"1.3.0\" }} {{ semverCompare \"<1.2\" \"1.1.9\" }} {{ semverCompare \">1.x\" \"1.5.0\" }} {{ semverCompare \"=<1.0\" \"0.9.0\" }} {{ semverCompare \" =>  1.0 \" \"1.0.0\" }}",
    "{{ semverCompare \">=1.0.0\" \"1.5.0-beta\" }} {{ semverCompare \">=1.0.0-0\" \"1.5.0-beta\" }} {{ semverCompare \">1.0.0-alpha\" \"1.0.0-beta\" }} {{ semverCompare \"~1.2.3-0\" \"1.2.3-rc.1\" }} {{ semverCompare \"^1.0.0-rc\" \"1.0.0\" }}",
    "{{ semverCompare \">=1.0\" \"v1.0.0+build\" }} {{ semverCompare \">1.0,<1.0\" \"1.0.0\" }} {{ semverCompare \"1.0||2.0||3.0\" \"3.0.0\" }} {{ semverCompare \"\\t>=1\\n\" \"1.0.0\" }}",
    "{{ semverCompare \">=\" \"1.0.0\" }}",
    "{{ semverCompare \"\" \"1.0.0\" }}",
    "{{ semverCompare \">=1.0,\" \"1.0.0\" }}",
    "{{ semverCompare \">=1.0 || \" \"1.0.0\" }}",
    "{{ semverCompare \">=1.0x\" \"1.0.0\" }}",
    "{{ semverCompare \">=1|2\" \"1.0.0\" }}",
    "{{ semverCompare \">=99999999999999999999\" \"1.0.0\" }}",
    "{{ semverCompare \">=1.0 - 2.0\" \"1.0.0\" }}",
    "{{ semverCompare \">= 1.0\" \"1.x\" }}",
    "{{ semverCompare \"1.0\" \"\" }}",
    "{{ semverCompare \"> =1.0\" \"1.0.0\" }}",
    "{{ semverCompare \">=1.0\" }}",
    "{{ semverCompare 1 \"1.0.0\" }}",
    "{{ snakecase \"FirstName\" }} {{ snakecase \"HTTPServer\" }} {{ snakecase \"NoHTTPS\" }} {{ snakecase \"GO_PATH\" }} {{ snakecase \"GO PATH\" }} {{ snakecase \"GO-PATH\" }}",
    "{{ snakecase \"http2xx\" }} {{ snakecase \"HTTP20xOK\" }} {{ snakecase \"Duration2m3s\" }} {{ snakecase \"Bld4Floor3rd\" }} {{ snakecase \"a1\" }} {{ snakecase \"1a\" }} {{ snakecase \"A1B\" }}",
    "[{{ snakecase \"\" }}] [{{ snakecase \"_\" }}] [{{ snakecase \"__a__b__\" }}] [{{ snakecase \" a  b \" }}] [{{ snakecase \"a.b!c\" }}] [{{ snakecase \"a$b+c\" }}] [{{ snakecase \"ABC\" }}] [{{ snakecase \"aBC\" }}]",
    "[{{ snakecase \"ÉcoleNormale\" }}] [{{ snakecase \"straßeÜber\" }}] [{{ snakecase \"日本語Text\" }}] [{{ snakecase \"ǅemal\" }}] [{{ snakecase \"ⅫRoman²\" }}] [{{ snakecase \"\\u00a0x\\u3000Y\" }}] [{{ snakecase \"x\\uFFFDY\" }}]",
    "[{{ kebabcase \"FirstName\" }}] [{{ kebabcase \"HTTPServer\" }}] [{{ kebabcase \"my_pvc-Name 2\" }}] [{{ kebabcase \"HTTP20xOK\" }}] [{{ kebabcase \"--x--\" }}] [{{ kebabcase \"a-_-b\" }}] [{{ kebabcase .StatefulSet.Name }}]",
    "[{{ camelcase \"http_server\" }}] [{{ camelcase \"_camel_case\" }}] [{{ camelcase \"no_https\" }}] [{{ camelcase \"_complex__case_\" }}] [{{ camelcase \"all\" }}] [{{ camelcase \"GOLANG_IS_GREAT\" }}]",
    "[{{ camelcase \"\" }}] [{{ camelcase \"_\" }}] [{{ camelcase \"A\" }}] [{{ camelcase \"some words\" }}] [{{ camelcase \"HTTPServer\" }}] [{{ camelcase \"a--b\" }}] [{{ camelcase \"x-1y\" }}] [{{ camelcase \"my-statefulset\" }}]",
    "[{{ camelcase \"ÉCOLE_normale\" }}] [{{ camelcase \"straße_über\" }}] [{{ camelcase \"a_ß\" }}] [{{ camelcase \"a_ᾳ\" }}] [{{ camelcase \"İ_x\" }}] [{{ camelcase \"a_ǆ\" }}] [{{ camelcase \"日本_語\" }}]",
    "{{ snakecase 1 }}",
    "{{ camelcase nil }}",
    "{{ kebabcase \"a\" \"b\" }}",
    "{{ .StatefulSet.Name | snakecase | camelcase | kebabcase }}",
    // sprig crypto: random outputs are checked by crypto_functions_interoperate_with_go;
    // these outcomes are deterministic.
    "{{ encryptAES \"k\" \"\" }}|{{ decryptAES \"k\" \"\" }}",
    "{{ decryptAES \"secret\" \"uyML9axRBb88SxlECkaAqqbOUDnO7kWbTQzDy27q+xM=\" }}",
    "{{ decryptAES \"k\" \"!!\" }}",
    "{{ decryptAES \"k\" \"YQ==\" }}",
    "{{ decryptAES \"k\" \"AAAAAAAAAAAAAAAAAAAAAA==\" }}",
    "{{ decryptAES \"k\" \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\" }}",
    "{{ typeOf (genCA \"x\" 1) }} {{ len (genSelfSignedCert \"x\" nil nil 1).Key | lt 1000 }}",
    "{{ (genCA \"x\" 1).Nope }}",
    "{{ genSelfSignedCert \"x\" (list 1) nil 1 }}",
    "{{ genSelfSignedCert \"x\" (list \"bad\") nil 1 }}",
    "{{ genSelfSignedCert \"x\" nil (list \"日本\") 1 }}",
    "{{ genSelfSignedCert \"x\" .StatefulSet.Pods nil 1 }}",
    "{{ genSignedCert \"x\" nil nil 1 \"notacert\" }}",
    "{{ buildCustomCert \"!\" \"x\" }}",
    "{{ buildCustomCert \"eA==\" \"eA==\" }}",
    "{{ genPrivateKey \"\" }}",
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

/// Render every case with Go and with us. Returns the differences and how
/// many cases Go failed. Errors match when both fail (and a missing map key
/// is reported as one); with `error_text`, the text after "error calling
/// <function>: " must match too.
fn compare_with_go(bin: &Path, cases: &[Value], error_text: bool) -> (Vec<String>, usize) {
    let raw = support::run_oracle(bin, cases, &[]);
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
                let call_error = expected.error.rfind("error calling ");
                let same_text = match call_error {
                    Some(i) if error_text => e.to_string().ends_with(&expected.error[i..]),
                    _ => true,
                };
                same_text && go_missing == matches!(e, TemplateError::MissingKey { .. })
            }
            _ => false,
        };
        if !good {
            failures.push(format!(
                "template: {t:?}\n  go:   {expected:?}\n  rust: {got:?}"
            ));
        }
    }
    (failures, go_errors)
}

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

    let (failures, go_errors) = compare_with_go(&bin, &cases, false);
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

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }

    /// Up to `max` pieces from `from`, concatenated.
    fn string(&mut self, from: &[&str], max: usize) -> String {
        (0..self.below(max + 1)).map(|_| self.pick(from)).collect()
    }
}

/// A Go template string literal.
fn go_literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Letters of every case and script, digits (also non-ASCII and `Nl`/`No`),
/// connectors, punctuation and symbols, CJK, U+FFFD and characters whose
/// case mapping is special (ß, İ, ǅ, ᾳ).
const CASE_PIECES: &[&str] = &[
    "a", "b", "z", "A", "B", "Z", "HTTP", "Id", "1", "9", "42", "_", "-", " ", "  ", "\t", ".",
    "!", "$", "+", "é", "É", "ß", "İ", "ǅ", "Ⅻ", "²", "٣", "中", "ア", "\u{FFFD}", "ᾳ", "Σ", "ς",
    "Ⓐ", "¿", "·", "\u{a0}", "\u{3000}", "ǆ", "Ǆ", "ﬀ", "ŉ", "Ω", "ǰ", "ᾀ", "ῳ", "ᾼ",
];

/// Constraint and version pieces: every operator, wildcard and separator.
const OPS: &[&str] = &[
    "", "=", "!=", ">", "<", ">=", "=>", "<=", "=<", "~", "~>", "^", " ", "> ",
];
const NUMS: &[&str] = &["0", "1", "2", "10", "01", "3", "x", "X", "*"];
const PRE: &[&str] = &["-alpha", "-0", "-1.2", "-beta.1", "-01", "-a-b", "-10.x"];
const META: &[&str] = &["+build", "+1.x", "+01"];
const JOIN: &[&str] = &[",", ", ", " || ", "||", " - ", ","];
/// Rarely inserted, to reach every error path.
const BROKEN: &[&str] = &[
    "",
    "3x",
    "-",
    "+",
    ".",
    "|",
    "99999999999999999999",
    " -",
    ", ,",
];

fn gen_version(r: &mut Rng, wildcards: bool) -> String {
    let num = |r: &mut Rng| {
        if r.below(30) == 0 {
            return r.pick(BROKEN);
        }
        // The first six are numbers, the rest wildcards.
        r.pick(if wildcards { NUMS } else { &NUMS[..6] })
    };
    let mut v = String::from(if r.below(8) == 0 { "v" } else { "" });
    v.push_str(num(r));
    let dots = if r.below(20) == 0 { 3 } else { r.below(3) };
    for _ in 0..dots {
        v.push('.');
        v.push_str(num(r));
    }
    if r.below(3) == 0 {
        v.push_str(r.pick(PRE));
    }
    if r.below(5) == 0 {
        v.push_str(r.pick(META));
    }
    v
}

#[test]
fn semver_and_case_functions_match_go_on_generated_inputs() {
    let Some(bin) = support::oracle_binary() else {
        return;
    };
    let params = json!({"Object": {"metadata": {"name": "x"}}});
    let mut r = Rng(0x5eed_1234_abcd_0042);
    let mut cases = Vec::new();
    let mut case =
        |t: String| cases.push(json!({"template": t, "params": params, "now": support::NOW}));
    for _ in 0..1500 {
        let x = go_literal(&r.string(CASE_PIECES, 8));
        case(format!(
            "[{{{{ snakecase {x} }}}}] [{{{{ camelcase {x} }}}}] [{{{{ kebabcase {x} }}}}]"
        ));
    }
    for _ in 0..1500 {
        let mut c = String::new();
        for i in 0..=r.below(3) {
            if i > 0 {
                c.push_str(if r.below(20) == 0 {
                    r.pick(BROKEN)
                } else {
                    r.pick(JOIN)
                });
            }
            c.push_str(r.pick(OPS));
            c.push_str(&gen_version(&mut r, true));
        }
        let v = gen_version(&mut r, false);
        case(format!(
            "{{{{ semverCompare {} {} }}}}",
            go_literal(&c),
            go_literal(&v)
        ));
    }
    for _ in 0..500 {
        let (a, b) = (gen_version(&mut r, false), gen_version(&mut r, false));
        case(format!(
            "{{{{ $a := semver {} }}}}{{{{ $b := semver {} }}}}{{{{ $a.Compare $b }}}} {{{{ $a }}}} {{{{ $a.IncPatch }}}} {{{{ $b.Original }}}} {{{{ $a.LessThan $b }}}}",
            go_literal(&a),
            go_literal(&b)
        ));
    }
    let total = cases.len();
    let (failures, go_errors) = compare_with_go(&bin, &cases, true);
    println!(
        "generated semver/case inputs: {}/{total} identical to Go (Go errored on {go_errors})",
        total - failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} generated cases differ from Go:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The generator must reach both outcomes.
    assert!(
        go_errors > 200 && go_errors < total - 1000,
        "Go errored on {go_errors}"
    );
}

/// `encryptAES`/`decryptAES` and the certificate functions against real Go:
/// their outputs are random, so each side decrypts, parses and signs with
/// what the other produced, and webpki checks the resulting chains.
#[test]
fn crypto_functions_interoperate_with_go() {
    use base64::Engine;
    let Some(bin) = support::oracle_binary() else {
        return;
    };
    // Go's certificates start at time.Now(): render ours at the same clock.
    let now = chrono::Utc::now();
    let ours = |t: &str| {
        Template::parse(t)
            .and_then(|x| x.render_at(&json!({}), now))
            .unwrap_or_else(|e| panic!("{t}: {e}"))
    };
    let go = |templates: &[String]| -> Vec<String> {
        let cases: Vec<Value> = templates.iter().map(|t| json!({ "template": t })).collect();
        let out: Vec<Value> =
            serde_json::from_slice(&support::run_oracle(&bin, &cases, &[])).expect("oracle JSON");
        out.iter()
            .zip(templates)
            .map(|(r, t)| match r["output"].as_str() {
                Some(o) if r["ok"] == true => o.to_string(),
                _ => panic!("Go failed on {t}: {}", r["error"]),
            })
            .collect()
    };
    let b64 = |x: &str| base64::engine::general_purpose::STANDARD.encode(x);

    let texts = ["a", "sixteen bytes!!!", &"héllo 日本 ".repeat(20)];
    let ours_encrypted: Vec<String> = texts
        .iter()
        .map(|x| {
            format!(
                "{{{{ decryptAES \"pw\" {:?} }}}}",
                ours(&format!("{{{{ encryptAES \"pw\" {x:?} }}}}"))
            )
        })
        .collect();
    assert_eq!(go(&ours_encrypted), texts, "Go decrypts ours");
    let go_encrypted: Vec<String> = texts
        .iter()
        .map(|x| format!("{{{{ encryptAES \"pw\" {x:?} }}}}"))
        .collect();
    for (c, x) in go(&go_encrypted).iter().zip(texts) {
        assert_eq!(
            ours(&format!("{{{{ decryptAES \"pw\" {c:?} }}}}")),
            x,
            "we decrypt Go's"
        );
    }

    let cert_and_key = "{{ $c.Cert }}|{{ $c.Key }}";
    let split = |x: &str| {
        let (c, k) = x.split_once('|').expect("cert|key");
        (c.to_string(), k.to_string())
    };
    let leaf = |who: &str, ca: &(String, String)| {
        format!(
            "{{{{ $c := genSignedCert \"{who}-leaf\" (list \"127.0.0.1\") (list \"{who}.example\") 10 (buildCustomCert {:?} {:?}) }}}}{cert_and_key}",
            b64(&ca.0),
            b64(&ca.1)
        )
    };
    let our_ca = split(&ours(&format!(
        "{{{{ $c := genCA \"our-ca\" 10 }}}}{cert_and_key}"
    )));
    let our_key = ours("{{ genPrivateKey \"rsa\" }}");
    let go_out = go(&[
        format!("{{{{ $c := genCA \"go-ca\" 10 }}}}{cert_and_key}"),
        leaf("go", &our_ca),
        // Go parses our 4096-bit PKCS#1 key (buildCustomCert does not pair cert and key).
        format!(
            "{{{{ (buildCustomCert {:?} {:?}).Key }}}}",
            b64(&our_ca.0),
            b64(&our_key)
        ),
        "{{ genPrivateKey \"rsa\" }}".to_string(),
    ]);
    let go_ca = split(&go_out[0]);
    assert_eq!(go_out[2], our_key);
    // We parse Go's RSA key the same way.
    ours(&format!(
        "{{{{ buildCustomCert {:?} {:?} }}}}",
        b64(&go_ca.0),
        b64(&go_out[3])
    ));

    let go_leaf = split(&go_out[1]);
    let our_leaf = split(&ours(&leaf("our", &go_ca)));
    verify_chain(&our_ca.0, &go_leaf.0, "go.example");
    verify_chain(&go_ca.0, &our_leaf.0, "our.example");
}

/// `leaf_pem` chains to `ca_pem` as a TLS server certificate for `dns` and 127.0.0.1.
fn verify_chain(ca_pem: &str, leaf_pem: &str, dns: &str) {
    use base64::Engine;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    let der = |pem: &str| -> CertificateDer<'static> {
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        base64::engine::general_purpose::STANDARD
            .decode(body)
            .expect("PEM base64")
            .into()
    };
    let (ca, leaf) = (der(ca_pem), der(leaf_pem));
    let anchors = [webpki::anchor_from_trusted_cert(&ca).expect("CA certificate")];
    let ee = webpki::EndEntityCert::try_from(&leaf).expect("leaf certificate");
    ee.verify_for_usage(
        &[webpki::ring::RSA_PKCS1_2048_8192_SHA256],
        &anchors,
        &[],
        UnixTime::now(),
        webpki::KeyUsage::server_auth(),
        None,
        None,
    )
    .unwrap_or_else(|e| panic!("{leaf_pem} does not chain to {ca_pem}: {e:?}"));
    for name in [dns, "127.0.0.1"] {
        let name = ServerName::try_from(name).expect("server name");
        ee.verify_is_valid_for_subject_name(&name)
            .unwrap_or_else(|e| panic!("{leaf_pem} is not valid for {name:?}: {e:?}"));
    }
}
