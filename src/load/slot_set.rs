//! The slots of a driver that keeps N things in flight — requests in the closed loop,
//! sessions in the sessions driver: each slot a task with its own buffer and state (active,
//! paused or stopped), started, paused and resumed as the level's N changes, and the counts
//! the profiler reads from them. What a slot does is its driver's; how many run is here.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::measure::sample::{Drained, SlotBuffer};

const ACTIVE: u8 = 0;
const PAUSED: u8 = 1;
const STOPPED: u8 = 2;

/// State one slot shares with its driver.
#[derive(Debug, Default)]
pub struct SlotShared {
    pub buffer: Arc<SlotBuffer>,
    state: AtomicU8,
    /// True while the slot has a request out (or is connecting for one).
    pub busy: AtomicBool,
    /// True once the slot has a connection, false again while it cannot open one.
    pub connected: AtomicBool,
    wake: Notify,
}

impl SlotShared {
    fn set_state(&self, state: u8) {
        self.state.store(state, Ordering::Relaxed);
        self.wake.notify_one();
    }

    /// True while the slot may send.
    pub fn is_active(&self) -> bool {
        self.state.load(Ordering::Relaxed) == ACTIVE
    }

    /// Waits while the slot is paused; false once it is stopped.
    pub async fn wait_while_paused(&self) -> bool {
        loop {
            match self.state.load(Ordering::Relaxed) {
                ACTIVE => return true,
                PAUSED => self.wake.notified().await,
                _ => return false,
            }
        }
    }

    /// Waits until `until`, cut short when the slot is paused or stopped.
    pub async fn sleep_while_active(&self, until: tokio::time::Instant) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => return,
                _ = self.wake.notified() => {}
            }
            if !self.is_active() {
                return;
            }
        }
    }
}

/// A count of sends still allowed (`--request-count`, warm-up), shared by the slots.
pub type Budget = Option<Arc<AtomicI64>>;

/// A budget of `count` sends (`None`: no limit).
pub fn budget(count: Option<u64>) -> Budget {
    count.map(|c| Arc::new(AtomicI64::new(c as i64)))
}

/// Takes one send from `budget`; false when none is left.
pub fn take_budget(budget: &Budget) -> bool {
    budget
        .as_ref()
        .is_none_or(|b| b.fetch_sub(1, Ordering::Relaxed) > 0)
}

struct Slot {
    shared: Arc<SlotShared>,
    task: Option<JoinHandle<()>>,
}

impl Slot {
    fn finished(&self) -> bool {
        self.task.as_ref().is_none_or(JoinHandle::is_finished)
    }
}

/// A driver's slots.
#[derive(Default)]
pub struct SlotSet {
    slots: Vec<Slot>,
}

impl SlotSet {
    /// How many slots a move to `concurrency` starts (new ones, and ended ones restarted).
    pub fn starting(&self, concurrency: usize) -> usize {
        let restarted = (self.slots.iter().take(concurrency))
            .filter(|s| s.finished())
            .count();
        concurrency.saturating_sub(self.slots.len()) + restarted
    }

    /// Runs exactly `concurrency` slots: starts missing ones (and ended ones) with
    /// `spawn(index, shared)`, pauses extra ones after what they are doing (a paused slot
    /// goes on where it was when resumed).
    pub fn resize(
        &mut self,
        concurrency: usize,
        mut spawn: impl FnMut(usize, Arc<SlotShared>) -> JoinHandle<()>,
    ) {
        for index in 0..self.slots.len() {
            let keep = index < concurrency;
            let slot = &mut self.slots[index];
            slot.shared.set_state(if keep { ACTIVE } else { PAUSED });
            if keep && slot.finished() {
                slot.task = Some(spawn(index, slot.shared.clone()));
            }
        }
        while self.slots.len() < concurrency {
            let shared = Arc::new(SlotShared::default());
            let task = spawn(self.slots.len(), shared.clone());
            self.slots.push(Slot {
                shared,
                task: Some(task),
            });
        }
    }

    /// Moves every sample finished by `boundary` into `out`.
    pub fn drain_until(&self, boundary: Instant, out: &mut Drained) {
        for slot in &self.slots {
            slot.shared.buffer.drain_until(boundary, out);
        }
    }

    /// Samples waiting in the buffers.
    pub fn pending_samples(&self) -> usize {
        self.slots.iter().map(|s| s.shared.buffer.len()).sum()
    }

    /// How many of the first `concurrency` slots have a connection.
    pub fn connected_slots(&self, concurrency: usize) -> usize {
        let connected = |s: &&Slot| s.shared.connected.load(Ordering::Relaxed);
        self.slots
            .iter()
            .take(concurrency)
            .filter(connected)
            .count()
    }

    /// Slots with a request out right now.
    pub fn in_flight(&self) -> u64 {
        let busy = |s: &&Slot| s.shared.busy.load(Ordering::Relaxed);
        self.slots.iter().filter(busy).count() as u64
    }

    /// True when no slot task is running (a budget ran out). Only meaningful while a
    /// budget is set: otherwise slots pause instead of ending.
    pub fn all_finished(&self) -> bool {
        self.slots.iter().all(Slot::finished)
    }

    /// Stops every slot, waiting for what is in flight up to `grace`.
    pub async fn stop(&mut self, grace: Duration) {
        for slot in &self.slots {
            slot.shared.set_state(STOPPED);
        }
        for slot in &mut self.slots {
            if let Some(task) = slot.task.take() {
                let abort = task.abort_handle();
                if tokio::time::timeout(grace, task).await.is_err() {
                    abort.abort();
                }
            }
        }
    }
}

/// Whether each request (or session) goes to the next server in turn instead of its slot's
/// (slot i's is server i mod n), and whose turn it is: on when the slots cannot be dealt
/// evenly over the servers (1 in flight over 2), as AIPerf's round_robin sends them.
#[derive(Debug, Default)]
pub struct Rotation {
    on: AtomicBool,
    next: AtomicUsize,
}

impl Rotation {
    /// Turns the rotation on for `slots` over `servers` when they do not divide evenly
    /// (and `free`: nothing binds a slot to its server).
    pub fn set_for(&self, slots: usize, servers: usize, free: bool) {
        let uneven = servers > 1 && !slots.is_multiple_of(servers);
        self.on.store(uneven && free, Ordering::Relaxed);
    }

    /// The server the next request (or session) of a slot of server `home` goes to.
    pub fn server(&self, home: usize, servers: usize) -> usize {
        match self.on.load(Ordering::Relaxed) {
            true => self.next.fetch_add(1, Ordering::Relaxed) % servers.max(1),
            false => home,
        }
    }
}
