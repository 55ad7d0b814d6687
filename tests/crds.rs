//! The checked-in CRD is exactly what `blueprint-operator crds` generates
//! from the Rust types; regenerate with
//! `cargo run -- crds > manifests/crds/actionschedule.yaml` (then `tools/helm/sync-chart.sh`),
//! and every shipped CRD uses only formats the API server knows.

#[test]
fn manifests_hold_the_generated_crd() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .arg("crds")
        .output()
        .unwrap();
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).unwrap();
    assert!(generated.contains("kind: CustomResourceDefinition"));
    assert!(generated.contains("actionschedules.blueprint-operator.io"));
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/manifests/crds/actionschedule.yaml"
    );
    let checked_in = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{path} is stale: run `cargo run -- crds > manifests/crds/actionschedule.yaml`"
    );
}

/// The formats the API server knows, as `GetUnrecognizedFormats` of
/// k8s.io/apiextensions-apiserver 1.36 (`pkg/apiserver/validation/formats.go`) decides; it warns
/// `unrecognized format "..."` on `kubectl apply` for any other. String formats are compared with
/// their dashes removed, as there.
fn unrecognized(ty: Option<&str>, format: &str) -> bool {
    const STRING: &[&str] = &[
        "bsonobjectid",
        "uri",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "uuid",
        "uuid3",
        "uuid4",
        "uuid5",
        "isbn",
        "isbn10",
        "isbn13",
        "creditcard",
        "ssn",
        "hexcolor",
        "rgbcolor",
        "byte",
        "password",
        "date",
        "duration",
        "datetime",
        "k8sshortname",
        "k8slongname",
    ];
    match ty {
        None | Some("string") => !STRING.contains(&format.replace('-', "").as_str()),
        Some("integer") => !["int32", "int64"].contains(&format),
        Some("number") => !["float", "double"].contains(&format),
        Some(_) => true,
    }
}

/// `path: format` of every schema under `v` whose format the API server does not know.
fn unrecognized_formats(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(f) = m.get("format").and_then(|f| f.as_str()) {
                let ty = m.get("type").and_then(|t| t.as_str());
                if unrecognized(ty, f) {
                    out.push(format!("{path}: {f}"));
                }
            }
            for (k, v) in m {
                unrecognized_formats(v, &format!("{path}.{k}"), out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                unrecognized_formats(v, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn installed_crds_use_only_formats_the_api_server_knows() {
    // The check itself: what schemars writes for a u32 is caught.
    let mut found = Vec::new();
    unrecognized_formats(
        &serde_json::to_value(schemars::schema_for!(u32)).unwrap(),
        "u32",
        &mut found,
    );
    assert_eq!(found, ["u32: uint32"]);

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dirs = [
        "manifests/crds",
        "manifests/kanister-crds",
        "charts/blueprint-operator/crds",
        "charts/blueprint-operator/files/kanister-crds",
    ];
    let mut crds = 0;
    for dir in dirs {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for doc in serde_yaml::Deserializer::from_str(&text) {
                let v: serde_json::Value = serde::Deserialize::deserialize(doc).unwrap();
                if v["kind"] != "CustomResourceDefinition" {
                    continue;
                }
                crds += 1;
                let mut found = Vec::new();
                unrecognized_formats(&v["spec"], "spec", &mut found);
                assert!(found.is_empty(), "{}: {found:#?}", file.display());
            }
        }
    }
    // ActionSchedule twice, Kanister's three CRDs twice.
    assert_eq!(crds, 8);
}
