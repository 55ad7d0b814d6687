//! Reading the JSON of manifests and command outputs in static tests, and the binary's command
//! line that manifests pass arguments to. Standalone (no cluster): the static test binaries
//! include it with `#[path = "support/manifests.rs"] mod manifests;`, the cluster tests as
//! `support::manifests`.
#![allow(dead_code)]

use blueprint_operator::app::controller::ControllerArgs;
use blueprint_operator::app::webhook::WebhookArgs;
use serde_json::Value;

/// The binary's command line as far as the manifests use it: `controller` and `webhook`.
#[derive(clap::Parser)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(clap::Subcommand)]
pub enum Cmd {
    Controller(ControllerArgs),
    Webhook(WebhookArgs),
}

/// The strings of the JSON list `v` (a container's `args`, ...); panics on anything else.
pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

/// The first entry of the JSON list `list` whose `key` is `value`; panics if `list` is not a list.
pub fn find<'a>(list: &'a Value, key: &str, value: &str) -> Option<&'a Value> {
    list.as_array().unwrap().iter().find(|e| e[key] == value)
}
