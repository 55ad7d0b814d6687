//! `blueprint-operator`: one binary, one subcommand per job.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use blueprint_operator::cli;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Validate(args) => cli::validate(&args),
        Command::Normalize(args) => cli::normalize(&args),
        Command::Crds => {
            print!("{}", blueprint_operator::model::crd_yaml());
            ExitCode::SUCCESS
        }
    }
}
