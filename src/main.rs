//! The `countersign` command; everything lives in the library.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    countersign::cli::run().await
}
