use std::fs;
use std::sync::atomic::AtomicUsize;

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
const V2: &str =
    "actions: \"allocate, backfill\"\ntiers:\n- plugins:\n  - name: priority\n  - name: binpack\n";
const INVALID: &str = "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: drf\n    enableJobOrder: maybe\n";

/// How long a test waits for the watching thread before failing.
const PATIENCE: Duration = Duration::from_secs(10);

/// The daemon's limits, looking every few milliseconds.
fn fast() -> ReloadLimits {
    ReloadLimits {
        check_interval: Duration::from_millis(5),
        ..ReloadLimits::default()
    }
}

fn load(path: &Path) -> anyhow::Result<ConfSource> {
    ConfSource::load_with(Some(path.to_path_buf()), &KNOWN, fast())
}

/// Waits for the next outcome (there must be exactly one).
fn next(source: &mut ConfSource) -> ReloadOutcome {
    let start = Instant::now();
    loop {
        let mut outcomes = source.poll();
        if !outcomes.is_empty() {
            assert_eq!(outcomes.len(), 1, "one change, one outcome: {outcomes:?}");
            return outcomes.remove(0);
        }
        assert!(start.elapsed() < PATIENCE, "no reload outcome");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Lets the thread finish two more looks (so at least one starts after the caller's last
/// change) and returns what they found.
fn settle(source: &mut ConfSource) -> Vec<ReloadOutcome> {
    let target = source.looks() + 2;
    let start = Instant::now();
    while source.looks() < target {
        assert!(start.elapsed() < PATIENCE, "the watching thread is stuck");
        std::thread::sleep(Duration::from_millis(2));
    }
    source.poll()
}

fn refusal(source: &mut ConfSource) -> String {
    match next(source) {
        ReloadOutcome::Refused { error } => error,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

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

    /// Writes by renaming a complete file into place, so the watching thread never sees a
    /// half-written one.
    fn write(&self, name: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.join(name);
        let tmp = self.0.join(format!(".{name}.tmp"));
        fs::write(&tmp, content).unwrap();
        fs::rename(&tmp, &path).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `[` nested `depth` times around a value, as the `actions` of a configuration.
fn nested_brackets(depth: usize) -> String {
    format!(
        "actions: {}allocate{}\ntiers:\n- plugins:\n  - name: gang\n",
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

#[cfg(unix)]
fn mkfifo(path: &Path) -> bool {
    match std::process::Command::new("mkfifo").arg(path).status() {
        Ok(status) if status.success() => true,
        other => {
            eprintln!("skipped: mkfifo is not available ({other:?})");
            false
        }
    }
}

#[test]
fn no_path_uses_the_embedded_default_and_never_reloads() {
    let mut source = ConfSource::load(None, &KNOWN).unwrap();
    assert_eq!(*source.current(), SchedulerConf::embedded_default());
    assert_eq!(source.path(), None);
    assert_eq!(source.poll(), []);
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
    let mut source = load(&path).unwrap();
    assert_eq!(source.current().actions, ["enqueue", "allocate"]);
    assert_eq!(source.path(), Some(path.as_path()));
    assert_eq!(settle(&mut source), []);

    let running_session = source.current();
    dir.write("scheduler.conf", V2);
    assert_eq!(
        next(&mut source),
        ReloadOutcome::Applied { warnings: vec![] }
    );
    assert_eq!(source.current().actions, ["allocate", "backfill"]);
    assert_eq!(
        source.current().plugin_names().collect::<Vec<_>>(),
        ["priority", "binpack"]
    );
    // A session that started before the change keeps its configuration.
    assert_eq!(running_session.actions, ["enqueue", "allocate"]);
    assert_eq!(settle(&mut source), []);
}

#[test]
fn an_applied_change_reports_its_warnings() {
    let dir = TempDir::new("warnings");
    let path = dir.write("scheduler.conf", V1);
    let mut source = load(&path).unwrap();
    dir.write(
        "scheduler.conf",
        "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enablePreemtable: false\n",
    );
    let ReloadOutcome::Applied { warnings } = next(&mut source) else {
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
    let mut source = load(&path).unwrap();
    let before = source.current();

    dir.write("scheduler.conf", INVALID);
    assert_eq!(
        next(&mut source),
        ReloadOutcome::Refused {
            error: format!(
                "{}: tiers[0].plugins[1].enableJobOrder: expected a boolean, found \"maybe\"",
                path.display()
            )
        }
    );
    assert!(Arc::ptr_eq(&before, &source.current()));
    // The same broken content is not reported again.
    assert_eq!(settle(&mut source), []);
    assert!(Arc::ptr_eq(&before, &source.current()));

    // Fixing the file applies it.
    dir.write("scheduler.conf", V2);
    assert!(matches!(next(&mut source), ReloadOutcome::Applied { .. }));
    assert_eq!(source.current().actions, ["allocate", "backfill"]);
}

#[test]
fn an_empty_or_non_utf8_file_is_refused() {
    let dir = TempDir::new("empty");
    let path = dir.write("scheduler.conf", V1);
    let mut source = load(&path).unwrap();

    dir.write("scheduler.conf", "  \n");
    let error = refusal(&mut source);
    assert!(
        error.starts_with(&format!("{}: actions: missing", path.display())),
        "{error}"
    );

    dir.write("scheduler.conf", b"actions: \xff\n");
    let error = refusal(&mut source);
    assert!(error.contains("not UTF-8 text"), "{error}");
    assert_eq!(source.current().actions, ["enqueue", "allocate"]);
}

#[test]
fn a_vanished_file_is_refused_once_and_its_return_applies() {
    let dir = TempDir::new("vanished");
    let path = dir.write("scheduler.conf", V1);
    let mut source = load(&path).unwrap();

    fs::remove_file(&path).unwrap();
    let error = refusal(&mut source);
    assert!(
        error.starts_with(&format!("{}: cannot read the file: ", path.display())),
        "{error}"
    );
    assert_eq!(settle(&mut source), []);
    assert_eq!(source.current().actions, ["enqueue", "allocate"]);

    dir.write("scheduler.conf", V1);
    assert!(matches!(next(&mut source), ReloadOutcome::Applied { .. }));
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
    let mut source = load(&path).unwrap();
    assert_eq!(source.current().actions, ["enqueue", "allocate"]);
    assert_eq!(settle(&mut source), []);

    fs::create_dir(root.join("..2024_01_02_00_00_00.2")).unwrap();
    fs::write(root.join("..2024_01_02_00_00_00.2/scheduler.conf"), V2).unwrap();
    symlink("..2024_01_02_00_00_00.2", root.join("..data_tmp")).unwrap();
    fs::rename(root.join("..data_tmp"), root.join("..data")).unwrap();
    fs::remove_dir_all(root.join("..2024_01_01_00_00_00.1")).unwrap();

    assert!(matches!(next(&mut source), ReloadOutcome::Applied { .. }));
    assert_eq!(source.current().actions, ["allocate", "backfill"]);
    assert_eq!(settle(&mut source), []);
}

/// 200 KB of `[`: the YAML parser needs close to a minute for it; the depth scan refuses it
/// before parsing, at start-up and on reload.
#[test]
fn a_nested_bracket_bomb_is_refused_fast() {
    let dir = TempDir::new("brackets");
    let bomb = "[".repeat(200_000);
    let path = dir.write("bomb.conf", &bomb);
    let start = Instant::now();
    let err = load(&path).unwrap_err().to_string();
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(
        err,
        format!(
            "{}: line 1: nested deeper than the limit of 32 levels; the file is not parsed",
            path.display()
        )
    );

    let path = dir.write("scheduler.conf", V1);
    let mut source = load(&path).unwrap();
    let before = source.current();
    let start = Instant::now();
    dir.write("scheduler.conf", &bomb);
    let error = refusal(&mut source);
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
    assert!(error.starts_with(&format!("{}: line 1: nested deeper", path.display())));
    assert!(Arc::ptr_eq(&before, &source.current()));

    // Just within the limit is parsed (and refused by the parser: actions is not a string);
    // one more level is not parsed.
    dir.write("scheduler.conf", nested_brackets(31));
    assert!(refusal(&mut source).contains(": actions: "));
    dir.write("scheduler.conf", nested_brackets(32));
    assert!(refusal(&mut source).contains("line 1: nested deeper than the limit of 32"));
}

/// Deep block indentation counts like brackets.
#[test]
fn deep_indentation_is_refused() {
    let dir = TempDir::new("indent");
    let mut text = String::from("actions: allocate\nconfigurations:\n");
    for level in 0..100 {
        text.push_str(&format!("{}a:\n", " ".repeat(level + 1)));
    }
    let path = dir.write("scheduler.conf", &text);
    let err = load(&path).unwrap_err().to_string();
    assert!(
        err.ends_with("nested deeper than the limit of 32 levels; the file is not parsed"),
        "{err}"
    );
}

#[test]
fn an_oversized_file_is_refused() {
    let dir = TempDir::new("oversize");
    let path = dir.write("scheduler.conf", V1);
    let mut source = load(&path).unwrap();
    let before = source.current();
    // Valid YAML, but one byte over the limit.
    let padding = "#".repeat((1 << 20) - V1.len());
    let big = format!("{V1}{padding}\n");
    assert_eq!(big.len(), (1 << 20) + 1);
    dir.write("scheduler.conf", &big);
    assert_eq!(
        refusal(&mut source),
        format!(
            "{}: larger than the limit of 1048576 bytes; the file is not parsed",
            path.display()
        )
    );
    assert!(Arc::ptr_eq(&before, &source.current()));
    // Exactly at the limit is read.
    dir.write("scheduler.conf", &big[..big.len() - 1]);
    assert!(matches!(next(&mut source), ReloadOutcome::Applied { .. }));

    let path = dir.write("big.conf", &big);
    let err = load(&path).unwrap_err().to_string();
    assert!(
        err.contains("larger than the limit of 1048576 bytes"),
        "{err}"
    );
}

#[test]
fn a_leading_byte_order_mark_is_accepted() {
    let dir = TempDir::new("bom");
    let path = dir.write("scheduler.conf", format!("\u{feff}{V1}"));
    let mut source = load(&path).unwrap();
    assert_eq!(source.current().actions, ["enqueue", "allocate"]);
    dir.write("scheduler.conf", format!("\u{feff}{V2}"));
    assert!(matches!(next(&mut source), ReloadOutcome::Applied { .. }));
    assert_eq!(source.current().actions, ["allocate", "backfill"]);
}

/// A FIFO would block a reader until someone writes to it: it is refused from its metadata,
/// at start-up and on reload, and through a symlink.
#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_waiting() {
    let dir = TempDir::new("fifo");
    let fifo = dir.0.join("fifo.conf");
    if !mkfifo(&fifo) {
        return;
    }
    let start = Instant::now();
    let err = load(&fifo).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}: not a regular file (a FIFO); only a regular file (or a symlink to one) is read",
            fifo.display()
        )
    );

    let path = dir.write("scheduler.conf", V1);
    let mut source = load(&path).unwrap();
    fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&fifo, &path).unwrap();
    let error = refusal(&mut source);
    assert!(error.contains("not a regular file (a FIFO)"), "{error}");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(source.current().actions, ["enqueue", "allocate"]);
    assert_eq!(settle(&mut source), []);
}

#[test]
fn a_directory_is_refused() {
    let dir = TempDir::new("directory");
    let err = load(&dir.0).unwrap_err().to_string();
    assert!(err.contains("not a regular file (a directory)"), "{err}");
}

/// A parse past the timeout is abandoned and refused once; the loop's side never waits for it,
/// and a fixed file applies while the abandoned parse still runs.
#[test]
fn a_parse_past_the_timeout_is_abandoned() {
    let dir = TempDir::new("timeout");
    let path = dir.write("scheduler.conf", V1);
    // A list of 200,000 names (600 KB, within the size and node limits) takes the parser
    // seconds in a debug build; reading it takes far less than the limit even on a busy
    // machine, so the content is known and not parsed again.
    let limits = ReloadLimits {
        timeout: Duration::from_millis(500),
        ..fast()
    };
    let mut source = ConfSource::load_with(Some(path.clone()), &KNOWN, limits).unwrap();
    dir.write(
        "scheduler.conf",
        format!("actions: [{}]\n", "x, ".repeat(200_000)),
    );
    let error = refusal(&mut source);
    assert_eq!(
        error,
        format!(
            "{}: reading and parsing took longer than the limit of 500ms; abandoned",
            path.display()
        )
    );
    assert_eq!(source.current().actions, ["enqueue", "allocate"]);
    let start = Instant::now();
    assert_eq!(source.poll(), []);
    assert!(start.elapsed() < Duration::from_millis(50));
    // The same content is not parsed again.
    assert_eq!(settle(&mut source), []);
    dir.write("scheduler.conf", V2);
    assert!(matches!(next(&mut source), ReloadOutcome::Applied { .. }));
    assert_eq!(source.current().actions, ["allocate", "backfill"]);
}

/// Every shipped configuration passes the depth scan with room to spare, and what YAML does
/// not read as structure (quotes, comments, block scalars, brackets inside words) is not
/// counted.
#[test]
fn the_depth_scan_counts_structure_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config");
    let mut files = 0;
    for dir in [root.clone(), root.join("seed-examples")] {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "conf") {
                let text = fs::read_to_string(&path).unwrap();
                assert_eq!(read::first_line_deeper_than(&text, 10), None, "{path:?}");
                files += 1;
            }
        }
    }
    assert!(files > 10, "{files}");

    let deep = |text: &str, limit| read::first_line_deeper_than(text, limit);
    assert_eq!(deep("a: [[[x]]]\n", 4), None);
    assert_eq!(deep("a: [[[x]]]\n", 3), Some(1));
    assert_eq!(deep("a: \"[[[[\"\nb: '[[''[['\n", 1), None);
    assert_eq!(deep("a: x # [[[[\n# {{{{\n", 1), None);
    assert_eq!(deep("a: b[[[[c\n", 1), None);
    assert_eq!(deep("a: |\n  [[[[\n   {{{{\nb: 1\n", 1), None);
    assert_eq!(deep("a: |\n  [[[[\nb: [[\n", 2), Some(3));
    // A quoted scalar spanning lines, then a real bracket.
    assert_eq!(deep("a: \"x\n  [[[[ y\"\nb: [[\n", 2), Some(3));
    assert_eq!(deep("- - - - x\n", 4), Some(1));
    assert_eq!(deep("- - - x\n", 4), None);
}
