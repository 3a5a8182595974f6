//! Volcano's command line as Go's flag packages read it, turned into ours.
//!
//! `volcano-rs run` takes the arguments Volcano's chart passes to `vc-scheduler` unchanged:
//!
//! * single-dash long flags (`-v=3`, `-logtostderr`) mean the same as double-dash ones;
//! * `-v=N` / `--v N` sets the log verbosity (see [`Verbosity`]);
//! * the flags of Volcano's scheduler (`cmd/scheduler/app/options`), of component-base's leader
//!   election and of klog that mean nothing here are accepted and dropped, each with a one-line
//!   warning saying why, instead of refusing the command line;
//! * `--lock-object-namespace` (deprecated in Volcano) is `--leader-elect-resource-namespace`;
//! * `--version` prints the version and exits, as Volcano's does.
//!
//! Go's bare booleans (`--leader-elect`) and `--flag=false` are accepted by the flags
//! themselves (see `RunArgs`), as are Go durations (`1m30s`).

/// Flags accepted and dropped, whether they take a value, and why they do nothing here.
const IGNORED: &[(&str, bool, &str)] = &[
    // cmd/scheduler/app/options
    (
        "ca-cert-file",
        true,
        "the metrics and health servers serve plain HTTP",
    ),
    (
        "tls-cert-file",
        true,
        "the metrics and health servers serve plain HTTP",
    ),
    (
        "tls-private-key-file",
        true,
        "the metrics and health servers serve plain HTTP",
    ),
    (
        "resync-period",
        true,
        "watches relist on their own; there is no informer resync",
    ),
    ("priority-class", false, "PriorityClasses are always read"),
    (
        "plugins-dir",
        true,
        "plugins are built in; Go plugins cannot be loaded",
    ),
    ("csi-storage", false, "CSI storage capacity is not modelled"),
    (
        "enable-healthz",
        false,
        "/healthz and /readyz are always served (--healthz-address)",
    ),
    (
        "enable-metrics",
        false,
        "/metrics is always served (--listen-address)",
    ),
    ("enable-pprof", false, "there is no pprof endpoint"),
    (
        "cache-dumper",
        false,
        "use --debug-state-address for a state dump",
    ),
    (
        "cache-dump-dir",
        true,
        "use --debug-state-address for a state dump",
    ),
    (
        "node-worker-threads",
        true,
        "nodes are mirrored by one watch",
    ),
    (
        "gate-removal-worker-num",
        true,
        "scheduling gates are not removed by this scheduler",
    ),
    (
        "ignored-provisioners",
        true,
        "CSI attach limits come from the NodeVolumeLimits filter, which counts every driver",
    ),
    (
        "resource-sync-timeout",
        true,
        "sessions start once every watch has listed",
    ),
    (
        "disable-default-scheduler-config",
        false,
        "a refused configuration always keeps the previous one",
    ),
    ("scheduler-sharding-mode", true, "sharding is not supported"),
    ("scheduler-sharding-name", true, "sharding is not supported"),
    (
        "feature-gates",
        true,
        "Volcano's feature gates do not apply",
    ),
    // component-base leader election
    (
        "leader-elect-resource-lock",
        true,
        "the lock is always a coordination.k8s.io Lease",
    ),
    // cmd/scheduler/main.go and klog
    ("log-flush-frequency", true, "logs are written as they come"),
    ("logtostderr", false, "logs always go to stderr"),
    ("alsologtostderr", false, "logs always go to stderr"),
    ("stderrthreshold", true, "logs always go to stderr"),
    ("log_dir", true, "logs always go to stderr"),
    ("log-dir", true, "logs always go to stderr"),
    ("log_file", true, "logs always go to stderr"),
    ("log-file", true, "logs always go to stderr"),
    ("log_file_max_size", true, "logs always go to stderr"),
    ("log-file-max-size", true, "logs always go to stderr"),
    (
        "skip_headers",
        false,
        "use --log-format json for machine-read logs",
    ),
    (
        "skip_log_headers",
        false,
        "use --log-format json for machine-read logs",
    ),
    (
        "add_dir_header",
        false,
        "log lines carry their module, not their file",
    ),
    ("one_output", false, "logs always go to stderr"),
    ("log_backtrace_at", true, "there are no backtraces in logs"),
    ("vmodule", true, "use RUST_LOG for per-module levels"),
];

/// Log verbosity from `-v`: 0–2 info; 3 adds one line per bind and eviction; 4 and more add
/// this scheduler's debug lines; 5 and more its trace lines. HTTP libraries stay quiet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verbosity(pub u8);

/// The command line after translation.
#[derive(Debug, Default, PartialEq)]
pub struct Translated {
    pub args: Vec<String>,
    pub verbosity: Option<Verbosity>,
    /// One line per dropped or renamed flag.
    pub warnings: Vec<String>,
    /// `--version` was given to `run`.
    pub print_version: bool,
}

fn split(flag: &str) -> (&str, Option<&str>) {
    match flag.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (flag, None),
    }
}

/// Translates `argv` (program name first). Only the arguments after the `run` subcommand are
/// touched; `--` ends translation.
pub fn translate(argv: Vec<String>) -> Result<Translated, String> {
    let mut out = Translated::default();
    let mut iter = argv.into_iter();
    // Up to and including the subcommand.
    for a in iter.by_ref() {
        let is_run = a == "run";
        out.args.push(a);
        if is_run {
            break;
        }
    }
    while let Some(arg) = iter.next() {
        if arg == "--" {
            out.args.push(arg);
            out.args.extend(iter.by_ref());
            break;
        }
        let long = match arg.strip_prefix("--") {
            Some(rest) => rest.to_string(),
            None => match arg.strip_prefix('-') {
                Some(rest) if !rest.is_empty() && rest != "h" => rest.to_string(),
                _ => {
                    out.args.push(arg);
                    continue;
                }
            },
        };
        let (name, inline) = split(&long);
        let mut value_of = |takes_value: bool| -> Result<Option<String>, String> {
            match inline {
                Some(v) => Ok(Some(v.to_string())),
                None if takes_value => iter
                    .next()
                    .map(Some)
                    .ok_or_else(|| format!("--{name} needs a value")),
                None => Ok(None),
            }
        };
        if name == "v" {
            let v = value_of(true)?.unwrap_or_default();
            let level: u8 = v
                .parse()
                .map_err(|_| format!("-v={v}: the log verbosity is a number from 0 to 255"))?;
            out.verbosity = Some(Verbosity(level));
        } else if name == "version" {
            let v = value_of(false)?;
            out.print_version = match v {
                None => true,
                Some(v) => engine::model::task::parse_go_bool(&v)
                    .ok_or_else(|| format!("--version={v}: not a boolean"))?,
            };
        } else if name == "lock-object-namespace" {
            let v = value_of(true)?.unwrap_or_default();
            out.warnings.push(
                "--lock-object-namespace is deprecated (as in Volcano); it sets \
                 --leader-elect-resource-namespace"
                    .to_string(),
            );
            out.args
                .push(format!("--leader-elect-resource-namespace={v}"));
        } else if let Some((_, takes_value, why)) = IGNORED.iter().find(|(n, ..)| *n == name) {
            value_of(*takes_value)?;
            out.warnings.push(format!(
                "--{name}: accepted for compatibility with Volcano; no effect here: {why}"
            ));
        } else {
            out.args.push(format!("--{long}"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(args: &[&str]) -> Translated {
        let mut argv = vec!["volcano-rs".to_string(), "run".to_string()];
        argv.extend(args.iter().map(|s| s.to_string()));
        translate(argv).expect("translates")
    }

    #[test]
    fn volcanos_chart_arguments_are_translated() {
        let out = t(&[
            "--logtostderr",
            "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf",
            "--enable-healthz=true",
            "--enable-metrics=true",
            "--leader-elect=false",
            "--kube-api-qps=2000",
            "--node-worker-threads=20",
            "--plugins-dir=/plugins",
            "-v=3",
            "2>&1",
        ]);
        assert_eq!(
            out.args,
            [
                "volcano-rs",
                "run",
                "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf",
                "--leader-elect=false",
                "--kube-api-qps=2000",
                "2>&1"
            ]
        );
        assert_eq!(out.verbosity, Some(Verbosity(3)));
        assert_eq!(out.warnings.len(), 5, "{:?}", out.warnings);
        assert!(out.warnings[0].starts_with("--logtostderr: accepted"));
    }

    #[test]
    fn single_dash_flags_values_and_aliases() {
        let out = t(&[
            "-v",
            "5",
            "-schedule-period=1m30s",
            "-log_dir",
            "/tmp",
            "-h",
        ]);
        assert_eq!(out.verbosity, Some(Verbosity(5)));
        assert_eq!(out.args[2..], ["--schedule-period=1m30s", "-h"]);
        let out = t(&["--lock-object-namespace", "kube-system"]);
        assert_eq!(
            out.args[2..],
            ["--leader-elect-resource-namespace=kube-system"]
        );
        assert_eq!(out.warnings.len(), 1);
        assert!(t(&["--version"]).print_version);
        assert!(!t(&["--version=false"]).print_version);
        // After `--` nothing is touched; other subcommands are not touched.
        assert_eq!(t(&["--", "-v=3"]).args[2..], ["--", "-v=3"]);
        let sim = translate(vec!["volcano-rs".into(), "simulate".into(), "-v=3".into()]).unwrap();
        assert_eq!(sim.args, ["volcano-rs", "simulate", "-v=3"]);
    }

    #[test]
    fn bad_values_are_refused_with_the_flag_named() {
        let argv = |a: &[&str]| {
            let mut v = vec!["volcano-rs".to_string(), "run".to_string()];
            v.extend(a.iter().map(|s| s.to_string()));
            v
        };
        assert!(
            translate(argv(&["-v=loud"]))
                .unwrap_err()
                .contains("-v=loud")
        );
        assert!(
            translate(argv(&["--plugins-dir"]))
                .unwrap_err()
                .contains("--plugins-dir needs a value")
        );
    }
}
