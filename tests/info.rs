//! `llmload info`: the host block, as text and JSON, holds this machine's
//! real values, and every bench summary carries the same block.

use std::process::Command;
use std::time::Duration;

use nix::sys::resource::{Resource, getrlimit};

use crate::report::assert_valid;
use crate::util::*;

fn info(args: &[&str]) -> String {
    let out = Command::new(bin())
        .arg("info")
        .args(args)
        .output()
        .expect("run llmload info");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `processor` entries in /proc/cpuinfo: the CPUs online.
fn proc_cpus() -> u64 {
    read("/proc/cpuinfo".as_ref())
        .lines()
        .filter(|l| l.split(':').next().unwrap().trim() == "processor")
        .count() as u64
}

/// CPUs in this process's affinity mask (the child inherits it).
fn affinity_cpus() -> u64 {
    use nix::sched::{CpuSet, sched_getaffinity};
    let set = sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    (0..CpuSet::count())
        .filter(|&i| set.is_set(i).unwrap())
        .count() as u64
}

#[test]
fn info_json_holds_this_hosts_values() {
    let (soft_before, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    let i: serde_json::Value = serde_json::from_str(&info(&["--json"])).expect("JSON");
    // Another test in this process may raise the soft limit to the hard one
    // meanwhile; the child saw one of the two.
    let (soft_after, _) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    assert_eq!(i["tool"], "llmload");
    assert_eq!(i["version"], env!("CARGO_PKG_VERSION"));
    let cpus = u(&i["cpus_online"]);
    assert!(cpus >= 1);
    assert_eq!(cpus, proc_cpus());
    assert_eq!(u(&i["cpus_available"]), affinity_cpus());
    let soft = u(&i["fd_limit"]["soft"]);
    assert!(soft == soft_before || soft == soft_after, "{soft}");
    assert_eq!(u(&i["fd_limit"]["hard"]), hard);
    let (low, high) = (
        u(&i["ephemeral_ports"]["low"]),
        u(&i["ephemeral_ports"]["high"]),
    );
    assert!(low < high && high <= 65535, "{low}-{high}");
    let proc_ports: Vec<u64> = read("/proc/sys/net/ipv4/ip_local_port_range".as_ref())
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!(proc_ports, [low, high]);
    assert!(u(&i["memory_total_bytes"]) >= u(&i["memory_available_bytes"]));
    assert!(i["io_uring"]["available"].is_boolean());
    assert_eq!(
        i["io_uring"]["available"] == false,
        i["io_uring"]["error"].is_string()
    );
    let uname = Command::new("uname").arg("-r").output().unwrap();
    assert_eq!(
        i["kernel"].as_str().unwrap(),
        String::from_utf8_lossy(&uname.stdout).trim()
    );
}

#[test]
fn info_text_has_one_aligned_line_per_fact() {
    let text = info(&[]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 12, "{text}");
    assert_eq!(
        lines[0],
        format!("tool:             llmload {}", env!("CARGO_PKG_VERSION"))
    );
    assert!(
        lines
            .iter()
            .any(|l| *l == format!("cpus online:      {}", proc_cpus())),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .all(|l| l.as_bytes()[17] == b' ' && l.as_bytes()[18] != b' ')
    );
}

#[test]
fn bench_summary_carries_the_info_block() {
    let run = bench(
        &["--requests", "5", "--concurrency", "1", "--max-tokens", "2"],
        Duration::from_secs(60),
    );
    run.assert_success();
    let s = run.summary();
    assert_valid(&s);
    let i = &s["info"];
    assert_eq!(i["tool"], "llmload");
    assert_eq!(i["version"], s["version"]);
    assert_eq!(u(&i["cpus_online"]), proc_cpus());
    // Read after bench raised the soft limit: the workers' limit.
    assert_eq!(i["fd_limit"]["soft"], s["generator"]["fd_limit"]);
    assert!(u(&i["ephemeral_ports"]["low"]) < u(&i["ephemeral_ports"]["high"]));
}
