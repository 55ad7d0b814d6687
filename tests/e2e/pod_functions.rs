//! MultiContainerRun and PrepareData against the test control plane
//! (kube-apiserver + kwok). kwok runs pods without containers: the pod
//! annotations from `support::kwok_annotations` choose how each pod ends and
//! what its log says. A watch records every pod the functions create, so the
//! tests check the pod spec that was sent although the pods are deleted.

use crate::support;

use crate::support::call::{args, call, call_with};
use crate::support::controller::Controller;
use crate::support::pod_watch::PodWatch;
use blueprint_operator::functions::{self, Context};
use blueprint_operator::model::ActionSet;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, Pod, Secret, ServiceAccount};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

/// A function call on the test's namespace, as the controller makes it.
fn ctx(ns: &str) -> Context {
    support::call::ctx(ns, support::call::namespace_object(ns))
}

async fn setup(prefix: &str) -> Option<(Client, String)> {
    let client = support::client().await;
    if !support::require_kwok(&client).await {
        return None;
    }
    let ns = support::namespace(&client, prefix).await;
    Some((client, ns))
}

fn pod_json(p: &Pod) -> Value {
    serde_json::to_value(p).expect("pod to JSON")
}

fn container<'a>(pod: &'a Value, list: &str, name: &str) -> &'a Value {
    pod["spec"][list]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no {list} {name} in {pod}"))
}

/// A container's volume mounts without the service-account token that admission adds.
fn own_mounts(c: &Value) -> Value {
    Value::Array(
        c["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| {
                !m["name"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("kube-api-access")
            })
            .cloned()
            .collect(),
    )
}

const OUTPUT_LOG: &str = "copying\n\
    ###Phase-output###: {\"key\":\"dumpSize\",\"value\":\"42\"}\n\
    ###Phase-output###: {\"key\":\"status\",\"value\":\"done\"}\n";

#[tokio::test]
async fn multi_container_run_builds_the_shared_volume_pod_and_parses_the_output_container()
-> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-mcr").await else {
        return Ok(());
    };
    let rec = PodWatch::start(&client, &ns).await;
    let mut c = ctx(&ns);
    c.pod_labels.insert("team".into(), "db".into());
    let out = call(
        &c,
        "MultiContainerRun",
        json!({
            "namespace": ns,
            "initImage": "busybox:stable",
            "initCommand": ["sh", "-c", "mkfifo /shared/pipe"],
            "backgroundImage": "postgres:16",
            "backgroundCommand": ["sh", "-c", "pg_dump > /shared/pipe"],
            "outputImage": "restic:latest",
            "outputCommand": ["sh", "-c", "restic backup --stdin < /shared/pipe"],
            "sharedVolumeMedium": "Memory",
            "sharedVolumeSizeLimit": "128Mi",
            "sharedVolumeDir": "/shared",
            "podLabels": {"app": "backup"},
            "podAnnotations": support::kwok_annotations(0, OUTPUT_LOG),
        }),
    )
    .await?;
    assert_eq!(
        Value::Object(out),
        json!({"dumpSize": "42", "status": "done"})
    );

    let pod = pod_json(&rec.only_pod().await);
    assert_eq!(pod["metadata"]["namespace"], ns.as_str());
    assert!(
        pod["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("kanister-job-")
    );
    assert_eq!(pod["metadata"]["labels"]["createdBy"], "kanister");
    assert_eq!(pod["metadata"]["labels"]["app"], "backup");
    assert_eq!(pod["metadata"]["labels"]["team"], "db");
    assert_eq!(
        pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"],
        "output"
    );
    assert_eq!(pod["spec"]["restartPolicy"], "Never");
    let names: Vec<&str> = pod["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["output", "background"], "output container first");
    let output = container(&pod, "containers", "output");
    assert_eq!(output["image"], "restic:latest");
    assert_eq!(
        output["command"],
        json!(["sh", "-c", "restic backup --stdin < /shared/pipe"])
    );
    let background = container(&pod, "containers", "background");
    assert_eq!(background["image"], "postgres:16");
    assert_eq!(
        background["command"],
        json!(["sh", "-c", "pg_dump > /shared/pipe"])
    );
    let init = container(&pod, "initContainers", "init");
    assert_eq!(init["image"], "busybox:stable");
    assert_eq!(init["command"], json!(["sh", "-c", "mkfifo /shared/pipe"]));
    for c in [output, background, init] {
        assert_eq!(
            own_mounts(c),
            json!([{"name": "shared", "mountPath": "/shared"}]),
            "{c}"
        );
    }
    let vols = pod["spec"]["volumes"].as_array().unwrap();
    let shared = vols
        .iter()
        .find(|v| v["name"] == "shared")
        .expect("shared volume");
    assert_eq!(
        shared["emptyDir"],
        json!({"medium": "Memory", "sizeLimit": "128Mi"})
    );
    support::function_pods_gone(&client, &ns).await?;
    Ok(())
}

#[tokio::test]
async fn multi_container_run_defaults_and_actionset_container_override() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-mcr-ovr").await else {
        return Ok(());
    };
    let rec = PodWatch::start(&client, &ns).await;
    let mut c = ctx(&ns);
    // An ActionSet podOverride written for KubeTask's "container" reaches both workers.
    c.pod_override = Some(args(json!({
        "containers": [{"name": "container", "env": [{"name": "MODE", "value": "fast"}]}],
    })));
    c.pod_annotations = support::kwok_annotations(0, "no output here");
    let out = call(
        &c,
        "MultiContainerRun",
        json!({
            "backgroundImage": "busybox:stable",
            "backgroundCommand": ["sleep", "1"],
            "outputImage": "busybox:stable",
            "outputCommand": "true",
            "podOverride": {"nodeSelector": {"kubernetes.io/os": "linux"}},
        }),
    )
    .await?;
    assert!(out.is_empty(), "{out:?}");
    let pod = pod_json(&rec.only_pod().await);
    // Defaults: the ActionSet's namespace, /tmp/, no init container, plain emptyDir.
    assert_eq!(pod["metadata"]["namespace"], ns.as_str());
    assert!(pod["spec"].get("initContainers").is_none(), "{pod}");
    assert_eq!(pod["spec"]["nodeSelector"]["kubernetes.io/os"], "linux");
    let names: Vec<&str> = pod["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["output", "background"],
        "no container named container"
    );
    for name in ["output", "background"] {
        let c = container(&pod, "containers", name);
        assert_eq!(c["env"], json!([{"name": "MODE", "value": "fast"}]), "{c}");
        assert_eq!(
            own_mounts(c),
            json!([{"name": "shared", "mountPath": "/tmp/"}])
        );
    }
    assert_eq!(
        container(&pod, "containers", "output")["command"],
        json!(["true"])
    );
    let shared = &pod["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "shared")
        .expect("shared volume")["emptyDir"];
    assert_eq!(shared, &json!({}));
    support::function_pods_gone(&client, &ns).await?;
    Ok(())
}

#[tokio::test]
async fn multi_container_run_failures() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-mcr-fail").await else {
        return Ok(());
    };
    let rec = PodWatch::start(&client, &ns).await;
    let c = ctx(&ns);
    let base = json!({
        "backgroundImage": "busybox:stable",
        "backgroundCommand": ["true"],
        "outputImage": "busybox:stable",
        "outputCommand": ["sh", "-c", "exit 4"],
    });

    // A container that fails fails the phase with the exit code and the log tail.
    let mut a = base.clone();
    a["podAnnotations"] = json!(support::kwok_annotations(4, "disk full"));
    let err = call(&c, "MultiContainerRun", a)
        .await
        .expect_err("a failed pod fails the phase");
    let msg = err.to_string();
    assert!(msg.starts_with("MultiContainerRun: "), "{msg}");
    assert!(
        msg.contains("Failed while waiting for Pod to complete"),
        "{msg}"
    );
    assert!(msg.contains("exited with code 4"), "{msg}");
    assert!(msg.contains("disk full"), "{msg}");
    support::function_pods_gone(&client, &ns).await?;

    // Invalid phase output from the output container.
    let mut a = base.clone();
    a["podAnnotations"] = json!(support::kwok_annotations(0, "###Phase-output###: {oops"));
    let err = call(&c, "MultiContainerRun", a)
        .await
        .expect_err("invalid phase output fails the phase");
    assert!(
        err.to_string().contains("failed to parse phase output"),
        "{err}"
    );
    support::function_pods_gone(&client, &ns).await?;
    rec.wait_count(2).await;

    // Bad arguments fail before any pod is created.
    let mut a = base.clone();
    a["sharedVolumeSizeLimit"] = json!("a lot");
    let err = call(&c, "MultiContainerRun", a)
        .await
        .expect_err("bad size");
    assert!(
        err.to_string()
            .contains("Failed to parse sharedStorageSize arg"),
        "{err}"
    );
    let mut a = base.clone();
    a.as_object_mut().unwrap().remove("backgroundImage");
    let err = call(&c, "MultiContainerRun", a)
        .await
        .expect_err("missing arg");
    assert!(err.to_string().contains("`backgroundImage`"), "{err}");
    // Every pod made so far has been seen: no pod for these calls.
    rec.settle().await;
    assert_eq!(rec.count(), 2, "no pod for bad arguments");
    Ok(())
}

/// A PVC bound to a hostPath PV made for it (the scheduler only places pods whose PVCs are bound).
async fn delete_pvs(client: &Client, ns: &str, names: &[&str]) {
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    for n in names {
        let _ = pvs
            .delete(&format!("{ns}-{n}"), &DeleteParams::default())
            .await;
    }
}

/// The pod PrepareData makes (kwok does not run its command: the log it parses is the pod's
/// kwok-log annotation; the real tier runs it).
#[tokio::test]
async fn prepare_data_makes_a_pod_with_the_pvcs_mounted_and_the_command_and_parses_its_log()
-> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-prep").await else {
        return Ok(());
    };
    support::bound_pvc(&client, &ns, "data", "ReadWriteOnce").await?;
    support::bound_pvc(&client, &ns, "seed", "ReadOnlyMany").await?;
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns);
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "preparer"}}))?,
    )
    .await?;
    let rec = PodWatch::start(&client, &ns).await;
    let c = ctx(&ns);
    let out = call(
        &c,
        "PrepareData",
        json!({
            "namespace": ns,
            "image": "busybox:stable",
            "command": ["sh", "-c", "cp -r /seed/. /data/"],
            "volumes": {"data": "/data", "seed": "/seed"},
            "serviceaccount": "preparer",
            "podLabels": {"job": "seed"},
            "podAnnotations": support::kwok_annotations(0, OUTPUT_LOG),
        }),
    )
    .await?;
    assert_eq!(
        Value::Object(out),
        json!({"dumpSize": "42", "status": "done"})
    );
    let pod = pod_json(&rec.only_pod().await);
    assert!(
        pod["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("prepare-data-job-")
    );
    assert_eq!(pod["metadata"]["labels"]["createdBy"], "kanister");
    assert_eq!(pod["metadata"]["labels"]["job"], "seed");
    assert_eq!(pod["spec"]["serviceAccountName"], "preparer");
    assert_eq!(pod["spec"]["restartPolicy"], "Never");
    let main = container(&pod, "containers", "container");
    assert_eq!(main["image"], "busybox:stable");
    assert_eq!(main["command"], json!(["sh", "-c", "cp -r /seed/. /data/"]));
    // Each PVC is a pod volume mounted at its path; the ReadOnlyMany one read-only.
    let vols = pod["spec"]["volumes"].as_array().unwrap();
    let mounts = own_mounts(main);
    let mounts = mounts.as_array().unwrap();
    assert_eq!(mounts.len(), 2, "{mounts:?}");
    for (pvc, path, ro) in [("data", "/data", false), ("seed", "/seed", true)] {
        let v = vols
            .iter()
            .find(|v| v["persistentVolumeClaim"]["claimName"] == pvc)
            .unwrap_or_else(|| panic!("no volume for {pvc}: {vols:?}"));
        let m = mounts
            .iter()
            .find(|m| m["name"] == v["name"])
            .unwrap_or_else(|| panic!("no mount for {pvc}: {mounts:?}"));
        assert_eq!(m["mountPath"], path);
        assert_eq!(m["readOnly"].as_bool().unwrap_or(false), ro, "{m}");
        assert_eq!(
            v["persistentVolumeClaim"]["readOnly"]
                .as_bool()
                .unwrap_or(false),
            ro
        );
    }
    support::function_pods_gone(&client, &ns).await?;
    delete_pvs(&client, &ns, &["data", "seed"]).await;
    Ok(())
}

#[tokio::test]
async fn prepare_data_defaults_to_the_workload_pvcs_and_fail_on_error() -> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-prep-wl").await else {
        return Ok(());
    };
    support::bound_pvc(&client, &ns, "data-db-0", "ReadWriteOnce").await?;
    let rec = PodWatch::start(&client, &ns).await;
    let c = ctx(&ns);
    // `.StatefulSet.PersistentVolumeClaims` as the executor builds it.
    let params = json!({"StatefulSet": {
        "Name": "db", "Namespace": ns, "Pods": ["db-0"],
        "PersistentVolumeClaims": {"db-0": {"data-db-0": "/var/lib/db"}},
    }});
    let base = json!({
        "namespace": ns,
        "image": "busybox:stable",
        "command": ["sh", "-c", "exit 2"],
    });

    // failOnError false (default): a failed pod still gives its output.
    let mut a = base.clone();
    a["podAnnotations"] = json!(support::kwok_annotations(
        2,
        "###Phase-output###: {\"key\":\"partial\",\"value\":\"yes\"}\nboom"
    ));
    let out = call_with(&c, "PrepareData", a.clone(), &params).await?;
    assert_eq!(out["partial"], "yes");
    let pod = pod_json(&rec.only_pod().await);
    let main = container(&pod, "containers", "container");
    let mounts = own_mounts(main);
    assert_eq!(mounts.as_array().unwrap().len(), 1, "{mounts}");
    assert_eq!(mounts[0]["mountPath"], "/mnt/prepare_data/data-db-0");
    let vol = pod["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mounts[0]["name"])
        .expect("volume of the mount");
    assert_eq!(vol["persistentVolumeClaim"]["claimName"], "data-db-0");
    assert!(
        pod["spec"].get("serviceAccountName").is_none()
            || pod["spec"]["serviceAccountName"] == "default"
    );
    support::function_pods_gone(&client, &ns).await?;

    // failOnError true: the same pod fails the phase.
    a["failOnError"] = json!("true");
    let err = call_with(&c, "PrepareData", a, &params)
        .await
        .expect_err("failOnError makes a failed pod fail the phase");
    let msg = err.to_string();
    assert!(
        msg.starts_with("PrepareData: Failed while waiting for Pod to complete"),
        "{msg}"
    );
    assert!(
        msg.contains("exited with code 2") && msg.contains("boom"),
        "{msg}"
    );
    support::function_pods_gone(&client, &ns).await?;
    rec.wait_count(2).await;

    // A missing PVC fails before any pod is made.
    let mut a = base.clone();
    a["volumes"] = json!({"nope": "/x"});
    let err = call(&c, "PrepareData", a).await.expect_err("missing PVC");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!(
            "Failed to retrieve PVC. Namespace {ns}, Name nope"
        )),
        "{msg}"
    );
    // Neither `volumes` nor a workload.
    let err = call(&c, "PrepareData", base.clone())
        .await
        .expect_err("no volumes");
    assert!(err.to_string().contains("Failed to get volumes"), "{err}");
    // Every pod made so far has been seen: no pod for these calls.
    rec.settle().await;
    assert_eq!(rec.count(), 2, "no pod without its PVCs");
    delete_pvs(&client, &ns, &["data-db-0"]).await;
    Ok(())
}

/// The corpus PostgreSQL Blueprint (blueprint-v2: MultiContainerRun for backup and restore)
/// run by the controller; kwok plays the containers through the ActionSet's podAnnotations.
#[tokio::test]
async fn corpus_postgres_blueprint_backup_and_restore_with_multi_container_run()
-> anyhow::Result<()> {
    let Some(corpus) = support::corpus::dir() else {
        return Ok(());
    };
    let Some((client, ns)) = setup("mcr-corpus").await else {
        return Ok(());
    };
    support::install_crds(&client).await?;
    let file = corpus.join("kanister-examples/postgresql/blueprint-v2/postgres-blueprint.yaml");
    support::kanister::create_file_blueprint(&client, &ns, &file).await?;
    // The application: StatefulSet pg-postgresql of Helm release "pg", and its Secret.
    let sts: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "pg-postgresql", "labels": {"app.kubernetes.io/instance": "pg"}},
        "spec": {
            "replicas": 0,
            "serviceName": "pg-postgresql",
            "selector": {"matchLabels": {"app": "pg"}},
            "template": {"metadata": {"labels": {"app": "pg"}},
                         "spec": {"containers": [{"name": "postgresql", "image": "postgres:17"}]}},
        }
    }))?;
    Api::<StatefulSet>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &sts)
        .await?;
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "pg-postgresql"},
        "stringData": {"postgres-password": "s3cret"},
    }))?;
    Api::<Secret>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &secret)
        .await?;
    let rec = PodWatch::start(&client, &ns).await;
    let _controller = Controller::start(&ns, &[]);
    let actionsets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let actionset = |name: &str, action: &str, log: &str, artifacts: Value| {
        support::kanister::actionset(
            name,
            json!({
                "name": action, "blueprint": "postgres-bp",
                "object": {"kind": "StatefulSet", "name": "pg-postgresql", "namespace": ns},
                "artifacts": artifacts,
                "podAnnotations": support::kwok_annotations(0, log),
            }),
        )
    };

    let log = "pushed\n###Phase-output###: {\"key\":\"kopiaOutput\",\"value\":\"kopia-snap-7\"}";
    actionsets
        .create(
            &PostParams::default(),
            &actionset("backup-1", "backup", log, json!({}))?,
        )
        .await?;
    let backup = support::wait_actionset_complete(&client, &ns, "backup-1").await?;
    let artifact = &backup["status"]["actions"][0]["artifacts"]["pgBackup"];
    assert_eq!(artifact["kopiaSnapshot"], "kopia-snap-7", "{backup:#}");
    let pod = pod_json(&rec.only_pod().await);
    let init = container(&pod, "initContainers", "init");
    assert!(
        init["command"].to_string().contains("mkfifo /tmp/data"),
        "{init}"
    );
    let background = container(&pod, "containers", "background");
    assert_eq!(background["image"], "postgres:17-bookworm");
    let script = background["command"][6].as_str().unwrap_or_default();
    assert!(script.contains("PGPASSWORD='s3cret'"), "{script}");
    assert!(
        script.contains(&format!("PGHOST='pg-postgresql.{ns}.svc.cluster.local'")),
        "{script}"
    );
    let output = container(&pod, "containers", "output");
    assert!(
        output["command"][6]
            .as_str()
            .unwrap_or_default()
            .contains("kando location push"),
        "{output}"
    );
    let shared = pod["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "shared")
        .cloned()
        .expect("shared volume");
    assert_eq!(shared["emptyDir"]["medium"], "Memory");
    support::function_pods_gone(&client, &ns).await?;

    // restore: the artifact reaches the background container's command.
    actionsets
        .create(
            &PostParams::default(),
            &actionset(
                "restore-1",
                "restore",
                "restored",
                json!({"pgBackup": artifact}),
            )?,
        )
        .await?;
    support::wait_actionset_complete(&client, &ns, "restore-1").await?;
    rec.wait_count(2).await;
    let seen = rec.pods();
    let pod = pod_json(&seen[1]);
    let background = container(&pod, "containers", "background");
    let script = background["command"][6].as_str().unwrap_or_default();
    assert!(script.contains("kopia_snap='kopia-snap-7'"), "{script}");
    let output = container(&pod, "containers", "output");
    assert!(
        output["command"][6]
            .as_str()
            .unwrap_or_default()
            .contains("psql"),
        "{output}"
    );
    support::function_pods_gone(&client, &ns).await?;
    Ok(())
}

/// In the controller's namespace, KubeTask and
/// MultiContainerRun pods run as the controller's ServiceAccount (as in
/// Kanister) unless podOverride names one; in another namespace they keep
/// that namespace's default. Every pod carries its ActionSet's link.
#[tokio::test]
async fn pods_in_the_controller_namespace_use_its_service_account_and_link_the_actionset()
-> anyhow::Result<()> {
    let Some((client, ns)) = setup("fn-sa").await else {
        return Ok(());
    };
    let other = support::namespace(&client, "fn-sa-other").await;
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns);
    for sa in ["controller-sa", "own-sa"] {
        let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": sa}}))?;
        sas.create(&PostParams::default(), &sa).await?;
    }
    let rec = PodWatch::start(&client, &ns).await;
    let rec_other = PodWatch::start(&client, &other).await;
    let mut c = ctx(&ns);
    c.controller = Some(functions::context::ControllerIdentity {
        namespace: ns.clone(),
        service_account: "controller-sa".into(),
    });
    c.actionset = Some(functions::context::ActionSetRef {
        uid: "as-uid-1".into(),
        namespace: ns.clone(),
        name: "backup-1".into(),
        ..Default::default()
    });
    let log = "###Phase-output###: {\"key\":\"k\",\"value\":\"v\"}";
    let task = |extra: Value| {
        let mut a = json!({
            "image": "bitnami/kubectl",
            "command": ["kubectl", "get", "pods"],
            "podAnnotations": support::kwok_annotations(0, log),
        });
        for (k, v) in extra.as_object().unwrap() {
            a[k] = v.clone();
        }
        a
    };
    let sa_of = |p: &Pod| p.spec.as_ref().and_then(|s| s.service_account_name.clone());

    call(&c, "KubeTask", task(json!({}))).await?;
    rec.wait_count(1).await;
    let pod = rec.pods()[0].clone();
    assert_eq!(sa_of(&pod).as_deref(), Some("controller-sa"));
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels["blueprint-operator.io/actionset-uid"], "as-uid-1");
    assert_eq!(labels["blueprint-operator.io/actionset-namespace"], ns);
    assert_eq!(
        pod.metadata.annotations.clone().unwrap_or_default()["blueprint-operator.io/actionset"],
        format!("{ns}/backup-1")
    );

    call(
        &c,
        "KubeTask",
        task(json!({"podOverride": {"serviceAccountName": "own-sa"}})),
    )
    .await?;
    rec.wait_count(2).await;
    let pod = rec.pods()[1].clone();
    assert_eq!(sa_of(&pod).as_deref(), Some("own-sa"), "podOverride wins");

    call(
        &c,
        "MultiContainerRun",
        json!({
            "backgroundImage": "busybox", "backgroundCommand": ["true"],
            "outputImage": "busybox", "outputCommand": ["true"],
            "podAnnotations": support::kwok_annotations(0, log),
        }),
    )
    .await?;
    rec.wait_count(3).await;
    let pod = rec.pods()[2].clone();
    assert_eq!(sa_of(&pod).as_deref(), Some("controller-sa"));
    assert!(
        pod.metadata
            .labels
            .unwrap_or_default()
            .contains_key("blueprint-operator.io/actionset-uid")
    );

    call(&c, "KubeTask", task(json!({"namespace": other}))).await?;
    rec_other.wait_count(1).await;
    let pod = rec_other.pods()[0].clone();
    assert_eq!(
        sa_of(&pod).as_deref(),
        Some("default"),
        "another namespace keeps its default ServiceAccount"
    );
    support::function_pods_gone(&client, &ns).await?;
    Ok(())
}
