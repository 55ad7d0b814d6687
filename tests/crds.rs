//! The checked-in CRD is exactly what `blueprint-operator crds` generates
//! from the Rust types; regenerate with
//! `cargo run -- crds > manifests/crds/actionschedule.yaml`.

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
