//! Shared by `tests/template_oracle.rs` and `benches/template.rs`: the
//! corpus templates, realistic parameters, and the Go oracle. Uses its siblings `corpus`,
//! `go_oracle` and `prerequisite` (through `mod support;`, or included beside them by path).
#![allow(dead_code)]

use blueprint_operator::template;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const NOW: &str = "2024-03-05T07:08:09.123456789Z";

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Kanister corpus; `None` when absent (the test skips loudly; fails under CI=true).
pub fn corpus_dir() -> Option<PathBuf> {
    super::corpus::dir()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")) {
            out.push(p);
        }
    }
}

fn collect_strings(v: &serde_yaml::Value, out: &mut Vec<String>) {
    match v {
        serde_yaml::Value::String(s) if s.contains("{{") => out.push(s.clone()),
        serde_yaml::Value::Sequence(s) => s.iter().for_each(|x| collect_strings(x, out)),
        serde_yaml::Value::Mapping(m) => {
            for (k, x) in m {
                collect_strings(k, out);
                collect_strings(x, out);
            }
        }
        serde_yaml::Value::Tagged(t) => collect_strings(&t.value, out),
        _ => {}
    }
}

/// Every distinct string containing `{{` in the corpus Blueprints, sorted.
pub fn corpus_templates(dir: &Path) -> Vec<String> {
    use serde::Deserialize;
    let mut files = Vec::new();
    walk(dir, &mut files);
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let Ok(v) = serde_yaml::Value::deserialize(doc) else {
                continue;
            };
            if v.get("kind").and_then(|k| k.as_str()) == Some("Blueprint") {
                collect_strings(&v, &mut out);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// Set `path` (segments) in `v` unless a non-object is in the way.
fn set_path(v: &mut Value, path: &[&str], leaf: Value) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    let Some(obj) = v.as_object_mut() else { return };
    if rest.is_empty() {
        obj.entry(first.to_string()).or_insert(leaf);
        return;
    }
    let child = obj.entry(first.to_string()).or_insert_with(|| json!({}));
    set_path(child, rest, leaf);
}

fn workload(kind: &str) -> Value {
    json!({
        "Name": format!("my-{kind}"),
        "Namespace": "prod-ns",
        "Pods": [format!("my-{kind}-0"), format!("my-{kind}-1")],
        "Containers": [["db", "sidecar"], ["db", "sidecar"]],
        "PersistentVolumeClaims": {
            format!("my-{kind}-0"): {"data-my-0": "/var/lib/data"},
            format!("my-{kind}-1"): {"data-my-1": "/var/lib/data"}
        }
    })
}

/// Realistic parameters for a target of `kind` (`StatefulSet`, `Deployment`,
/// `DeploymentConfig`), with every field the templates reference filled in.
pub fn params(kind: &str, templates: &[String]) -> Value {
    let mut p = json!({
        "ArtifactsIn": {},
        "ConfigMaps": {
            "location": {"Data": {"bucket": "my-bucket", "path": "backups/db"}},
        },
        "Secrets": {
            "aws": {"Data": {"aws_access_key_id": b64("AKIAEXAMPLE"), "aws_secret_access_key": b64("s3cr3t<&>")}},
        },
        "Time": "2024-03-05T07:08:09.123456789Z",
        "Profile": {
            "Location": {"Type": "s3Compliant", "Bucket": "kanister-bucket", "Endpoint": "https://minio.local:9000", "Prefix": "kanister", "Region": "us-east-1"},
            "Credential": {"Type": "keyPair", "KeyPair": {"ID": "AKIAKEYPAIR", "Secret": "kp-secret"}},
            "SkipSSLVerify": true
        },
        "Options": {"pitr": "2024-03-05T07:00:00Z", "kanisterImage": "ghcr.io/kanisterio/kanister-tools:0.110.0"},
        "Object": {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {
                "name": format!("my-{}", kind.to_lowercase()),
                "namespace": "prod-ns",
                "uid": "0f6e7d1c-2b3a-4c5d-8e9f-0a1b2c3d4e5f",
                "labels": {"app": "postgres", "release": "pg-release"}
            },
            "spec": {
                "replicas": 2,
                "serviceName": "pg-headless",
                "clusterName": "es-cluster",
                "security": {"adminSecret": "admin-secret"},
                "nodeSets": [{"name": "default", "count": 3}, {"name": "hot", "count": 1}],
                "template": {"spec": {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-pvc"}}]}}
            },
            "data": {
                "orgid": b64("org-1234"),
                "privatekey": b64("priv-key"),
                "projectid": b64("proj-42"),
                "publickey": b64("pub-key"),
                "clustername": b64("cluster-a")
            },
            "status": {"replicas": 2, "ratio": 0.75}
        },
        "Phases": {},
        "PodAnnotations": {"team": "storage"},
        "PodLabels": {"tier": "db"}
    });
    if let Some(o) = p.as_object_mut() {
        o.insert(kind.to_string(), workload(&kind.to_lowercase()));
    }
    for t in templates {
        let Ok(fields) = template::check_fields(t) else {
            continue;
        };
        for f in fields {
            let segs: Vec<&str> = f.trim_start_matches('.').split('.').collect();
            match segs.as_slice() {
                ["Phases", phase, "Output", key, ..] => set_path(
                    &mut p,
                    &["Phases", phase, "Output", key],
                    json!(format!("out-{key}")),
                ),
                ["Phases", phase, "Secrets", name, "Data", key, ..] => set_path(
                    &mut p,
                    &["Phases", phase, "Secrets", name, "Data", key],
                    json!(b64(&format!("phase-{key}"))),
                ),
                ["ArtifactsIn", name, "KeyValue", key, ..] => set_path(
                    &mut p,
                    &["ArtifactsIn", name, "KeyValue", key],
                    json!(format!("{name}/{key}-2024")),
                ),
                ["ArtifactsIn", name, "KopiaSnapshot", ..] => set_path(
                    &mut p,
                    &["ArtifactsIn", name, "KopiaSnapshot"],
                    json!("kopia-snap-1"),
                ),
                ["Secrets", name, "Data", key, ..] => set_path(
                    &mut p,
                    &["Secrets", name, "Data", key],
                    json!(b64(&format!("{name}-{key}"))),
                ),
                ["ConfigMaps", name, "Data", key, ..] => set_path(
                    &mut p,
                    &["ConfigMaps", name, "Data", key],
                    json!(format!("{name}-{key}")),
                ),
                ["Options", key, ..] => {
                    set_path(&mut p, &["Options", key], json!(format!("opt-{key}")))
                }
                ["Object", rest @ ..] if !rest.is_empty() => {
                    let mut path = vec!["Object"];
                    path.extend_from_slice(rest);
                    let leaf = json!(format!("obj-{}", rest.join("-")));
                    set_path(&mut p, &path, leaf);
                }
                _ => {}
            }
        }
    }
    p
}

/// Build (or reuse) the Go oracle; `None` when Go is unavailable (fails under CI=true).
pub fn oracle_binary() -> Option<PathBuf> {
    super::go_oracle::binary("template-oracle", "Go's text/template with sprig", &[])
}

/// Run the oracle on `cases` (`{"template","params"}` objects).
pub fn run_oracle(bin: &Path, cases: &[Value], extra_args: &[&str]) -> Vec<u8> {
    use std::io::Write;
    let input = serde_json::to_vec(&json!({ "cases": cases })).expect("encode cases");
    let mut child = Command::new(bin)
        .args(extra_args)
        .env("TZ", "UTC")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn oracle");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("oracle output");
    let _ = writer.join();
    assert!(out.status.success(), "oracle failed");
    out.stdout
}
