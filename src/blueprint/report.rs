//! The result of validating one Blueprint: every error and warning, each
//! located by a JSON path and by `blueprint/action/phase`.

use std::fmt;

use serde::Serialize;

/// Which rule a problem comes from; lets callers (the mutating webhook) react
/// to one rule without parsing messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Rule {
    /// The document is not shaped like a Blueprint (wrong JSON types).
    Structure,
    /// `deferPhase` is a list of two or more phases.
    DeferPhaseList,
    UnknownFunction,
    MissingArgument,
    UnsupportedArgument,
    ArgumentType,
    DuplicatePhaseName,
    TemplateSyntax,
    TemplateReference,
    /// Works, but is risky or will not work with this executor.
    Advice,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// JSON path inside the Blueprint, e.g. `actions.backup.phases[1].args.command`.
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    pub rule: Rule,
    pub message: String,
}

impl Problem {
    /// `action/phase` (or `action`, or empty) for one-line reports.
    pub fn location(&self) -> String {
        match (&self.action, &self.phase) {
            (Some(a), Some(p)) => format!("{a}/{p}"),
            (Some(a), None) => a.clone(),
            _ => String::new(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// `metadata.name` of the Blueprint, empty when it has none.
    pub name: String,
    pub errors: Vec<Problem>,
    pub warnings: Vec<Problem>,
}

impl Report {
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

impl fmt::Display for Report {
    /// All errors, one per line, for denial messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}
