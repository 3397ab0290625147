//! Real-time scheduling and memory locking for the VRRP event loop
//! (`global.realtime_priority`, `global.lock_memory`).
//!
//! The event loop is the process's main thread. It becomes real-time with
//! SCHED_RESET_ON_FORK, so that nothing it starts inherits the policy: not
//! the helper threads that do bulk work (the IPVS worker), not the notify
//! hooks or exec health checks. A runaway real-time loop could starve the
//! machine: RLIMIT_RTTIME bounds the CPU time it may use without sleeping
//! (the kernel sends SIGXCPU, then SIGKILL at the hard limit).

use std::io;

/// CPU time (µs) the real-time thread may use without blocking: far above
/// what handling a burst of adverts takes, far below what would hurt.
const RTTIME_SOFT_US: u64 = 500_000;
const RTTIME_HARD_US: u64 = 1_000_000;

/// Makes the calling thread SCHED_FIFO at `priority` (1-99), not inherited
/// by threads or processes it creates, with an RLIMIT_RTTIME safety net.
pub fn make_realtime(priority: u8) -> io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: RTTIME_SOFT_US,
        rlim_max: RTTIME_HARD_US,
    };
    // SAFETY: setrlimit reads the rlimit we pass; no pointers are kept.
    if unsafe { libc::setrlimit(libc::RLIMIT_RTTIME, &lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let param = libc::sched_param {
        sched_priority: libc::c_int::from(priority),
    };
    let policy = libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK;
    // SAFETY: as above.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Returns the calling thread to normal (SCHED_OTHER) scheduling.
pub fn make_normal() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is read during the call.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Locks current and future memory of the process (mlockall).
pub fn lock_memory() -> io::Result<()> {
    // SAFETY: plain system call without pointers.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's scheduling policy (without SCHED_RESET_ON_FORK) and priority.
    fn current() -> (libc::c_int, libc::c_int) {
        let mut param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 is the calling thread; `param` is written during the call.
        let policy = unsafe { libc::sched_getscheduler(0) };
        // SAFETY: as above.
        unsafe { libc::sched_getparam(0, &mut param) };
        (policy & !libc::SCHED_RESET_ON_FORK, param.sched_priority)
    }

    /// The scheduling policy of a process, from /proc/PID/sched.
    fn policy_of(pid: u32) -> i32 {
        let text = std::fs::read_to_string(format!("/proc/{pid}/sched")).unwrap();
        let line = text.lines().find(|l| l.starts_with("policy")).unwrap();
        line.rsplit(' ').next().unwrap().trim().parse().unwrap()
    }

    #[test]
    fn realtime_is_not_inherited() {
        // Only privileged runs (CI runs the tests as root) can become real-time.
        if make_realtime(1).is_err() {
            eprintln!("skipped: not allowed to use SCHED_FIFO here");
            return;
        }
        let me = current();
        let thread = std::thread::spawn(current).join().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let child_policy = policy_of(child.id());
        let _ = child.kill();
        let _ = child.wait();
        make_normal().unwrap();
        assert_eq!(me, (libc::SCHED_FIFO, 1));
        assert_eq!(thread, (libc::SCHED_OTHER, 0));
        assert_eq!(child_policy, libc::SCHED_OTHER);
        assert_eq!(current(), (libc::SCHED_OTHER, 0));
    }
}
