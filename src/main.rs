//! The `countersign` command; everything lives in the library.

/// jemalloc instead of glibc's allocator: glibc's consolidation of its fast bins on every
/// allocation over 1 KiB (`malloc_consolidate`, `unlink_chunk`) was about 18% of a request's
/// CPU in the request workers.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
