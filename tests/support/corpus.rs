//! The Kanister corpus (env `KANISTER_CORPUS`, default `../shared/kanister-corpus`), for the
//! tests that read it: Kanister's own Blueprints, examples and CRDs (docs/testing.md says where it
//! comes from). Missing corpus: the test is skipped loudly, or fails under `CI=true`
//! ([`super::prerequisite`]). Included with `mod support;`, or with
//! `#[path = "support/corpus.rs"] mod corpus;` beside
//! `#[path = "support/prerequisite.rs"] mod prerequisite;`.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;

/// Where the corpus is looked for.
pub fn path() -> PathBuf {
    std::env::var_os("KANISTER_CORPUS")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/kanister-corpus")
        })
}

/// The corpus directory; `None`: the test skips (recorded; under CI=true it fails).
pub fn dir() -> Option<PathBuf> {
    let dir = path();
    if dir.is_dir() {
        return Some(dir);
    }
    super::prerequisite::missing(
        &format!("the Kanister corpus at {}", dir.display()),
        "set KANISTER_CORPUS to a copy of it (docs/testing.md, \"The Kanister corpus\")",
    );
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
