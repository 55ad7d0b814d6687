//! What went wrong with a pod, worded like the phase errors of the function that made it
//! (`<function>: …`); the functions take it as their own error (a `From` impl beside theirs).

/// A pod operation that failed, for `function`.
#[derive(Debug, thiserror::Error)]
pub enum PodError {
    /// The pod's `podOverride` makes no valid pod.
    #[error("{function}: argument `podOverride`: {message}")]
    Override {
        function: &'static str,
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
    /// Any other failure, already worded for the user.
    #[error("{function}: {message}")]
    Failed {
        function: &'static str,
        message: String,
    },
}

impl PodError {
    pub fn failed(function: &'static str, message: impl Into<String>) -> Self {
        PodError::Failed {
            function,
            message: message.into(),
        }
    }

    pub fn kube(function: &'static str, action: impl Into<String>, source: kube::Error) -> Self {
        PodError::Kube {
            function,
            action: action.into(),
            source,
        }
    }

    /// `context: <this error's message>`, for the same function (Kanister's `errors.Wrapf`).
    pub fn wrap(self, context: &str) -> PodError {
        let function = self.function();
        let inner = without_function(function, self.to_string());
        PodError::failed(function, format!("{context}: {inner}"))
    }

    pub fn function(&self) -> &'static str {
        match self {
            PodError::Override { function, .. }
            | PodError::Output { function, .. }
            | PodError::Kube { function, .. }
            | PodError::Failed { function, .. } => function,
        }
    }
}

/// `text` without its leading `<function>: `.
pub fn without_function(function: &str, text: String) -> String {
    match text
        .strip_prefix(function)
        .and_then(|t| t.strip_prefix(": "))
    {
        Some(inner) => inner.to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_the_inner_message_once() {
        let e = PodError::failed("BackupData", "Failed to exec command in pod a/b: exit 1");
        let w = e.wrap("Failed to create and upload backup").to_string();
        assert_eq!(
            w,
            "BackupData: Failed to create and upload backup: Failed to exec command in pod a/b: exit 1"
        );
        let e = PodError::Output {
            function: "BackupData",
            message: "bad line".into(),
        };
        assert_eq!(
            e.wrap("Failed to parse phase output").to_string(),
            "BackupData: Failed to parse phase output: failed to parse phase output: bad line"
        );
    }
}
