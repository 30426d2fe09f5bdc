//! HTTP integration tests: the real server on a random port, driven through its public
//! surfaces (agent and executor API, the pages and their forms).

#[path = "../common/mod.rs"]
mod common;
mod helpers;

mod aana_bridge;
mod admin;
mod agent_events;
mod audit_pages;
mod batch;
mod break_glass;
mod clients;
mod edits;
mod erasure;
mod errors;
mod executor;
mod gateway;
mod grants;
mod hardening;
mod hidden_chars;
mod insights;
mod limits;
mod loop_end_to_end;
mod mcp;
mod metrics;
mod notify;
mod openapi;
mod passkeys;
mod policy;
mod policy_life;
mod policy_notices;
mod policy_page;
mod policy_texts;
mod proposal_page;
mod queue_page;
mod reach;
mod reads_scope;
mod retention;
mod revisions;
mod runs_scope;
mod slack;
mod waiting;
mod web;
mod webhooks;
