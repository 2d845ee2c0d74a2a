//! `llmload info`: the machine a run would run on — tool version, OS,
//! kernel, CPUs, memory, NUMA nodes, io_uring, descriptor limit, ephemeral
//! ports — as aligned `key: value` lines or, with `--json`, the very block
//! every summary.json carries as `info`. Collecting lives in `sys::info`;
//! this file only renders, and a fact the host hides prints as `unknown`.

use argh::FromArgs;

use crate::cli::{out, outln};
use crate::sys::info::HostInfo;

/// Print what this machine is: OS, kernel, CPUs, memory, io_uring, limits.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "info")]
pub(crate) struct InfoArgs {
    /// print JSON (the summary's `info` block) instead of text
    #[argh(switch)]
    pub json: bool,
}

/// Prints the host block; always 0.
pub(crate) fn run(args: InfoArgs) -> i32 {
    let info = HostInfo::collect();
    if args.json {
        let json = serde_json::to_string_pretty(&info).expect("host info serializes");
        outln!("{json}");
    } else {
        out!("{}", text(&info));
    }
    0
}

/// One aligned `key: value` line per fact.
pub(crate) fn text(i: &HostInfo) -> String {
    let unknown = || "unknown".to_string();
    let num = |n: Option<u64>| n.map_or_else(unknown, |n| n.to_string());
    let gib = |n: Option<u64>| n.map_or_else(unknown, |n| format!("{:.1} GiB", n as f64 / GIB));
    let kernel = match (&i.kernel, &i.machine) {
        (Some(k), Some(m)) => format!("{k} ({m})"),
        (Some(k), None) => k.clone(),
        (None, Some(m)) => format!("unknown ({m})"),
        (None, None) => unknown(),
    };
    let io_uring = {
        let u = &i.io_uring;
        let mut s = match (u.available, &u.error) {
            (Some(true), _) => "available".to_string(),
            (Some(false), Some(e)) => format!("unavailable: {e}"),
            (Some(false), None) => "unavailable".to_string(),
            (None, _) => unknown(),
        };
        if let Some(d) = u.disabled_sysctl {
            s.push_str(&format!(" (kernel.io_uring_disabled = {d})"));
        }
        s
    };
    let ports = i.ephemeral_ports.map_or_else(unknown, |p| {
        format!(
            "{}-{} ({} ports)",
            p.low,
            p.high,
            u32::from(p.high) - u32::from(p.low) + 1
        )
    });
    let lines = [
        ("tool", format!("{} {}", i.tool, i.version)),
        ("os", i.os.clone().unwrap_or_else(unknown)),
        ("kernel", kernel),
        ("cpu model", i.cpu_model.clone().unwrap_or_else(unknown)),
        ("cpus online", num(i.cpus_online)),
        ("cpus available", num(i.cpus_available)),
        ("memory total", gib(i.memory_total_bytes)),
        ("memory available", gib(i.memory_available_bytes)),
        ("numa nodes", num(i.numa_nodes)),
        ("io_uring", io_uring),
        (
            "fd limit",
            format!(
                "{} soft, {} hard",
                num(i.fd_limit.soft),
                num(i.fd_limit.hard)
            ),
        ),
        ("ephemeral ports", ports),
    ];
    let width = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
    lines
        .iter()
        .map(|(k, v)| format!("{:width$} {v}\n", format!("{k}:")))
        .collect()
}

const GIB: f64 = (1u64 << 30) as f64;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::info::{FdLimit, IoUring, PortRange};

    #[test]
    fn text_is_aligned_and_unknowns_say_so() {
        let info = HostInfo {
            tool: "llmload".into(),
            version: "1.2.3".into(),
            kernel: Some("6.1.0".into()),
            machine: Some("x86_64".into()),
            cpus_online: Some(4),
            memory_total_bytes: Some(16 << 30),
            io_uring: IoUring {
                available: Some(false),
                error: Some("EPERM (Operation not permitted)".into()),
                disabled_sysctl: Some(2),
            },
            fd_limit: FdLimit {
                soft: Some(1024),
                hard: None,
            },
            ephemeral_ports: Some(PortRange {
                low: 32768,
                high: 60999,
            }),
            ..HostInfo::default()
        };
        let t = text(&info);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 12);
        assert_eq!(lines[0], "tool:             llmload 1.2.3");
        assert!(lines.contains(&"os:               unknown"));
        assert!(lines.contains(&"kernel:           6.1.0 (x86_64)"));
        assert!(lines.contains(&"cpus online:      4"));
        assert!(lines.contains(&"memory total:     16.0 GiB"));
        assert!(lines.contains(
            &"io_uring:         unavailable: EPERM (Operation not permitted) (kernel.io_uring_disabled = 2)"
        ));
        assert!(lines.contains(&"fd limit:         1024 soft, unknown hard"));
        assert!(lines.contains(&"ephemeral ports:  32768-60999 (28232 ports)"));
        // Every value starts in the same column.
        assert!(
            lines
                .iter()
                .all(|l| l.as_bytes()[17] == b' ' && l.as_bytes()[18] != b' ')
        );
    }
}
