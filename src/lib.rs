//! Countersign: AI proposes, Countersign decides, infrastructure executes.
//!
//! The server crate. [`domain`] holds the rules, [`service`] the use cases every adapter
//! calls, [`audit`] the trail's typed events and hash chain, [`storage`] all SQL, [`api`] the
//! agent and executor JSON API, [`auth`] passwords, tokens and sessions, [`web`] the server side
//! of the UI's ports, [`startup`] the router, [`serve`] the connections under their timeouts
//! and cap, [`cli`] the `countersign` command. The pages
//! themselves live in the `app` crate. `ARCHITECTURE.md` draws the layers.

pub mod api;
pub mod audit;
pub mod auth;
pub mod cli;
pub mod config;
pub mod domain;
pub mod gateway;
pub mod metrics;
pub mod serve;
pub mod service;
pub mod startup;
pub mod storage;
pub mod telemetry;
pub mod web;
