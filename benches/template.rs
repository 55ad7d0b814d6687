//! Renders every corpus template N times (parse + execute, params converted
//! once) and compares with Go's `tools/template-oracle -bench N`.
//!
//! Run: `cargo bench --bench template` (env `TEMPLATE_BENCH_ROUNDS`, default 200).

#[path = "../tests/support/template_cases.rs"]
mod support;
// What tests/support/template_cases.rs uses.
#[path = "../tests/support/corpus.rs"]
mod corpus;
#[path = "../tests/support/go_oracle.rs"]
mod go_oracle;
#[path = "../tests/support/prerequisite.rs"]
mod prerequisite;

use blueprint_operator::template::{Params, Template};
use serde_json::json;
use std::time::Instant;

fn main() {
    let Some(corpus) = support::corpus_dir() else {
        return;
    };
    let rounds: usize = std::env::var("TEMPLATE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let templates = support::corpus_templates(&corpus);
    let params_json = support::params("StatefulSet", &templates);
    let params = Params::new(&params_json);
    let now: chrono::DateTime<chrono::Utc> = support::NOW.parse().expect("now");

    let start = Instant::now();
    let mut n = 0usize;
    let mut bytes = 0usize;
    for _ in 0..rounds {
        for t in &templates {
            if let Ok(tpl) = Template::parse(t)
                && let Ok(out) = tpl.render_params(&params, now)
            {
                bytes += out.len();
            }
            n += 1;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let rust_rate = n as f64 / secs;
    println!(
        "rust: {n} templates in {secs:.3}s = {rust_rate:.0} templates/s ({} distinct corpus templates x {rounds} rounds, {bytes} bytes out)",
        templates.len()
    );

    let Some(bin) = support::oracle_binary() else {
        return;
    };
    let cases: Vec<_> = templates
        .iter()
        .map(|t| json!({"template": t, "params": params_json}))
        .collect();
    let out = support::run_oracle(&bin, &cases, &["-bench", &rounds.to_string()]);
    let go: serde_json::Value = serde_json::from_slice(&out).expect("oracle bench JSON");
    let go_rate = go["templates_per_sec"].as_f64().unwrap_or(0.0);
    println!(
        "go:   {} templates in {:.3}s = {go_rate:.0} templates/s",
        go["templates"],
        go["seconds"].as_f64().unwrap_or(0.0)
    );
    if go_rate > 0.0 {
        println!("ratio rust/go: {:.2}x", rust_rate / go_rate);
    }
}
