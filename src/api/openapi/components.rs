//! The named components operations refer to (`body = ErrorBody`, …): empty placeholders whose
//! schemas [`super::document`] fills in after the document is built. A leaf: handlers and the
//! schema routes name these without naming the document that builds on them.

use std::borrow::Cow;

use utoipa::openapi::{ObjectBuilder, RefOr, Schema};

/// Declares a named component whose schema is filled in from JSON after the document is built
/// (utoipa names it in operations; [`super::document`] puts the real schema under that name).
macro_rules! component {
    ($(#[$doc:meta])* $ty:ident, $name:literal) => {
        $(#[$doc])*
        pub struct $ty;
        impl utoipa::PartialSchema for $ty {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new().into()
            }
        }
        impl utoipa::ToSchema for $ty {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }
        }
    };
}

component!(
    /// Seed 004's tool proposal (the body of `POST /api/v1/proposals`).
    ToolProposalBody,
    "ToolProposal"
);
component!(
    /// AANA's Agent Action Contract v1 event.
    AgentActionEvent,
    "AgentActionContractV1"
);
component!(
    /// `{"proposal": …}`.
    ProposalAnswer,
    "ProposalAnswer"
);
component!(
    /// The pre-tool-check decision envelope.
    DecisionEnvelope,
    "DecisionEnvelope"
);
component!(
    /// AANA's schema-validation answer.
    ValidationAnswer,
    "ValidationAnswer"
);
component!(
    /// Every error's shape.
    ErrorBody,
    "Error"
);
component!(
    /// A leased command with its lease token and signed grant.
    LeaseAnswer,
    "LeaseAnswer"
);
component!(
    /// A success report's body.
    CompleteBody,
    "CompleteReport"
);
component!(
    /// A failure report's body.
    FailBody,
    "FailReport"
);
component!(
    /// A heartbeat's answer.
    HeartbeatAnswer,
    "HeartbeatAnswer"
);
component!(
    /// A lease request body.
    LeaseBody,
    "LeaseRequest"
);
component!(
    /// A heartbeat body.
    HeartbeatBody,
    "Heartbeat"
);
component!(
    /// The command after a report or heartbeat.
    CommandAnswer,
    "CommandAnswer"
);
component!(
    /// The command after a success report, and the next lease if the report asked for one.
    CompleteAnswer,
    "CompleteAnswer"
);
component!(
    /// The grant-verifying key.
    PublicKeyAnswer,
    "PublicKey"
);
component!(
    /// A JSON Schema document.
    JsonSchemaDocument,
    "JsonSchemaDocument"
);
