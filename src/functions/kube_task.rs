//! KubeTask (Kanister `pkg/function/kube_task.go`): run `command` in a new
//! pod made from `image`, collect the phase output from its log, and delete
//! the pod afterwards (also when it fails or the phase is cancelled).
//!
//! Differences from Kanister, on purpose or by necessity (labels, annotations and
//! `podOverride` merge as for every pod: [`super::pod`]):
//! - the default namespace is the ActionSet's (Kanister: the controller's);
//! - the log is read once the pod has finished (as a stream, in bounded
//!   memory: the phase output is parsed from all of it, only its tail kept).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Map, Value, json};

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::pods::{CONTAINER, build_pod, merge_labels, merge_overrides, run_pod};

const NAME: &str = "KubeTask";

pub async fn run(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let image = a.string("image")?;
    let command = a.string_list("command")?;
    let namespace = a
        .opt_string("namespace")?
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| ctx.namespace.clone());
    let bp_override = a.opt_json_map("podOverride")?;
    let labels = merge_labels(a.opt_string_map("podLabels")?, &ctx.pod_labels);
    let annotations = merge_labels(a.opt_string_map("podAnnotations")?, &ctx.pod_annotations);
    let pod_override = merge_overrides(bp_override, ctx.pod_override.as_ref());

    let pod = task_pod(
        &namespace,
        &image,
        &command,
        labels,
        annotations,
        pod_override.as_ref(),
    )
    .map_err(|m| FunctionError::arg(NAME, "podOverride", m.to_string()))?;
    let (log, _) = run_pod(ctx.pods(), NAME, &namespace, pod).await?;
    Ok(log.output(NAME)?)
}

/// The task pod Kanister would create.
pub fn task_pod(
    namespace: &str,
    image: &str,
    command: &[String],
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    pod_override: Option<&Map<String, Value>>,
) -> Result<Pod, crate::pods::InvalidPod> {
    let spec = json!({
        "restartPolicy": "Never",
        "containers": [{
            "name": CONTAINER,
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "command": command,
        }],
    });
    build_pod(
        namespace,
        "kanister-job-",
        spec,
        labels,
        annotations,
        pod_override,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// `img` running `true` in `ns`, without labels or annotations.
    fn plain_pod(o: &Map<String, Value>) -> Result<Pod, crate::pods::InvalidPod> {
        task_pod(
            "ns",
            "img",
            &["true".into()],
            BTreeMap::new(),
            BTreeMap::new(),
            Some(o),
        )
    }

    #[test]
    fn pod_shape_matches_kanister() {
        let pod = task_pod(
            "ns1",
            "busybox",
            &["sh".into(), "-c".into(), "echo hi".into()],
            BTreeMap::from([("a".into(), "1".into())]),
            BTreeMap::from([("n".into(), "v".into())]),
            None,
        )
        .unwrap();
        let v = serde_json::to_value(&pod).unwrap();
        assert_eq!(v["metadata"]["generateName"], "kanister-job-");
        assert_eq!(v["metadata"]["namespace"], "ns1");
        assert_eq!(v["metadata"]["labels"]["createdBy"], "kanister");
        assert_eq!(v["metadata"]["labels"]["a"], "1");
        assert_eq!(v["metadata"]["annotations"]["n"], "v");
        assert_eq!(v["spec"]["restartPolicy"], "Never");
        let c = &v["spec"]["containers"];
        assert_eq!(c.as_array().unwrap().len(), 1);
        assert_eq!(c[0]["name"], "container");
        assert_eq!(c[0]["image"], "busybox");
        assert_eq!(c[0]["command"], json!(["sh", "-c", "echo hi"]));
    }

    #[test]
    fn override_merges_containers_by_name_and_actionset_wins() {
        let bp = obj(json!({
            "nodeSelector": {"disk": "ssd", "zone": "a"},
            "containers": [{"name": "container", "imagePullPolicy": "Always"}],
        }));
        let aset = obj(json!({
            "nodeSelector": {"zone": "b"},
            "tolerations": [{"key": "k", "operator": "Exists"}],
        }));
        let merged = merge_overrides(Some(bp), Some(&aset)).unwrap();
        assert_eq!(merged["nodeSelector"], json!({"disk": "ssd", "zone": "b"}));
        let pod = plain_pod(&merged).unwrap();
        let v = serde_json::to_value(&pod).unwrap();
        let c = v["spec"]["containers"].as_array().unwrap();
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0]["imagePullPolicy"], "Always");
        assert_eq!(c[0]["image"], "img");
        assert_eq!(v["spec"]["tolerations"][0]["key"], "k");
        assert_eq!(v["spec"]["nodeSelector"]["zone"], "b");
    }

    #[test]
    fn override_adds_a_sidecar_and_null_removes() {
        let o = obj(json!({
            "containers": [{"name": "sidecar", "image": "x"}],
            "restartPolicy": null,
        }));
        let pod = plain_pod(&o).unwrap();
        let v = serde_json::to_value(&pod).unwrap();
        assert_eq!(v["spec"]["containers"].as_array().unwrap().len(), 2);
        assert!(v["spec"].get("restartPolicy").is_none());
    }

    #[test]
    fn invalid_override_is_an_error_not_a_panic() {
        let o = obj(json!({"containers": "nope"}));
        let e = plain_pod(&o).unwrap_err().to_string();
        assert!(e.contains("not a valid Pod"), "{e}");
    }
}
