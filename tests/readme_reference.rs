//! The reference the README links to (docs/reference.md) names only flags the binary has: every
//! `--flag` in a row of the "Commands" table or of a subcommand's "Configuration" table must
//! appear in that subcommand's `--help`.
//! (Metric names are checked against live scrapes by tests/e2e/monitoring.rs.)

use std::collections::BTreeMap;
use std::process::Command;

fn help(subcommand: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_blueprint-operator"))
        .args([subcommand, "--help"])
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "`blueprint-operator {subcommand} --help` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `--flag` tokens of a line (not `--` alone, not `---` table rules).
fn flags(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, _) in line.match_indices("--") {
        let before = line[..i].chars().last();
        if matches!(before, Some(c) if c == '-' || c.is_alphanumeric()) {
            continue;
        }
        let name: String = line[i + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
            found.push(format!("--{}", name.trim_end_matches('-')));
        }
    }
    found
}

const REFERENCE: &str = "docs/reference.md";

/// Flags the reference names, by subcommand, with the line each was read from.
fn reference_flags() -> BTreeMap<String, Vec<(String, usize)>> {
    let reference = std::fs::read_to_string(format!("{}/{REFERENCE}", env!("CARGO_MANIFEST_DIR")))
        .expect(REFERENCE);
    let mut section = "";
    let mut table_of: Option<String> = None;
    let mut by_command: BTreeMap<String, Vec<(String, usize)>> = BTreeMap::new();
    for (n, line) in reference.lines().enumerate() {
        if let Some(h) = line.strip_prefix("## ") {
            section = if h.starts_with("Commands") || h.starts_with("Configuration") {
                h
            } else {
                ""
            };
            table_of = None;
            continue;
        }
        if section.starts_with("Configuration")
            && let Some(h) = line.strip_prefix("### ")
        {
            // `webhook`, `controller`: a subcommand's flags; other tables (the Helm chart's
            // values) are not read.
            table_of = h
                .strip_prefix('`')
                .and_then(|h| h.strip_suffix('`'))
                .map(str::to_string);
            continue;
        }
        if section.is_empty() || !line.starts_with("| `") {
            continue;
        }
        let command = if section.starts_with("Commands") {
            // first word of the first cell: `validate FILE|DIR|- ...`
            line.trim_start_matches("| `")
                .split([' ', '`'])
                .next()
                .unwrap_or_default()
                .to_string()
        } else {
            match &table_of {
                Some(c) => c.clone(),
                None => continue,
            }
        };
        if command == "kando" {
            continue; // kando's flags are Kanister's, documented in their own table
        }
        for flag in flags(line) {
            by_command
                .entry(command.clone())
                .or_default()
                .push((flag, n + 1));
        }
    }
    by_command
}

#[test]
fn every_flag_the_reference_names_exists() {
    let named = reference_flags();
    for sub in ["webhook", "controller", "validate", "certs"] {
        assert!(
            named.contains_key(sub),
            "{REFERENCE} names no flag of `{sub}`: the parser no longer finds its table ({:?})",
            named.keys()
        );
    }
    let mut missing = Vec::new();
    let mut checked = 0;
    for (command, flags) in &named {
        let help = help(command);
        for (flag, line) in flags {
            checked += 1;
            let present = help.match_indices(flag.as_str()).any(|(i, _)| {
                !help[i + flag.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
            });
            if !present {
                missing.push(format!(
                    "{REFERENCE}:{line}: `{command} {flag}` is not a flag of the binary"
                ));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    assert!(checked > 30, "only {checked} flags checked");
}

#[test]
fn flags_are_read_from_table_cells() {
    assert_eq!(
        flags(
            "| `--tls-cert-file`, `--tls-key-file` (`BPO_TLS_CERT_FILE`) | --- | `--shutdown-delay` |"
        ),
        ["--tls-cert-file", "--tls-key-file", "--shutdown-delay"]
    );
    assert_eq!(
        flags("| `--relax-kanister-deferphase-schema[=BOOL]` |"),
        ["--relax-kanister-deferphase-schema"]
    );
}
