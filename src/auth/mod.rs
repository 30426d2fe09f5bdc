//! Who is calling: password hashing for people, hashed API tokens for agents and executors,
//! and the typed session behind the web pages.

pub mod password;
pub mod session;
pub mod token;
