//! Kanister's `param.TemplateParams` as a typed schema.
//!
//! Callers pass a `serde_json::Value` keyed by Kanister's Go field names
//! (`StatefulSet`, `Phases`, `Profile`, ...). It is converted the way Go's
//! `json.Unmarshal` would fill the struct: keys match field names
//! case-insensitively, absent fields get their zero value (so
//! `.Profile.Location.Endpoint` is `""`, `.Deployment` is a nil pointer),
//! `[]byte` fields (Secret `Data`) are base64 strings, and only `.Object`,
//! `.PodOverride` and phase `Output` are untyped JSON.

use super::value::{Field, GoMap, GoStruct, Value, from_json_any};
use base64::Engine;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

#[derive(Debug)]
enum Ty {
    Str,
    Bool,
    Int,
    Bytes,
    Any,
    Slice(Box<Ty>, &'static str),
    Map(Box<Ty>, &'static str),
    Ptr(Box<Ty>),
    Struct(&'static str, Vec<FieldTy>),
}

#[derive(Debug)]
struct FieldTy {
    name: &'static str,
    json: Option<&'static str>,
    omitempty: bool,
    embedded: bool,
    ty: Ty,
}

fn f(name: &'static str, ty: Ty) -> FieldTy {
    FieldTy {
        name,
        json: None,
        omitempty: false,
        embedded: false,
        ty,
    }
}

fn tagged(name: &'static str, json: &'static str, omitempty: bool, ty: Ty) -> FieldTy {
    FieldTy {
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

fn object_meta() -> FieldTy {
    FieldTy {
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

fn template_params() -> &'static Ty {
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
                f("StatefulSet", workload("param.StatefulSetParams")),
                f("DeploymentConfig", workload("param.DeploymentConfigParams")),
                f("Deployment", workload("param.DeploymentParams")),
                f("PVC", name_ns("param.PVCParams")),
                f("Namespace", name_ns("param.NamespaceParams")),
                f(
                    "ArtifactsIn",
                    map_of(artifact, "map[string]v1alpha1.Artifact"),
                ),
                f(
                    "ConfigMaps",
                    map_of(config_map(), "map[string]v1.ConfigMap"),
                ),
                f("Secrets", map_of(secret(), "map[string]v1.Secret")),
                f("Time", Ty::Str),
                f("Profile", profile()),
                f("Options", string_map()),
                f("Object", map_of(Ty::Any, "map[string]interface {}")),
                f("Phases", map_of(phase(), "map[string]*param.Phase")),
                f("DeferPhase", phase()),
                f("CurrentPhase", phase()),
                // Ours, not Kanister's: set only for the deferPhase (nil elsewhere).
                f("Outcome", outcome()),
                f("PodOverride", map_of(Ty::Any, "v1alpha1.JSONMap")),
                f("PodAnnotations", string_map()),
                f("PodLabels", string_map()),
            ],
        )
    })
}

fn ptr_name(ty: &Ty) -> &'static str {
    match ty {
        Ty::Struct(n, _) => n,
        _ => "?",
    }
}

fn zero(ty: &Ty) -> Value {
    convert(ty, None)
}

fn convert(ty: &Ty, v: Option<&serde_json::Value>) -> Value {
    let v = v.filter(|v| !v.is_null());
    match ty {
        Ty::Str => match v {
            Some(serde_json::Value::String(s)) => Value::str(s.as_str()),
            Some(other) => Value::str(other.to_string()),
            None => Value::str(""),
        },
        Ty::Bool => Value::Bool(v.and_then(|v| v.as_bool()).unwrap_or(false)),
        Ty::Int => Value::Int(v.and_then(|v| v.as_i64()).unwrap_or(0)),
        Ty::Bytes => match v {
            Some(serde_json::Value::String(s)) => {
                let b = base64::engine::general_purpose::STANDARD
                    .decode(s.as_bytes())
                    .unwrap_or_else(|_| s.as_bytes().to_vec());
                Value::Bytes(Arc::from(b))
            }
            _ => Value::Bytes(Arc::from(Vec::new())),
        },
        Ty::Any => v.map(from_json_any).unwrap_or(Value::Nil),
        Ty::Slice(elem, name) => {
            let items = match v {
                Some(serde_json::Value::Array(a)) => {
                    a.iter().map(|x| convert(elem, Some(x))).collect()
                }
                _ => Vec::new(),
            };
            Value::list(items, name)
        }
        Ty::Map(elem, name) => {
            let (entries, nil) = match v {
                Some(serde_json::Value::Object(o)) => (
                    o.iter()
                        .map(|(k, x)| (k.clone(), convert(elem, Some(x))))
                        .collect::<BTreeMap<_, _>>(),
                    false,
                ),
                _ => (BTreeMap::new(), true),
            };
            Value::Map(Arc::new(GoMap::new(entries, zero(elem), name, nil)))
        }
        Ty::Ptr(inner) => match v {
            Some(_) => convert(inner, v),
            None => Value::NilPtr(ptr_name(inner)),
        },
        Ty::Struct(name, fields) => {
            let obj = v.and_then(|v| v.as_object());
            let fields = fields
                .iter()
                .map(|ft| {
                    let key = ft.json.unwrap_or(ft.name);
                    let jv = obj.and_then(|o| {
                        o.get(key).or_else(|| o.get(ft.name)).or_else(|| {
                            o.iter()
                                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                                .map(|(_, v)| v)
                        })
                    });
                    Field {
                        name: ft.name,
                        json: ft.json,
                        omitempty: ft.omitempty,
                        embedded: ft.embedded,
                        value: convert(&ft.ty, jv),
                    }
                })
                .collect();
            Value::Struct(Arc::new(GoStruct { ty: name, fields }))
        }
    }
}

/// Build the template data from Kanister-shaped JSON parameters.
pub fn template_params_value(params: &serde_json::Value) -> Value {
    convert(template_params(), Some(params))
}
