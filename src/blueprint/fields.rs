//! Template field paths checked against Kanister's parameter types
//! ([`crate::param`]): Kanister renders with `missingkey=error` over typed Go
//! structs, so a misspelt field, a field of a nil workload pointer or an
//! undeclared artifact fails the phase at run time, after the application
//! may have been quiesced. Only the decision lives here; the validator
//! locates and reports it.

use serde_json::{Map, Value};

use super::suggest;
use crate::param::{self, Field, Ty};

/// What an action declares that decides which field paths resolve, borrowed from the
/// Blueprint (built for every action of every review: nothing copied).
#[derive(Debug, Default)]
pub struct Scope<'a> {
    /// `kind`, when the action declares one (Kanister does not enforce it,
    /// but an ActionSet on another kind is not what the author wrote for).
    kind: Option<&'a str>,
    input_artifacts: Option<Vec<&'a str>>,
    config_maps: Option<Vec<&'a str>>,
    secrets: Option<Vec<&'a str>>,
    /// Each main phase's `objects`, by phase name.
    objects: Vec<(&'a str, Objects<'a>)>,
    /// The deferPhase's name and `objects`.
    defer: Option<(&'a str, Objects<'a>)>,
}

/// A phase's `objects` keys, by the kind Kanister fetches them as.
#[derive(Debug, Default)]
struct Objects<'a> {
    secrets: Vec<&'a str>,
    config_maps: Vec<&'a str>,
    /// Some object's kind is not a plain string (a template): keys unchecked.
    unknown_kind: bool,
}

/// A finding about one path: an error fails every run, a warning fails the
/// runs whose ActionSet does not supply what is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    Error(String),
    Warning(String),
    /// A field of this workload parameter in an action that declares no
    /// kind: said once per action ([`no_kind_message`]), not at every template.
    NoKind(&'static str),
    /// A field of workload parameter `.0` in an action that declares another kind: an error,
    /// unless the template tests `.0` itself first (`{{ if .Deployment }}`), which Go skips.
    WrongKind(&'static str, String),
}

fn names(v: Option<&Value>) -> Option<Vec<&str>> {
    let list = v?.as_array()?;
    Some(list.iter().filter_map(Value::as_str).collect())
}

impl<'a> Scope<'a> {
    /// The scope of one action of a Blueprint (any JSON shape: what is not
    /// shaped as Kanister's types is left unchecked).
    pub fn of(action: &'a Map<String, Value>) -> Scope<'a> {
        let phases = action.get("phases").and_then(Value::as_array);
        let defer = action.get("deferPhase").filter(|d| d.is_object());
        Scope {
            kind: action
                .get("kind")
                .and_then(Value::as_str)
                .filter(|k| !k.is_empty()),
            input_artifacts: names(action.get("inputArtifactNames")),
            config_maps: names(action.get("configMapNames")),
            secrets: names(action.get("secretNames")),
            objects: phases.into_iter().flatten().map(objects_of).collect(),
            defer: defer.map(objects_of),
        }
    }
}

/// A phase's name and `objects`.
fn objects_of(phase: &Value) -> (&str, Objects<'_>) {
    let name = phase
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut o = Objects::default();
    for (key, obj) in phase
        .get("objects")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        match obj.get("kind").and_then(Value::as_str) {
            Some(k) if k.eq_ignore_ascii_case("secret") => o.secrets.push(key),
            Some(k) if k.eq_ignore_ascii_case("configmap") => o.config_maps.push(key),
            Some(k) if !k.contains("{{") => {}
            _ => o.unknown_kind = true,
        }
    }
    (name, o)
}

/// The template parameter Kanister fills for an ActionSet object of `kind`
/// (its `param.New` switch), `None` for any other kind.
fn parameter_of_kind(kind: &str) -> Option<&'static str> {
    Some(match kind.to_ascii_lowercase().as_str() {
        "statefulset" => param::STATEFUL_SET,
        "deployment" => param::DEPLOYMENT,
        "deploymentconfig" => param::DEPLOYMENT_CONFIG,
        "pvc" => param::PVC,
        "namespace" => param::NAMESPACE,
        _ => return None,
    })
}

/// The `kind` that fills template parameter `top`, as Kanister spells it.
fn kind_of_parameter(top: &str) -> Option<&'static str> {
    Some(match top {
        param::STATEFUL_SET => "StatefulSet",
        param::DEPLOYMENT => "Deployment",
        param::DEPLOYMENT_CONFIG => "DeploymentConfig",
        param::PVC => "pvc",
        param::NAMESPACE => "Namespace",
        _ => return None,
    })
}

/// Kubernetes API types are modelled with the fields Blueprints use, not all
/// of Go's (TypeMeta, most of ObjectMeta, methods): other names are not
/// known to fail.
fn partially_modelled(type_name: &str) -> bool {
    type_name.starts_with("v1.")
}

/// Field `name` of a struct, promoted fields of embedded structs included
/// (Go templates read `.Name` of a Secret through its ObjectMeta).
fn lookup<'t>(fields: &'t [Field], name: &str) -> Option<&'t Field> {
    fields.iter().find(|f| f.name == name).or_else(|| {
        fields
            .iter()
            .filter(|f| f.embedded)
            .find_map(|f| lookup(f.ty.as_struct()?.1, name))
    })
}

/// Every name a template can read on a struct, promoted ones included.
fn field_names(fields: &[Field], out: &mut Vec<&'static str>) {
    for f in fields {
        if f.embedded
            && let Some((_, inner)) = f.ty.as_struct()
        {
            field_names(inner, out);
        }
        out.push(f.name);
    }
}

/// The Go type name templates report for a value of `ty`.
fn go_type(ty: &Ty) -> String {
    match ty {
        Ty::Str => "string".into(),
        Ty::Bool => "bool".into(),
        Ty::Int => "int".into(),
        Ty::Bytes => "[]uint8".into(),
        Ty::Any => "interface {}".into(),
        Ty::Slice(_, n) | Ty::Map(_, n) => (*n).into(),
        Ty::Ptr(inner) => format!("*{}", go_type(inner)),
        Ty::Struct(n, _) => (*n).into(),
    }
}

/// Which of the action's declared name lists a map key of `top` must be in.
fn declared<'s, 'a>(
    scope: &'s Scope<'a>,
    top: &str,
) -> Option<(&'s Option<Vec<&'a str>>, &'static str)> {
    Some(match top {
        param::ARTIFACTS_IN => (&scope.input_artifacts, "inputArtifactNames"),
        param::CONFIG_MAPS => (&scope.config_maps, "configMapNames"),
        param::SECRETS => (&scope.secrets, "secretNames"),
        _ => return None,
    })
}

/// The names of field path `path` (`.Profile.Location.Bucket`): `Profile`, `Location`, `Bucket`.
/// Split with a predicate: a `char` pattern's searcher calls `memchr` and `memcmp` for each
/// name, more than these short paths take to scan.
pub fn path_names(path: &str) -> impl Iterator<Item = &str> {
    path.trim_start_matches('.').split(is_dot)
}

fn is_dot(c: char) -> bool {
    c == '.'
}

/// What is wrong with field path `path` (`.Profile.Location.Bucket`) in a
/// template of the action of `scope`, if anything. Paths under untyped JSON
/// (`.Object`, `.Options` values, phase `Output`, `.PodOverride`) are not
/// checked past the untyped value.
pub fn check(path: &str, scope: &Scope<'_>) -> Option<Finding> {
    let names = path.trim_start_matches('.');
    // The first three names (a map key at the fourth may name a phase's object), and where
    // the current one starts.
    let (mut head, mut at) = ([""; 3], 0);
    let mut ty = param::template_params();
    // What the action's declarations say is kept while the walk goes on: a misspelt field
    // further along is the more useful report.
    let mut pending = None;
    for (i, seg) in names.split(is_dot).enumerate() {
        if let Some(h) = head.get_mut(i) {
            *h = seg;
        }
        let (top, start) = (head[0], at);
        at += seg.len() + 1;
        let so_far = || format!(".{}", &names[..start.max(1) - 1]);
        match ty {
            Ty::Ptr(_) | Ty::Struct(..) => {
                let (type_name, fields) = ty.as_struct()?;
                let Some(field) = lookup(fields, seg) else {
                    let mut known = Vec::new();
                    field_names(fields, &mut known);
                    let hint = suggest::hint(seg, known.iter().copied());
                    if partially_modelled(type_name) {
                        // A near miss of a modelled field is most likely a typo.
                        let typo = (!hint.is_empty()).then(|| {
                            Finding::Warning(format!(
                                "{path}: {type_name} has no field {seg}{hint} among those Blueprints use ({})",
                                known.join(", ")
                            ))
                        });
                        return worse(pending, typo);
                    }
                    // The top level is reported by the parameter-name check.
                    return (i > 0).then(|| {
                        Finding::Error(format!(
                            "{path}: {type_name} has no field {seg}{hint}; its fields are {}",
                            known.join(", ")
                        ))
                    });
                };
                if i == 0 && names.contains(is_dot) {
                    pending = worse(pending, kind_rule(field.name, scope));
                }
                ty = &field.ty;
            }
            Ty::Map(elem, _) => {
                match (i, head) {
                    (1, _) => pending = worse(pending, undeclared(top, seg, scope)),
                    (3, [param::PHASES, phase, which]) => {
                        let objects = scope.objects.iter().find(|(n, _)| *n == phase);
                        let at = (param::PHASES, Some(phase));
                        if let Some(e) = objects.and_then(|o| missing_object(at, o, which, seg)) {
                            return Some(e);
                        }
                    }
                    (2, [param::DEFER_PHASE, which, _]) => {
                        let at = (param::DEFER_PHASE, None);
                        let defer = scope.defer.as_ref();
                        if let Some(e) = defer.and_then(|o| missing_object(at, o, which, seg)) {
                            return Some(e);
                        }
                    }
                    _ => {}
                }
                ty = elem;
            }
            Ty::Any => break,
            scalar => {
                return Some(Finding::Error(format!(
                    "{path}: {} has type {}, which has no field {seg}",
                    so_far(),
                    go_type(scalar)
                )));
            }
        }
    }
    pending
}

/// The error if either is one, else the first warning.
fn worse(a: Option<Finding>, b: Option<Finding>) -> Option<Finding> {
    match (a, b) {
        (a @ Some(Finding::Error(_) | Finding::WrongKind(..)), _) => a,
        (_, b @ Some(Finding::Error(_) | Finding::WrongKind(..))) => b,
        (a, b) => a.or(b),
    }
}

/// A path through the workload parameter `top` (`.Deployment.Name`): nil
/// unless the ActionSet's object is of its kind.
fn kind_rule(top: &'static str, scope: &Scope<'_>) -> Option<Finding> {
    let wanted = kind_of_parameter(top)?;
    match scope.kind {
        Some(kind) if parameter_of_kind(kind) == Some(top) => None,
        Some(kind) => {
            let instead = parameter_of_kind(kind)
                .map(|p| format!("; this action's object is .{p}"))
                .unwrap_or_default();
            Some(Finding::WrongKind(
                top,
                format!(
                    ".{top}: the action declares kind: {kind}, so .{top} is nil and reading its fields fails (Kanister sets it only for an ActionSet object of kind {wanted}){instead}"
                ),
            ))
        }
        None => Some(Finding::NoKind(top)),
    }
}

/// The warning for [`Finding::NoKind`].
pub fn no_kind_message(top: &str) -> String {
    let wanted = kind_of_parameter(top).unwrap_or(top);
    format!(
        ".{top}: the action declares no kind, so .{top} is nil and reading its fields fails unless the ActionSet's object is a {wanted}: declare kind: {wanted} on the action (said once per action)"
    )
}

/// `.ArtifactsIn.<name>` (and `.ConfigMaps`, `.Secrets`) that the action does
/// not declare: the ActionSet may still supply it.
fn undeclared(top: &str, name: &str, scope: &Scope<'_>) -> Option<Finding> {
    let (list, field) = declared(scope, top)?;
    let list = list.as_deref().unwrap_or_default();
    if list.contains(&name) {
        return None;
    }
    let hint = suggest::hint(name, list.iter().copied());
    let has = if list.is_empty() {
        "declares none".to_owned()
    } else {
        format!("declares {}", list.join(", "))
    };
    Some(Finding::Warning(format!(
        ".{top}.{name}: {name} is not in the action's {field} ({has}){hint}: every ActionSet that does not supply it fails this phase; add it to {field}"
    )))
}

/// `.Phases.<phase>.Secrets.<key>` (or `.ConfigMaps`, or the deferPhase's at
/// `.DeferPhase`) when that phase's `objects` have no such key: Kanister
/// fetched only the ones listed. `at` is the parameter and the phase name in the path.
fn missing_object(
    at: (&str, Option<&str>),
    (phase, objects): &(&str, Objects<'_>),
    which: &str,
    key: &str,
) -> Option<Finding> {
    let (keys, kind) = match which {
        param::SECRETS => (&objects.secrets, "Secret"),
        param::CONFIG_MAPS => (&objects.config_maps, "ConfigMap"),
        _ => return None,
    };
    if objects.unknown_kind || keys.contains(&key) {
        return None;
    }
    let hint = suggest::hint(key, keys.iter().copied());
    let has = if keys.is_empty() {
        format!("none of kind {kind}")
    } else {
        keys.join(", ")
    };
    let at = match at {
        (top, Some(name)) => format!(".{top}.{name}"),
        (top, None) => format!(".{top}"),
    };
    Some(Finding::Error(format!(
        "{at}.{which}.{key}: phase {phase}'s objects have no {kind} {key}{hint} (they have {has}); add it to the phase's objects"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A scope of `action` (leaked: a scope borrows its action, and a test makes few).
    fn scope(action: Value) -> Scope<'static> {
        Scope::of(Box::leak(Box::new(action)).as_object().unwrap())
    }

    fn error(path: &str, s: &Scope<'_>) -> String {
        match check(path, s) {
            Some(Finding::Error(e) | Finding::WrongKind(_, e)) => e,
            other => panic!("{path}: expected an error, got {other:?}"),
        }
    }

    fn warning(path: &str, s: &Scope<'_>) -> String {
        match check(path, s) {
            Some(Finding::Warning(w)) => w,
            other => panic!("{path}: expected a warning, got {other:?}"),
        }
    }

    fn sts() -> Scope<'static> {
        scope(json!({
            "kind": "StatefulSet",
            "inputArtifactNames": ["backup"],
            "secretNames": ["creds"],
            "phases": [
                {"name": "dump", "objects": {"pg": {"kind": "Secret", "name": "pg"}, "cfg": {"kind": "configmap", "name": "c"}}},
                {"name": "tpl", "objects": {"x": {"kind": "{{ .Options.kind }}", "name": "x"}}},
            ],
        }))
    }

    #[test]
    fn paths_kanister_renders_pass() {
        let s = sts();
        for p in [
            ".StatefulSet.Name",
            ".StatefulSet.Pods",
            ".StatefulSet.PersistentVolumeClaims.pod-0.data",
            ".Profile.Location.Bucket",
            ".Profile.Credential.KeyPair.ID",
            ".Profile.Credential.Secret.Data.aws_access_key_id",
            ".Profile.Credential.Secret.Name",
            ".ArtifactsIn.backup.KeyValue.path",
            ".Secrets.creds.Data.password",
            ".Phases.dump.Secrets.pg.Data.password",
            ".Phases.dump.ConfigMaps.cfg.Data.k",
            ".Phases.tpl.Secrets.anything.Data",
            ".Phases.dump.Output.a.b.c",
            ".Object.spec.whatever",
            ".PodOverride.containers",
            ".Options.key",
            ".Time",
            ".Deployment",
        ] {
            assert_eq!(check(p, &s), None, "{p}");
        }
    }

    #[test]
    fn unknown_fields_name_the_type_its_fields_and_the_close_one() {
        let s = sts();
        assert_eq!(
            error(".StatefulSet.Nmespace", &s),
            ".StatefulSet.Nmespace: param.StatefulSetParams has no field Nmespace (did you mean Namespace?); its fields are Name, Namespace, Pods, Containers, PersistentVolumeClaims"
        );
        assert!(error(".Profile.Locaton.Bucket", &s).starts_with(
            ".Profile.Locaton.Bucket: param.Profile has no field Locaton (did you mean Location?)"
        ));
        let e = error(".Profile.Location.Bucket.Name", &s);
        assert_eq!(
            e,
            ".Profile.Location.Bucket.Name: .Profile.Location.Bucket has type string, which has no field Name"
        );
        assert!(error(".StatefulSet.Pods.first", &s).contains("has type []string"));
        assert!(
            error(".Phases.dump.Outptu.x", &s)
                .contains("param.Phase has no field Outptu (did you mean Output?)")
        );
    }

    #[test]
    fn the_declared_kind_decides_which_workload_is_set() {
        let s = sts();
        let e = error(".Deployment.Name", &s);
        assert!(
            e.starts_with(
                ".Deployment: the action declares kind: StatefulSet, so .Deployment is nil"
            ),
            "{e}"
        );
        assert!(e.ends_with("this action's object is .StatefulSet"), "{e}");
        assert!(error(".Namespace.Name", &s).contains("kind Namespace"));
        let ns = scope(json!({"kind": "namespace"}));
        assert_eq!(check(".Namespace.Name", &ns), None);
        // Not declared: only ActionSets on another kind fail.
        let none = scope(json!({}));
        assert_eq!(
            check(".Deployment.Name", &none),
            Some(Finding::NoKind("Deployment"))
        );
        assert!(no_kind_message("Deployment").contains("declare kind: Deployment"));
        // A misspelt field is an error whatever the kind.
        assert!(error(".Namespace.Nme", &none).contains("did you mean Name?"));
    }

    #[test]
    fn undeclared_artifacts_and_objects() {
        let s = sts();
        let w = warning(".ArtifactsIn.bakup.KeyValue.path", &s);
        assert!(w.contains("bakup is not in the action's inputArtifactNames (declares backup) (did you mean backup?)"), "{w}");
        assert!(warning(".ConfigMaps.x.Data.k", &s).contains("configMapNames (declares none)"));
        assert!(warning(".Secrets.other.Data", &s).contains("secretNames"));
        let e = error(".Phases.dump.Secrets.gp.Data.password", &s);
        assert_eq!(
            e,
            ".Phases.dump.Secrets.gp: phase dump's objects have no Secret gp (did you mean pg?) (they have pg); add it to the phase's objects"
        );
        assert!(error(".Phases.dump.ConfigMaps.pg.Data", &s).contains("they have cfg"));
        let d =
            scope(json!({"deferPhase": {"name": "clean", "objects": {"s": {"kind": "Secret"}}}}));
        assert_eq!(check(".DeferPhase.Secrets.s.Data.k", &d), None);
        assert!(
            error(".DeferPhase.Secrets.t.Data.k", &d)
                .starts_with(".DeferPhase.Secrets.t: phase clean's objects have no Secret t")
        );
        assert_eq!(check(".DeferPhase.Secrets.t.Data.k", &sts()), None);
        // An error further along the path wins over a warning.
        assert!(
            error(".ArtifactsIn.nope.KeyVal", &s)
                .contains("has no field KeyVal (did you mean KeyValue?)")
        );
    }

    #[test]
    fn kubernetes_types_are_checked_only_for_near_misses() {
        let s = sts();
        assert!(warning(".Phases.dump.Secrets.pg.Dat", &s).contains("(did you mean Data?)"));
        // Real Go fields this model leaves out (TypeMeta, UID...) are not refused.
        assert_eq!(check(".Phases.dump.Secrets.pg.UID", &s), None);
        assert_eq!(check(".Phases.dump.Secrets.pg.Kind", &s), None);
        // What the action does not declare is still said.
        assert!(warning(".Secrets.other.UID", &s).contains("secretNames"));
    }

    #[test]
    fn odd_paths_do_not_panic() {
        let s = Scope::default();
        for p in [
            "",
            ".",
            "..",
            ".Phases",
            ".Phases..Secrets",
            ".Nope.x",
            ".Profile.",
            "x.y",
        ] {
            let _ = check(p, &s);
        }
    }
}
