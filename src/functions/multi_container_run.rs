//! MultiContainerRun (Kanister `pkg/function/multi_container_run.go`): run a
//! pod with an optional init container `init`, a container `background` and
//! a container `output` that share an `emptyDir` volume `shared` mounted at
//! `sharedVolumeDir` (default `/tmp/`); the phase output is parsed from the
//! log of the `output` container, the pod must end Succeeded (both
//! containers exit 0) and is deleted afterwards (also on failure or
//! cancellation).
//!
//! As in Kanister: no `imagePullPolicy` is set, `podOverride` is applied to
//! the whole pod spec and the `output` container is then put first, the pod
//! carries the `kubectl.kubernetes.io/default-container: output`
//! annotation, and an ActionSet `podOverride` that overrides only the
//! container named `container` (the KubeTask name) is applied to both
//! `background` and `output`.
//!
//! Differences from Kanister: the default namespace is the ActionSet's;
//! `podOverride` is merged as in KubeTask (see `kube_task`); the output log
//! is read once the pod has finished, so a failed pod is reported before
//! invalid phase output.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::pods::quantity::parse_quantity;
use crate::pods::{self as pod, CONTAINER, merge_labels, merge_overrides};

const NAME: &str = "MultiContainerRun";

/// Container names and the shared volume, as in Kanister.
pub const BACKGROUND: &str = "background";
pub const OUTPUT: &str = "output";
pub const INIT: &str = "init";
pub const SHARED_VOLUME: &str = "shared";
pub const DEFAULT_SHARED_DIR: &str = "/tmp/";
/// Annotation that makes `kubectl logs` default to the output container.
pub const DEFAULT_CONTAINER_ANNOTATION: &str = "kubectl.kubernetes.io/default-container";

/// The decoded arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub namespace: String,
    pub init_image: Option<String>,
    pub init_command: Option<Vec<String>>,
    pub background_image: String,
    pub background_command: Vec<String>,
    pub output_image: String,
    pub output_command: Vec<String>,
    pub medium: Option<String>,
    pub size_limit: Option<String>,
    pub shared_dir: String,
}

pub async fn run(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let spec = decode(a, &ctx.namespace)?;
    let labels = merge_labels(a.opt_string_map("podLabels")?, &ctx.pod_labels);
    let annotations = merge_labels(a.opt_string_map("podAnnotations")?, &ctx.pod_annotations);
    let actionset_override = ctx.pod_override.as_ref().map(actionset_override);
    let pod_override = merge_overrides(a.opt_json_map("podOverride")?, actionset_override.as_ref());
    let pod = pod(&spec, labels, annotations, pod_override.as_ref())
        .map_err(|m| FunctionError::arg(NAME, "podOverride", m.to_string()))?;
    let (log, _) = pod::run_pod(ctx.pods(), NAME, &spec.namespace, pod).await?;
    Ok(log.output(NAME)?)
}

/// Arguments in Kanister's order of decoding (and error reporting).
pub fn decode(a: &Args, default_namespace: &str) -> Result<Spec, FunctionError> {
    let background_image = a.string("backgroundImage")?;
    let output_image = a.string("outputImage")?;
    let init_image = a.opt_string("initImage")?.filter(|s| !s.is_empty());
    let background_command = a.string_list("backgroundCommand")?;
    let output_command = a.string_list("outputCommand")?;
    let init_command = a.opt_string_list("initCommand")?;
    let namespace = a
        .opt_string("namespace")?
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| default_namespace.to_string());
    let medium = a
        .opt_string("sharedVolumeMedium")?
        .filter(|s| !s.is_empty());
    let size_limit = match a.opt_string("sharedVolumeSizeLimit")? {
        Some(s) if !s.is_empty() => {
            parse_quantity(&s).map_err(|e| {
                FunctionError::arg(
                    NAME,
                    "sharedVolumeSizeLimit",
                    format!("Failed to parse sharedStorageSize arg: {e}"),
                )
            })?;
            Some(s)
        }
        _ => None,
    };
    let shared_dir = a
        .opt_string("sharedVolumeDir")?
        .unwrap_or_else(|| DEFAULT_SHARED_DIR.to_string());
    Ok(Spec {
        namespace,
        init_image,
        init_command,
        background_image,
        background_command,
        output_image,
        output_command,
        medium,
        size_limit,
        shared_dir,
    })
}

/// Kanister's `prepareActionSetPodSpecOverride`: an ActionSet override of
/// the container `container` (and of neither `background` nor `output`)
/// becomes an override of both `background` and `output`.
pub fn actionset_override(o: &Map<String, Value>) -> Map<String, Value> {
    let Some(Value::Array(containers)) = o.get("containers") else {
        return o.clone();
    };
    let name = |c: &Value| c.get("name").and_then(Value::as_str).map(str::to_string);
    let named = |n: &str| containers.iter().any(|c| name(c).as_deref() == Some(n));
    let Some(base) = containers
        .iter()
        .find(|c| name(c).as_deref() == Some(CONTAINER))
    else {
        return o.clone();
    };
    if named(BACKGROUND) || named(OUTPUT) {
        return o.clone();
    }
    let mut result: Vec<Value> = containers
        .iter()
        .filter(|c| name(c).as_deref() != Some(CONTAINER))
        .cloned()
        .collect();
    for n in [BACKGROUND, OUTPUT] {
        let mut c = base.clone();
        if let Some(m) = c.as_object_mut() {
            m.insert("name".into(), json!(n));
        }
        result.push(c);
    }
    let mut out = o.clone();
    out.insert("containers".into(), Value::Array(result));
    out
}

/// The pod Kanister would create.
pub fn pod(
    spec: &Spec,
    labels: BTreeMap<String, String>,
    mut annotations: BTreeMap<String, String>,
    pod_override: Option<&Map<String, Value>>,
) -> Result<k8s_openapi::api::core::v1::Pod, pod::InvalidPod> {
    let mounts = json!([{"name": SHARED_VOLUME, "mountPath": spec.shared_dir}]);
    let container = |name: &str, image: &str, command: Option<&Vec<String>>| {
        let mut c = json!({"name": name, "image": image, "volumeMounts": mounts});
        if let Some(cmd) = command {
            c["command"] = json!(cmd);
        }
        c
    };
    let mut empty_dir = Map::new();
    if let Some(m) = &spec.medium {
        empty_dir.insert("medium".into(), json!(m));
    }
    if let Some(s) = &spec.size_limit {
        empty_dir.insert("sizeLimit".into(), json!(s));
    }
    let mut pod_spec = json!({
        "restartPolicy": "Never",
        "volumes": [{"name": SHARED_VOLUME, "emptyDir": empty_dir}],
        "containers": [
            container(OUTPUT, &spec.output_image, Some(&spec.output_command)),
            container(BACKGROUND, &spec.background_image, Some(&spec.background_command)),
        ],
    });
    if let Some(image) = &spec.init_image {
        pod_spec["initContainers"] = json!([container(INIT, image, spec.init_command.as_ref())]);
    }
    annotations.insert(DEFAULT_CONTAINER_ANNOTATION.into(), OUTPUT.into());
    let mut pod = pod::build_pod(
        &spec.namespace,
        "kanister-job-",
        pod_spec,
        labels,
        annotations,
        pod_override,
    )?;
    if let Some(s) = pod.spec.as_mut() {
        // Stable: the output container first, the others in their order.
        s.containers.sort_by_key(|c| c.name != OUTPUT);
    }
    Ok(pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn spec(v: Value) -> Result<Spec, FunctionError> {
        let m = obj(v);
        decode(&Args::new(NAME, &m), "actionset-ns")
    }

    fn base() -> Value {
        json!({
            "backgroundImage": "busybox",
            "backgroundCommand": ["sh", "-c", "echo data > /tmp/f"],
            "outputImage": "alpine",
            "outputCommand": ["sh", "-c", "cat /tmp/f"],
        })
    }

    #[test]
    fn pod_has_output_and_background_containers_sharing_a_volume() {
        let s = spec(base()).unwrap();
        assert_eq!(s.namespace, "actionset-ns");
        assert_eq!(s.shared_dir, "/tmp/");
        let p = pod(&s, BTreeMap::new(), BTreeMap::new(), None).unwrap();
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["metadata"]["generateName"], "kanister-job-");
        assert_eq!(v["metadata"]["labels"]["createdBy"], "kanister");
        assert_eq!(
            v["metadata"]["annotations"][DEFAULT_CONTAINER_ANNOTATION],
            "output"
        );
        let c = v["spec"]["containers"].as_array().unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0]["name"], "output");
        assert_eq!(c[0]["image"], "alpine");
        assert_eq!(c[0]["command"], json!(["sh", "-c", "cat /tmp/f"]));
        assert_eq!(c[1]["name"], "background");
        assert_eq!(c[1]["image"], "busybox");
        for x in c {
            assert_eq!(
                x["volumeMounts"],
                json!([{"name": "shared", "mountPath": "/tmp/"}])
            );
            assert!(x.get("imagePullPolicy").is_none());
        }
        assert_eq!(
            v["spec"]["volumes"],
            json!([{"name": "shared", "emptyDir": {}}])
        );
        assert!(v["spec"].get("initContainers").is_none());
        assert_eq!(v["spec"]["restartPolicy"], "Never");
    }

    #[test]
    fn init_container_medium_size_and_dir() {
        let mut a = base();
        a["initImage"] = json!("busybox");
        a["initCommand"] = json!(["mkdir", "/shared/x"]);
        a["sharedVolumeMedium"] = json!("Memory");
        a["sharedVolumeSizeLimit"] = json!("64Mi");
        a["sharedVolumeDir"] = json!("/shared");
        a["namespace"] = json!("other");
        let s = spec(a).unwrap();
        let v =
            serde_json::to_value(pod(&s, BTreeMap::new(), BTreeMap::new(), None).unwrap()).unwrap();
        assert_eq!(v["metadata"]["namespace"], "other");
        let init = &v["spec"]["initContainers"][0];
        assert_eq!(init["name"], "init");
        assert_eq!(init["command"], json!(["mkdir", "/shared/x"]));
        assert_eq!(init["volumeMounts"][0]["mountPath"], "/shared");
        assert_eq!(
            v["spec"]["volumes"][0]["emptyDir"],
            json!({"medium": "Memory", "sizeLimit": "64Mi"})
        );
        // An init image without a command runs the image's entrypoint.
        let mut a = base();
        a["initImage"] = json!("busybox");
        let v = serde_json::to_value(
            pod(&spec(a).unwrap(), BTreeMap::new(), BTreeMap::new(), None).unwrap(),
        )
        .unwrap();
        assert!(v["spec"]["initContainers"][0].get("command").is_none());
    }

    #[test]
    fn argument_errors_are_kanisters() {
        let mut a = base();
        a["sharedVolumeSizeLimit"] = json!("lots");
        let e = spec(a).unwrap_err().to_string();
        assert!(e.contains("Failed to parse sharedStorageSize arg"), "{e}");
        let mut a = base();
        a.as_object_mut().unwrap().remove("outputCommand");
        let e = spec(a).unwrap_err().to_string();
        assert!(
            e.contains("`outputCommand`: required argument is missing"),
            "{e}"
        );
        let m = obj(json!({"backgroundImage": "x", "image": "y"}));
        let e = crate::functions::registry::check_args(&Args::new(NAME, &m))
            .unwrap_err()
            .to_string();
        assert!(e.contains("argument image is not supported"), "{e}");
    }

    #[test]
    fn override_adds_a_sidecar_but_output_stays_first() {
        let s = spec(base()).unwrap();
        let o = obj(json!({
            "containers": [
                {"name": "sidecar", "image": "x"},
                {"name": "output", "imagePullPolicy": "Always"},
            ],
            "serviceAccountName": "sa",
        }));
        let v = serde_json::to_value(pod(&s, BTreeMap::new(), BTreeMap::new(), Some(&o)).unwrap())
            .unwrap();
        let names: Vec<&str> = v["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["output", "background", "sidecar"]);
        assert_eq!(v["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(v["spec"]["serviceAccountName"], "sa");
    }

    #[test]
    fn actionset_container_override_applies_to_both_workers() {
        let o = obj(json!({
            "containers": [{"name": "container", "resources": {"limits": {"cpu": "1"}}},
                           {"name": "extra", "image": "x"}],
            "nodeSelector": {"a": "b"},
        }));
        let r = actionset_override(&o);
        let c = r["containers"].as_array().unwrap();
        let names: Vec<&str> = c.iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["extra", "background", "output"]);
        assert_eq!(c[1]["resources"]["limits"]["cpu"], "1");
        assert_eq!(r["nodeSelector"]["a"], "b");
        // Explicit background/output overrides are kept as they are.
        let o = obj(json!({"containers": [{"name": "container"}, {"name": "output"}]}));
        assert_eq!(actionset_override(&o), o);
        let o = obj(json!({"nodeSelector": {}}));
        assert_eq!(actionset_override(&o), o);
    }
}
