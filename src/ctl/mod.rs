//! `blueprint-operator ctl`, the day-2 commands, working against the current
//! kubeconfig as kubectl does. Also a kubectl plugin: run through a link named
//! `kubectl-bpo` on the `PATH`, `kubectl bpo <command>` is `ctl <command>`.
//!
//! - [`connect`]: kubeconfig, context and namespace, as kubectl picks them;
//! - [`create`]: a new ActionSet, or one restoring from a run (`--from`, as
//!   Kanister's `kanctl create actionset --from`);
//! - [`runs`]: a schedule's runs, and running a schedule now;
//! - [`describe`]: one run's phases, outputs, error and deferPhase outcome;
//! - [`watch`]: progress until the run ends (exit 1 when it failed);
//! - [`render`]: every phase's arguments as the executor would render them,
//!   creating nothing;
//! - [`output`]: tables, JSON and YAML.

pub mod cells;
pub mod connect;
pub mod create;
pub mod describe;
pub mod output;
pub mod render;
pub mod runs;
pub mod verify;
pub mod watch;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

pub use output::Format;

#[derive(Debug, Args)]
pub struct CtlArgs {
    #[command(flatten)]
    pub connect: connect::ConnectArgs,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t, global = true)]
    pub output: Format,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create an ActionSet (`--blueprint --action --object`), or restore from a run (`--from`).
    Create(create::CreateArgs),
    /// Run an ActionSchedule now (its `blueprint-operator.io/run-now` annotation).
    RunNow(runs::RunNowArgs),
    /// List a schedule's runs: time, trigger, state, duration, verified, artifacts.
    Runs(runs::RunsArgs),
    /// Verify one complete backup run of a schedule now (its `spec.verify`).
    Verify(verify::VerifyArgs),
    /// Show one ActionSet: phases with state and output, the error, the deferPhase outcome, Events.
    Describe(describe::DescribeArgs),
    /// Follow an ActionSet until it ends; exit 1 when it failed.
    Watch(watch::WatchArgs),
    /// Print every phase's arguments and the deferPhase as the executor would render them,
    /// without creating anything; exit 1 when a template fails.
    Render(render::RenderArgs),
}

/// What went wrong, for the person at the terminal: what, where, how to fix.
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    /// A flag or argument that cannot be used.
    #[error("{0}")]
    Input(String),
    /// The kubeconfig could not be read or used.
    #[error("cannot use the kubeconfig: {0}")]
    Config(String),
    /// The API server refused or could not be reached.
    #[error("{what}: {}", crate::kube_error::Describe(.source))]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
    /// A file named on the command line.
    #[error("{0}")]
    Read(String),
    /// Writing the output failed (closed pipe, ...).
    #[error("cannot write the output: {0}")]
    Write(#[from] std::io::Error),
}

impl CtlError {
    pub fn kube(what: impl Into<String>) -> impl FnOnce(kube::Error) -> CtlError {
        let what = what.into();
        move |source| CtlError::Kube { what, source }
    }
}

/// How a command ended, when it did not fail to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Done {
    /// Exit 0.
    Ok,
    /// Exit 1: the ActionSet watched failed, or a template did not render.
    Failed,
}

/// Exit codes: 0 done, 1 the run (or a rendered template) failed, 2 bad
/// input, kubeconfig or API error.
pub fn run(args: CtlArgs) -> ExitCode {
    let done = match crate::app::block_on(false, dispatch(args)) {
        Ok(done) => done,
        Err(code) => return code,
    };
    match done {
        Ok(Done::Ok) => ExitCode::SUCCESS,
        Ok(Done::Failed) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {}", crate::kube_error::describe_chain(&e));
            ExitCode::from(2)
        }
    }
}

async fn dispatch(args: CtlArgs) -> Result<Done, CtlError> {
    let format = args.output;
    let conn = connect::connect(&args.connect).await?;
    match args.command {
        Command::Create(a) => create::run(&conn, &a, format).await,
        Command::RunNow(a) => runs::run_now(&conn, &a, format).await,
        Command::Runs(a) => runs::list(&conn, &a, format).await,
        Command::Verify(a) => verify::run(&conn, &a, format).await,
        Command::Describe(a) => describe::run(&conn, &a, format).await,
        Command::Watch(a) => watch::run(&conn, &a, format).await,
        Command::Render(a) => render::run(&conn, &a, format).await,
    }
}

/// The plugin's name: kubectl runs `kubectl-bpo` for `kubectl bpo`.
pub const PLUGIN_NAME: &str = "kubectl-bpo";

/// True when the program was started as the kubectl plugin (argv[0]'s file
/// name is `kubectl-bpo`, as through a link of that name).
pub fn invoked_as_plugin(argv0: &std::ffi::OsStr) -> bool {
    std::path::Path::new(argv0).file_name() == Some(std::ffi::OsStr::new(PLUGIN_NAME))
}

#[derive(Debug, Parser)]
#[command(
    name = "kubectl bpo",
    version,
    about = "blueprint-operator's day-2 commands as a kubectl plugin (`blueprint-operator ctl`)"
)]
struct Plugin {
    #[command(flatten)]
    args: CtlArgs,
}

/// `kubectl bpo ...`: the arguments as `blueprint-operator ctl` takes them.
pub fn plugin_main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    run(Plugin::parse_from(args).args)
}
