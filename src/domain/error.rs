//! The one error shape of a rejected input: which field, and which rule it broke.

use serde::Serialize;

/// One broken rule in an input, named by its JSON path (`tool.name`, `target_refs[1].id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    /// JSON path of the offending field; empty for the document as a whole.
    pub field: String,
    /// The rule the field broke, in words an agent author can act on.
    pub message: String,
}

impl FieldError {
    /// A new field error.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}
