//! Kanister's template parameters (`pkg/param`): the one typed schema of
//! what a Blueprint's templates can read. Validation takes the top-level
//! names from it, the template engine builds its typed data from it, the
//! executor and `ctl render` fill its fields, kando reads `--profile` by it.
//! Names are Kanister's Go field names; a field's `json` tag is what Go's
//! `json.Marshal` writes (so what `toJson` prints).

pub mod profile;

use std::sync::OnceLock;

/// Top-level fields of [`template_params`] (`.Time`, `.Profile`, ...).
pub const STATEFUL_SET: &str = "StatefulSet";
pub const DEPLOYMENT_CONFIG: &str = "DeploymentConfig";
pub const DEPLOYMENT: &str = "Deployment";
pub const PVC: &str = "PVC";
pub const NAMESPACE: &str = "Namespace";
pub const ARTIFACTS_IN: &str = "ArtifactsIn";
pub const CONFIG_MAPS: &str = "ConfigMaps";
pub const SECRETS: &str = "Secrets";
pub const TIME: &str = "Time";
pub const PROFILE: &str = "Profile";
pub const OPTIONS: &str = "Options";
pub const OBJECT: &str = "Object";
pub const PHASES: &str = "Phases";
pub const DEFER_PHASE: &str = "DeferPhase";
pub const CURRENT_PHASE: &str = "CurrentPhase";
pub const OUTCOME: &str = "Outcome";
pub const POD_OVERRIDE: &str = "PodOverride";
pub const POD_ANNOTATIONS: &str = "PodAnnotations";
pub const POD_LABELS: &str = "PodLabels";

/// A Go type, as far as templates see it.
#[derive(Debug)]
pub enum Ty {
    Str,
    Bool,
    Int,
    Bytes,
    Any,
    /// Element type and Go type name (`[]string`).
    Slice(Box<Ty>, &'static str),
    /// Value type (keys are strings) and Go type name.
    Map(Box<Ty>, &'static str),
    Ptr(Box<Ty>),
    /// Go type name (`param.Profile`) and fields in declaration order.
    Struct(&'static str, Vec<Field>),
}

/// A struct field: Go's field name, its `json` tag and its type.
#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub json: Option<&'static str>,
    pub omitempty: bool,
    pub embedded: bool,
    pub ty: Ty,
}

fn f(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        json: None,
        omitempty: false,
        embedded: false,
        ty,
    }
}

fn tagged(name: &'static str, json: &'static str, omitempty: bool, ty: Ty) -> Field {
    Field {
        name,
        json: Some(json),
        omitempty,
        embedded: false,
        ty,
    }
}

fn map_of(elem: Ty, name: &'static str) -> Ty {
    Ty::Map(Box::new(elem), name)
}

fn string_map() -> Ty {
    map_of(Ty::Str, "map[string]string")
}

fn object_meta() -> Field {
    Field {
        name: "ObjectMeta",
        json: Some("metadata"),
        omitempty: true,
        embedded: true,
        ty: Ty::Struct(
            "v1.ObjectMeta",
            vec![
                tagged("Name", "name", true, Ty::Str),
                tagged("Namespace", "namespace", true, Ty::Str),
                tagged("Labels", "labels", true, string_map()),
                tagged("Annotations", "annotations", true, string_map()),
            ],
        ),
    }
}

fn secret() -> Ty {
    Ty::Struct(
        "v1.Secret",
        vec![
            object_meta(),
            tagged(
                "Data",
                "data",
                true,
                map_of(Ty::Bytes, "map[string][]uint8"),
            ),
            tagged("StringData", "stringData", true, string_map()),
            tagged("Type", "type", true, Ty::Str),
        ],
    )
}

fn config_map() -> Ty {
    Ty::Struct(
        "v1.ConfigMap",
        vec![
            object_meta(),
            tagged("Data", "data", true, string_map()),
            tagged(
                "BinaryData",
                "binaryData",
                true,
                map_of(Ty::Bytes, "map[string][]uint8"),
            ),
        ],
    )
}

fn workload(name: &'static str) -> Ty {
    Ty::Ptr(Box::new(Ty::Struct(
        name,
        vec![
            f("Name", Ty::Str),
            f("Namespace", Ty::Str),
            f("Pods", Ty::Slice(Box::new(Ty::Str), "[]string")),
            f(
                "Containers",
                Ty::Slice(
                    Box::new(Ty::Slice(Box::new(Ty::Str), "[]string")),
                    "[][]string",
                ),
            ),
            f(
                "PersistentVolumeClaims",
                map_of(string_map(), "map[string]map[string]string"),
            ),
        ],
    )))
}

fn name_ns(name: &'static str) -> Ty {
    Ty::Ptr(Box::new(Ty::Struct(
        name,
        vec![f("Name", Ty::Str), f("Namespace", Ty::Str)],
    )))
}

/// `.Outcome` of the main phases, for the deferPhase.
fn outcome() -> Ty {
    Ty::Ptr(Box::new(Ty::Struct(
        "param.Outcome",
        vec![
            f("State", Ty::Str),
            f("FailedPhase", Ty::Str),
            f("Error", Ty::Str),
        ],
    )))
}

fn phase() -> Ty {
    Ty::Ptr(Box::new(Ty::Struct(
        "param.Phase",
        vec![
            f("Secrets", map_of(secret(), "map[string]v1.Secret")),
            f(
                "ConfigMaps",
                map_of(config_map(), "map[string]v1.ConfigMap"),
            ),
            f("Output", map_of(Ty::Any, "map[string]interface {}")),
        ],
    )))
}

fn profile() -> Ty {
    let location = Ty::Struct(
        "v1alpha1.Location",
        vec![
            tagged("Type", "type", false, Ty::Str),
            tagged("Bucket", "bucket", false, Ty::Str),
            tagged("Endpoint", "endpoint", false, Ty::Str),
            tagged("Prefix", "prefix", false, Ty::Str),
            tagged("Region", "region", false, Ty::Str),
        ],
    );
    let key_pair = Ty::Ptr(Box::new(Ty::Struct(
        "param.KeyPair",
        vec![f("ID", Ty::Str), f("Secret", Ty::Str)],
    )));
    let kopia = Ty::Ptr(Box::new(Ty::Struct(
        "param.KopiaServerCreds",
        vec![
            f("Username", Ty::Str),
            f("Hostname", Ty::Str),
            f("Password", Ty::Str),
            f("Cert", Ty::Str),
            f("ConnectOptions", map_of(Ty::Int, "map[string]int")),
        ],
    )));
    let credential = Ty::Struct(
        "param.Credential",
        vec![
            f("Type", Ty::Str),
            f("KeyPair", key_pair),
            f("Secret", Ty::Ptr(Box::new(secret()))),
            f("KopiaServerSecret", kopia),
        ],
    );
    Ty::Ptr(Box::new(Ty::Struct(
        "param.Profile",
        vec![
            f("Location", location),
            f("Credential", credential),
            f("SkipSSLVerify", Ty::Bool),
        ],
    )))
}

/// `param.TemplateParams`: the data every template of a Blueprint renders with.
pub fn template_params() -> &'static Ty {
    static TY: OnceLock<Ty> = OnceLock::new();
    TY.get_or_init(|| {
        let artifact = Ty::Struct(
            "v1alpha1.Artifact",
            vec![
                tagged("KeyValue", "keyValue", true, string_map()),
                tagged("KopiaSnapshot", "kopiaSnapshot", true, Ty::Str),
            ],
        );
        Ty::Struct(
            "param.TemplateParams",
            vec![
                f(STATEFUL_SET, workload("param.StatefulSetParams")),
                f(DEPLOYMENT_CONFIG, workload("param.DeploymentConfigParams")),
                f(DEPLOYMENT, workload("param.DeploymentParams")),
                f(PVC, name_ns("param.PVCParams")),
                f(NAMESPACE, name_ns("param.NamespaceParams")),
                f(
                    ARTIFACTS_IN,
                    map_of(artifact, "map[string]v1alpha1.Artifact"),
                ),
                f(CONFIG_MAPS, map_of(config_map(), "map[string]v1.ConfigMap")),
                f(SECRETS, map_of(secret(), "map[string]v1.Secret")),
                f(TIME, Ty::Str),
                f(PROFILE, profile()),
                f(OPTIONS, string_map()),
                f(OBJECT, map_of(Ty::Any, "map[string]interface {}")),
                f(PHASES, map_of(phase(), "map[string]*param.Phase")),
                f(DEFER_PHASE, phase()),
                f(CURRENT_PHASE, phase()),
                // Ours, not Kanister's: set only for the deferPhase (nil elsewhere).
                f(OUTCOME, outcome()),
                f(POD_OVERRIDE, map_of(Ty::Any, "v1alpha1.JSONMap")),
                f(POD_ANNOTATIONS, string_map()),
                f(POD_LABELS, string_map()),
            ],
        )
    })
}

impl Ty {
    /// The struct behind any pointers: its Go name and fields.
    pub fn as_struct(&self) -> Option<(&'static str, &[Field])> {
        match self {
            Ty::Ptr(inner) => inner.as_struct(),
            Ty::Struct(name, fields) => Some((name, fields)),
            _ => None,
        }
    }

    /// The field with Go name `name` of this struct (through pointers).
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.as_struct()?.1.iter().find(|f| f.name == name)
    }
}

/// Field `name` of a JSON object as Go's `json.Unmarshal` fills it: keys
/// match ignoring case, the last one wins.
pub fn get<'a>(v: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    v.as_object()?
        .iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
}

/// The top-level parameter names, sorted (`.ArtifactsIn`, ..., `.Time`).
pub fn top_level_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names: Vec<_> = template_params()
            .as_struct()
            .map(|(_, fields)| fields.iter().map(|f| f.name).collect())
            .unwrap_or_default();
        names.sort_unstable();
        names
    })
}

/// `param.Profile`, the type of `.Profile`.
pub fn profile_ty() -> &'static Ty {
    &template_params()
        .field(PROFILE)
        .expect("TemplateParams has a Profile")
        .ty
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_answers_which_fields_a_type_has() {
        assert_eq!(top_level_names().len(), 19);
        assert_eq!(top_level_names()[0], "ArtifactsIn");
        let (name, fields) = profile_ty().as_struct().unwrap();
        assert_eq!(name, "param.Profile");
        let names: Vec<_> = fields.iter().map(|f| f.name).collect();
        assert_eq!(names, ["Location", "Credential", "SkipSSLVerify"]);
        let secret = &profile_ty()
            .field("Credential")
            .unwrap()
            .ty
            .field("Secret")
            .unwrap()
            .ty;
        assert_eq!(secret.as_struct().unwrap().0, "v1.Secret");
        assert_eq!(secret.field("Data").unwrap().json, Some("data"));
        let phase = &template_params().field(PHASES).unwrap().ty;
        let Ty::Map(elem, _) = phase else {
            panic!("{phase:?}")
        };
        assert!(elem.field("Output").is_some());
    }
}
