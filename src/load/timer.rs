//! A microsecond timer for the open loop's client threads. tokio's timers tick in whole
//! milliseconds, too coarse for a schedule whose sends are 33 µs apart at 30,000 req/s; a
//! Linux timerfd, registered in the thread's own event loop, wakes it within microseconds
//! of the deadline without a thread of its own, so a send never crosses threads.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// One timerfd, armed for one deadline at a time.
pub struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
}

impl PreciseTimer {
    /// A timer on the current tokio runtime's event loop.
    pub fn new() -> io::Result<PreciseTimer> {
        // SAFETY: timerfd_create takes plain flags and returns a new descriptor or -1.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor this call just opened and nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the descriptor stays open, unreplaced, while the AsyncFd owns it.
        let fd = unsafe { AsyncFd::register_with_interest(owned, Interest::READABLE)? };
        Ok(PreciseTimer { fd })
    }

    /// Waits until `due` (at once when it has passed).
    pub async fn sleep_until(&self, due: Instant) -> io::Result<()> {
        let left = due.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        self.arm(left)?;
        loop {
            let mut ready = self.fd.readable().await?;
            let read = read_expirations(self.fd.get_ref());
            // Read or not, the timer has nothing more to say until it is armed again.
            ready.clear_ready();
            match read {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                other => return other,
            }
        }
    }

    /// Sets the timer to fire once, `after` from now.
    fn arm(&self, after: Duration) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: the descriptor is a timerfd this value owns; `spec` lives for the call.
        let set = unsafe {
            libc::timerfd_settime(
                self.fd.get_ref().as_raw_fd(),
                0,
                &spec,
                std::ptr::null_mut(),
            )
        };
        match set {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }
}

/// Reads (and so clears) the count of expirations; `WouldBlock` when none is pending.
fn read_expirations(fd: &OwnedFd) -> io::Result<()> {
    let mut count = 0u64;
    // SAFETY: reads 8 bytes into a u64 that lives for the call.
    let read = unsafe {
        libc::read(
            fd.as_raw_fd(),
            (&mut count as *mut u64).cast(),
            std::mem::size_of::<u64>(),
        )
    };
    match read {
        8 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Waits until `due`, within microseconds when a timer is given (tokio's whole
/// milliseconds otherwise), asking `stopped` at least every `check`; false if it said stop.
pub async fn wait_until_unless(
    timer: Option<&PreciseTimer>,
    due: Instant,
    check: Duration,
    stopped: impl Fn() -> bool,
) -> bool {
    loop {
        if stopped() {
            return false;
        }
        let left = due.saturating_duration_since(Instant::now());
        if left > check {
            tokio::time::sleep((left - check / 2).min(check)).await;
            continue;
        }
        let precise = match timer {
            Some(timer) => timer.sleep_until(due).await.is_ok(),
            None => false,
        };
        if !precise {
            tokio::time::sleep_until(due.into()).await;
        }
        return !stopped();
    }
}

/// Asks the kernel to wake this thread within 1 µs of its deadline (default slack: 50 µs),
/// and to run it as soon as it wakes (see [`request_short_slice`]).
pub fn lower_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong);
    }
    request_short_slice();
}

/// `struct sched_attr` of sched_setattr(2).
#[repr(C)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// The time slice asked for the sending thread: the shortest Linux takes.
const SEND_SLICE_NS: u64 = 100_000;

/// Asks for a short time slice (Linux 6.12+, whose fair scheduler takes a normal thread's
/// `sched_runtime` as its slice): a waking thread with a short slice has an early deadline,
/// so it runs at once instead of after the slice of whatever holds the core. On 2 cores
/// with a server decoding on one, sends of a trace replay were up to 5 ms late about once a
/// minute without it. Older kernels ignore the runtime; a refusal changes nothing.
fn request_short_slice() {
    // SAFETY: getpriority reads this thread's nice value (the caller's tid is 0 = itself).
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice,
        priority: 0,
        runtime: SEND_SLICE_NS,
        deadline: 0,
        period: 0,
    };
    // SAFETY: sched_setattr reads `attr` (a valid, sized struct) for this thread (pid 0).
    unsafe {
        libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn wakes_after_the_deadline_and_can_be_rearmed() {
        let timer = PreciseTimer::new().unwrap();
        for micros in [300u64, 50, 2000] {
            let due = Instant::now() + Duration::from_micros(micros);
            timer.sleep_until(due).await.unwrap();
            assert!(Instant::now() >= due);
        }
        // A deadline in the past returns at once.
        timer.sleep_until(Instant::now()).await.unwrap();
    }
}
