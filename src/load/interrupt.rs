//! Ctrl-C as the run sees it: a flag the signal handler raises, which every wait of the
//! run (a window, warm-up, discovery, a `--start-at`) watches so that it ends at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Set by Ctrl-C: the current window ends early and the sweep stops; reports are written.
#[derive(Debug, Default)]
pub struct Interrupt {
    raised: AtomicBool,
    notify: Notify,
}

impl Interrupt {
    pub fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    /// Returns once the run is interrupted.
    pub async fn raised(&self) {
        loop {
            let notified = self.notify.notified();
            if self.is_raised() {
                return;
            }
            notified.await;
        }
    }

    /// Sleeps for `duration`, or less if interrupted.
    pub async fn sleep(&self, duration: Duration) {
        if self.is_raised() {
            return;
        }
        let notified = self.notify.notified();
        tokio::select! {
            _ = tokio::time::sleep(duration) => {}
            _ = notified => {}
        }
    }
}
