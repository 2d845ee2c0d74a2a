//! What machine a run ran on: tool version, OS, kernel, CPUs, memory, NUMA
//! nodes, io_uring, descriptor limit and ephemeral port range — what
//! `llmload info` prints and every summary carries as `info`, so a result
//! says where it came from (MLPerf's `info` prints the same). Read from
//! `/proc` and `/sys` plus three system calls, once, off the hot path; the
//! trade-off is completeness over strictness: every field degrades to
//! `None` (null, "unknown") instead of failing, because a host that hides
//! one fact must not stop a benchmark.

use std::fs;
use std::io;

use nix::sys::resource::{Resource, getrlimit};
use serde::{Deserialize, Serialize};

/// The host block. Every field but `tool` and `version` may be unknown.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct HostInfo {
    /// Always `llmload`.
    #[cfg_attr(test, schemars(extend("const" = "llmload")))]
    pub tool: String,
    pub version: String,
    /// `PRETTY_NAME` from os-release.
    pub os: Option<String>,
    /// The kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// The hardware name (`uname -m`).
    pub machine: Option<String>,
    /// `model name` from `/proc/cpuinfo` (or its ARM equivalents).
    pub cpu_model: Option<String>,
    /// Logical CPUs online.
    pub cpus_online: Option<u64>,
    /// Logical CPUs this process may run on (its affinity mask).
    pub cpus_available: Option<u64>,
    pub memory_total_bytes: Option<u64>,
    pub memory_available_bytes: Option<u64>,
    /// NUMA nodes; `None` on a kernel without NUMA support.
    pub numa_nodes: Option<u64>,
    pub io_uring: IoUring,
    pub fd_limit: FdLimit,
    /// `net.ipv4.ip_local_port_range`.
    pub ephemeral_ports: Option<PortRange>,
}

/// Whether this process can set up an io_uring.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct IoUring {
    /// `io_uring_setup` succeeded; `None` if it was not tried.
    pub available: Option<bool>,
    /// Why it failed (the OS error), when it did.
    pub error: Option<String>,
    /// `kernel.io_uring_disabled` (0 enabled, 1 restricted to a group,
    /// 2 disabled), on kernels that have it.
    pub disabled_sysctl: Option<u64>,
}

/// `RLIMIT_NOFILE` at the time of reading.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct FdLimit {
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

/// The local ports `connect` picks from, inclusive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct PortRange {
    pub low: u16,
    pub high: u16,
}

impl HostInfo {
    /// Reads this host. Never fails; what cannot be read is `None`.
    pub(crate) fn collect() -> HostInfo {
        let text = |p: &str| fs::read_to_string(p).ok();
        let (kernel, machine) = uname().unzip();
        let cpuinfo = text("/proc/cpuinfo");
        let meminfo = text("/proc/meminfo").unwrap_or_default();
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok().unzip();
        HostInfo {
            tool: "llmload".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            os: text("/etc/os-release")
                .or_else(|| text("/usr/lib/os-release"))
                .and_then(|t| os_release_field(&t, "PRETTY_NAME")),
            kernel,
            machine,
            cpu_model: cpuinfo.as_deref().and_then(cpu_model),
            cpus_online: text("/sys/devices/system/cpu/online")
                .and_then(|t| cpu_list_count(&t))
                .or_else(|| cpuinfo.as_deref().map(cpuinfo_processors)),
            cpus_available: affinity_cpus(),
            memory_total_bytes: meminfo_bytes(&meminfo, "MemTotal"),
            memory_available_bytes: meminfo_bytes(&meminfo, "MemAvailable"),
            numa_nodes: numa_nodes(),
            io_uring: IoUring {
                disabled_sysctl: text("/proc/sys/kernel/io_uring_disabled")
                    .and_then(|t| t.trim().parse().ok()),
                ..io_uring_probe()
            },
            fd_limit: FdLimit { soft, hard },
            ephemeral_ports: text("/proc/sys/net/ipv4/ip_local_port_range")
                .and_then(|t| port_range(&t)),
        }
    }
}

/// A field of an os-release file, unquoted (`KEY="a \"b\""` → `a "b"`).
pub(crate) fn os_release_field(text: &str, key: &str) -> Option<String> {
    let value = text.lines().find_map(|l| {
        let (k, v) = l.trim().split_once('=')?;
        (k == key).then_some(v)
    })?;
    let value = match value.as_bytes() {
        [b'"', .., b'"'] => unescape(&value[1..value.len() - 1]),
        [b'\'', .., b'\''] => value[1..value.len() - 1].to_string(),
        _ => value.to_string(),
    };
    (!value.is_empty()).then_some(value)
}

/// Shell double-quote escapes: a backslash keeps the next character.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

/// The CPU's name from `/proc/cpuinfo`: `model name` on x86, else the
/// fields ARM and others use.
pub(crate) fn cpu_model(cpuinfo: &str) -> Option<String> {
    ["model name", "Hardware", "Processor", "cpu model", "cpu"]
        .iter()
        .find_map(|key| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                let v = v.trim();
                (k.trim() == *key && !v.is_empty()).then(|| v.to_string())
            })
        })
}

/// How many `processor` entries `/proc/cpuinfo` lists.
pub(crate) fn cpuinfo_processors(cpuinfo: &str) -> u64 {
    cpuinfo
        .lines()
        .filter(|l| {
            l.split_once(':')
                .is_some_and(|(k, _)| k.trim() == "processor")
        })
        .count() as u64
}

/// How many CPUs a kernel CPU list names (`0-3,6,8-9` → 7).
pub(crate) fn cpu_list_count(list: &str) -> Option<u64> {
    let list = list.trim();
    if list.is_empty() {
        return None;
    }
    list.split(',').try_fold(0u64, |n, part| {
        let count = match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
                b.checked_sub(a)? + 1
            }
            None => {
                part.parse::<u64>().ok()?;
                1
            }
        };
        Some(n + count)
    })
}

/// A `/proc/meminfo` line's value in bytes (`MemTotal:  16 kB` → 16384).
pub(crate) fn meminfo_bytes(meminfo: &str, key: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k != key {
            return None;
        }
        let mut words = v.split_whitespace();
        let n: u64 = words.next()?.parse().ok()?;
        match words.next() {
            Some("kB") => n.checked_mul(1024),
            None => Some(n),
            Some(_) => None,
        }
    })
}

/// `ip_local_port_range`'s two numbers (`32768\t60999`).
pub(crate) fn port_range(text: &str) -> Option<PortRange> {
    let mut words = text.split_whitespace();
    let low = words.next()?.parse().ok()?;
    let high = words.next()?.parse().ok()?;
    (words.next().is_none() && low <= high).then_some(PortRange { low, high })
}

/// NUMA nodes under `/sys/devices/system/node` (`node0`, `node1`, …).
fn numa_nodes() -> Option<u64> {
    let dir = fs::read_dir("/sys/devices/system/node").ok()?;
    let n = dir
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("node"))
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .count() as u64;
    (n > 0).then_some(n)
}

/// CPUs in this process's affinity mask.
fn affinity_cpus() -> Option<u64> {
    use nix::sched::{CpuSet, sched_getaffinity};
    let set = sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok()?;
    let n = (0..CpuSet::count())
        .filter(|&i| set.is_set(i).unwrap_or(false))
        .count() as u64;
    (n > 0).then_some(n)
}

/// The kernel release and hardware name, as `uname -r` and `uname -m`.
fn uname() -> Option<(String, String)> {
    // SAFETY: utsname is plain bytes, valid when zeroed.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname the kernel fills.
    super::cvt(unsafe { libc::uname(&mut u) }).ok()?;
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Some((field(&u.release), field(&u.machine)))
}

/// Sets up a one-entry io_uring and closes it at once: whether this
/// process may use io_uring at all (the kernel may lack it, or a sysctl or
/// seccomp filter may forbid it).
fn io_uring_probe() -> IoUring {
    // struct io_uring_params is 120 bytes of integers (ten u32s, then two
    // 40-byte offset structs) that must be zero on entry; u64s keep it
    // aligned for the offsets' trailing u64.
    let mut params = [0u64; 15];
    // SAFETY: io_uring_setup(entries, params) reads and writes exactly
    // sizeof(struct io_uring_params) = 120 bytes at `params`, which is
    // zeroed, writable and that size; it returns a new descriptor or -1.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_io_uring_setup,
            1 as libc::c_uint,
            params.as_mut_ptr(),
        )
    };
    match super::cvt(ret) {
        Ok(fd) => {
            // SAFETY: `fd` was just returned to us and is owned by nothing
            // else; closing it releases the ring.
            unsafe { libc::close(fd as libc::c_int) };
            IoUring {
                available: Some(true),
                ..IoUring::default()
            }
        }
        Err(e) => IoUring {
            available: Some(false),
            error: Some(describe(&e)),
            disabled_sysctl: None,
        },
    }
}

/// `ENOSYS (Function not implemented)`, shorter than io::Error's Display.
fn describe(e: &io::Error) -> String {
    let name = match e.raw_os_error() {
        Some(libc::ENOSYS) => "ENOSYS",
        Some(libc::EPERM) => "EPERM",
        Some(libc::EACCES) => "EACCES",
        Some(libc::ENOMEM) => "ENOMEM",
        Some(libc::EMFILE) => "EMFILE",
        Some(libc::EINVAL) => "EINVAL",
        _ => return e.to_string(),
    };
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or(&text);
    format!("{name} ({text})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_release_pretty_name_is_unquoted() {
        let t = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n";
        assert_eq!(
            os_release_field(t, "PRETTY_NAME").as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(os_release_field(t, "ID").as_deref(), Some("debian"));
        assert_eq!(os_release_field(t, "VERSION"), None);
        assert_eq!(
            os_release_field("PRETTY_NAME='Alpine'\n", "PRETTY_NAME").as_deref(),
            Some("Alpine")
        );
        assert_eq!(
            os_release_field(r#"PRETTY_NAME="a \"b\" \\c""#, "PRETTY_NAME").as_deref(),
            Some(r#"a "b" \c"#)
        );
        assert_eq!(os_release_field("PRETTY_NAME=\"\"\n", "PRETTY_NAME"), None);
    }

    #[test]
    fn cpu_model_reads_x86_and_arm() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(
            cpu_model(x86).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        assert_eq!(cpuinfo_processors(x86), 2);
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n\nHardware\t: BCM2835\n";
        assert_eq!(cpu_model(arm).as_deref(), Some("BCM2835"));
        assert_eq!(cpuinfo_processors(arm), 1);
        assert_eq!(cpu_model("processor\t: 0\nCPU part\t: 0xd0c\n"), None);
    }

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(cpu_list_count("0-3\n"), Some(4));
        assert_eq!(cpu_list_count("0"), Some(1));
        assert_eq!(cpu_list_count("0-3,6,8-9\n"), Some(7));
        assert_eq!(cpu_list_count(""), None);
        assert_eq!(cpu_list_count("3-1"), None);
        assert_eq!(cpu_list_count("x"), None);
    }

    #[test]
    fn meminfo_values_are_bytes() {
        let t = "MemTotal:       16318480 kB\nMemFree:         1034556 kB\nMemAvailable:   10921248 kB\nHugePages_Total:       0\n";
        assert_eq!(meminfo_bytes(t, "MemTotal"), Some(16318480 * 1024));
        assert_eq!(meminfo_bytes(t, "MemAvailable"), Some(10921248 * 1024));
        assert_eq!(meminfo_bytes(t, "HugePages_Total"), Some(0));
        assert_eq!(meminfo_bytes(t, "Mem"), None);
        assert_eq!(meminfo_bytes(t, "SwapTotal"), None);
    }

    #[test]
    fn port_range_is_two_ordered_numbers() {
        assert_eq!(
            port_range("32768\t60999\n"),
            Some(PortRange {
                low: 32768,
                high: 60999
            })
        );
        assert_eq!(
            port_range("1024 65535"),
            Some(PortRange {
                low: 1024,
                high: 65535
            })
        );
        assert_eq!(port_range("60999 32768"), None);
        assert_eq!(port_range("32768"), None);
        assert_eq!(port_range("1 2 3"), None);
        assert_eq!(port_range("1 70000"), None);
    }

    #[test]
    fn collect_reads_this_host() {
        let info = HostInfo::collect();
        assert_eq!(info.tool, "llmload");
        assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
        assert!(info.kernel.is_some() && info.machine.is_some());
        assert!(info.cpus_online.unwrap() >= 1);
        assert!(info.cpus_available.unwrap() >= 1);
        assert!(info.memory_total_bytes.unwrap() > 0);
        assert!(info.io_uring.available.is_some());
        assert!(info.fd_limit.soft.unwrap() <= info.fd_limit.hard.unwrap());
    }
}
