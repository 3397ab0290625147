//! A problem in a YAML file, with where it is.

use std::fmt;

/// A parse or validation error: the node's path, its position and what is
/// wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Path of the offending node, e.g. `services[1].dests[0].weight`
    /// (empty: the document, or a syntax error outside any node).
    pub path: String,
    /// 1-based line.
    pub line: Option<usize>,
    /// 1-based column.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    /// The error as `FILE:LINE:COL: PATH: MESSAGE` (the form compilers and
    /// editors understand).
    pub fn in_file(&self, file: &str) -> String {
        if self.line.is_some() {
            format!("{file}:{self}")
        } else {
            format!("{file}: {self}")
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, "{l}:{c}: ")?;
        }
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}
