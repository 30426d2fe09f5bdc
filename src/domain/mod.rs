//! The rules of Countersign, free of IO: the proposal contract and how it is parsed, the
//! lifecycle a proposal and its command move through, principals and roles, canonical
//! hashing, and routing. Nothing here knows about HTTP, SQL or Leptos.

pub mod canonical;
pub mod command;
pub mod error;
pub mod lifecycle;
pub mod principal;
pub mod proposal;
pub mod routing;
mod text;

pub use error::FieldError;
