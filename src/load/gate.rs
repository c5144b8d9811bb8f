//! Limits on the requests a driver's callers have out, for AIPerf's load shapes: at most N
//! requests waiting for their first token (`--prefill-concurrency`), and at most N in flight
//! while `--concurrency-ramp-duration` raises a rate's in-flight cap. A [`Gate`] is a
//! semaphore whose limit only rises (AIPerf's ramps go up); the callers of a driver share
//! one [`CallGates`], and a caller without one (no such flag) never touches it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::config::LoadModes;

/// At most `limit` holders at once; the limit may be raised while held.
#[derive(Debug)]
pub struct Gate {
    permits: Semaphore,
    limit: AtomicUsize,
}

impl Gate {
    pub fn new(limit: usize) -> Gate {
        Gate {
            permits: Semaphore::new(limit),
            limit: AtomicUsize::new(limit),
        }
    }

    /// Waits for a place; it is kept until [`Gate::leave`].
    pub async fn enter(&self) {
        if let Ok(permit) = self.permits.acquire().await {
            permit.forget();
        }
    }

    /// Takes a place if one is free now; false when all are held.
    pub fn try_enter(&self) -> bool {
        self.permits.try_acquire().map(|p| p.forget()).is_ok()
    }

    /// Gives a place back.
    pub fn leave(&self) {
        self.permits.add_permits(1);
    }

    /// Raises the limit to `limit` (a lower one changes nothing).
    pub fn raise_to(&self, limit: usize) {
        let before = self.limit.fetch_max(limit, Ordering::AcqRel);
        if limit > before {
            self.permits.add_permits(limit - before);
        }
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Acquire)
    }

    /// Places taken now.
    pub fn held(&self) -> usize {
        self.limit()
            .saturating_sub(self.permits.available_permits())
    }
}

/// A place at a gate that is given back once: at the first answer or at the end, whichever
/// comes first.
pub struct Held<'a> {
    gate: &'a Gate,
    left: AtomicBool,
}

impl<'a> Held<'a> {
    /// Enters `gate` and holds the place.
    pub async fn enter(gate: &'a Gate) -> Held<'a> {
        gate.enter().await;
        Held {
            gate,
            left: AtomicBool::new(false),
        }
    }

    /// Gives the place back (the first call only).
    pub fn leave(&self) {
        if !self.left.swap(true, Ordering::AcqRel) {
            self.gate.leave();
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.leave();
    }
}

/// The gates a driver's callers pass: `requests` from the send to the last answer (a
/// rate's in-flight cap being ramped), `prefill` from the send to the first answer.
#[derive(Debug, Default)]
pub struct CallGates {
    pub requests: Option<Gate>,
    pub prefill: Option<Gate>,
}

impl CallGates {
    /// The gates `modes` asks of a driver (`None`: none). `cap` is the in-flight cap of a
    /// rate whose `--concurrency-ramp-duration` ramps it; `ramped_cap`: whether it does.
    pub fn for_load(modes: &LoadModes, ramped_cap: Option<u32>) -> Option<Arc<CallGates>> {
        let prefill = modes.run.prefill.map(|p| {
            let start = if p.ramp.is_some() { 1 } else { p.limit };
            Gate::new(start as usize)
        });
        let requests = ramped_cap.map(|_| Gate::new(1));
        if prefill.is_none() && requests.is_none() {
            return None;
        }
        Some(Arc::new(CallGates { requests, prefill }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_gate_holds_at_most_its_limit_and_its_limit_rises() {
        let gate = Arc::new(Gate::new(1));
        gate.enter().await;
        let second = tokio::spawn({
            let gate = gate.clone();
            async move { gate.enter().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!second.is_finished(), "a second holder waits at limit 1");
        assert_eq!(gate.held(), 1);
        gate.raise_to(2);
        second.await.unwrap();
        assert_eq!((gate.limit(), gate.held()), (2, 2));
        gate.raise_to(1);
        assert_eq!(gate.limit(), 2, "a limit never falls");
        gate.leave();
        gate.leave();
        assert_eq!(gate.held(), 0);
    }

    #[tokio::test]
    async fn a_held_place_is_given_back_once() {
        let gate = Gate::new(1);
        {
            let held = Held::enter(&gate).await;
            held.leave();
            held.leave();
            assert_eq!(gate.held(), 0);
        }
        assert_eq!(gate.held(), 0, "dropping after leaving gives nothing more");
        let held = Held::enter(&gate).await;
        assert_eq!(gate.held(), 1);
        drop(held);
        assert_eq!(gate.held(), 0);
    }
}
