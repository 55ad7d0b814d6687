//! The `validate` and `normalize` subcommands: the admission rules, run in a
//! pipeline before `kubectl apply`, like `kanctl validate` or `kyverno apply`.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use crate::blueprint::{self, Report};
use crate::documents::{self, Document, ReadError};

#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub enum Output {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Files or directories of YAML/JSON documents, or `-` for stdin.
    /// Directories are searched recursively; documents other than Blueprints are skipped.
    #[arg(required = true)]
    pub paths: Vec<String>,
    #[arg(long, short, value_enum, default_value_t)]
    pub output: Output,
    /// Also fail (exit 1) on warnings.
    #[arg(long)]
    pub strict: bool,
}

#[derive(Debug, Args)]
pub struct NormalizeArgs {
    /// A file of YAML/JSON documents, or `-` for stdin. Blueprints are normalized,
    /// other documents are printed unchanged.
    pub path: String,
    #[arg(long, short, value_enum, default_value_t)]
    pub output: Output,
}

/// Exit codes: 0 valid, 1 invalid, 2 usage or read error.
pub fn validate(args: &ValidateArgs) -> ExitCode {
    let (docs, read_errors) = read_all(&args.paths);
    let results: Vec<(&Document, Report)> = docs
        .iter()
        .filter(|d| d.is_blueprint())
        .map(|d| (d, validate_document(&d.value)))
        .collect();

    let mut out = std::io::stdout().lock();
    match args.output {
        Output::Text => {
            for (doc, report) in &results {
                let name = display_name(doc);
                for (severity, problems) in
                    [("error", &report.errors), ("warning", &report.warnings)]
                {
                    for p in problems {
                        let loc = p.location();
                        let sep = if loc.is_empty() { "" } else { "/" };
                        let _ = writeln!(
                            out,
                            "{}: {name}{sep}{loc}: {severity}: {}: {}",
                            doc.source, p.path, p.message
                        );
                    }
                }
            }
            for e in &read_errors {
                let _ = writeln!(out, "{e}");
            }
            let invalid = results.iter().filter(|(_, r)| !r.is_valid()).count();
            let _ = writeln!(
                out,
                "{} blueprints checked: {} valid, {invalid} invalid, {} warnings, {} unreadable",
                results.len(),
                results.len() - invalid,
                results.iter().map(|(_, r)| r.warnings.len()).sum::<usize>(),
                read_errors.len()
            );
        }
        Output::Json => {
            let report = json!({
                "blueprints": results.iter().map(|(doc, r)| json!({
                    "file": doc.source, "document": doc.index, "name": r.name,
                    "valid": r.is_valid(), "errors": r.errors, "warnings": r.warnings,
                })).collect::<Vec<_>>(),
                "readErrors": read_errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            });
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&report).unwrap_or_default()
            );
        }
    }

    if !read_errors.is_empty() {
        ExitCode::from(2)
    } else if results
        .iter()
        .any(|(_, r)| !r.is_valid() || (args.strict && !r.warnings.is_empty()))
    {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Validates a Blueprint as the admission chain sees it: normalized first,
/// so a one-element deferPhase list or missing names are not errors.
pub fn validate_document(doc: &Value) -> Report {
    blueprint::validate(&blueprint::normalize(doc))
}

pub fn normalize(args: &NormalizeArgs) -> ExitCode {
    let (docs, read_errors) = documents::read(&args.path);
    if !read_errors.is_empty() {
        for e in &read_errors {
            eprintln!("{e}");
        }
        return ExitCode::from(2);
    }
    let normalized: Vec<Value> = docs
        .iter()
        .map(|d| {
            if d.is_blueprint() {
                blueprint::normalize(&d.value)
            } else {
                d.value.clone()
            }
        })
        .collect();
    let mut out = std::io::stdout().lock();
    let written = match args.output {
        Output::Json => {
            let v = if normalized.len() == 1 {
                normalized[0].clone()
            } else {
                Value::Array(normalized)
            };
            serde_json::to_string_pretty(&v)
                .map_err(|e| e.to_string())
                .map(|s| s + "\n")
        }
        Output::Text => normalized
            .iter()
            .map(|d| serde_yaml::to_string(d).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()
            .map(|docs| docs.join("---\n")),
    };
    match written {
        Ok(text) if out.write_all(text.as_bytes()).is_ok() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(2),
        Err(e) => {
            eprintln!("{}: cannot print the normalized documents: {e}", args.path);
            ExitCode::from(2)
        }
    }
}

fn read_all(paths: &[String]) -> (Vec<Document>, Vec<ReadError>) {
    let (mut docs, mut errors) = (Vec::new(), Vec::new());
    for p in paths {
        let (d, e) = documents::read(p);
        docs.extend(d);
        errors.extend(e);
    }
    (docs, errors)
}

fn display_name(doc: &Document) -> String {
    match doc.name() {
        "" => format!("(document {})", doc.index),
        n => n.to_owned(),
    }
}
