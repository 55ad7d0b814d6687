//! Template data from Kanister's `param.TemplateParams` ([`crate::param`]).
//!
//! Callers pass a `serde_json::Value` keyed by Kanister's Go field names
//! (`StatefulSet`, `Phases`, `Profile`, ...). It is converted the way Go's
//! `json.Unmarshal` would fill the struct: keys match field names
//! case-insensitively, absent fields get their zero value (so
//! `.Profile.Location.Endpoint` is `""`, `.Deployment` is a nil pointer),
//! `[]byte` fields (Secret `Data`) are base64 strings, and only `.Object`,
//! `.PodOverride` and phase `Output` are untyped JSON.

use super::value::{Field, GoMap, GoStruct, Value, from_json_any};
use crate::param::{Ty, template_params};
use base64::Engine;
use std::collections::BTreeMap;
use std::sync::Arc;

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
