//! KubeOps (Kanister `pkg/function/kube_ops.go`): create, patch or delete
//! any object through the dynamic API, mapping apiVersion/kind ↔ resource by
//! discovery.
//!
//! - `create`: `spec` is the YAML/JSON text (or an object) of the new object;
//!   its namespace is the `namespace` argument when given, else the object's
//!   `metadata.namespace`, else `default` (ignored for cluster-scoped kinds).
//! - `patch`: `spec` is a JSON merge patch applied to `objectReference`.
//! - `delete`: deletes `objectReference` (not waiting for finalizers).
//!
//! For `patch`/`delete` the namespace is `objectReference.namespace`, else
//! the `namespace` argument, else `default`. Output: `apiVersion` (the version,
//! as in Kanister's ObjectReference), `group`, `resource`, `kind`, `name`,
//! `namespace` of the object; `kind` as Kanister leaves it: empty for create,
//! the `objectReference`'s for patch and delete.

use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Map, Value};

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use super::objref::{self, Resolved};
use crate::model::ObjectReference;
use crate::phase_output::Output;

const NAME: &str = "KubeOps";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Patch,
    Delete,
}

pub fn parse_operation(s: &str) -> Result<Operation, FunctionError> {
    match s.to_ascii_lowercase().as_str() {
        "create" => Ok(Operation::Create),
        "patch" => Ok(Operation::Patch),
        "delete" => Ok(Operation::Delete),
        _ => Err(FunctionError::arg(
            NAME,
            "operation",
            format!("{s:?} is not a KubeOps operation; use create, patch or delete"),
        )),
    }
}

/// `objectReference` decoded (weakly: a YAML string is accepted too).
pub fn object_reference(a: &Args) -> Result<Option<ObjectReference>, FunctionError> {
    let Some(m) = a.opt_object("objectReference")? else {
        return Ok(None);
    };
    let r: ObjectReference = serde_json::from_value(Value::Object(m)).map_err(|e| {
        FunctionError::arg(
            NAME,
            "objectReference",
            format!("fields must be strings: {e}"),
        )
    })?;
    if r.name.is_empty() {
        return Err(FunctionError::arg(
            NAME,
            "objectReference",
            "`name` is empty",
        ));
    }
    Ok(Some(r))
}

/// The phase's `operation` is a patch: a merge patch applied twice is the patch applied once,
/// so a KubeOps patch found running after a restart can be entered again; create and delete
/// fail the second time (AlreadyExists, NotFound) as in Kanister.
pub fn is_patch(args: Option<&Map<String, Value>>) -> bool {
    let op = args
        .and_then(|a| a.get("operation"))
        .and_then(Value::as_str);
    op.is_some_and(|o| o.eq_ignore_ascii_case("patch"))
}

pub async fn run(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let op = parse_operation(&a.string("operation")?)?;
    let ns_arg = a.opt_string("namespace")?.filter(|s| !s.is_empty());
    let client = &ctx.client;
    match op {
        Operation::Create => {
            let spec = a.opt_object("spec")?.ok_or_else(|| {
                FunctionError::arg(
                    NAME,
                    "spec",
                    "required for operation create: the YAML of the object to create",
                )
            })?;
            let mut obj: DynamicObject =
                serde_json::from_value(Value::Object(spec)).map_err(|e| {
                    FunctionError::arg(
                        NAME,
                        "spec",
                        format!("not a Kubernetes object (needs apiVersion, kind, metadata): {e}"),
                    )
                })?;
            let tm = obj.types.clone().ok_or_else(|| {
                FunctionError::arg(NAME, "spec", "`apiVersion` and `kind` are required")
            })?;
            let r = ObjectReference {
                api_version: tm.api_version.clone(),
                kind: tm.kind.clone(),
                ..Default::default()
            };
            let res = resolve(client, &r).await?;
            let ns = ns_arg
                .or_else(|| obj.metadata.namespace.clone().filter(|s| !s.is_empty()))
                .unwrap_or_else(|| "default".into());
            if res.namespaced {
                obj.metadata.namespace = Some(ns.clone());
            } else {
                obj.metadata.namespace = None;
            }
            let created = res
                .api(client, &ns)
                .create(&PostParams::default(), &obj)
                .await
                .map_err(|e| kerr(format!("creating {} {}", tm.kind, describe(&obj)), e))?;
            Ok(output(
                &res,
                "",
                &created.metadata.name.unwrap_or_default(),
                created.metadata.namespace.as_deref().unwrap_or(""),
            ))
        }
        Operation::Patch | Operation::Delete => {
            let what = if op == Operation::Patch {
                "patch"
            } else {
                "delete"
            };
            let r = object_reference(a)?.ok_or_else(|| {
                FunctionError::arg(NAME, "objectReference", format!("required for operation {what}: apiVersion, group, resource, name, namespace of the object"))
            })?;
            let res = resolve(client, &r).await?;
            let ns = Some(r.namespace.clone())
                .filter(|s| !s.is_empty())
                .or(ns_arg)
                .unwrap_or_else(|| "default".into());
            let api = res.api(client, &ns);
            let where_ = if res.namespaced {
                format!("{ns}/{}", r.name)
            } else {
                r.name.clone()
            };
            if op == Operation::Patch {
                let spec = a.opt_object("spec")?.ok_or_else(|| {
                    FunctionError::arg(
                        NAME,
                        "spec",
                        "required for operation patch: a JSON merge patch (YAML or JSON)",
                    )
                })?;
                let patched = api
                    .patch(
                        &r.name,
                        &PatchParams::default(),
                        &Patch::Merge(Value::Object(spec)),
                    )
                    .await
                    .map_err(|e| kerr(format!("patching {} {where_}", res.resource.kind), e))?;
                Ok(output(
                    &res,
                    &r.kind,
                    &patched.metadata.name.unwrap_or_default(),
                    patched.metadata.namespace.as_deref().unwrap_or(""),
                ))
            } else {
                api.delete(&r.name, &DeleteParams::default())
                    .await
                    .map_err(|e| kerr(format!("deleting {} {where_}", res.resource.kind), e))?;
                Ok(output(
                    &res,
                    &r.kind,
                    &r.name,
                    if res.namespaced { &ns } else { "" },
                ))
            }
        }
    }
}

fn describe(obj: &DynamicObject) -> String {
    obj.metadata
        .name
        .clone()
        .or_else(|| obj.metadata.generate_name.as_ref().map(|g| format!("{g}*")))
        .unwrap_or_else(|| "<no name>".into())
}

async fn resolve(client: &kube::Client, r: &ObjectReference) -> Result<Resolved, FunctionError> {
    objref::resolve(client, r)
        .await
        .map_err(|e| FunctionError::failed(NAME, e.to_string()))
}

fn kerr(action: String, e: kube::Error) -> FunctionError {
    FunctionError::kube(NAME, action, e)
}

/// The object's reference; `kind` is what Kanister's (an ObjectReference built from the
/// resource mapping, or the argument) holds, not the resolved kind.
fn output(res: &Resolved, kind: &str, name: &str, namespace: &str) -> Output {
    let mut out = Output::new();
    let ar = &res.resource;
    out.insert("apiVersion".into(), ar.version.clone().into());
    out.insert("group".into(), ar.group.clone().into());
    out.insert("resource".into(), ar.plural.clone().into());
    out.insert("kind".into(), kind.into());
    out.insert("name".into(), name.into());
    out.insert("namespace".into(), namespace.into());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operations_are_case_insensitive_and_checked() {
        assert_eq!(parse_operation("create").unwrap(), Operation::Create);
        assert_eq!(parse_operation("Patch").unwrap(), Operation::Patch);
        let e = parse_operation("update").unwrap_err().to_string();
        assert!(e.contains("use create, patch or delete"), "{e}");
    }

    #[test]
    fn object_reference_decoding() {
        let m = json!({"objectReference": {"apiVersion": "v1", "resource": "configmaps", "name": "x", "namespace": "n"}});
        let m = m.as_object().unwrap();
        let r = object_reference(&Args::new(NAME, m)).unwrap().unwrap();
        assert_eq!((r.resource.as_str(), r.name.as_str()), ("configmaps", "x"));
        let m = json!({"objectReference": {"resource": "configmaps"}});
        assert!(object_reference(&Args::new(NAME, m.as_object().unwrap())).is_err());
        let m = json!({"objectReference": {"name": 3}});
        assert!(object_reference(&Args::new(NAME, m.as_object().unwrap())).is_err());
    }
}
