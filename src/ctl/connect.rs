//! The API server and namespace, picked as kubectl picks them: `--kubeconfig`,
//! else `$KUBECONFIG`, else `~/.kube/config` (in a pod: its ServiceAccount);
//! `--context`, else the current context; `-n`, else the context's namespace,
//! else `default`.

use std::path::PathBuf;

use clap::Args;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use super::CtlError;

#[derive(Clone, Debug, Default, Args)]
pub struct ConnectArgs {
    /// Path of the kubeconfig (default: $KUBECONFIG, then ~/.kube/config, as kubectl).
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: its current-context).
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// Namespace of the ActionSets and ActionSchedules (default: the context's namespace).
    #[arg(long, short, global = true)]
    pub namespace: Option<String>,
}

/// A client and the namespace the command works in.
#[derive(Clone)]
pub struct Conn {
    pub client: Client,
    pub namespace: String,
}

pub async fn connect(args: &ConnectArgs) -> Result<Conn, CtlError> {
    let opts = KubeConfigOptions {
        context: args.context.clone(),
        ..KubeConfigOptions::default()
    };
    let chain = |e: &(dyn std::error::Error + 'static)| {
        CtlError::Config(crate::kube_error::describe_chain(e))
    };
    let config = match &args.kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path).map_err(|e| {
                CtlError::Config(format!(
                    "{}: {}",
                    path.display(),
                    crate::kube_error::describe_chain(&e)
                ))
            })?;
            Config::from_custom_kubeconfig(kc, &opts)
                .await
                .map_err(|e| chain(&e))?
        }
        None if args.context.is_some() => Config::from_kubeconfig(&opts)
            .await
            .map_err(|e| chain(&e))?,
        None => Config::infer().await.map_err(|e| chain(&e))?,
    };
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let client = Client::try_from(config).map_err(|e| chain(&e))?;
    Ok(Conn { client, namespace })
}
