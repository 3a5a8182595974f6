//! Every scheduler configuration shipped in `config/` (and `config/seed-examples/`) loads and
//! runs in the simulator on the shipped example cluster. Plugins this build does not provide yet
//! are skipped with a warning, as Volcano skips a plugin it has no builder for; the list of
//! those is fixed here, so a plugin that goes missing fails the test.

use std::path::{Path, PathBuf};

use k8s_openapi::jiff::Timestamp;
use volcano_rs::simulate::{self, ConfFile, SimInput, SimOptions};

/// Volcano plugins that later work adds; until then a configuration naming them runs without.
/// (Sorted.)
const NOT_PROVIDED_YET: &[&str] = &[];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn shipped_configs() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["config", "config/seed-examples"] {
        let entries = std::fs::read_dir(repo().join(dir)).expect("config directory");
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "conf") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn options(path: &Path, strict: bool) -> SimOptions {
    let now: Timestamp = "2026-01-01T00:00:00Z".parse().expect("timestamp");
    let mut opts = SimOptions::new(now);
    opts.scheduler_conf = Some(ConfFile {
        name: path.display().to_string(),
        text: std::fs::read_to_string(path).expect("readable config"),
    });
    opts.strict_config = strict;
    opts
}

#[test]
fn every_shipped_config_runs_on_the_example_cluster() {
    let files = shipped_configs();
    assert!(
        files.len() >= 18,
        "expected every shipped config, found {files:?}"
    );
    let input = SimInput::from_files(&[repo().join("examples/cluster.yaml")]).expect("example");
    let mut skipped_somewhere = Vec::new();
    for path in &files {
        let report = simulate::run(&input, &options(path, false))
            .unwrap_or_else(|e| panic!("{} does not run: {e}", path.display()));
        assert!(
            !report.cycles.is_empty(),
            "{}: no session ran",
            path.display()
        );
        for name in &report.skipped_plugins {
            assert!(
                NOT_PROVIDED_YET.contains(&name.as_str()),
                "{} names plugin {name:?}, which should be provided",
                path.display()
            );
            assert!(
                report
                    .warnings
                    .iter()
                    .any(|w| w.contains(&format!("{name:?}"))),
                "{}: no warning names the skipped plugin {name:?}: {:?}",
                path.display(),
                report.warnings
            );
            skipped_somewhere.push(name.clone());
        }
        // Strict mode refuses exactly the files that name a plugin this build lacks.
        let strict = simulate::run(&input, &options(path, true));
        assert_eq!(
            strict.is_err(),
            !report.skipped_plugins.is_empty(),
            "{}: strict mode should refuse only files with skipped plugins",
            path.display()
        );
    }
    skipped_somewhere.sort();
    skipped_somewhere.dedup();
    assert_eq!(skipped_somewhere, NOT_PROVIDED_YET.to_vec());
}
