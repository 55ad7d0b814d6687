//! Reading Kubernetes documents from files, directories and stdin:
//! multi-document YAML or JSON, each converted to a JSON value.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// One document of a file, with where it came from.
#[derive(Debug, Clone)]
pub struct Document {
    /// File path as given (or `-` for stdin).
    pub source: String,
    /// Position of the document in its file, from 0.
    pub index: usize,
    pub value: Value,
}

impl Document {
    pub fn kind(&self) -> &str {
        self.value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub fn is_blueprint(&self) -> bool {
        self.kind() == "Blueprint"
    }

    pub fn name(&self) -> &str {
        self.value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: document {index} is not valid YAML or JSON: {message}")]
    Parse {
        path: String,
        index: usize,
        message: DocumentError,
    },
}

/// Why one document is not valid YAML or JSON, or not a Kubernetes-shaped value.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// The parser's reason, with the line and column when it knows them.
    #[error("{0}")]
    Yaml(#[from] serde_yaml::Error),
    #[error("number {number}: {source}")]
    Number {
        number: String,
        source: serde_json::Error,
    },
    /// `key` as YAML on one line.
    #[error("map key {0} is not a string: Kubernetes objects take string keys only")]
    KeyNotString(String),
}

/// Reads every document of `arg`: a file, a directory (searched recursively
/// for `.yaml`, `.yml` and `.json` files, in sorted order) or `-` for stdin.
/// A bad file does not hide the others: all documents read and all errors
/// are returned.
pub fn read(arg: &str) -> (Vec<Document>, Vec<ReadError>) {
    let (mut docs, mut errors) = (Vec::new(), Vec::new());
    if arg == "-" {
        let mut text = String::new();
        match std::io::Read::read_to_string(&mut std::io::stdin(), &mut text) {
            Ok(_) => push_parsed("-", &text, &mut docs, &mut errors),
            Err(source) => errors.push(ReadError::Io {
                path: arg.into(),
                source,
            }),
        }
        return (docs, errors);
    }
    let files = match files_under(Path::new(arg)) {
        Ok(f) => f,
        Err(source) => {
            return (
                docs,
                vec![ReadError::Io {
                    path: arg.into(),
                    source,
                }],
            );
        }
    };
    for file in files {
        let path = file.display().to_string();
        match std::fs::read_to_string(&file) {
            Ok(text) => push_parsed(&path, &text, &mut docs, &mut errors),
            Err(source) => errors.push(ReadError::Io { path, source }),
        }
    }
    (docs, errors)
}

fn push_parsed(path: &str, text: &str, docs: &mut Vec<Document>, errors: &mut Vec<ReadError>) {
    match parse(text) {
        Ok(values) => docs.extend(
            values
                .into_iter()
                .enumerate()
                .map(|(index, value)| Document {
                    source: path.into(),
                    index,
                    value,
                }),
        ),
        Err((index, message)) => errors.push(ReadError::Parse {
            path: path.into(),
            index,
            message,
        }),
    }
}

/// Parses multi-document YAML (JSON is YAML). Empty documents are skipped.
/// On error returns the index of the failing document and the reason, with
/// the line and column when the parser knows them.
pub fn parse(text: &str) -> Result<Vec<Value>, (usize, DocumentError)> {
    let mut out = Vec::new();
    for (index, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let mut yaml = serde_yaml::Value::deserialize(doc).map_err(|e| (index, e.into()))?;
        yaml.apply_merge().map_err(|e| (index, e.into()))?;
        match to_json(yaml).map_err(|e| (index, e))? {
            Value::Null => {}
            v => out.push(v),
        }
    }
    Ok(out)
}

/// YAML to JSON; non-string keys (`1: x`, `true: y`) become strings, as
/// Kubernetes' YAML decoder does.
fn to_json(yaml: serde_yaml::Value) -> Result<Value, DocumentError> {
    use serde_yaml::Value as Y;
    Ok(match yaml {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => serde_json::to_value(&n).map_err(|source| DocumentError::Number {
            number: n.to_string(),
            source,
        })?,
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => {
            Value::Array(items.into_iter().map(to_json).collect::<Result<_, _>>()?)
        }
        Y::Mapping(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                let key = match k {
                    Y::String(s) => s,
                    Y::Bool(b) => b.to_string(),
                    Y::Number(n) => n.to_string(),
                    Y::Null => "null".into(),
                    other => {
                        let text = serde_yaml::to_string(&other).unwrap_or_default();
                        return Err(DocumentError::KeyNotString(text.trim().replace('\n', " ")));
                    }
                };
                out.insert(key, to_json(v)?);
            }
            Value::Object(out)
        }
        Y::Tagged(t) => to_json(t.value)?,
    })
}

fn files_under(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        std::fs::metadata(path)?;
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let p = entry?.path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            ) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_document_with_empty_and_numeric_keys() {
        let docs = parse("a: 1\n---\n---\nb:\n  2: x\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1]["b"]["2"], "x");
    }

    #[test]
    fn malformed_yaml_reports_document_and_line() {
        let (index, message) = parse("a: 1\n---\nb: [unclosed\n").unwrap_err();
        let message = message.to_string();
        assert_eq!(index, 1);
        assert!(message.contains("line"), "{message}");
    }

    #[test]
    fn a_list_as_map_key_is_named_in_yaml_not_rust_debug() {
        let (_, message) = parse("? [a, b]\n: x\n").unwrap_err();
        let message = message.to_string();
        assert!(
            !message.contains("Sequence") && !message.contains("String("),
            "{message}"
        );
        assert!(message.contains("- a - b"), "{message}");
        assert!(message.contains("not a string"), "{message}");
    }
}
