//! `volcano-rs-bench-e2e`: the end-to-end benchmark ([`volcano_rs_e2e::bench`]) against the
//! cluster in `$KUBECONFIG`; `make bench-e2e` brings a control plane up and down around it.
//! Prints the table on stdout and writes the JSON to `$BENCH_JSON` (default
//! `<target>/bench-e2e.json`).

use std::process::ExitCode;

use volcano_rs_e2e::{bench, harness};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

async fn run() -> anyhow::Result<()> {
    let sizes = bench::Sizes::from_env()?;
    let env = harness::environment().await?;
    harness::kill_leftover_daemons(&env.log_dir, &env.kubeconfig);
    let phases = bench::run(&env, &sizes).await?;
    bench::print_table(&phases);
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "sizes": {
            "nodes": sizes.nodes, "gangs": sizes.gangs, "gang_size": sizes.gang_size,
            "big_gang": sizes.big_gang, "concurrency": sizes.concurrency,
            "steady_rate": sizes.steady_rate, "steady_seconds": sizes.steady_seconds,
            "phases_run": sizes.phases,
        },
        "phases": phases,
    }))?;
    let path = std::env::var_os("BENCH_JSON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env.log_dir.join("../bench-e2e.json"));
    std::fs::write(&path, &json)?;
    println!("{json}");
    Ok(())
}
