//! The `countersign` command; everything lives in the library.

/// mimalloc keeps thousands of parked connections (agents waiting for a decision) smaller than
/// glibc's malloc does; see README, Benchmarks.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    countersign::cli::run().await
}
