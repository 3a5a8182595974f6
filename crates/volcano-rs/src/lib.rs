//! volcano-rs: a Volcano-compatible Kubernetes batch scheduler.
//!
//! The library holds what the binary's subcommands are made of, so that tests and benches can
//! drive them directly: [`simulate`] runs the engine on a cluster read from YAML; [`daemon`] is
//! the scheduler on a real API server; [`go_flags`] reads Volcano's command line.

pub mod daemon;
pub mod go_flags;
pub mod simulate;

/// The daemon and the simulator (every binary that links this library) allocate with
/// mimalloc. A session builds its tables afresh and drops them at close, thousands of small
/// objects a time, from a pool thread while the async workers allocate for the watches:
/// glibc's allocator spent about a tenth of the daemon's CPU under a steady stream sorting the
/// chunks freed by the previous session (docs/benchmarks.md). The engine's benchmark
/// (`examples/bench_session`) does not link this library and runs on the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Turns transparent huge pages off for this process, before it allocates much. mimalloc asks
/// the kernel for huge pages on its arenas, and it hands freed memory back to the kernel a
/// moment later; each fault that follows then zeroes a whole 2 MiB page. Zeroing them was 18 %
/// of the daemon's CPU binding a backlog of 5,000 pods and 5 % of a steady minute's, 1 % with
/// small pages (docs/benchmarks.md). Returns the error when the kernel refuses (a seccomp
/// filter, a kernel without the flag); the process then runs as before.
pub fn small_pages_only() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    rustix::thread::disable_transparent_huge_pages(true)?;
    Ok(())
}
