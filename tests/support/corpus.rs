//! The Kanister corpus (env `KANISTER_CORPUS`, default `../shared/kanister-corpus`), for the
//! tests that read it. Missing corpus: the caller skips, except under `CI=true`, where it fails.
//! Included with `mod support;` or `#[path = "support/corpus.rs"] mod corpus;`.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;

/// The corpus directory; `None` (skip) only outside CI.
pub fn dir() -> Option<PathBuf> {
    let dir = std::env::var_os("KANISTER_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/kanister-corpus")
        });
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "Kanister corpus not found at {} (set KANISTER_CORPUS)",
        dir.display()
    );
    eprintln!("SKIP: Kanister corpus not found at {}", dir.display());
    None
}

/// Every Blueprint document of the corpus, with its file.
pub fn blueprints() -> Vec<(PathBuf, Value)> {
    let Some(dir) = dir() else { return Vec::new() };
    let (docs, errors) = blueprint_operator::documents::read(dir.to_str().unwrap());
    assert!(errors.is_empty(), "corpus must parse: {errors:?}");
    docs.into_iter()
        .filter(|d| d.is_blueprint())
        .map(|d| (PathBuf::from(d.source), d.value))
        .collect()
}
