//! The daemon under test: started, watched and stopped as a process.

use super::*;

/// A port free on 127.0.0.1 right now (it may be taken again before it is used).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// The default flags, minus those `extra` sets itself, then `extra`.
pub(super) fn daemon_args(defaults: &[(&str, String)], extra: &[String]) -> Vec<String> {
    let mut args = Vec::new();
    for (flag, value) in defaults {
        let overridden = extra
            .iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")));
        if !overridden {
            args.push(format!("{flag}={value}"));
        }
    }
    args.extend(extra.iter().cloned());
    args
}

/// The value of `flag` in an argument list (`--flag=v` or `--flag v`), the last one winning.
pub(super) fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let prefix = format!("{flag}=");
    let mut found = None;
    for (i, a) in args.iter().enumerate() {
        if let Some(v) = a.strip_prefix(&prefix) {
            found = Some(v);
        } else if a == flag {
            found = args.get(i + 1).map(String::as_str);
        }
    }
    found
}

/// A listen address as the daemon reads it (`:8080` means every interface).
pub(super) fn connect_address(addr: &str) -> anyhow::Result<SocketAddr> {
    let full = match addr.strip_prefix(':') {
        Some(port) => format!("127.0.0.1:{port}"),
        None => addr.replace("0.0.0.0", "127.0.0.1"),
    };
    full.parse()
        .with_context(|| format!("address {addr:?} is not host:port"))
}

pub(super) enum StartError {
    /// A listen port was taken between choosing and binding it; worth another try.
    PortTaken(anyhow::Error),
    Other(anyhow::Error),
}

/// What runs as the scheduler: `volcano-rs run`, or Volcano's own scheduler for a
/// side-by-side benchmark.
pub(super) struct Program<'a> {
    pub bin: &'a Path,
    /// `run` for volcano-rs; Volcano's scheduler takes its flags alone.
    pub subcommand: Option<&'a str>,
    /// The health path that answers 200 once the scheduler is ready: volcano-rs serves
    /// `/readyz`, Volcano's scheduler only `/healthz`.
    pub ready_path: &'static str,
}

/// A running scheduler: `volcano-rs run`, or Volcano's scheduler in the side-by-side benchmark.
/// Dropping it kills the process (SIGKILL) and reaps it.
pub struct Daemon {
    child: tokio::process::Child,
    pid: u32,
    metrics_addr: SocketAddr,
    healthz_addr: SocketAddr,
    ready_path: &'static str,
    log_path: PathBuf,
}

impl Daemon {
    /// Starts the daemon and waits until its ready path answers 200, or, with
    /// `answering_only`, answers at all (for tests of a daemon that is not meant to become
    /// ready).
    pub(super) async fn start(
        env: &Env,
        program: &Program<'_>,
        args: &[String],
        rust_log: &str,
        log_path: &Path,
        answering_only: bool,
    ) -> Result<Daemon, StartError> {
        let other = StartError::Other;
        let metrics_addr = connect_address(flag_value(args, "--listen-address").unwrap_or(":8080"))
            .map_err(other)?;
        let healthz_addr =
            connect_address(flag_value(args, "--healthz-address").unwrap_or(":11251"))
                .map_err(other)?;
        let log = std::fs::File::create(log_path)
            .with_context(|| format!("creating {}", log_path.display()))
            .map_err(other)?;
        let log_err = log.try_clone().map_err(|e| other(e.into()))?;
        let child = tokio::process::Command::new(program.bin)
            .args(program.subcommand)
            .args(args)
            .env("RUST_LOG", rust_log)
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", program.bin.display()))
            .map_err(other)?;
        let pid = child
            .id()
            .context("the daemon exited at once")
            .map_err(other)?;
        record_pid(&env.log_dir, pid);
        let mut daemon = Daemon {
            child,
            pid,
            metrics_addr,
            healthz_addr,
            ready_path: program.ready_path,
            log_path: log_path.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = daemon.child.try_wait() {
                let tail = log_tail(log_path, 20);
                let error = anyhow!(
                    "daemon exited with {status} before it was ready; end of {}:\n{tail}",
                    log_path.display()
                );
                return Err(if tail.contains("Address already in use") {
                    StartError::PortTaken(error)
                } else {
                    StartError::Other(error)
                });
            }
            if daemon.ready().await
                || (answering_only
                    && http_get(daemon.healthz_addr, program.ready_path)
                        .await
                        .is_ok())
            {
                return Ok(daemon);
            }
            if Instant::now() > deadline {
                return Err(other(anyhow!(
                    "daemon not ready after 60s; end of {}:\n{}",
                    log_path.display(),
                    log_tail(log_path, 20)
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Address of `/metrics`.
    pub fn metrics_addr(&self) -> SocketAddr {
        self.metrics_addr
    }

    pub fn healthz_addr(&self) -> SocketAddr {
        self.healthz_addr
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The daemon's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// GET `/metrics`.
    pub async fn metrics(&self) -> anyhow::Result<String> {
        let (status, body) = http_get(self.metrics_addr, "/metrics").await?;
        if status != 200 {
            bail!("/metrics answered {status}: {body}");
        }
        Ok(body)
    }

    /// True when the ready path (`/readyz` for volcano-rs) on the health address answers 200.
    pub async fn ready(&self) -> bool {
        matches!(
            http_get(self.healthz_addr, self.ready_path).await,
            Ok((200, _))
        )
    }

    /// The value of one sample in Prometheus text: the first line of metric `name` whose labels
    /// include every pair of `labels`.
    pub fn metric_value(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        text.lines()
            .filter_map(parse_sample)
            .find(|s| {
                s.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.iter().any(|(sk, sv)| sk == k && sv == v))
            })
            .map(|s| s.value)
    }

    /// SIGKILL now and reap (restart-safety tests).
    pub fn kill9(&mut self) {
        let _ = self.child.start_kill();
        self.reap_blocking();
    }

    /// SIGTERM, then wait for the exit (at most 30 s; then SIGKILL).
    pub async fn terminate(&mut self) -> anyhow::Result<std::process::ExitStatus> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Ok(status);
        }
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .context("running kill -TERM")?;
        if !sent.success() {
            bail!("kill -TERM {} failed: {sent}", self.pid);
        }
        match tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await {
            Ok(status) => Ok(status?),
            Err(_) => {
                self.kill9();
                bail!("daemon {} did not exit within 30s of SIGTERM", self.pid)
            }
        }
    }

    /// Waits (briefly, synchronously: also used from `drop`) for a killed child to be reaped.
    fn reap_blocking(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.start_kill();
            self.reap_blocking();
        }
    }
}

/// Appends a daemon's pid to `<log_dir>/pids`, so that leftovers of a crashed runner can be
/// found (see [`kill_leftover_daemons`]).
pub(super) fn record_pid(log_dir: &Path, pid: u32) {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_dir.join("pids"));
    if let Ok(mut f) = file {
        let _ = writeln!(f, "{pid}");
    }
}

/// Kills the daemons listed in `<log_dir>/pids` that are still running against `kubeconfig`
/// and whose runner is gone (checked in `/proc`, so a reused pid, a daemon of a runner using
/// another cluster, or one of a runner still at work is left alone). The file keeps only the
/// daemons left running. Returns how many were killed.
pub fn kill_leftover_daemons(log_dir: &Path, kubeconfig: &Path) -> usize {
    let path = log_dir.join("pids");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return 0;
    };
    let mut killed = 0;
    let mut kept = String::new();
    for pid in text.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !is_e2e_daemon(&cmdline, kubeconfig) {
            continue;
        }
        if parent_is_runner(pid) {
            kept.push_str(&format!("{pid}\n"));
            continue;
        }
        let ok = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .is_ok_and(|s| s.success());
        killed += usize::from(ok);
    }
    let _ = if kept.is_empty() {
        std::fs::remove_file(&path)
    } else {
        std::fs::write(&path, kept)
    };
    killed
}

/// True when the parent of `pid` is a live `volcano-rs-e2e` (a runner still using it).
pub(super) fn parent_is_runner(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) state ppid …`; comm may contain spaces and parentheses.
    let Some(ppid) = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(1))
    else {
        return false;
    };
    std::fs::read_to_string(format!("/proc/{ppid}/comm"))
        .is_ok_and(|comm| comm.trim() == "volcano-rs-e2e")
}

/// A `volcano-rs run` (or Volcano's `vc-scheduler`) this harness started against `kubeconfig`:
/// scheduler name `e2e-…`.
pub(super) fn is_e2e_daemon(cmdline: &[u8], kubeconfig: &Path) -> bool {
    let kubeconfig_arg = format!("--kubeconfig={}", kubeconfig.display());
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let program = args.first().copied().unwrap_or_default();
    // volcano-rs runs as `volcano-rs run …`; Volcano's scheduler (the side-by-side benchmark)
    // takes its flags alone.
    let program_ok = (program.ends_with(b"volcano-rs") && args.get(1) == Some(&&b"run"[..]))
        || program.ends_with(b"vc-scheduler");
    program_ok
        && args.iter().any(|a| a.starts_with(b"--scheduler-name=e2e-"))
        && args.contains(&kubeconfig_arg.as_bytes())
}

impl TestCtx {
    /// The flags both schedulers take alike: this test's kubeconfig, scheduler name and node
    /// selector, no leader election, and the metrics and health ports given.
    pub(super) fn scheduler_flags(
        &self,
        (metrics, healthz): (u16, u16),
    ) -> Vec<(&'static str, String)> {
        vec![
            ("--kubeconfig", self.env.kubeconfig.display().to_string()),
            ("--scheduler-name", self.scheduler.clone()),
            (
                "--node-selector",
                format!("{}:{}", self.label.0, self.label.1),
            ),
            ("--leader-elect", "false".to_string()),
            ("--listen-address", format!("127.0.0.1:{metrics}")),
            ("--healthz-address", format!("127.0.0.1:{healthz}")),
        ]
    }

    /// Starts `program` with the flags `flags` makes for a pair of free ports (each unless
    /// `extra_args` gives that flag itself), then `extra_args`. Logs go to
    /// `<log_dir>/<test>[-<n>].log`. A free port found by binding :0 may be taken again before
    /// the scheduler binds it; such a start is retried with new ports.
    pub(super) async fn start_scheduler(
        &self,
        program: &Program<'_>,
        rust_log: &str,
        flags: impl Fn((u16, u16)) -> Vec<(&'static str, String)>,
        extra_args: &[&str],
        answering_only: bool,
    ) -> anyhow::Result<Daemon> {
        let n = self.daemons_started.fetch_add(1, Ordering::SeqCst) + 1;
        let log_path = if n == 1 {
            self.env.log_dir.join(format!("{}.log", self.name))
        } else {
            self.env.log_dir.join(format!("{}-{n}.log", self.name))
        };
        let extra: Vec<String> = extra_args.iter().map(|s| s.to_string()).collect();
        let mut last_error = None;
        for _ in 0..3 {
            let defaults = flags((free_port()?, free_port()?));
            let args = daemon_args(&defaults, &extra);
            match Daemon::start(
                &self.env,
                program,
                &args,
                rust_log,
                &log_path,
                answering_only,
            )
            .await
            {
                Ok(d) => return Ok(d),
                Err(StartError::PortTaken(e)) => last_error = Some(e),
                Err(StartError::Other(e)) => return Err(e),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow!("scheduler did not start")))
    }

    /// Starts Volcano's own scheduler (`vc-scheduler` at `bin`, built by
    /// `e2e/build-volcano.sh scheduler`) for this test, with the flags volcano-rs gets, its
    /// health and metrics servers on, and `extra_args`. Returns once `/healthz` answers 200.
    pub async fn volcano_scheduler(
        &self,
        bin: &Path,
        extra_args: &[&str],
    ) -> anyhow::Result<Daemon> {
        let program = Program {
            bin,
            subcommand: None,
            ready_path: "/healthz",
        };
        let flags = |ports| {
            let mut f = self.scheduler_flags(ports);
            f.extend([
                ("--enable-healthz", "true".to_string()),
                ("--enable-metrics", "true".to_string()),
            ]);
            f
        };
        self.start_scheduler(&program, "", flags, extra_args, false)
            .await
    }
}
