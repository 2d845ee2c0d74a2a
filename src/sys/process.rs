//! Process-wide settings: the descriptor limit and the CPUs this process
//! may use.

/// Raises the soft descriptor limit to the hard limit; returns the new
/// soft limit (0 when it cannot be read).
pub fn raise_fd_limit() -> u64 {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) != 0 {
            return 0;
        }
        if rl.rlim_cur < rl.rlim_max {
            let want = libc::rlimit {
                rlim_cur: rl.rlim_max,
                rlim_max: rl.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                rl.rlim_cur = rl.rlim_max;
            }
        }
    }
    rl.rlim_cur
}

/// CPUs this process may run on.
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The soft descriptor limit in force (0 when it cannot be read).
pub fn fd_limit() -> u64 {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit with a valid rlimit pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return 0;
    }
    rl.rlim_cur
}
