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
    /// A phase-output line that could not be decoded.
    #[error("{function}: failed to parse phase output: {message}")]
    Output {
        function: &'static str,
        message: String,
    },
    /// A Kubernetes API call failed.
    #[error("{function}: {action}: {}", crate::kube_error::Describe(source))]
    Kube {
        function: &'static str,
        action: String,
        #[source]
        source: kube::Error,
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
}

impl From<crate::pods::PodError> for FunctionError {
    fn from(e: crate::pods::PodError) -> Self {
        use crate::pods::PodError;
        match e {
            PodError::Override { function, message } => {
                FunctionError::arg(function, "podOverride", message)
            }
            PodError::Output { function, message } => FunctionError::Output { function, message },
            PodError::Kube {
                function,
                action,
                source,
            } => FunctionError::Kube {
                function,
                action,
                source,
            },
            PodError::Failed { function, message } => FunctionError::Failed { function, message },
        }
    }
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
        FunctionError::Kube {
            function,
            action: action.into(),
            source,
        }
    }
}
