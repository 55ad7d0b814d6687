//! The one error type of a function call ([`FunctionError`]); its Display reads like
//! Kanister's phase errors, naming the function and the argument.

/// A function failure; the Display reads like Kanister's phase errors.
#[derive(Debug, thiserror::Error)]
pub enum FunctionError {
    /// A Kanister function this executor does not run (the registry says which, and why).
    #[error("function {function} is not supported by this executor{hint} (supported: {supported})")]
    Unsupported {
        function: &'static str,
        /// Why, when the supported list does not say enough.
        hint: &'static str,
        supported: String,
    },
    #[error("Requested function {{{0}}} has not been registered")]
    Unknown(String),
    /// A missing or ill-typed argument.
    #[error("{function}: argument `{arg}`: {message}")]
    Arg {
        function: &'static str,
        arg: String,
        message: String,
    },
    /// An RDS call or wait failed; `context` says what the function was doing (Kanister's words).
    #[error("{function}: {context}: {source}")]
    Rds {
        function: &'static str,
        context: String,
        #[source]
        source: Box<crate::aws::rds::RdsError>,
    },
    /// Any other failure, already worded for the user.
    #[error("{function}: {message}")]
    Failed {
        function: &'static str,
        message: String,
    },
    /// A pod the function made or used (or a Kubernetes call) failed.
    #[error(transparent)]
    Pod(#[from] crate::pods::PodError),
}

impl FunctionError {
    pub(crate) fn arg(function: &'static str, arg: &str, message: impl Into<String>) -> Self {
        FunctionError::Arg {
            function,
            arg: arg.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn failed(function: &'static str, message: impl Into<String>) -> Self {
        FunctionError::Failed {
            function,
            message: message.into(),
        }
    }

    pub(crate) fn rds(
        function: &'static str,
        context: impl Into<String>,
        source: crate::aws::rds::RdsError,
    ) -> Self {
        FunctionError::Rds {
            function,
            context: context.into(),
            source: Box::new(source),
        }
    }

    pub(crate) fn kube(
        function: &'static str,
        action: impl Into<String>,
        source: kube::Error,
    ) -> Self {
        FunctionError::Pod(crate::pods::PodError::kube(function, action, source))
    }
}
