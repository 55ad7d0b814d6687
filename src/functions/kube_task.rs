//! KubeTask (Kanister `pkg/function/kube_task.go`): run `command` in a new
//! pod made from `image`, collect the phase output from its log, and delete
//! the pod afterwards (also when it fails or the phase is cancelled).
//!
//! Differences from Kanister, on purpose or by necessity (labels and
//! annotations merge as in Kanister: [`merge_labels`]):
//! - the default namespace is the ActionSet's (Kanister: the controller's);
//! - `podOverride` (the Blueprint's merged with the ActionSet's by JSON merge
//!   patch, ActionSet wins) is applied to the pod spec with a *subset* of
//!   strategic merge: objects merge recursively, `null` deletes a key, lists
//!   whose elements all carry a `name` (containers, volumes, env, …) merge
//!   element by element on that name, other lists are replaced;
//! - the log is read once the pod has finished (as a stream, in bounded
//!   memory: the phase output is parsed from all of it, only its tail kept).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, LogParams};
use serde_json::{Map, Value, json};

use super::args::Args;
use super::{Context, FunctionError, Output, output, pod_create};

const NAME: &str = "KubeTask";
const ARGS: &[&str] = &[
    "image",
    "command",
    "namespace",
    "podOverride",
    "podAnnotations",
    "podLabels",
];
/// Name of the single container of the task pod.
pub const CONTAINER: &str = "container";
/// Label Kanister puts on the pods it creates.
pub const CREATED_BY_LABEL: (&str, &str) = ("createdBy", "kanister");

pub async fn run(ctx: &Context, args: &Map<String, Value>) -> Result<Output, FunctionError> {
    let a = Args::new(NAME, args);
    a.check_supported(ARGS)?;
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
    .map_err(|m| FunctionError::arg(NAME, "podOverride", m))?;
    let (log, _) = run_pod(ctx, NAME, &namespace, pod).await?;
    log.output(NAME)
}

/// Pod labels/annotations as Kanister's `MergeBPLabels`/`MergeBPAnnotations`
/// merge them for every function that creates a pod: the ActionSet's map
/// overlaid with the Blueprint's, so a key set by both keeps the Blueprint's
/// value (selectors a Blueprint relies on cannot be overridden per run).
pub fn merge_labels(
    bp: Option<BTreeMap<String, String>>,
    actionset: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut m = actionset.clone();
    m.extend(bp.unwrap_or_default());
    m
}

/// The Blueprint's `podOverride` merged with the ActionSet's (JSON merge patch, ActionSet wins).
pub fn merge_overrides(
    bp: Option<Map<String, Value>>,
    actionset: Option<&Map<String, Value>>,
) -> Option<Map<String, Value>> {
    match (bp, actionset) {
        (None, None) => None,
        (Some(b), None) => Some(b),
        (None, Some(a)) => Some(a.clone()),
        (Some(b), Some(a)) => {
            let mut base = Value::Object(b);
            json_merge(&mut base, &Value::Object(a.clone()));
            match base {
                Value::Object(m) => Some(m),
                _ => None,
            }
        }
    }
}

/// RFC 7386 JSON merge patch.
pub fn json_merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, pv) in p {
                if pv.is_null() {
                    b.remove(k);
                } else {
                    json_merge(b.entry(k.clone()).or_insert(Value::Null), pv);
                }
            }
        }
        (b, Value::Object(p)) => {
            let mut fresh = Value::Object(Map::new());
            json_merge(&mut fresh, &Value::Object(p.clone()));
            *b = fresh;
        }
        (b, p) => *b = p.clone(),
    }
}

/// The subset of strategic merge used for `podOverride` (see module docs).
pub fn strategic_merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, pv) in p {
                if pv.is_null() {
                    b.remove(k);
                } else if let Some(bv) = b.get_mut(k) {
                    strategic_merge(bv, pv);
                } else {
                    b.insert(k.clone(), pv.clone());
                }
            }
        }
        (Value::Array(b), Value::Array(p)) if named(b) && named(p) => {
            for pe in p {
                let name = pe.get("name");
                match b.iter_mut().find(|be| be.get("name") == name) {
                    Some(be) => strategic_merge(be, pe),
                    None => b.push(pe.clone()),
                }
            }
        }
        (b, p) => *b = p.clone(),
    }
}

fn named(list: &[Value]) -> bool {
    list.iter()
        .all(|e| e.get("name").is_some_and(|n| n.is_string()))
}

/// The task pod Kanister would create.
pub fn task_pod(
    namespace: &str,
    image: &str,
    command: &[String],
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    pod_override: Option<&Map<String, Value>>,
) -> Result<Pod, String> {
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

/// A pod from a default `spec` with `podOverride` applied (see module docs),
/// named `<generate_name><random>`, with the `createdBy: kanister` label.
pub fn build_pod(
    namespace: &str,
    generate_name: &str,
    mut spec: Value,
    mut labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    pod_override: Option<&Map<String, Value>>,
) -> Result<Pod, String> {
    labels.insert(CREATED_BY_LABEL.0.into(), CREATED_BY_LABEL.1.into());
    if let Some(o) = pod_override {
        strategic_merge(&mut spec, &Value::Object(o.clone()));
    }
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": generate_name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    });
    serde_json::from_value(pod).map_err(|e| format!("the merged pod spec is not a valid Pod: {e}"))
}

/// Deletes the pod when dropped unless [`PodGuard::delete`] ran: the executor
/// may drop the phase future at any await point. The delete runs as a task
/// on the current Tokio runtime (best effort; nothing runs if there is none).
pub struct PodGuard {
    api: Api<Pod>,
    name: Option<String>,
}

impl PodGuard {
    pub fn new(api: Api<Pod>, name: String) -> Self {
        PodGuard {
            api,
            name: Some(name),
        }
    }

    /// Leave the pod (someone else deletes it).
    pub fn keep(mut self) {
        self.name = None;
    }

    /// Delete the pod now (errors are logged: the phase result does not depend on them).
    pub async fn delete(mut self) {
        if let Some(name) = self.name.take() {
            delete_pod(&self.api, &name).await;
        }
    }
}

impl Drop for PodGuard {
    fn drop(&mut self) {
        if let Some(name) = self.name.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            let api = self.api.clone();
            handle.spawn(async move { delete_pod(&api, &name).await });
        }
    }
}

async fn delete_pod(api: &Api<Pod>, name: &str) {
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => tracing::debug!(pod = name, "deleted task pod"),
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => tracing::warn!(pod = name, error = %e, "could not delete task pod"),
    }
}

/// How long a task pod may stay Pending (Kanister: `TIMEOUT_WORKER_POD_READY`, minutes, default 15).
pub(crate) fn ready_timeout() -> Duration {
    let minutes = std::env::var("TIMEOUT_WORKER_POD_READY")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(15);
    Duration::from_secs(minutes * 60)
}

/// Create `pod`, wait until it has finished, read the log of its first
/// container (streamed: [`PodLog`]), delete it (in a phase: the executor
/// deletes it once the result is recorded). This is where every
/// pod-based phase survives a controller restart: a resumed phase
/// ([`pod_create::find_resumed`]) waits for the pod it created before
/// instead of creating one. Returns the log and the finished pod; a failed pod
/// is an error "Failed while waiting for Pod to complete".
pub async fn run_pod(
    ctx: &Context,
    function: &'static str,
    namespace: &str,
    pod: Pod,
) -> Result<(PodLog, Pod), FunctionError> {
    run_pod_to_end(ctx, function, namespace, pod, true).await
}

/// [`run_pod`], where a failed pod is an error only if `fail_on_error`
/// (otherwise its log and the pod are returned as for a successful one).
pub async fn run_pod_to_end(
    ctx: &Context,
    function: &'static str,
    namespace: &str,
    pod: Pod,
    fail_on_error: bool,
) -> Result<(PodLog, Pod), FunctionError> {
    let (api, name, guard) = match pod_create::find_resumed(ctx, function, namespace).await? {
        Some(found) => found,
        None => pod_create::create(ctx, function, namespace, pod).await?,
    };
    let result = finish(&api, function, namespace, &name, fail_on_error).await;
    if ctx.actionset.as_ref().is_some_and(|a| !a.phase.is_empty()) {
        // The executor deletes it once the phase's result is recorded: a
        // restart in between re-attaches to it instead of finding it gone.
        guard.keep();
    } else {
        guard.delete().await;
    }
    result
}

/// A finished pod's log, read as a stream in bounded memory: the phase
/// output parsed from all of it, and its last [`output::TAIL_BYTES`].
#[derive(Debug)]
pub struct PodLog {
    pub tail: String,
    output: Result<Output, String>,
}

impl PodLog {
    /// The phase output (an invalid `###Phase-output###:` line is an error).
    pub fn output(self, function: &'static str) -> Result<Output, FunctionError> {
        self.output
            .map_err(|message| FunctionError::Output { function, message })
    }
}

async fn read_log(api: &Api<Pod>, name: &str, container: &str) -> Result<PodLog, String> {
    use futures::AsyncReadExt;
    let lp = LogParams {
        container: Some(container.to_string()),
        ..LogParams::default()
    };
    let stream = api.log_stream(name, &lp).await.map_err(|e| e.to_string())?;
    futures::pin_mut!(stream);
    let (mut tail, mut scanner) = (output::Tail::default(), output::Scanner::default());
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = stream.read(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        tail.push(&buf[..n]);
        scanner.feed(&buf[..n]);
    }
    Ok(PodLog {
        tail: tail.text(),
        output: scanner.finish(),
    })
}

async fn finish(
    api: &Api<Pod>,
    function: &'static str,
    namespace: &str,
    name: &str,
    fail_on_error: bool,
) -> Result<(PodLog, Pod), FunctionError> {
    let pod = wait_finished(api, function, namespace, name).await?;
    let container = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .map(|c| c.name.clone())
        .unwrap_or_else(|| CONTAINER.to_string());
    let log = read_log(api, name, &container).await;
    let failed = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed");
    if failed && fail_on_error {
        let mut msg = format!(
            "Failed while waiting for Pod to complete: pod {namespace}/{name} failed: {}",
            termination(&pod)
        );
        if let Ok(log) = &log {
            let lines: Vec<&str> = log.tail.lines().collect();
            if !lines.is_empty() {
                let tail = &lines[lines.len().saturating_sub(10)..];
                msg.push_str(&format!("; last log lines:\n{}", tail.join("\n")));
            }
        }
        return Err(FunctionError::failed(function, msg));
    }
    let log = log.map_err(|e| {
        FunctionError::failed(
            function,
            format!("reading the log of pod {namespace}/{name} container {container}: {e}"),
        )
    })?;
    Ok((log, pod))
}

/// "container "x" exited with code 1 (Error): message" for every terminated container.
fn termination(pod: &Pod) -> String {
    let mut parts = Vec::new();
    if let Some(st) = &pod.status {
        for cs in st.container_statuses.iter().flatten() {
            if let Some(t) = cs.state.as_ref().and_then(|s| s.terminated.as_ref()) {
                let mut p = format!("container {:?} exited with code {}", cs.name, t.exit_code);
                if let Some(r) = &t.reason {
                    p.push_str(&format!(" ({r})"));
                }
                if let Some(m) = t.message.as_ref().filter(|m| !m.is_empty()) {
                    p.push_str(&format!(": {m}"));
                }
                parts.push(p);
            }
        }
        if parts.is_empty() {
            if let Some(r) = &st.reason {
                parts.push(r.clone());
            }
            if let Some(m) = &st.message {
                parts.push(m.clone());
            }
        }
    }
    if parts.is_empty() {
        "phase Failed".into()
    } else {
        parts.join("; ")
    }
}

/// Container waiting reasons that will not resolve by themselves.
pub(crate) const FATAL_WAITING: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
];

async fn wait_finished(
    api: &Api<Pod>,
    function: &'static str,
    namespace: &str,
    name: &str,
) -> Result<Pod, FunctionError> {
    let ready_deadline = tokio::time::Instant::now() + ready_timeout();
    let mut delay = Duration::from_millis(100);
    loop {
        let pod = api.get(name).await.map_err(|e| {
            FunctionError::kube(function, format!("getting pod {namespace}/{name}"), e)
        })?;
        let status = pod.status.clone().unwrap_or_default();
        match status.phase.as_deref() {
            Some("Succeeded" | "Failed") => return Ok(pod),
            Some("Running") => {}
            _ => {
                for cs in status.container_statuses.iter().flatten() {
                    if let Some(w) = cs.state.as_ref().and_then(|s| s.waiting.as_ref())
                        && let Some(reason) = w.reason.as_deref()
                        && FATAL_WAITING.contains(&reason)
                    {
                        return Err(FunctionError::failed(
                            function,
                            format!(
                                "Failed while waiting for Pod {namespace}/{name} to be ready: container {:?} is waiting: {reason}: {}",
                                cs.name,
                                w.message.as_deref().unwrap_or("")
                            ),
                        ));
                    }
                }
                if tokio::time::Instant::now() >= ready_deadline {
                    return Err(FunctionError::failed(
                        function,
                        format!(
                            "Failed while waiting for Pod {namespace}/{name} to be ready: still {} after {:?} (set TIMEOUT_WORKER_POD_READY, in minutes, to wait longer)",
                            status.phase.as_deref().unwrap_or("without a phase"),
                            ready_timeout()
                        ),
                    ));
                }
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
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
        let pod = task_pod(
            "ns",
            "img",
            &["true".into()],
            BTreeMap::new(),
            BTreeMap::new(),
            Some(&merged),
        )
        .unwrap();
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
        let pod = task_pod(
            "ns",
            "img",
            &["true".into()],
            BTreeMap::new(),
            BTreeMap::new(),
            Some(&o),
        )
        .unwrap();
        let v = serde_json::to_value(&pod).unwrap();
        assert_eq!(v["spec"]["containers"].as_array().unwrap().len(), 2);
        assert!(v["spec"].get("restartPolicy").is_none());
    }

    #[test]
    fn invalid_override_is_an_error_not_a_panic() {
        let o = obj(json!({"containers": "nope"}));
        let e = task_pod(
            "ns",
            "img",
            &["true".into()],
            BTreeMap::new(),
            BTreeMap::new(),
            Some(&o),
        )
        .unwrap_err();
        assert!(e.contains("not a valid Pod"), "{e}");
    }

    #[test]
    fn blueprint_labels_win_over_the_actionsets() {
        let aset = BTreeMap::from([("a".into(), "as".into()), ("b".into(), "as".into())]);
        let bp = BTreeMap::from([("a".to_string(), "bp".to_string())]);
        let merged = merge_labels(Some(bp), &aset);
        assert_eq!(merged["a"], "bp");
        assert_eq!(merged["b"], "as");
        assert_eq!(merge_labels(None, &aset), aset);
    }

    #[test]
    fn json_merge_follows_rfc7386() {
        let mut a = json!({"a": [1, 2], "b": {"c": 1, "d": 2}});
        json_merge(&mut a, &json!({"a": [3], "b": {"c": null, "e": 3}}));
        assert_eq!(a, json!({"a": [3], "b": {"d": 2, "e": 3}}));
    }
}
