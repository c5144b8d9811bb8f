//! CPU time used by this process (user + system), read with getrusage. Differences between
//! two readings give the CPU a run cost, so the client's own cost per request can be shown.

use std::time::Duration;

/// User + system CPU time of the whole process so far.
pub fn process_cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the zero-initialised struct we pass it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return Duration::ZERO;
        }
        usage
    };
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_work_shows_up_as_cpu_time() {
        // Spin until the process has used 20 ms of CPU; a reader that stays at zero (or
        // stands still) never gets there, and the wall-clock bound fails the test.
        let before = process_cpu_time();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while process_cpu_time() - before < Duration::from_millis(20) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "CPU time does not advance"
            );
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        assert!(process_cpu_time() > before);
    }
}
