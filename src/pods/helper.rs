//! The helper pod of RestoreData, DeleteData and CopyVolumeData (Kanister's
//! `kube.NewPodRunner` with `PodOptions{Command: sh -c "tail -f /dev/null"}`
//! and `WaitForPodReady`): a pod that only waits, with the given PVCs
//! mounted, into which restic commands are exec'd; deleted afterwards, also
//! when the phase fails or is cancelled ([`super::PodGuard`]).
//!
//! The pod is built by [`super::build_pod`] (podOverride as a
//! strategic merge, the `createdBy: kanister` label), so it looks like every
//! other pod this executor creates. Labels and annotations are merged as for
//! every pod ([`super::merge_labels`]: the Blueprint's win);
//! podOverride as Kanister's `GetPodSpecOverride` (the
//! Blueprint's merged with the ActionSet's, the ActionSet's win).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::Api;
use serde_json::{Map, Value, json};

use crate::pods::{self as pod, CONTAINER, PodEnv, PodError, PodGuard};
use crate::restic::Target;

/// The image Kanister uses when a data function gets none
/// (`consts.GetKanisterToolsImage()`; env `KANISTER_TOOLS` overrides it).
pub const DEFAULT_TOOLS_IMAGE: &str = "ghcr.io/kanisterio/kanister-tools:0.116.0";

/// `KANISTER_TOOLS` or [`DEFAULT_TOOLS_IMAGE`].
pub fn tools_image() -> String {
    std::env::var("KANISTER_TOOLS")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_TOOLS_IMAGE.to_string())
}

/// One PVC mounted into the helper pod (Kanister's `kube.VolumeMountOptions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeMount {
    pub mount_path: String,
    pub read_only: bool,
}

/// What the helper pod looks like (Kanister's `kube.PodOptions`).
#[derive(Debug, Clone, Default)]
pub struct PodOptions {
    pub namespace: String,
    /// `restore-data-`, `delete-data-`, `copy-vol-data-`.
    pub generate_name: String,
    pub image: String,
    /// PVC name → mount.
    pub volumes: BTreeMap<String, VolumeMount>,
    pub pod_override: Option<Map<String, Value>>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

/// The podOverride/podLabels/podAnnotations of a data function.
#[derive(Debug, Clone, Default)]
pub struct PodExtras {
    pub pod_override: Option<Map<String, Value>>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

impl PodExtras {
    /// The helper pod `<generate_name>…` in `namespace` with these extras.
    pub fn options(
        &self,
        namespace: &str,
        generate_name: &str,
        image: &str,
        volumes: BTreeMap<String, VolumeMount>,
    ) -> PodOptions {
        PodOptions {
            namespace: namespace.to_string(),
            generate_name: generate_name.to_string(),
            image: image.to_string(),
            volumes,
            pod_override: self.pod_override.clone(),
            labels: self.labels.clone(),
            annotations: self.annotations.clone(),
        }
    }
}

/// A volume name for PVC `pvc` valid as a DNS label (`vol-<pvc>`, at most 63 characters).
fn volume_name(pvc: &str, i: usize) -> String {
    let mut n = format!("vol-{pvc}");
    if n.len() > 63 {
        n = format!("vol-{i}-{}", &pvc[pvc.len().saturating_sub(50)..]);
        n = n.trim_end_matches('-').to_string();
    }
    n
}

/// The helper pod of `opts`.
pub fn helper_pod(opts: &PodOptions) -> Result<Pod, pod::InvalidPod> {
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    for (i, (pvc, m)) in opts.volumes.iter().enumerate() {
        let name = volume_name(pvc, i);
        volumes.push(json!({
            "name": name,
            "persistentVolumeClaim": {"claimName": pvc, "readOnly": m.read_only},
        }));
        mounts.push(json!({"name": name, "mountPath": m.mount_path, "readOnly": m.read_only}));
    }
    let mut container = json!({
        "name": CONTAINER,
        "image": opts.image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c", "tail -f /dev/null"],
    });
    let mut spec = json!({"restartPolicy": "Never", "containers": []});
    if !volumes.is_empty() {
        container["volumeMounts"] = Value::Array(mounts);
        spec["volumes"] = Value::Array(volumes);
    }
    spec["containers"] = json!([container]);
    pod::build_pod(
        &opts.namespace,
        &opts.generate_name,
        spec,
        opts.labels.clone(),
        opts.annotations.clone(),
        opts.pod_override.as_ref(),
    )
}

/// Kanister's validation of a `volumes` entry: the PVC must exist ("Failed
/// to retrieve PVC. Namespace <ns>, Name <pvc>: …"); it is mounted read-only
/// when its access modes include ReadOnlyMany (`PVCContainsReadOnlyAccessMode`).
pub async fn pvc_mount(
    client: &kube::Client,
    function: &'static str,
    namespace: &str,
    pvc: &str,
    mount_path: &str,
) -> Result<VolumeMount, PodError> {
    let api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
    let claim = api.get(pvc).await.map_err(|e| {
        PodError::kube(
            function,
            format!("Failed to retrieve PVC. Namespace {namespace}, Name {pvc}"),
            e,
        )
    })?;
    let read_only = claim
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_ref())
        .is_some_and(|m| m.iter().any(|a| a == "ReadOnlyMany"));
    Ok(VolumeMount {
        mount_path: mount_path.to_string(),
        read_only,
    })
}

/// [`pvc_mount`] of each PVC → mount path of `volumes`.
pub async fn pvc_mounts(
    client: &kube::Client,
    function: &'static str,
    namespace: &str,
    volumes: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, VolumeMount>, PodError> {
    let mut mounts = BTreeMap::new();
    for (pvc, mount_path) in volumes {
        let mount = pvc_mount(client, function, namespace, pvc, mount_path).await?;
        mounts.insert(pvc.clone(), mount);
    }
    Ok(mounts)
}

/// A running helper pod. [`HelperPod::delete`] removes it; dropping it
/// without (the phase was cancelled) removes it in the background.
pub struct HelperPod {
    pub namespace: String,
    pub name: String,
    guard: PodGuard,
}

impl HelperPod {
    /// Where to exec restic.
    pub fn target(&self) -> Target<'_> {
        Target {
            namespace: &self.namespace,
            pod: &self.name,
            container: Some(CONTAINER),
        }
    }

    /// Delete the pod (errors are logged only).
    pub async fn delete(self) {
        self.guard.delete().await;
    }
}

/// Create the helper pod and wait until it is ready: "Failed while waiting
/// for Pod <name> to be ready: …" (Kanister's wording); the pod is deleted
/// again when it never gets ready.
pub async fn start(
    env: PodEnv<'_>,
    function: &'static str,
    opts: &PodOptions,
) -> Result<HelperPod, PodError> {
    let pod = helper_pod(opts).map_err(|m| PodError::Override {
        function,
        message: m.to_string(),
    })?;
    let (api, name, guard) = pod::create(env, function, &opts.namespace, pod).await?;
    let helper = HelperPod {
        namespace: opts.namespace.clone(),
        name: name.clone(),
        guard,
    };
    match pod::wait_ready(&api, &name).await {
        Ok(()) => Ok(helper),
        Err(why) => {
            helper.delete().await;
            Err(PodError::failed(
                function,
                format!("Failed while waiting for Pod {name} to be ready: {why}"),
            ))
        }
    }
}

/// Runs `work` in a new helper pod of `opts` (where to exec restic) and deletes the pod
/// afterwards, also when `work` fails.
pub async fn run_in<T, E: From<PodError>>(
    env: PodEnv<'_>,
    function: &'static str,
    opts: &PodOptions,
    work: impl AsyncFnOnce(&Target<'_>) -> Result<T, E>,
) -> Result<T, E> {
    let helper = start(env, function, opts).await?;
    let result = work(&helper.target()).await;
    helper.delete().await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_pod_mounts_volumes_and_waits_forever() {
        let opts = PodOptions {
            namespace: "ns".into(),
            generate_name: "copy-vol-data-".into(),
            image: "img".into(),
            volumes: BTreeMap::from([(
                "data-pvc".into(),
                VolumeMount {
                    mount_path: "/mnt/vol_data/data-pvc".into(),
                    read_only: true,
                },
            )]),
            pod_override: Some(
                json!({"nodeSelector": {"a": "b"}, "containers": [{"name": "container", "imagePullPolicy": "Always"}]})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            labels: BTreeMap::from([("l".into(), "1".into())]),
            annotations: BTreeMap::new(),
        };
        let v = serde_json::to_value(helper_pod(&opts).unwrap()).unwrap();
        assert_eq!(v["metadata"]["generateName"], "copy-vol-data-");
        assert_eq!(v["metadata"]["labels"]["createdBy"], "kanister");
        assert_eq!(v["metadata"]["labels"]["l"], "1");
        let c = &v["spec"]["containers"][0];
        assert_eq!(c["command"], json!(["sh", "-c", "tail -f /dev/null"]));
        assert_eq!(c["imagePullPolicy"], "Always");
        assert_eq!(c["volumeMounts"][0]["mountPath"], "/mnt/vol_data/data-pvc");
        assert_eq!(c["volumeMounts"][0]["readOnly"], true);
        assert_eq!(
            v["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "data-pvc"
        );
        assert_eq!(v["spec"]["nodeSelector"]["a"], "b");
        let no_vols = PodOptions {
            volumes: BTreeMap::new(),
            pod_override: None,
            ..opts
        };
        let v = serde_json::to_value(helper_pod(&no_vols).unwrap()).unwrap();
        assert!(v["spec"].get("volumes").is_none());
    }

    #[test]
    fn long_pvc_names_make_valid_volume_names() {
        let long = "p".repeat(80);
        let n = volume_name(&long, 3);
        assert!(n.len() <= 63, "{n}");
        assert_eq!(volume_name("x", 0), "vol-x");
    }
}
