//! Kanister functions run by the installed controller on the real node: real containers run the
//! commands, exec goes into a real pod, a real Deployment is scaled, and restic moves real bytes
//! between a PersistentVolume and the object store.

use serde_json::{Value, json};

use crate::install::{apply_yaml, installed_namespace};
use crate::real::{self, kubectl, tools_image};
use crate::support;

/// An ActionSet of `action` on the Deployment `app`, run by the installed controller to its end.
pub async fn run_action(ns: &str, blueprint: &str, action: &str, extra: Value) -> Value {
    let mut spec = json!({
        "name": action, "blueprint": blueprint,
        "object": {"kind": "Deployment", "name": "app", "namespace": ns},
    });
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    run_spec(ns, spec).await
}

/// An ActionSet of one action (`spec`: name, blueprint, object, ...), run by the installed
/// controller to its end.
pub async fn run_spec(ns: &str, spec: Value) -> Value {
    let created = start_spec(ns, spec);
    wait_end(ns, &created).await
}

/// Creates the ActionSet of one action (`spec`) for the installed controller; its name.
pub fn start_spec(ns: &str, spec: Value) -> String {
    let action = spec["name"]
        .as_str()
        .expect("the action's name")
        .to_string();
    let actionset = json!({
        "apiVersion": "cr.kanister.io/v1alpha1", "kind": "ActionSet",
        "metadata": {"generateName": format!("{action}-"), "namespace": ns,
                     "labels": {"blueprint-operator.io/executor": "blueprint-operator"}},
        "spec": {"actions": [spec]},
    });
    apply_create(&actionset)
}

/// The ActionSet `ns/name` once it is complete or failed.
pub async fn wait_end(ns: &str, name: &str) -> Value {
    let what = format!("ActionSet {ns}/{name} did not end");
    wait_until(ns, name, &what, |a| {
        matches!(a["status"]["state"].as_str(), Some("complete" | "failed"))
    })
    .await
}

/// Waits until ActionSet `name` (once it exists) satisfies `done`; returns it. Fails saying
/// `what` and listing the namespace's ActionSets.
pub async fn wait_until(ns: &str, name: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    support::poll(real::WAIT * 3, || async {
        let a = kubectl(&[
            "get",
            "actionsets.cr.kanister.io",
            "-n",
            ns,
            name,
            "-o",
            "json",
        ])
        .ok()?;
        let a: Value = serde_json::from_str(&a).ok()?;
        done(&a).then_some(a)
    })
    .await
    .unwrap_or_else(|e| {
        let all = kubectl(&[
            "get",
            "actionsets.cr.kanister.io",
            "-n",
            ns,
            "--show-labels",
        ]);
        panic!("{what}: {e}\n{all:?}")
    })
}

/// The runs of ActionSchedule `schedule` in `ns`, as `kubectl get -o name` lists them.
pub fn schedule_runs(ns: &str, schedule: &str) -> String {
    kubectl(&[
        "get",
        "actionsets.cr.kanister.io",
        "-n",
        ns,
        "-l",
        &format!("blueprint-operator.io/schedule={schedule}"),
        "-o",
        "name",
    ])
    .unwrap()
}

/// `kubectl create` of `obj`; the created object's name.
pub fn apply_create(obj: &Value) -> String {
    let path = std::env::temp_dir().join(format!("bpo-real-{}.json", std::process::id()));
    std::fs::write(&path, obj.to_string()).unwrap();
    let name = kubectl(&[
        "create",
        "-f",
        path.to_str().unwrap(),
        "-o",
        "jsonpath={.metadata.name}",
    ])
    .unwrap();
    std::fs::remove_file(&path).unwrap();
    name
}

/// A namespace with a Deployment `app` (tools image) that mounts the PVC `data` at /data.
pub async fn app_with_volume(prefix: &str) -> String {
    let ns = installed_namespace(prefix).await;
    apply_yaml(&format!(
        r#"apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data, namespace: {ns}}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 64Mi}}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: app, namespace: {ns}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: app}}}}
  template:
    metadata: {{labels: {{app: app}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: {image}
        imagePullPolicy: IfNotPresent
        command: [bash, -c, "exec sleep infinity"]
        volumeMounts: [{{name: data, mountPath: /data}}]
      volumes: [{{name: data, persistentVolumeClaim: {{claimName: data}}}}]
"#,
        image = tools_image()
    ))
    .unwrap();
    kubectl(&[
        "rollout",
        "status",
        "-n",
        &ns,
        "deployment/app",
        "--timeout=180s",
    ])
    .unwrap();
    ns
}

fn app_exec(ns: &str, script: &str) -> String {
    kubectl(&[
        "exec",
        "-n",
        ns,
        "deploy/app",
        "-c",
        "app",
        "--",
        "bash",
        "-c",
        script,
    ])
    .unwrap()
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn kubeexec_preparedata_and_a_restic_round_trip_move_real_bytes_on_a_volume() {
    let ns = app_with_volume("data").await;
    let client = real::client().await;
    support::data_plane::s3_profile(&client, &ns, "s3", "bpo-real")
        .await
        .unwrap();
    let image = tools_image();
    apply_yaml(&format!(
        r####"apiVersion: cr.kanister.io/v1alpha1
kind: Blueprint
metadata: {{name: data, namespace: {ns}}}
actions:
  write:
    phases:
    - func: KubeExec
      name: write
      args:
        namespace: "{{{{ .Deployment.Namespace }}}}"
        pod: "{{{{ index .Deployment.Pods 0 }}}}"
        container: app
        command: [bash, -c, 'head -c 3000000 /dev/urandom > /data/blob; echo kubeexec > /data/by-kubeexec; cd /data && sha256sum blob by-kubeexec > /data/sums; echo "###Phase-output###: {{\"key\":\"sum\",\"value\":\"$(sha256sum < /data/blob | cut -c1-16)\"}}"']
    - func: PrepareData
      name: prepare
      args:
        namespace: "{{{{ .Deployment.Namespace }}}}"
        image: {image}
        volumes: {{data: /mnt/data}}
        command: [bash, -c, 'echo prepared > /mnt/data/by-preparedata; echo "###Phase-output###: {{\"key\":\"host\",\"value\":\"$HOSTNAME\"}}"']
  backup:
    outputArtifacts:
      data:
        keyValue:
          tag: "{{{{ .Phases.backup.Output.backupTag }}}}"
          id: "{{{{ .Phases.backup.Output.backupID }}}}"
    phases:
    - func: BackupData
      name: backup
      args:
        namespace: "{{{{ .Deployment.Namespace }}}}"
        pod: "{{{{ index .Deployment.Pods 0 }}}}"
        container: app
        includePath: /data
        backupArtifactPrefix: "bpo-real/{{{{ .Deployment.Namespace }}}}"
  restore:
    inputArtifactNames: [data]
    phases:
    - func: RestoreData
      name: restore
      args:
        namespace: "{{{{ .Deployment.Namespace }}}}"
        image: {image}
        pod: "{{{{ index .Deployment.Pods 0 }}}}"
        backupArtifactPrefix: "bpo-real/{{{{ .Deployment.Namespace }}}}"
        backupIdentifier: "{{{{ .ArtifactsIn.data.KeyValue.id }}}}"
        restorePath: /
"####
    ))
    .unwrap();

    let write = run_action(&ns, "data", "write", json!({})).await;
    assert_eq!(write["status"]["state"], "complete", "{write:#}");
    let phases = &write["status"]["actions"][0]["phases"];
    let sum = app_exec(&ns, "sha256sum < /data/blob | cut -c1-16");
    assert_eq!(phases[0]["output"]["sum"], sum.trim(), "{phases:#}");
    assert!(
        phases[1]["output"]["host"]
            .as_str()
            .unwrap_or_default()
            .starts_with("prepare-data-"),
        "PrepareData ran in its own pod: {phases:#}"
    );
    assert_eq!(app_exec(&ns, "cat /data/by-preparedata").trim(), "prepared");

    let backup = run_action(
        &ns,
        "data",
        "backup",
        json!({"profile": {"name": "s3", "namespace": ns}}),
    )
    .await;
    assert_eq!(backup["status"]["state"], "complete", "{backup:#}");
    let artifact = backup["status"]["actions"][0]["artifacts"]["data"].clone();
    assert!(
        artifact["keyValue"]["id"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{artifact}"
    );

    // Lose the data, then restore it from the backup's output artifact.
    app_exec(
        &ns,
        "rm -f /data/blob /data/by-kubeexec /data/by-preparedata",
    );
    let restore = run_action(
        &ns,
        "data",
        "restore",
        json!({"profile": {"name": "s3", "namespace": ns}, "artifacts": {"data": artifact}}),
    )
    .await;
    assert_eq!(restore["status"]["state"], "complete", "{restore:#}");
    let check = app_exec(&ns, "cd /data && sha256sum -c sums && cat by-preparedata");
    assert!(
        check.contains("blob: OK") && check.contains("by-kubeexec: OK"),
        "{check}"
    );
    assert!(check.contains("prepared"), "{check}");
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn scaleworkload_defer_phase_brings_the_application_back_after_a_failed_phase() {
    let ns = app_with_volume("scale").await;
    apply_yaml(&format!(
        r#"apiVersion: cr.kanister.io/v1alpha1
kind: Blueprint
metadata: {{name: scale, namespace: {ns}}}
actions:
  backup:
    phases:
    - func: ScaleWorkload
      name: quiesce
      args: {{replicas: 0}}
    - func: KubeTask
      name: copy
      args:
        image: {image}
        command: [bash, -c, 'test "$(ls /proc | grep -c .)" -gt 0; echo copying failed >&2; exit 3']
    deferPhase:
      func: ScaleWorkload
      name: restart
      args:
        replicas: "{{{{ .Phases.quiesce.Output.originalReplicaCount }}}}"
"#,
        image = tools_image()
    ))
    .unwrap();
    let done = run_action(&ns, "scale", "backup", json!({})).await;
    assert_eq!(done["status"]["state"], "failed", "{done:#}");
    let error = done["status"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        error.contains("exited with code 3"),
        "the container's exit in the error: {done:#}"
    );
    let defer = &done["status"]["actions"][0]["deferPhase"];
    assert_eq!(defer["state"], "complete", "{done:#}");
    // The application really runs again: its pod is back and ready.
    kubectl(&[
        "rollout",
        "status",
        "-n",
        &ns,
        "deployment/app",
        "--timeout=120s",
    ])
    .unwrap();
    let d: Value = serde_json::from_str(
        &kubectl(&["get", "deployment", "-n", &ns, "app", "-o", "json"]).unwrap(),
    )
    .unwrap();
    assert_eq!(d["status"]["readyReplicas"], 1, "{d:#}");
}
