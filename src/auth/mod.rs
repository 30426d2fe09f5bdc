//! Who is calling: password hashing for people (bounded by a pool), single sign-on through an
//! OpenID provider, hashed API tokens for agents and executors, and the store web sessions
//! live in.

pub mod oidc;
pub mod password;
pub mod session;
pub mod token;
