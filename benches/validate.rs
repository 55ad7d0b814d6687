//! Throughput of `normalize` + `validate` over the whole Kanister corpus,
//! the work the webhook and the CLI do per Blueprint.
//! Run: `cargo bench --bench validate`.

use std::time::Instant;

use blueprint_operator::blueprint::{normalize, validate};
use blueprint_operator::documents;

fn main() {
    let dir = std::env::var("KANISTER_CORPUS").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/kanister-corpus").into()
    });
    let (docs, errors) = documents::read(&dir);
    assert!(errors.is_empty(), "{errors:?}");
    let blueprints: Vec<_> = docs
        .into_iter()
        .filter(|d| d.is_blueprint())
        .map(|d| d.value)
        .collect();
    assert!(!blueprints.is_empty(), "no Blueprints under {dir}");

    // `cargo test --all-targets` runs benches without `--bench`: one quick round.
    let rounds = if std::env::args().any(|a| a == "--bench") {
        200
    } else {
        1
    };
    let mut invalid = 0;
    let start = Instant::now();
    for _ in 0..rounds {
        for bp in &blueprints {
            invalid += usize::from(!validate(&normalize(bp)).is_valid());
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let n = rounds * blueprints.len();
    assert_eq!(invalid, 0);
    println!(
        "validate: {n} Blueprints ({} distinct) in {secs:.2}s = {:.0} documents/s, {:.1} µs/document",
        blueprints.len(),
        n as f64 / secs,
        secs * 1e6 / n as f64
    );
}
