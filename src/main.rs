//! `blueprint-operator`: one binary, one subcommand per job.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use blueprint_operator::cli;

/// mimalloc instead of glibc's malloc: a webhook review makes a few hundred small allocations
/// (JSON values, template tokens, paths), which glibc serves at a much higher CPU cost under
/// load (the measurement is in docs/design.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "blueprint-operator",
    version,
    about = "Kanister Blueprints with a guaranteed deferPhase, admission on apply, and scheduled ActionSets"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check Blueprints against the admission rules (exit 0 valid, 1 invalid, 2 read error).
    Validate(cli::ValidateArgs),
    /// Print Blueprints normalized as the mutating webhook would store them.
    Normalize(cli::NormalizeArgs),
    /// Print the ActionSchedule CRD generated from the Rust types (`manifests/crds/actionschedule.yaml`).
    Crds,
    /// Serve the admission webhook over HTTPS (/mutate/blueprint, /validate/blueprint, /validate/actionschedule).
    Webhook(blueprint_operator::app::webhook::WebhookArgs),
    /// Write a development CA and webhook serving certificate and print the caBundle.
    Certs(blueprint_operator::webhook::CertsArgs),
    /// Run ActionSets from Blueprints (deferPhase guaranteed) and ActionSchedules.
    Controller(blueprint_operator::app::controller::ControllerArgs),
    /// Kanister's kando for Blueprints: location push/pull/delete, output (`kando --help`).
    /// Also run as `kando ...` through a link named kando.
    #[command(disable_help_flag = true)]
    Kando {
        #[arg(allow_hyphen_values = true, num_args = 0.., trailing_var_arg = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Day-2 commands against the current kubeconfig: create, restore (--from), run-now, runs,
    /// describe, watch, render. Also run as `kubectl bpo ...` through a link named kubectl-bpo.
    Ctl(blueprint_operator::ctl::CtlArgs),
}

fn main() -> ExitCode {
    let mut args = std::env::args_os();
    if let Some(argv0) = args.next() {
        if blueprint_operator::kando::invoked_as_kando(&argv0) {
            return blueprint_operator::kando::main(std::iter::once(argv0).chain(args));
        }
        if blueprint_operator::ctl::invoked_as_plugin(&argv0) {
            return blueprint_operator::ctl::plugin_main(std::iter::once(argv0).chain(args));
        }
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Validate(args) => cli::validate(&args),
        Command::Normalize(args) => cli::normalize(&args),
        Command::Kando { args } => {
            blueprint_operator::kando::main(std::iter::once("kando".into()).chain(args))
        }
        Command::Ctl(args) => blueprint_operator::ctl::run(args),
        Command::Crds => {
            print!("{}", blueprint_operator::model::crd_yaml());
            ExitCode::SUCCESS
        }
        Command::Controller(args) => serve(blueprint_operator::app::controller::run(args)),
        Command::Webhook(args) => serve(blueprint_operator::app::webhook::run(args)),
        Command::Certs(args) => match blueprint_operator::webhook::run_certs(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(2)
            }
        },
    }
}

/// Runs a long-lived server on a multi-threaded Tokio runtime; exit 1 on error.
fn serve(server: impl std::future::Future<Output = anyhow::Result<()>>) -> ExitCode {
    let done = match blueprint_operator::app::block_on(true, server) {
        Ok(done) => done,
        Err(code) => return code,
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!(
                "error: {}",
                blueprint_operator::kube_error::describe_chain(e.as_ref())
            );
            ExitCode::FAILURE
        }
    }
}
