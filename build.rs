//! Rebuilds the server when a migration is added or changed: `sqlx::migrate!` embeds
//! `migrations/` at compile time, and cargo does not watch that directory on its own.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
