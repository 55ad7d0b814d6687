//! manifests/kanister-crds holds Kanister's own CRDs (those of the corpus, as Kanister's Helm
//! chart installs them), changed in one node only: the Blueprint's `deferPhase`, exactly as the
//! controller's relaxation (src/kanister_crd.rs) leaves it. And the install without the opt-in
//! overlay ships no `cr.kanister.io` CRD that would fight Kanister's chart over them.

#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/prerequisite.rs"]
mod prerequisite;

use std::path::Path;

use blueprint_operator::kanister_crd::{self, Plan};
use serde::Deserialize as _;
use serde_json::Value;

const NODE: &str = "/spec/versions/0/schema/openAPIV3Schema/properties/actions/additionalProperties/properties/deferPhase";

fn yaml_docs(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).expect("YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

fn one(path: &Path) -> Value {
    let mut docs = yaml_docs(path);
    assert_eq!(docs.len(), 1, "{}", path.display());
    docs.remove(0)
}

fn manifest(file: &str) -> Value {
    one(&Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("manifests/kanister-crds")
        .join(file))
}

/// Kanister's file without its empty `status:` (what controller-gen writes; the API server
/// ignores it).
fn kanister(dir: &Path, file: &str) -> Value {
    let mut doc = one(&dir.join("crds").join(file));
    doc.as_object_mut().unwrap().remove("status");
    doc
}

#[test]
fn opt_in_crds_are_kanisters_with_only_defer_phase_relaxed() {
    let Some(dir) = corpus::dir() else { return };
    for (ours, theirs) in [
        ("kanister-actionsets.yaml", "actionset.yaml"),
        ("kanister-profiles.yaml", "profile.yaml"),
    ] {
        assert!(
            manifest(ours) == kanister(&dir, theirs),
            "manifests/kanister-crds/{ours} differs from Kanister's {theirs}"
        );
    }
    let ours = manifest("kanister-blueprints.yaml");
    let theirs = kanister(&dir, "blueprint.yaml");
    assert_eq!(ours.pointer(NODE), Some(&kanister_crd::relaxed_node()));
    assert_eq!(theirs.pointer(NODE).unwrap()["type"], "object");
    let mut back = ours.clone();
    *back.pointer_mut(NODE).unwrap() = theirs.pointer(NODE).unwrap().clone();
    assert!(
        back == theirs,
        "kanister-blueprints.yaml differs from Kanister's blueprint.yaml beyond deferPhase"
    );

    // The controller leaves our file alone and turns Kanister's into ours.
    assert_eq!(kanister_crd::plan(&ours), Plan::Relaxed);
    let Plan::Patch(ops) = kanister_crd::plan(&theirs) else {
        panic!("Kanister's CRD needs the patch")
    };
    let mut patched = theirs.clone();
    let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops)).unwrap();
    json_patch::patch(&mut patched, &patch).unwrap();
    assert!(patched == ours);
}

/// Every kustomization in manifests/ that is not the opt-in one, and what it pulls in.
#[test]
fn default_install_and_certificate_overlays_ship_no_kanister_crd() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests");
    for dir in ["", "overlays/self-signed", "overlays/cert-manager"] {
        let mut files = Vec::new();
        collect(&root.join(dir), &mut files);
        assert!(!files.is_empty(), "{dir}");
        for file in files {
            for doc in yaml_docs(&file) {
                if doc["kind"] == "CustomResourceDefinition" {
                    assert_ne!(
                        doc["spec"]["group"],
                        "cr.kanister.io",
                        "{} (via manifests/{dir}) ships a Kanister CRD",
                        file.display()
                    );
                }
            }
        }
    }
    // The opt-in overlay is the one place that does.
    let mut files = Vec::new();
    collect(&root.join("overlays/with-kanister-crds"), &mut files);
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("kanister-blueprints.yaml"))
    );
}

/// The YAML files a kustomization directory includes (resources and components, recursively).
fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let k = one(&dir.join("kustomization.yaml"));
    for key in ["resources", "components"] {
        for entry in k[key].as_array().into_iter().flatten() {
            let p = dir.join(entry.as_str().unwrap());
            if p.is_dir() {
                collect(&p, out);
            } else {
                out.push(p);
            }
        }
    }
}
