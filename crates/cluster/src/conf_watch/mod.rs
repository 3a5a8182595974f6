//! The scheduler configuration from `--scheduler-conf`, with hot reload (spec `framework.md`
//! §1.1 and §1.9).
//!
//! Volcano reloads on file-system events in the file's directory and keeps the previous policy
//! when the new one is invalid. volcano-rs keeps that outcome with a simpler mechanism and a
//! stricter start:
//!
//! * A thread owned by the [`ConfSource`] looks at the file every
//!   [`check_interval`](ReloadLimits::check_interval) and compares a hash of its content,
//!   following symlinks, so the atomic `..data` symlink swap by which the kubelet updates a
//!   mounted ConfigMap is seen like any edit, and no watcher can miss an event. The scheduling
//!   loop never reads or parses: [`ConfSource::poll`] only takes what the thread accepted and
//!   the outcomes to report, so a slow, huge or blocking file cannot delay a session (nor keep
//!   a stalled leader renewing its Lease). A change applies from the next session; a running
//!   session keeps the configuration it started with (it holds its own `Arc`).
//! * Each look runs under [`ReloadLimits`]: only a regular file is opened (a FIFO would block
//!   the reader forever), at most `max_bytes` are read, the nesting depth is checked by a linear
//!   scan before the YAML parser runs (its time grows with the cube of the depth), and a read
//!   and parse still running after `timeout` is abandoned and refused.
//! * An invalid or unreadable new version is refused and the configuration in force stays. Each
//!   distinct problem is reported once, not at every look. `poll` only returns the outcomes:
//!   the caller logs them and turns a [`ReloadOutcome::Refused`] into the metric and the
//!   Kubernetes event. (`load` logs the warnings of the initial file itself.) Outcomes wait for
//!   the next poll; a caller that does not poll (a standby replica) finds the newest
//!   configuration and the last few outcomes when it does.
//! * With no path the embedded default (§1.8) is used. With a path, the file must be valid at
//!   start-up, under the same limits: Volcano would silently fall back to its default, which
//!   hides a broken ConfigMap until someone wonders why the policy does not apply.

mod read;

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use engine::conf::{DEFAULT_SCHEDULER_CONF, KnownNames, Parsed, SchedulerConf, parse};
use tracing::{info, warn};

/// Stack for the thread that parses a configuration (see where it is spawned).
const PARSE_STACK_BYTES: usize = 16 << 20;

/// Bounds on one look at the file; [`Default`] gives the daemon's.
#[derive(Clone, Debug)]
pub struct ReloadLimits {
    /// A larger file is refused without being parsed; a file still growing costs at most this.
    pub max_bytes: u64,
    /// Nesting levels (block indentation and flow brackets), checked before parsing.
    pub max_depth: usize,
    /// Reading and parsing together; past it the attempt is abandoned and refused.
    pub timeout: Duration,
    /// Time between two looks at the file.
    pub check_interval: Duration,
}

impl Default for ReloadLimits {
    fn default() -> Self {
        ReloadLimits {
            max_bytes: 1 << 20,
            max_depth: engine::conf::MAX_DEPTH,
            timeout: Duration::from_secs(5),
            check_interval: Duration::from_secs(1),
        }
    }
}

/// Attempts past their timeout that may still run; while this many do, no new one starts (a
/// file that hangs every read must not pile up threads).
const MAX_ABANDONED: usize = 2;

/// Outcomes kept for a caller that does not poll (a standby replica); older ones are dropped.
const MAX_PENDING_OUTCOMES: usize = 32;

/// Where the configuration comes from and the one in force.
#[derive(Debug)]
pub struct ConfSource {
    current: Arc<SchedulerConf>,
    /// `None` when the embedded default is used: there is nothing to reload.
    path: Option<PathBuf>,
    watcher: Option<WatcherLink>,
}

/// The source's end of the background thread.
#[derive(Debug)]
struct WatcherLink {
    inbox: Arc<Mutex<Inbox>>,
    /// Looks completed so far.
    looks: Arc<AtomicU64>,
    /// Never sent on: dropping it with the source ends the thread.
    _stop: mpsc::Sender<()>,
}

/// What the thread accepted and has to report, waiting for the next [`ConfSource::poll`].
#[derive(Debug, Default)]
struct Inbox {
    latest: Option<Arc<SchedulerConf>>,
    outcomes: VecDeque<ReloadOutcome>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum ReadResult {
    /// Nothing read yet.
    Nothing,
    Content(u64),
    Unreadable(String),
}

/// A change the background thread found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// The new content is in force from the next session; `warnings` are its non-fatal problems
    /// (unknown keys and the like), each starting with a field path.
    Applied { warnings: Vec<String> },
    /// The new content cannot be used; the previous configuration stays in force. `error` reads
    /// `<file>: <field path or limit>: <message>`.
    Refused { error: String },
}

impl ConfSource {
    /// No path → the embedded default ([`DEFAULT_SCHEDULER_CONF`]). With a path, the file must
    /// be read and parsed within the default [`ReloadLimits`]: the error reads
    /// `<path>: <field path>: <message>` and the daemon exits with it.
    pub fn load(path: Option<PathBuf>, known: &KnownNames<'_>) -> anyhow::Result<ConfSource> {
        ConfSource::load_with(path, known, ReloadLimits::default())
    }

    /// [`load`](Self::load) with other limits. With a path, starts the thread that watches the
    /// file; it ends when the source is dropped.
    pub fn load_with(
        path: Option<PathBuf>,
        known: &KnownNames<'_>,
        limits: ReloadLimits,
    ) -> anyhow::Result<ConfSource> {
        let Some(path) = path else {
            let parsed = parse(DEFAULT_SCHEDULER_CONF, known)
                .map_err(|e| anyhow!("the embedded default configuration: {e}"))?;
            log_warnings(Path::new("<embedded default>"), &parsed.warnings);
            return Ok(ConfSource {
                current: Arc::new(parsed.conf),
                path: None,
                watcher: None,
            });
        };
        let known = Arc::new(OwnedKnown::from(known));
        // Synchronous: nothing runs before the configuration is known. A thread left behind by
        // a timeout ends with the process, which exits with the error.
        let first = look(&path, &limits, &known, &ReadResult::Nothing);
        let parsed = match first.result {
            Some(Ok(parsed)) => parsed,
            Some(Err(message)) => return Err(anyhow!("{}: {message}", path.display())),
            None => return Err(anyhow!("{}: nothing was read", path.display())),
        };
        log_warnings(&path, &parsed.warnings);
        info!(path = %path.display(), actions = ?parsed.conf.actions, "loaded the scheduler configuration");

        let inbox = Arc::new(Mutex::new(Inbox::default()));
        let looks = Arc::new(AtomicU64::new(0));
        let (stop_tx, stop_rx) = mpsc::channel();
        let watcher = Watcher {
            path: path.clone(),
            known,
            limits,
            last_read: first.seen,
            abandoned: first.abandoned.into_iter().collect(),
            inbox: Arc::clone(&inbox),
            looks: Arc::clone(&looks),
        };
        std::thread::Builder::new()
            .name("conf-watch".into())
            .spawn(move || watcher.run(&stop_rx))
            .map_err(|e| anyhow!("cannot start the thread watching {}: {e}", path.display()))?;
        Ok(ConfSource {
            current: Arc::new(parsed.conf),
            path: Some(path),
            watcher: Some(WatcherLink {
                inbox,
                looks,
                _stop: stop_tx,
            }),
        })
    }

    /// A configuration already parsed, never reloaded (the simulator's, and tests').
    pub fn fixed(conf: SchedulerConf) -> ConfSource {
        ConfSource {
            current: Arc::new(conf),
            path: None,
            watcher: None,
        }
    }

    /// The configuration in force. A session should take it once, at its start.
    pub fn current(&self) -> Arc<SchedulerConf> {
        Arc::clone(&self.current)
    }

    /// The file being watched, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// How many looks at the file the background thread has completed (0 without a file).
    pub fn looks(&self) -> u64 {
        self.watcher
            .as_ref()
            .map_or(0, |w| w.looks.load(Ordering::Acquire))
    }

    /// Never blocks on the file: takes the newest configuration the background thread accepted
    /// (it is [`current`](Self::current) from now on) and returns the outcomes found since the
    /// last poll, oldest first; empty when nothing changed. Logs nothing: reporting is the
    /// caller's.
    pub fn poll(&mut self) -> Vec<ReloadOutcome> {
        let Some(watcher) = &self.watcher else {
            return Vec::new();
        };
        // The thread holds the lock only to push a finished outcome.
        let mut inbox = watcher.inbox.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(conf) = inbox.latest.take() {
            self.current = conf;
        }
        inbox.outcomes.drain(..).collect()
    }
}

/// [`KnownNames`] that the watching thread can own.
#[derive(Debug)]
struct OwnedKnown {
    actions: Vec<String>,
    plugins: Vec<String>,
    strict: bool,
    check_arguments: Option<engine::conf::ArgumentCheck>,
}

impl From<&KnownNames<'_>> for OwnedKnown {
    fn from(known: &KnownNames<'_>) -> Self {
        OwnedKnown {
            actions: known.actions.iter().map(|s| s.to_string()).collect(),
            plugins: known.plugins.iter().map(|s| s.to_string()).collect(),
            strict: known.strict,
            check_arguments: known.check_arguments,
        }
    }
}

impl OwnedKnown {
    fn parse(&self, bytes: &[u8], max_depth: usize) -> Result<Parsed, String> {
        let actions: Vec<&str> = self.actions.iter().map(String::as_str).collect();
        let plugins: Vec<&str> = self.plugins.iter().map(String::as_str).collect();
        let known = KnownNames {
            actions: &actions,
            plugins: &plugins,
            strict: self.strict,
            check_arguments: self.check_arguments,
        };
        read::parse_bytes(bytes, max_depth, &known)
    }
}

/// The background thread's state.
struct Watcher {
    path: PathBuf,
    known: Arc<OwnedKnown>,
    limits: ReloadLimits,
    /// What the last look read; a look that reads the same thing again reports nothing.
    last_read: ReadResult,
    /// Attempts abandoned at their timeout, possibly still running.
    abandoned: Vec<JoinHandle<()>>,
    inbox: Arc<Mutex<Inbox>>,
    looks: Arc<AtomicU64>,
}

impl Watcher {
    fn run(mut self, stop: &mpsc::Receiver<()>) {
        loop {
            match stop.recv_timeout(self.limits.check_interval) {
                Err(RecvTimeoutError::Timeout) => {}
                // The source was dropped.
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
            if let Some((outcome, conf)) = self.check() {
                let mut inbox = self.inbox.lock().unwrap_or_else(PoisonError::into_inner);
                if conf.is_some() {
                    inbox.latest = conf;
                }
                if inbox.outcomes.len() == MAX_PENDING_OUTCOMES {
                    inbox.outcomes.pop_front();
                }
                inbox.outcomes.push_back(outcome);
            }
            self.looks.fetch_add(1, Ordering::Release);
        }
    }

    /// One look; `None` when the file reads as last time (or a look cannot start yet).
    fn check(&mut self) -> Option<(ReloadOutcome, Option<Arc<SchedulerConf>>)> {
        self.abandoned.retain(|handle| !handle.is_finished());
        if self.abandoned.len() >= MAX_ABANDONED {
            // Their refusal was reported; a new attempt would most likely hang the same way.
            return None;
        }
        let look = look(&self.path, &self.limits, &self.known, &self.last_read);
        self.abandoned.extend(look.abandoned);
        let result = look.result?;
        self.last_read = look.seen;
        Some(match result {
            Ok(Parsed { conf, warnings }) => {
                (ReloadOutcome::Applied { warnings }, Some(Arc::new(conf)))
            }
            Err(message) => (
                ReloadOutcome::Refused {
                    error: format!("{}: {message}", self.path.display()),
                },
                None,
            ),
        })
    }
}

/// One read and parse, run on a thread of its own so that it can be abandoned.
struct Look {
    /// What was read, to compare with the next look.
    seen: ReadResult,
    /// `None` when `seen` equals the previous look's; else the parse, or the problem.
    result: Option<Result<Parsed, String>>,
    /// The attempt's thread, when it was still running at the timeout.
    abandoned: Option<JoinHandle<()>>,
}

/// What the attempt thread reports, in order.
enum Stage {
    Read(ReadResult),
    Parsed(Result<Parsed, String>),
}

/// Reads and (when the content differs from `previous`) parses `path` within `limits`.
fn look(
    path: &Path,
    limits: &ReloadLimits,
    known: &Arc<OwnedKnown>,
    previous: &ReadResult,
) -> Look {
    let deadline = Instant::now() + limits.timeout;
    let (tx, rx) = mpsc::channel();
    let attempt = {
        let (path, known, previous) = (path.to_path_buf(), Arc::clone(known), previous.clone());
        let (max_bytes, max_depth) = (limits.max_bytes, limits.max_depth);
        std::thread::Builder::new()
            .name("conf-read".into())
            // The parser recurses once per nesting level with large frames in debug builds;
            // room to spare beyond the default 2 MiB.
            .stack_size(PARSE_STACK_BYTES)
            .spawn(move || {
                let bytes = read::read_bounded(&path, max_bytes);
                let seen = match &bytes {
                    Ok(bytes) => ReadResult::Content(content_hash(bytes)),
                    Err(message) => ReadResult::Unreadable(message.clone()),
                };
                let unchanged = seen == previous;
                if tx.send(Stage::Read(seen)).is_err() || unchanged {
                    return;
                }
                let result = bytes.and_then(|bytes| known.parse(&bytes, max_depth));
                let _ = tx.send(Stage::Parsed(result));
            })
    };
    let handle = match attempt {
        Ok(handle) => handle,
        Err(e) => {
            let message = format!("cannot start a thread to read the file: {e}");
            return Look {
                seen: ReadResult::Unreadable(message.clone()),
                result: Some(Err(message)),
                abandoned: None,
            };
        }
    };
    let timed_out = format!(
        "reading and parsing took longer than the limit of {:?}; abandoned",
        limits.timeout
    );
    let seen = match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(Stage::Read(seen)) => seen,
        // The thread ended without a word: it panicked.
        Ok(Stage::Parsed(_)) | Err(RecvTimeoutError::Disconnected) => {
            let message = "reading the file failed unexpectedly".to_string();
            return Look {
                seen: ReadResult::Unreadable(message.clone()),
                result: Some(Err(message)),
                abandoned: None,
            };
        }
        Err(RecvTimeoutError::Timeout) => {
            return Look {
                seen: ReadResult::Unreadable(timed_out.clone()),
                result: Some(Err(timed_out)),
                abandoned: Some(handle),
            };
        }
    };
    if seen == *previous {
        return Look {
            seen,
            result: None,
            abandoned: None,
        };
    }
    if let ReadResult::Unreadable(message) = &seen {
        let message = message.clone();
        return Look {
            seen,
            result: Some(Err(message)),
            abandoned: None,
        };
    }
    match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(Stage::Parsed(result)) => Look {
            seen,
            result: Some(result),
            abandoned: None,
        },
        Ok(Stage::Read(_)) | Err(RecvTimeoutError::Disconnected) => Look {
            seen,
            result: Some(Err("parsing the file failed unexpectedly".to_string())),
            abandoned: None,
        },
        // `seen` keeps the content's hash: the same content is not parsed again.
        Err(RecvTimeoutError::Timeout) => Look {
            seen,
            result: Some(Err(timed_out)),
            abandoned: Some(handle),
        },
    }
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
mod tests;
