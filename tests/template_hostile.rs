//! A Blueprint whose template nests 100,000 parentheses is
//! refused by `blueprint-operator validate` with a located error (exit 1),
//! not a stack overflow.

use std::process::Command;

#[test]
fn validate_cli_refuses_deeply_nested_template_without_crashing() {
    let depth = 100_000;
    let template = format!("{{{{ {}1{} }}}}", "(".repeat(depth), ")".repeat(depth));
    let yaml = format!(
        "apiVersion: cr.kanister.io/v1alpha1\nkind: Blueprint\nmetadata: {{name: hostile}}\n\
         actions:\n  backup:\n    phases:\n    - func: KubeTask\n      name: dump\n      \
         args:\n        image: busybox\n        command: [sh, -c, '{template}']\n"
    );
    assert!(yaml.len() > 200_000, "a 200 KB Blueprint");
    let dir = std::env::temp_dir().join(format!("bpo-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hostile.yaml");
    std::fs::write(&file, yaml).unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        stdout.contains("hostile/backup/dump: error: actions.backup.phases[0].args.command[2]:"),
        "located: {stdout}"
    );
    assert!(
        stdout.contains("template nests deeper than 100 levels"),
        "says what: {stdout}"
    );
    assert!(stdout.contains("flatten it"), "says how to fix: {stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
