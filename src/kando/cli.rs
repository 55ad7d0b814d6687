//! The command line of Kanister's `kando` (`pkg/kando`, cobra): the same
//! commands and flags, parsed with clap. `location` takes `--profile/-p`
//! and `--path/-s` before or after its subcommand (cobra's persistent
//! flags), the root `--verbosity/-v`; a flag given twice takes the last
//! value (pflag).
//!
//! What is not implemented fails naming the Kanister feature: the Kopia
//! flags (`--output-name`, `--kopia-snapshot`: the Kopia repository server
//! data path), and the `chronicle`, `stream` and `process` commands.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use super::location::LocationError;
use super::output::KeyError;
use super::profile::ProfileFlagError;
use super::{location, output, profile};

/// Why a kando command failed; printed after `kando: error: `.
#[derive(Debug, thiserror::Error)]
enum KandoError {
    /// A Kanister command this kando does not implement; `feature` says what it does there.
    #[error(
        "`kando {command}` is not supported: {feature} is not implemented by blueprint-operator's kando \
         (supported: location push/pull/delete on s3Compliant, gcs and azure Profiles, output)"
    )]
    UnsupportedCommand {
        command: &'static str,
        feature: &'static str,
    },
    /// A flag of Kanister's Kopia data path.
    #[error(
        "{0} is not supported: it belongs to Kanister's Kopia repository server data path \
         (Profile location type kopia), which blueprint-operator's kando does not implement; \
         without it, kando pushes and pulls plain objects of an s3Compliant, gcs or azure Profile"
    )]
    KopiaFlag(&'static str),
    #[error("Invalid log level: {0}")]
    LogLevel(String),
    #[error("Command accepts 2 arguments, received {0} arguments")]
    OutputArgs(usize),
    #[error(transparent)]
    OutputKey(#[from] KeyError),
    #[error("writing the output line to stdout: {0}")]
    Stdout(#[source] std::io::Error),
    #[error(transparent)]
    Profile(#[from] ProfileFlagError),
    #[error("cannot start the Tokio runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    Location(#[from] LocationError),
}

#[derive(Debug, Parser)]
#[command(
    name = "kando",
    version,
    args_override_self = true,
    about = "Kanister's kando, as far as Blueprints use it: location push/pull/delete on \
             s3Compliant, gcs and azure Profiles, and output"
)]
struct Kando {
    /// Log level on stderr (trace, debug, info, warn, error, fatal, panic).
    #[arg(short = 'v', long, global = true, default_value = "warn")]
    verbosity: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Push, pull and delete from object storage
    Location(LocationArgs),
    /// Create phase output with given key:value
    Output {
        #[arg(allow_hyphen_values = true, num_args = 0..)]
        args: Vec<OsString>,
    },
    /// Not supported (Kanister's chronicle: periodic push of a command's output)
    #[command(disable_help_flag = true)]
    Chronicle(Unsupported),
    /// Not supported (Kanister's stream: kopia streaming of a file)
    #[command(disable_help_flag = true)]
    Stream(Unsupported),
    /// Not supported (Kanister's process: the kando process server)
    #[command(disable_help_flag = true)]
    Process(Unsupported),
}

#[derive(Debug, Args)]
struct Unsupported {
    #[arg(allow_hyphen_values = true, num_args = 0.., trailing_var_arg = true)]
    _args: Vec<OsString>,
}

#[derive(Debug, Args)]
struct LocationArgs {
    /// Pass a Profile as a JSON string (required)
    #[arg(
        short = 'p',
        long,
        global = true,
        default_value = "",
        hide_default_value = true
    )]
    profile: String,
    /// Specify a path suffix (optional)
    #[arg(
        short = 's',
        long,
        global = true,
        default_value = "",
        hide_default_value = true
    )]
    path: String,
    #[command(subcommand)]
    command: LocationCommand,
}

#[derive(Debug, Subcommand)]
enum LocationCommand {
    /// Push a source file or stdin stream to s3-compliant object storage
    Push {
        /// A file, or `-` for stdin
        source: String,
        /// Not supported: names the phase output of a Kopia snapshot (Kopia repository server)
        #[arg(short = 'o', long = "output-name")]
        output_name: Option<String>,
    },
    /// Pull from s3-compliant object storage to a file or stdout
    Pull {
        /// A file, or `-` for stdout
        target: String,
        /// Not supported: a Kopia snapshot (Kopia repository server)
        #[arg(short = 'k', long = "kopia-snapshot")]
        kopia_snapshot: Option<String>,
    },
    /// Delete artifacts from s3-compliant object storage
    Delete {
        /// Not supported: a Kopia snapshot (Kopia repository server)
        #[arg(short = 'k', long = "kopia-snapshot")]
        kopia_snapshot: Option<String>,
    },
}

/// Runs kando with `args` (`args[0]` is the program name); exit 0 on
/// success, 1 on any failure with the reason on stderr (as Kanister's kando).
pub fn main<I>(args: I) -> ExitCode
where
    I: IntoIterator<Item = OsString>,
{
    let cli = match Kando::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("kando: error: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Kando) -> Result<(), KandoError> {
    init_logging(&cli.verbosity)?;
    match cli.command {
        Command::Output { args } => run_output(&args),
        Command::Location(l) => run_location(l),
        Command::Chronicle(_) => Err(KandoError::UnsupportedCommand {
            command: "chronicle",
            feature: "Kanister's chronicle (periodic push of a command's output to object storage)",
        }),
        Command::Stream(_) => Err(KandoError::UnsupportedCommand {
            command: "stream",
            feature: "Kanister's stream push (a file streamed into a Kopia repository)",
        }),
        Command::Process(_) => Err(KandoError::UnsupportedCommand {
            command: "process",
            feature: "Kanister's kando process server (commands run and watched over gRPC)",
        }),
    }
}

fn init_logging(level: &str) -> Result<(), KandoError> {
    let level = match level.to_ascii_lowercase().as_str() {
        "trace" => tracing::Level::TRACE,
        "debug" => tracing::Level::DEBUG,
        "info" => tracing::Level::INFO,
        "warn" | "warning" => tracing::Level::WARN,
        "error" | "fatal" | "panic" => tracing::Level::ERROR,
        _ => return Err(KandoError::LogLevel(level.to_string())),
    };
    // Already set (tests calling twice): keep the first.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .without_time()
        .try_init();
    Ok(())
}

fn run_output(args: &[OsString]) -> Result<(), KandoError> {
    use std::io::Write as _;
    use std::os::unix::ffi::OsStrExt as _;
    let [key, value] = args else {
        return Err(KandoError::OutputArgs(args.len()));
    };
    let key = key.to_string_lossy();
    output::validate_key(&key)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", output::line(&key, value.as_bytes()))
        .and_then(|()| out.flush())
        .map_err(KandoError::Stdout)
}

fn run_location(l: LocationArgs) -> Result<(), KandoError> {
    let kopia = KandoError::KopiaFlag;
    match &l.command {
        LocationCommand::Push {
            output_name: Some(_),
            ..
        } => return Err(kopia("--output-name")),
        LocationCommand::Pull {
            kopia_snapshot: Some(_),
            ..
        }
        | LocationCommand::Delete {
            kopia_snapshot: Some(_),
        } => return Err(kopia("--kopia-snapshot")),
        _ => {}
    }
    let profile = profile::parse(&l.profile)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(KandoError::Runtime)?;
    rt.block_on(async {
        match &l.command {
            LocationCommand::Push { source, .. } => {
                let (key, n) = location::push(&profile, &l.path, source, signal()).await?;
                tracing::info!(bucket = %profile.bucket(), %key, bytes = n, "pushed");
            }
            LocationCommand::Pull { target, .. } => {
                let (key, n) = location::pull(&profile, &l.path, target).await?;
                tracing::info!(bucket = %profile.bucket(), %key, bytes = n, "pulled");
            }
            LocationCommand::Delete { .. } => {
                let (key, n) = location::delete(&profile, &l.path).await?;
                tracing::info!(bucket = %profile.bucket(), %key, objects = n, "deleted");
            }
        }
        Ok::<_, KandoError>(())
    })
}

/// Completes on SIGTERM or SIGINT, naming it (a push then aborts its
/// multipart upload before exiting).
async fn signal() -> String {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM".into(),
        _ = int.recv() => "SIGINT".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Kando, clap::Error> {
        Kando::try_parse_from(std::iter::once("kando").chain(args.iter().copied()))
    }

    fn location(k: Kando) -> LocationArgs {
        match k.command {
            Command::Location(l) => l,
            other => panic!("not location: {other:?}"),
        }
    }

    /// Every form of the corpus' calls, and cobra's flag placements.
    #[test]
    fn flags_as_blueprints_pass_them() {
        let l = location(
            parse(&["location", "push", "--profile", "{}", "--path", "/a/b", "-"]).unwrap(),
        );
        assert_eq!((l.profile.as_str(), l.path.as_str()), ("{}", "/a/b"));
        assert!(
            matches!(l.command, LocationCommand::Push { ref source, output_name: None } if source == "-")
        );
        // The file before --path (etcd Blueprints), flags before the subcommand.
        let l = location(
            parse(&[
                "location",
                "push",
                "--profile",
                "{}",
                "/tmp/x.gz",
                "--path",
                "p",
            ])
            .unwrap(),
        );
        assert!(
            matches!(l.command, LocationCommand::Push { ref source, .. } if source == "/tmp/x.gz")
        );
        let l = location(parse(&["location", "--profile={}", "-s", "p", "pull", "-"]).unwrap());
        assert_eq!((l.profile.as_str(), l.path.as_str()), ("{}", "p"));
        // The last of repeated flags wins, as in pflag.
        let l =
            location(parse(&["location", "delete", "-p", "a", "-p", "b", "--path", "x"]).unwrap());
        assert_eq!(l.profile, "b");
        let k = parse(&["-v", "debug", "location", "delete", "--path", "x"]).unwrap();
        assert_eq!(k.verbosity, "debug");
        // The Kopia flags are known (and refused when run).
        let l = location(parse(&["location", "pull", "--kopia-snapshot", "{}", "-"]).unwrap());
        assert!(matches!(
            l.command,
            LocationCommand::Pull {
                kopia_snapshot: Some(_),
                ..
            }
        ));
        assert!(parse(&["location", "push"]).is_err());
        assert!(parse(&["location", "push", "--bogus", "-"]).is_err());
    }

    #[test]
    fn unsupported_parts_name_the_kanister_feature() {
        let run_err = |args: &[&str]| run(parse(args).unwrap()).unwrap_err().to_string();
        let e = run_err(&[
            "location",
            "push",
            "--profile",
            "{}",
            "--output-name",
            "o",
            "-",
        ]);
        assert!(e.starts_with("--output-name is not supported"), "{e}");
        assert!(e.contains("Kopia repository server"), "{e}");
        let e = run_err(&["location", "delete", "-k", "{}", "--profile", "{}"]);
        assert!(e.starts_with("--kopia-snapshot is not supported"), "{e}");
        let e = run_err(&["chronicle", "push", "--", "echo"]);
        assert!(e.contains("Kanister's chronicle"), "{e}");
        let e = run_err(&["stream", "push", "--help"]);
        assert!(e.contains("Kanister's stream push"), "{e}");
        let e = run_err(&["process", "server"]);
        assert!(e.contains("process server"), "{e}");
        let e = run_err(&["-v", "loud", "output", "a", "b"]);
        assert_eq!(e, "Invalid log level: loud");
        let e = run_err(&["output", "a"]);
        assert_eq!(e, "Command accepts 2 arguments, received 1 arguments");
        let e = run_err(&["output", "a-b", "c"]);
        assert!(e.starts_with("Key should contain only"), "{e}");
        let e = run_err(&["location", "pull", "-"]);
        assert_eq!(e, "Please provide the --profile flag");
    }
}
