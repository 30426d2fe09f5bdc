//! The `countersign` command; everything lives in the library.

/// The runtime checks its global queue on every scheduling tick, not once every few dozen:
/// the writer's and sqlx's SQLite connection threads wake tasks from outside the runtime, and
/// such wake-ups land in that queue. The writer's every statement is one of them, so with
/// request tasks keeping the workers busy, each statement otherwise waited behind a few dozen
/// of them (submission at 64 connections measured about 7% faster this way).
fn main() -> std::process::ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .global_queue_interval(1)
        .build();
    match runtime {
        Ok(runtime) => runtime.block_on(countersign::cli::run()),
        Err(e) => {
            eprintln!("countersign: cannot start the async runtime: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
