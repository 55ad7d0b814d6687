//! Kanister functions against the test control plane (kube-apiserver + kwok).
//! kwok runs pods without containers: the pod annotations from
//! `support::kwok_annotations` choose each pod's exit code and log.

use crate::support;
use crate::support::call::{args, call, ctx, namespace_object};

use blueprint_operator::functions::{self};
use blueprint_operator::model::ObjectReference;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

async fn setup(prefix: &str) -> Option<(Client, String)> {
    let client = support::client().await;
    if !support::require_kwok(&client).await {
        return None;
    }
    let ns = support::namespace(&client, prefix).await;
    Some((client, ns))
}

/// The function tests call the functions as the controller's ServiceAccount of
/// manifests/ (not as admin), so a verb the code needs but the shipped RBAC lacks fails them:
/// the client is that ServiceAccount and is refused what the manifests do not grant.
#[tokio::test]
async fn functions_run_as_the_controllers_service_account() -> anyhow::Result<()> {
    let c = ctx("default", namespace_object("default"));
    let review: SelfSubjectReview = serde_json::from_value(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
    }))?;
    let me = Api::<SelfSubjectReview>::all(c.client.clone())
        .create(&PostParams::default(), &review)
        .await?;
    let user = me.status.and_then(|s| s.user_info).and_then(|u| u.username);
    assert_eq!(
        user.as_deref(),
        Some("system:serviceaccount:blueprint-operator:blueprint-operator-controller")
    );
    let secrets: Api<Secret> = Api::namespaced(c.client.clone(), "default");
    match secrets.list(&ListParams::default()).await {
        Err(kube::Error::Api(e)) if e.code == 403 => {}
        other => panic!("listing Secrets must be forbidden: {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn kube_task_runs_a_pod_and_returns_its_phase_output() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-task").await else {
        return Ok(());
    };
    let log = "starting\n\
        ###Phase-output###: {\"key\":\"greeting\",\"value\":\"hello world\"}\n\
        some text ###Phase-output###: {\"key\":\"count\",\"value\":\"1\"}\n\
        ###Phase-output###: {\"key\":\"count\",\"value\":\"2\"}\n\
        done";
    let mut c = ctx(&ns, namespace_object(&ns));
    // ActionSet-level labels reach the pod; kwok annotations choose exit code and log.
    c.pod_labels.insert("team".into(), "storage".into());
    let out = call(
        &c,
        "KubeTask",
        json!({
            "image": "busybox:stable",
            "command": ["sh", "-c", "echo hi"],
            "podAnnotations": support::kwok_annotations(0, log),
        }),
    )
    .await?;
    assert_eq!(
        Value::Object(out),
        json!({"greeting": "hello world", "count": "2"})
    );
    support::function_pods_gone(&client, &ns).await?;
    Ok(())
}

#[tokio::test]
async fn kube_task_failure_reports_the_exit_code_and_deletes_the_pod() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-task-fail").await else {
        return Ok(());
    };
    let c = ctx(&ns, namespace_object(&ns));
    let err = call(
        &c,
        "KubeTask",
        json!({
            "image": "busybox:stable",
            "command": ["sh", "-c", "exit 3"],
            "namespace": ns,
            "podAnnotations": support::kwok_annotations(3, "something broke"),
        }),
    )
    .await
    .expect_err("a failing pod fails the phase");
    let msg = err.to_string();
    assert!(
        msg.contains("Failed while waiting for Pod to complete"),
        "{msg}"
    );
    assert!(msg.contains("exited with code 3"), "{msg}");
    assert!(msg.contains("something broke"), "{msg}");
    support::function_pods_gone(&client, &ns).await?;
    Ok(())
}

#[tokio::test]
async fn kube_task_invalid_phase_output_fails() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-task-badout").await else {
        return Ok(());
    };
    let c = ctx(&ns, namespace_object(&ns));
    let err = call(
        &c,
        "KubeTask",
        json!({
            "image": "busybox:stable",
            "command": ["true"],
            "podAnnotations": support::kwok_annotations(0, "###Phase-output###: {not json"),
        }),
    )
    .await
    .expect_err("invalid phase output fails the phase");
    assert!(err.to_string().contains("invalid JSON"), "{err}");
    support::function_pods_gone(&client, &ns).await?;
    Ok(())
}

fn deployment_object(ns: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: "v1".into(),
        group: "apps".into(),
        resource: "deployments".into(),
        kind: "Deployment".into(),
        name: name.into(),
        namespace: ns.into(),
    }
}

async fn running_pods(client: &Client, ns: &str, app: &str) -> anyhow::Result<usize> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let l = pods
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await?;
    Ok(l.items
        .iter()
        .filter(|p| {
            p.metadata.deletion_timestamp.is_none()
                && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        })
        .count())
}

#[tokio::test]
async fn scale_workload_scales_a_deployment_up_and_down_and_waits() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-scale").await else {
        return Ok(());
    };
    support::create_deployment(&client, &ns, "web", 1).await?;
    let c = ctx(&ns, deployment_object(&ns, "web"));
    // Defaults (kind/name/namespace) come from the action's object; replicas as a string.
    let out = call(&c, "ScaleWorkload", json!({"replicas": "3"})).await?;
    assert_eq!(out["originalReplicaCount"], json!(1));
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let d = deploys.get("web").await?;
    let st = d.status.expect("status");
    assert_eq!(d.spec.and_then(|s| s.replicas), Some(3));
    assert_eq!(st.available_replicas, Some(3), "waited for readiness");
    assert_eq!(running_pods(&client, &ns, "web").await?, 3);

    // Down to 0, with explicit args and waitForReady as a string.
    let other = ctx(&ns, namespace_object(&ns));
    let out = call(
        &other,
        "ScaleWorkload",
        json!({"replicas": 0, "kind": "deployment", "name": "web", "namespace": ns, "waitForReady": "true"}),
    )
    .await?;
    assert_eq!(out["originalReplicaCount"], json!(3));
    let d = deploys.get("web").await?;
    assert_eq!(d.status.and_then(|s| s.available_replicas).unwrap_or(0), 0);
    assert_eq!(running_pods(&client, &ns, "web").await?, 0);
    Ok(())
}

#[tokio::test]
async fn scale_workload_scales_a_statefulset_and_waits() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-scale-sts").await else {
        return Ok(());
    };
    let api: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
    let pod = json!({"containers": [{"name": "db", "image": "postgres:16"}]});
    let sts = support::workload("db", "db", 1, pod, json!({"serviceName": "db"}));
    support::create::<StatefulSet>(&client, &ns, sts).await?;
    let object = ObjectReference {
        api_version: "v1".into(),
        group: "apps".into(),
        resource: "statefulsets".into(),
        kind: "StatefulSet".into(),
        name: "db".into(),
        namespace: ns.clone(),
    };
    let c = ctx(&ns, object);
    let out = call(&c, "ScaleWorkload", json!({"replicas": 2})).await?;
    assert_eq!(out["originalReplicaCount"], json!(1));
    let got = api.get("db").await?;
    assert_eq!(got.status.and_then(|s| s.ready_replicas), Some(2));
    assert_eq!(running_pods(&client, &ns, "db").await?, 2);
    Ok(())
}

#[tokio::test]
async fn scale_workload_without_wait_and_missing_workload() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-scale-nowait").await else {
        return Ok(());
    };
    support::create_deployment(&client, &ns, "api", 2).await?;
    let c = ctx(&ns, deployment_object(&ns, "api"));
    let out = call(
        &c,
        "ScaleWorkload",
        json!({"replicas": 4, "waitForReady": false}),
    )
    .await?;
    assert_eq!(out["originalReplicaCount"], json!(2));
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    assert_eq!(
        deploys.get("api").await?.spec.and_then(|s| s.replicas),
        Some(4)
    );

    let missing = ctx(&ns, deployment_object(&ns, "nope"));
    let err = call(&missing, "ScaleWorkload", json!({"replicas": 1}))
        .await
        .expect_err("missing deployment");
    assert!(
        err.to_string().contains(&format!("Deployment {ns}/nope")),
        "{err}"
    );
    Ok(())
}

#[tokio::test]
async fn kube_ops_creates_patches_and_deletes_a_configmap() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-ops-cm").await else {
        return Ok(());
    };
    // KubeOps creates what the shipped RBAC does not grant: granted as the README says.
    // Not "e2e-kubeops-configmaps": `grant_configmap_create` of other tests writes that one with
    // create alone, and they share this cluster.
    support::rbac::grant_controller(
        &client,
        "e2e-kubeops-configmaps-edit",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "patch", "delete"]}]),
    )
    .await?;
    let c = ctx(&ns, namespace_object(&ns));
    let spec = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: \"1\"\n";
    let out = call(
        &c,
        "KubeOps",
        json!({"operation": "create", "namespace": ns, "spec": spec}),
    )
    .await?;
    // Kanister's create output is an ObjectReference without the kind.
    assert_eq!(
        Value::Object(out.clone()),
        json!({"apiVersion": "v1", "group": "", "resource": "configmaps", "kind": "", "name": "settings", "namespace": ns})
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    assert_eq!(cms.get("settings").await?.data.unwrap()["a"], "1");

    // The create output is a valid objectReference for patch and delete.
    let out2 = call(
        &c,
        "KubeOps",
        json!({"operation": "patch", "objectReference": out, "spec": "data:\n  b: \"2\"\n"}),
    )
    .await?;
    assert_eq!(out2["name"], "settings");
    assert_eq!(out2["kind"], "", "the reference's kind, as given");
    let data = cms.get("settings").await?.data.unwrap();
    assert_eq!((data["a"].as_str(), data["b"].as_str()), ("1", "2"));

    call(
        &c,
        "KubeOps",
        json!({"operation": "delete", "objectReference": {"apiVersion": "v1", "resource": "configmaps", "name": "settings", "namespace": ns}}),
    )
    .await?;
    assert!(cms.get_opt("settings").await?.is_none());

    let err = call(
        &c,
        "KubeOps",
        json!({"operation": "delete", "objectReference": {"apiVersion": "v1", "resource": "configmaps", "name": "settings", "namespace": ns}}),
    )
    .await
    .expect_err("deleting a missing object fails");
    assert!(err.to_string().contains("deleting ConfigMap"), "{err}");
    Ok(())
}

#[tokio::test]
async fn kube_ops_creates_patches_and_deletes_a_deployment() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-ops-deploy").await else {
        return Ok(());
    };
    support::rbac::grant_controller(
        &client,
        "e2e-kubeops-deployments",
        json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create", "delete"]}]),
    )
    .await?;
    let c = ctx(&ns, namespace_object(&ns));
    // JSON text, namespace from the object itself.
    let spec = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "made", "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "made"}},
            "template": {"metadata": {"labels": {"app": "made"}},
                         "spec": {"containers": [{"name": "app", "image": "nginx:stable"}]}}
        }
    })
    .to_string();
    let out = call(&c, "KubeOps", json!({"operation": "create", "spec": spec})).await?;
    assert_eq!(out["apiVersion"], "v1");
    assert_eq!(out["group"], "apps");
    assert_eq!(out["resource"], "deployments");
    assert_eq!(out["kind"], "");
    assert_eq!(out["namespace"], json!(ns));

    call(
        &c,
        "KubeOps",
        json!({"operation": "patch", "objectReference": out, "spec": {"spec": {"replicas": 2}}}),
    )
    .await?;
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    assert_eq!(
        deploys.get("made").await?.spec.and_then(|s| s.replicas),
        Some(2)
    );

    call(
        &c,
        "KubeOps",
        json!({"operation": "delete", "namespace": ns, "objectReference": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "made"}}),
    )
    .await?;
    support::poll(support::WAIT, || async {
        deploys.get_opt("made").await.ok()?.is_none().then_some(())
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn unsupported_functions_fail_clearly() -> anyhow::Result<()> {
    let c = ctx("default", namespace_object("default"));
    let err = call(&c, "BackupDataUsingKopiaServer", json!({}))
        .await
        .expect_err("unsupported");
    let msg = err.to_string();
    assert!(msg.contains(" (supported: KubeTask, "), "{msg}");
    for f in functions::registry::supported() {
        assert!(msg.contains(f), "{msg} lacks {f}");
    }
    // Released Kanister's Kopia RepositoryServer functions: known, refused with the reason.
    for f in [
        "BackupDataUsingKopiaServer",
        "RestoreDataUsingKopiaServer",
        "DeleteDataUsingKopiaServer",
    ] {
        let msg = call(&c, f, json!({})).await.expect_err(f).to_string();
        assert!(
            msg.starts_with(&format!(
                "function {f} is not supported by this executor: it needs Kanister's Kopia RepositoryServer"
            )),
            "{msg}"
        );
    }
    // Proposed for Kanister but never released: unregistered, in Kanister's words.
    for f in [
        "CopyVolumeDataUsingKopiaServer",
        "BackupDataAllUsingKopiaServer",
        "BackupDataStatsUsingKopiaServer",
    ] {
        let msg = call(&c, f, json!({})).await.expect_err(f).to_string();
        assert_eq!(
            msg,
            format!("Requested function {{{f}}} has not been registered")
        );
    }
    Ok(())
}

#[tokio::test]
async fn wait_v2_returns_once_a_deployment_is_ready() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-waitv2").await else {
        return Ok(());
    };
    let c = ctx(&ns, deployment_object(&ns, "slow"));
    // Params as the executor passes them: objectReference fields are templates.
    let params = json!({"Object": {"metadata": {"name": "slow", "namespace": ns}}});
    let wait_args = args(json!({
        "timeout": "2m",
        "conditions": {"anyOf": [{
            "condition": "{{ $available := false }}{{ range $condition := $.status.conditions }}{{ if and (eq .type \"Available\") (eq .status \"True\") }}{{ $available = true }}{{ end }}{{ end }}{{ and $available (eq (toString .status.readyReplicas) \"2\") }}",
            "objectReference": {
                "apiVersion": "v1", "group": "apps", "resource": "deployments",
                "name": "{{ .Object.metadata.name }}", "namespace": "{{ .Object.metadata.namespace }}"
            }
        }]}
    }));
    // Start waiting before the Deployment exists: a missing object is "not yet".
    let waiting = tokio::spawn({
        let c = c.clone();
        let params = params.clone();
        async move { functions::execute(&c, "WaitV2", &wait_args, &params).await }
    });
    support::create_deployment(&client, &ns, "slow", 2).await?;
    let out = tokio::time::timeout(support::call::CALL, waiting).await??;
    assert!(out?.is_empty());
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let d = deploys.get("slow").await?;
    assert_eq!(d.status.and_then(|s| s.ready_replicas), Some(2));
    Ok(())
}

#[tokio::test]
async fn wait_times_out_with_the_reason() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-wait").await else {
        return Ok(());
    };
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(
            json!({"metadata": {"name": "flag"}, "data": {"state": "pending"}}),
        )?,
    )
    .await?;
    let c = ctx(&ns, namespace_object(&ns));
    let cond = |state: &str| {
        json!({
            "timeout": "1s",
            "conditions": {"allOf": [{
                "condition": format!("{{{{ if eq \"{{$.data.state}}\" \"{state}\" }}}}true{{{{ end }}}}"),
                "objectReference": {"apiVersion": "v1", "resource": "configmaps", "name": "flag", "namespace": ns}
            }]}
        })
    };
    // Wait (JSONPath flavour): true at once for the current value.
    let out = call(&c, "Wait", cond("pending")).await?;
    assert!(out.is_empty());
    // ... and a timeout error naming the object otherwise.
    let err = call(&c, "Wait", cond("done")).await.expect_err("times out");
    let msg = err.to_string();
    assert!(
        msg.contains("Failed to wait for the allOf condition(s) to be met within 1s"),
        "{msg}"
    );
    assert!(msg.contains(&format!("configmaps {ns}/flag")), "{msg}");
    Ok(())
}

/// The exec round trip goes over a websocket through the API server to kwok's kubelet endpoint;
/// the test cluster's kwok runs the command locally (ClusterExec in kwok-config.yaml.in).
#[tokio::test]
async fn kube_exec_and_kube_exec_all_reach_the_pod() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-exec").await else {
        return Ok(());
    };
    let name = support::running_deployment_pod(&client, &ns, "target").await?;
    let c = ctx(&ns, namespace_object(&ns));
    let command = json!([
        "sh",
        "-c",
        "echo '###Phase-output###: {\"key\":\"k\",\"value\":\"v\"}'"
    ]);
    let results = [
        call(
            &c,
            "KubeExec",
            json!({"namespace": ns, "pod": name, "command": command}),
        )
        .await,
        call(
            &c,
            "KubeExecAll",
            json!({"namespace": ns, "pods": name, "containers": "app", "command": command}),
        )
        .await,
    ];
    for r in results {
        assert_eq!(Value::Object(r?), json!({"k": "v"}));
    }
    // A non-zero exit fails with the code and stderr.
    let err = call(
        &c,
        "KubeExec",
        json!({"namespace": ns, "pod": name, "container": "app",
               "command": ["sh", "-c", "echo out; echo broken >&2; exit 3"]}),
    )
    .await
    .expect_err("exit 3 fails the phase");
    let msg = err.to_string();
    // A kubelet reports NonZeroExitCode with an ExitCode cause; kwok an InternalError.
    assert!(
        msg.contains("command terminated with exit code 3") || msg.contains("exit status 3"),
        "{msg}"
    );
    assert!(msg.contains("broken"), "{msg}");
    // A missing pod is a clear error.
    let err = call(
        &c,
        "KubeExec",
        json!({"namespace": ns, "pod": "nope", "command": ["true"]}),
    )
    .await
    .expect_err("missing pod");
    assert!(
        err.to_string().contains(&format!("getting pod {ns}/nope")),
        "{err}"
    );
    Ok(())
}

/// The executor may drop a phase future at any await point: the task pod must still go away.
#[tokio::test]
async fn kube_task_pod_is_deleted_when_the_phase_is_cancelled() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-task-cancel").await else {
        return Ok(());
    };
    let c = ctx(&ns, namespace_object(&ns));
    let mut annotations = support::kwok_annotations(0, "");
    annotations.remove(support::kwok::LOG);
    annotations.insert(support::kwok::DURATION.into(), "1h".into());
    let a = args(
        json!({"image": "busybox:stable", "command": ["sleep", "3600"], "podAnnotations": annotations}),
    );
    let task =
        tokio::spawn(async move { functions::execute(&c, "KubeTask", &a, &json!({})).await });
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    support::poll(support::WAIT, || async {
        let l = pods
            .list(&ListParams::default().labels("createdBy=kanister"))
            .await
            .ok()?;
        l.items
            .iter()
            .any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .then_some(())
    })
    .await?;
    assert!(!task.is_finished(), "the pod runs for an hour");
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    support::function_pods_gone(&client, &ns).await?;
    Ok(())
}

/// Blueprint and ActionSet podOverride/podLabels/podAnnotations reach the task pod.
#[tokio::test]
async fn kube_task_pod_carries_overrides_labels_and_annotations() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-task-override").await else {
        return Ok(());
    };
    let mut c = ctx(&ns, namespace_object(&ns));
    c.pod_override = Some(args(json!({
        "activeDeadlineSeconds": 600,
        "containers": [{"name": "container", "env": [{"name": "FROM", "value": "actionset"}]}],
    })));
    c.pod_labels.insert("shared".into(), "actionset".into());
    c.pod_annotations
        .insert("note".into(), "from-actionset".into());
    let mut annotations = support::kwok_annotations(0, "");
    annotations.remove(support::kwok::LOG);
    annotations.insert(support::kwok::DURATION.into(), "1h".into());
    let a = args(json!({
        "image": "busybox:stable",
        "command": ["sleep", "3600"],
        "podOverride": {
            "activeDeadlineSeconds": 60,
            "containers": [{"name": "container", "workingDir": "/data", "env": [{"name": "FROM", "value": "blueprint"}]}],
        },
        "podLabels": {"shared": "blueprint", "bp": "yes"},
        "podAnnotations": annotations,
    }));
    let task =
        tokio::spawn(async move { functions::execute(&c, "KubeTask", &a, &json!({})).await });
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let pod = support::poll(support::WAIT, || async {
        let l = pods
            .list(&ListParams::default().labels("createdBy=kanister"))
            .await
            .ok()?;
        l.items.into_iter().next()
    })
    .await?;
    task.abort();
    let _ = task.await;
    let name = pod.metadata.name.clone().unwrap_or_default();
    assert!(name.starts_with("kanister-job-"), "{name}");
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    // Kanister's MergeBPLabels: a key set by both keeps the Blueprint's value.
    assert_eq!(labels.get("shared").map(String::as_str), Some("blueprint"));
    assert_eq!(labels.get("bp").map(String::as_str), Some("yes"));
    let ann = pod.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(ann.get("note").map(String::as_str), Some("from-actionset"));
    let spec = pod.spec.expect("spec");
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    assert_eq!(spec.active_deadline_seconds, Some(600), "ActionSet wins");
    assert_eq!(spec.containers.len(), 1);
    let container = &spec.containers[0];
    assert_eq!(container.name, "container");
    assert_eq!(container.image.as_deref(), Some("busybox:stable"));
    // JSON merge between the two overrides: the ActionSet's container list replaces the
    // Blueprint's; the result is then merged into the pod by container name.
    assert_eq!(container.working_dir, None);
    let env = container.env.clone().unwrap_or_default();
    assert_eq!(env.len(), 1);
    assert_eq!(env[0].value.as_deref(), Some("actionset"));
    support::function_pods_gone(&client, &ns).await?;
    Ok(())
}

/// A large pod log is read as a stream: outputs from its start
/// and its end both arrive, and a failure message shows only its last lines.
#[tokio::test]
async fn kube_task_reads_a_large_log_as_a_stream() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-task-big").await else {
        return Ok(());
    };
    let dir = std::env::temp_dir().join(format!("bpo-big-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("log.txt");
    let mut text = String::from("###Phase-output###: {\"key\":\"first\",\"value\":\"a\"}\n");
    let noise = "x".repeat(1023) + "\n";
    for _ in 0..(24 * 1024) {
        text.push_str(&noise);
    }
    text.push_str("###Phase-output###: {\"key\":\"last\",\"value\":\"z\"}\nthe end\n");
    std::fs::write(&file, &text)?;
    let c = ctx(&ns, namespace_object(&ns));
    let annotations = |exit: i32| {
        json!({
            support::kwok::EXIT: exit.to_string(),
            support::kwok::LOG_FILE: file.to_str().unwrap(),
        })
    };
    let out = call(
        &c,
        "KubeTask",
        json!({"image": "busybox:stable", "command": ["true"], "podAnnotations": annotations(0)}),
    )
    .await?;
    assert_eq!(Value::Object(out), json!({"first": "a", "last": "z"}));
    let e = call(
        &c,
        "KubeTask",
        json!({"image": "busybox:stable", "command": ["true"], "podAnnotations": annotations(2)}),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("exited with code 2"),
        "{}",
        &e[..e.len().min(500)]
    );
    assert!(
        e.ends_with("the end"),
        "{}",
        &e[e.len().saturating_sub(300)..]
    );
    assert!(
        e.len() < 20_000,
        "the message carries only the log's tail: {} bytes",
        e.len()
    );
    support::function_pods_gone(&client, &ns).await?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
