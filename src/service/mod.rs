//! Countersign's use cases, one file each: submit a proposal, answer a pre-tool-check, decide,
//! expire, lease, report, and manage accounts. Each is one function over [`Services`] (the
//! store, the policy and the clock) and the actor, and each is used alike by the JSON API, the
//! reviewer's pages and the CLI. Handlers and server functions only parse, call and present.
//!
//! A use case reads what it needs, applies the domain's rules, and hands one change to
//! [`Store::write`](crate::storage::Store::write): state, audit events and queue rows commit
//! together or not at all.
//!
//! Errors: [`ServiceError`] is this layer's one error; adapters map it to HTTP statuses or page
//! notices. `Storage` is internal and never echoed.
//!
//! Layout: [`Services`] itself lives in `services`, the errors in `error`, and what `Services`
//! holds in leaf files of their own (`token_cache`, `queue_signal`, `facet_cache`,
//! `webhook_client`, `notify_settings`). A use case's file names the leaf files it needs, never
//! this one: this file only declares the modules and re-exports for callers outside the layer,
//! so no two files import each other (`tests/house.rs`, `no_import_cycle`).

mod accounts;
mod administer;
mod agent_events;
mod audit;
mod backtest;
mod charts;
mod decide;
mod desk;
mod error;
mod executor;
mod expire;
mod export;
mod facet_cache;
mod gateway;
mod grants;
mod insights;
mod ledger;
mod mail;
mod notify;
mod notify_settings;
mod passkeys;
mod policy;
mod policy_cell;
mod policy_pages;
mod policy_playground;
mod pre_tool_check;
mod queries;
mod queue;
mod queue_signal;
mod reach;
mod regulated;
mod retention;
mod review;
mod services;
mod shadow;
mod sign_in;
mod slack;
mod sso;
mod submit;
mod token_cache;
mod tokens;
mod wait;
mod webhook_client;
mod webhooks;
mod withdraw;

pub use crate::audit::checkpoint::Trust;
pub use accounts::{Bootstrap, CreatedToken, NewUser, TokenRequest};
pub use agent_events::{AGENT_BACKLOG, AgentEvent, AgentHub, Resync, SNAPSHOT_LIMIT};
pub use audit::{Verified, VerifyError, verify_bundle};
pub use charts::{CHART_DAYS, Charts, DayOutcomes, DomainLatency, Tally};
pub use decide::{Decided, Proof};
pub use desk::{Facets, QUEUE_PAGE, QueuePage};
pub use error::{AccountError, Conflict, ServiceError};
pub use executor::{Grant, LeaseRequest, Leased, Report};
pub use facet_cache::FACETS_FRESH;
pub use insights::{DomainInsight, Insights, MAX_INSIGHT_DAYS, ReviewerInsight};
pub use ledger::{
    COMMIT_LAG, ChainState, Cursor, ProposalTimeline, SCAN_BUDGET, TRAIL_PAGE, TrailPage,
};
pub use mail::{Mailer, check_address};
pub use notify_settings::{ChannelUrl, DEFAULT_EXPIRY_WARNING, NotifySettings, SigningSecret};
pub use policy::{PolicyChangeError, PolicyFile, parse_candidate};
pub use policy_pages::{ChangePage, PolicyOverview, SHADOW_LISTED};
pub use policy_playground::{Explanation, MAX_PLAYGROUND_INPUT};
pub use pre_tool_check::CheckAnswer;
pub use queries::QUEUE_LIMIT;
pub use queue::{RunsPage, Swept};
pub use queue_signal::QueueSignal;
pub use review::{AgentHistory, ProposalPage, withholds_personal_data};
pub use services::{Clock, Services, SystemClock};
pub use shadow::MAX_SHADOW;
pub use sign_in::{SessionStamp, SignIn};
pub use slack::SlackReply;
pub use sso::SsoSignIn;
pub use submit::Submitted;
pub use tokens::TokenCheck;
pub use wait::{AgentView, MAX_WAIT};
pub use webhook_client::WebhookSettings;
pub use webhooks::{RotateWhich, RotatedSecret};
// Storage handles an adapter holds without reading a row: which database answers (the health
// check) and a proposal's wake-ups (a page's event stream).
pub use crate::storage::Backend;
pub use crate::storage::changes::Watching;
