//! The scheduler configuration from `--scheduler-conf`, with hot reload (spec `framework.md`
//! §1.1 and §1.9).
//!
//! Volcano reloads on file-system events in the file's directory and keeps the previous policy
//! when the new one is invalid. volcano-rs keeps that outcome with a simpler mechanism and a
//! stricter start:
//!
//! * The daemon calls [`ConfSource::poll`] before each session. It re-reads the file and compares
//!   a hash of its content, following symlinks, so the atomic `..data` symlink swap by which the
//!   kubelet updates a mounted ConfigMap is seen like any edit, and no watcher can miss an event.
//!   A change applies from the next session; a running session keeps the configuration it
//!   started with (it holds its own `Arc`).
//! * An invalid or unreadable new version is refused and the configuration in force stays. Each
//!   distinct problem is reported once, not at every poll. `poll` only returns the outcome: the
//!   caller logs it and turns a [`ReloadOutcome::Refused`] into the metric and the Kubernetes
//!   event. (`load` logs the warnings of the initial file itself, since it returns none.)
//! * With no path the embedded default (§1.8) is used. With a path, the file must be valid at
//!   start-up: Volcano would silently fall back to its default, which hides a broken ConfigMap
//!   until someone wonders why the policy does not apply.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::anyhow;
use engine::conf::{DEFAULT_SCHEDULER_CONF, KnownNames, Parsed, SchedulerConf, parse};
use tracing::{info, warn};

/// Where the configuration comes from and the one in force.
#[derive(Debug)]
pub struct ConfSource {
    current: Arc<SchedulerConf>,
    /// `None` when the embedded default is used: there is nothing to reload.
    file: Option<WatchedFile>,
}

#[derive(Debug)]
struct WatchedFile {
    path: PathBuf,
    /// What the last read produced; a poll that reads the same thing again reports nothing.
    last_read: ReadResult,
}

#[derive(Debug, PartialEq, Eq)]
enum ReadResult {
    Content(u64),
    Unreadable(String),
}

/// What a [`ConfSource::poll`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// The file reads as it did at the last poll (or there is no file).
    Unchanged,
    /// The new content is in force from the next session; `warnings` are its non-fatal problems
    /// (unknown keys and the like), each starting with a field path.
    Applied { warnings: Vec<String> },
    /// The new content cannot be used; the previous configuration stays in force. `error` reads
    /// `<file>: <field path>: <message>`.
    Refused { error: String },
}

impl ConfSource {
    /// No path → the embedded default ([`DEFAULT_SCHEDULER_CONF`]). With a path, the file must
    /// parse: the error reads `<path>: <field path>: <message>` and the daemon exits with it.
    pub fn load(path: Option<PathBuf>, known: &KnownNames<'_>) -> anyhow::Result<ConfSource> {
        let Some(path) = path else {
            let parsed = parse(DEFAULT_SCHEDULER_CONF, known)
                .map_err(|e| anyhow!("the embedded default configuration: {e}"))?;
            log_warnings(Path::new("<embedded default>"), &parsed.warnings);
            return Ok(ConfSource {
                current: Arc::new(parsed.conf),
                file: None,
            });
        };
        let bytes = std::fs::read(&path)
            .map_err(|e| anyhow!("{}: cannot read the file: {e}", path.display()))?;
        let parsed = parse_bytes(&bytes, known)
            .map_err(|message| anyhow!("{}: {message}", path.display()))?;
        log_warnings(&path, &parsed.warnings);
        info!(path = %path.display(), actions = ?parsed.conf.actions, "loaded the scheduler configuration");
        Ok(ConfSource {
            current: Arc::new(parsed.conf),
            file: Some(WatchedFile {
                path,
                last_read: ReadResult::Content(content_hash(&bytes)),
            }),
        })
    }

    /// The configuration in force. A session should take it once, at its start.
    pub fn current(&self) -> Arc<SchedulerConf> {
        Arc::clone(&self.current)
    }

    /// The file being watched, if any.
    pub fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|f| f.path.as_path())
    }

    /// Re-reads the file if it changed (content hash; follows symlinks, so the ConfigMap `..data`
    /// symlink swap is seen) and returns what happened; an invalid file leaves
    /// [`current`](Self::current) unchanged. Logs nothing: reporting is the caller's.
    pub fn poll(&mut self, known: &KnownNames<'_>) -> ReloadOutcome {
        let Some(file) = &mut self.file else {
            return ReloadOutcome::Unchanged;
        };
        let read = std::fs::read(&file.path);
        let seen = match &read {
            Ok(bytes) => ReadResult::Content(content_hash(bytes)),
            Err(e) => ReadResult::Unreadable(e.to_string()),
        };
        if seen == file.last_read {
            return ReloadOutcome::Unchanged;
        }
        file.last_read = seen;

        let parsed = match read {
            Ok(bytes) => parse_bytes(&bytes, known),
            Err(e) => Err(format!("cannot read the file: {e}")),
        };
        match parsed {
            Ok(Parsed { conf, warnings }) => {
                self.current = Arc::new(conf);
                ReloadOutcome::Applied { warnings }
            }
            Err(message) => ReloadOutcome::Refused {
                error: format!("{}: {message}", file.path.display()),
            },
        }
    }
}

/// Trims surrounding whitespace as Volcano does (§1.1) and parses; the error is
/// `<field path>: <message>`.
fn parse_bytes(bytes: &[u8], known: &KnownNames<'_>) -> Result<Parsed, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 text: {e}"))?;
    parse(text.trim(), known).map_err(|e| e.to_string())
}

/// A fixed-key hash: equal content gives equal hashes for the life of the process.
fn content_hash(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

fn log_warnings(path: &Path, warnings: &[String]) {
    for warning in warnings {
        warn!(path = %path.display(), "scheduler configuration: {warning}");
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    const KNOWN: KnownNames<'static> = KnownNames {
        actions: &["enqueue", "allocate", "backfill"],
        plugins: &[
            "priority",
            "gang",
            "conformance",
            "overcommit",
            "drf",
            "predicates",
            "proportion",
            "nodeorder",
            "binpack",
        ],
        strict: true,
        check_arguments: None,
    };

    const V1: &str = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n";
    const V2: &str = "actions: \"allocate, backfill\"\ntiers:\n- plugins:\n  - name: priority\n  - name: binpack\n";
    const INVALID: &str = "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: drf\n    enableJobOrder: maybe\n";

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!(
                "volcano-rs-conf-watch-{}-{name}-{n}",
                std::process::id()
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn write(&self, name: &str, text: &str) -> PathBuf {
            let path = self.0.join(name);
            fs::write(&path, text).unwrap();
            path
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn no_path_uses_the_embedded_default_and_never_reloads() {
        let mut source = ConfSource::load(None, &KNOWN).unwrap();
        assert_eq!(*source.current(), SchedulerConf::embedded_default());
        assert_eq!(source.path(), None);
        assert_eq!(source.poll(&KNOWN), ReloadOutcome::Unchanged);
    }

    #[test]
    fn the_embedded_default_needs_its_plugins() {
        let known = KnownNames {
            actions: KNOWN.actions,
            plugins: &["priority", "gang", "conformance"],
            strict: true,
            check_arguments: None,
        };
        let err = ConfSource::load(None, &known).unwrap_err().to_string();
        assert!(
            err.starts_with("the embedded default configuration: tiers[1]"),
            "{err}"
        );
    }

    #[test]
    fn start_up_failure_names_the_file_and_the_field() {
        let dir = TempDir::new("startup");
        let path = dir.write("scheduler.conf", INVALID);
        let err = ConfSource::load(Some(path.clone()), &KNOWN)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "{}: tiers[0].plugins[1].enableJobOrder: expected a boolean, found \"maybe\"",
                path.display()
            )
        );
    }

    #[test]
    fn start_up_failure_for_a_missing_file() {
        let dir = TempDir::new("missing");
        let path = dir.0.join("absent.conf");
        let err = ConfSource::load(Some(path.clone()), &KNOWN)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("{}: cannot read the file: ", path.display())),
            "{err}"
        );
    }

    #[test]
    fn start_up_failure_for_an_unknown_plugin() {
        let dir = TempDir::new("unknown");
        let path = dir.write(
            "scheduler.conf",
            "actions: allocate\ntiers:\n- plugins:\n  - name: gangg\n",
        );
        let err = ConfSource::load(Some(path.clone()), &KNOWN)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("{}: tiers[0].plugins[0].name: ", path.display())),
            "{err}"
        );
    }

    #[test]
    fn a_valid_change_applies_once() {
        let dir = TempDir::new("valid");
        let path = dir.write("scheduler.conf", V1);
        let mut source = ConfSource::load(Some(path.clone()), &KNOWN).unwrap();
        assert_eq!(source.current().actions, ["enqueue", "allocate"]);
        assert_eq!(source.path(), Some(path.as_path()));
        assert_eq!(source.poll(&KNOWN), ReloadOutcome::Unchanged);

        let running_session = source.current();
        fs::write(&path, V2).unwrap();
        assert_eq!(
            source.poll(&KNOWN),
            ReloadOutcome::Applied { warnings: vec![] }
        );
        assert_eq!(source.current().actions, ["allocate", "backfill"]);
        assert_eq!(
            source.current().plugin_names().collect::<Vec<_>>(),
            ["priority", "binpack"]
        );
        // A session that started before the change keeps its configuration.
        assert_eq!(running_session.actions, ["enqueue", "allocate"]);
        assert_eq!(source.poll(&KNOWN), ReloadOutcome::Unchanged);
    }

    #[test]
    fn an_applied_change_reports_its_warnings() {
        let dir = TempDir::new("warnings");
        let path = dir.write("scheduler.conf", V1);
        let mut source = ConfSource::load(Some(path.clone()), &KNOWN).unwrap();
        fs::write(
            &path,
            "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enablePreemtable: false\n",
        )
        .unwrap();
        let ReloadOutcome::Applied { warnings } = source.poll(&KNOWN) else {
            panic!("a file with an unknown key is still applied");
        };
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with("tiers[0].plugins[0]: unknown key \"enablePreemtable\""),
            "{warnings:?}"
        );
        assert_eq!(source.current().actions, ["allocate"]);
    }

    #[test]
    fn an_invalid_change_is_refused_once_and_the_old_configuration_stays() {
        let dir = TempDir::new("invalid");
        let path = dir.write("scheduler.conf", V1);
        let mut source = ConfSource::load(Some(path.clone()), &KNOWN).unwrap();
        let before = source.current();

        fs::write(&path, INVALID).unwrap();
        assert_eq!(
            source.poll(&KNOWN),
            ReloadOutcome::Refused {
                error: format!(
                    "{}: tiers[0].plugins[1].enableJobOrder: expected a boolean, found \"maybe\"",
                    path.display()
                )
            }
        );
        assert!(Arc::ptr_eq(&before, &source.current()));
        // The same broken content is not reported again.
        assert_eq!(source.poll(&KNOWN), ReloadOutcome::Unchanged);
        assert!(Arc::ptr_eq(&before, &source.current()));

        // Fixing the file applies it.
        fs::write(&path, V2).unwrap();
        assert!(matches!(source.poll(&KNOWN), ReloadOutcome::Applied { .. }));
        assert_eq!(source.current().actions, ["allocate", "backfill"]);
    }

    #[test]
    fn an_empty_or_non_utf8_file_is_refused() {
        let dir = TempDir::new("empty");
        let path = dir.write("scheduler.conf", V1);
        let mut source = ConfSource::load(Some(path.clone()), &KNOWN).unwrap();

        fs::write(&path, "  \n").unwrap();
        let ReloadOutcome::Refused { error } = source.poll(&KNOWN) else {
            panic!("an empty file is refused");
        };
        assert!(
            error.starts_with(&format!("{}: actions: missing", path.display())),
            "{error}"
        );

        fs::write(&path, b"actions: \xff\n").unwrap();
        let ReloadOutcome::Refused { error } = source.poll(&KNOWN) else {
            panic!("a non-UTF-8 file is refused");
        };
        assert!(error.contains("not UTF-8 text"), "{error}");
        assert_eq!(source.current().actions, ["enqueue", "allocate"]);
    }

    #[test]
    fn a_vanished_file_is_refused_once_and_its_return_applies() {
        let dir = TempDir::new("vanished");
        let path = dir.write("scheduler.conf", V1);
        let mut source = ConfSource::load(Some(path.clone()), &KNOWN).unwrap();

        fs::remove_file(&path).unwrap();
        let ReloadOutcome::Refused { error } = source.poll(&KNOWN) else {
            panic!("a missing file is refused");
        };
        assert!(
            error.starts_with(&format!("{}: cannot read the file: ", path.display())),
            "{error}"
        );
        assert_eq!(source.poll(&KNOWN), ReloadOutcome::Unchanged);
        assert_eq!(source.current().actions, ["enqueue", "allocate"]);

        fs::write(&path, V1).unwrap();
        assert!(matches!(source.poll(&KNOWN), ReloadOutcome::Applied { .. }));
    }

    /// The kubelet's ConfigMap volume layout: `<key> → ..data/<key>`, `..data → <timestamped
    /// dir>`; an update writes a new directory and renames a new `..data` symlink over the old.
    #[cfg(unix)]
    #[test]
    fn a_config_map_symlink_swap_is_detected() {
        use std::os::unix::fs::symlink;

        let dir = TempDir::new("configmap");
        let root = &dir.0;
        fs::create_dir(root.join("..2024_01_01_00_00_00.1")).unwrap();
        fs::write(root.join("..2024_01_01_00_00_00.1/scheduler.conf"), V1).unwrap();
        symlink("..2024_01_01_00_00_00.1", root.join("..data")).unwrap();
        symlink("..data/scheduler.conf", root.join("scheduler.conf")).unwrap();

        let path = root.join("scheduler.conf");
        let mut source = ConfSource::load(Some(path), &KNOWN).unwrap();
        assert_eq!(source.current().actions, ["enqueue", "allocate"]);
        assert_eq!(source.poll(&KNOWN), ReloadOutcome::Unchanged);

        fs::create_dir(root.join("..2024_01_02_00_00_00.2")).unwrap();
        fs::write(root.join("..2024_01_02_00_00_00.2/scheduler.conf"), V2).unwrap();
        symlink("..2024_01_02_00_00_00.2", root.join("..data_tmp")).unwrap();
        fs::rename(root.join("..data_tmp"), root.join("..data")).unwrap();
        fs::remove_dir_all(root.join("..2024_01_01_00_00_00.1")).unwrap();

        assert!(matches!(source.poll(&KNOWN), ReloadOutcome::Applied { .. }));
        assert_eq!(source.current().actions, ["allocate", "backfill"]);
        assert_eq!(source.poll(&KNOWN), ReloadOutcome::Unchanged);
    }
}
