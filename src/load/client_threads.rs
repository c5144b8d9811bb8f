//! The client's own threads. Each runs a single-threaded tokio runtime with its own epoll,
//! timers and connections, and the in-flight slots are dealt out among them. A slot's whole
//! request — write, wait, read, record — stays on one thread, so no request ever crosses
//! threads: with tokio's work-stealing pool, the hand-offs between workers (a futex wake, a
//! context switch) cost more CPU per request than the request itself, and on a machine the
//! client shares with the server one thread keeps up with the most the server can answer
//! (bench/client/README.md has the figures). `--client-threads` adds threads for a client
//! that needs more than one core. Each thread shares its wake-ups with the open loop's
//! sender waiting on it, so that a send due when an answer wakes the thread goes out in
//! that wake-up.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::Instant;

use tokio::runtime::{Builder, Handle};
use tokio::sync::{oneshot, Notify};

thread_local! {
    /// When a sender of this thread is next due (while it waits), and how to wake it.
    static NEXT_DUE: Cell<Option<Instant>> = const { Cell::new(None) };
    static POKE: RefCell<Option<Arc<Notify>>> = const { RefCell::new(None) };
}

/// A sender of this client thread (the open loop's) will wait for its next due time:
/// `poke` wakes it when a wake-up of the thread finds that time come ([`set_next_due`]).
#[inline]
pub(crate) fn share_wakeups(poke: &Arc<Notify>) {
    POKE.with_borrow_mut(|slot| *slot = Some(poke.clone()));
}

/// When this thread's waiting sender is next due (`None`: it is not waiting).
#[inline]
pub(crate) fn set_next_due(due: Option<Instant>) {
    NEXT_DUE.set(due);
}

/// Called each time a client thread wakes (for an answer, say): a sender whose send is due
/// sends now, in this wake-up, rather than in one of its own a little later. A wake-up
/// costs the client more CPU than a request does, so sharing them is most of the open
/// loop's cost per request.
fn after_wake() {
    let Some(due) = NEXT_DUE.get() else {
        return;
    };
    if Instant::now() >= due {
        NEXT_DUE.set(None);
        POKE.with_borrow(|poke| poke.as_ref().map(|poke| poke.notify_one()));
    }
}

/// The client threads of one run; they stop when this is dropped.
pub struct ClientThreads {
    shards: Vec<Shard>,
}

struct Shard {
    handle: Handle,
    /// Dropping it lets the thread's runtime return and end the thread.
    _stop: oneshot::Sender<()>,
}

impl ClientThreads {
    /// Starts `count` (at least one) client threads. Must be called inside a tokio runtime:
    /// should the system refuse a thread, that runtime carries the thread's share instead.
    pub fn start(count: usize) -> Arc<ClientThreads> {
        let shards = (0..count.max(1))
            .map(|index| {
                start_shard(index).unwrap_or_else(|e| {
                    eprintln!("warning: cannot start client thread {index} ({e}); its connections run on the main threads.");
                    Shard {
                        handle: Handle::current(),
                        _stop: oneshot::channel().0,
                    }
                })
            })
            .collect();
        Arc::new(ClientThreads { shards })
    }

    /// The runtime that slot `index` runs on (slots are dealt round-robin).
    pub fn handle(&self, index: usize) -> &Handle {
        &self.shards[index % self.shards.len()].handle
    }

    pub fn len(&self) -> usize {
        self.shards.len()
    }

    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }
}

fn start_shard(index: usize) -> std::io::Result<Shard> {
    // Slots are spawned onto the thread from outside it, into its shared queue; by default
    // that queue is looked at once every 31 polls of local tasks, which at thousands of
    // slots kept connections from opening for tens of seconds while the first streams were
    // busy. Looking at it every tick costs one atomic load when it is empty.
    let runtime = Builder::new_current_thread()
        .enable_all()
        .global_queue_interval(1)
        .on_thread_unpark(after_wake)
        .build()?;
    let handle = runtime.handle().clone();
    let (stop, stopped) = oneshot::channel::<()>();
    std::thread::Builder::new()
        .name(format!("inferperf-client-{index}"))
        .spawn(move || {
            // Runs the slots spawned onto `handle` until the run drops its threads; tasks
            // still alive then are dropped with the runtime.
            let _ = runtime.block_on(stopped);
        })?;
    Ok(Shard {
        handle,
        _stop: stop,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn slots_are_dealt_round_robin_onto_their_own_threads() {
        let threads = ClientThreads::start(2);
        assert_eq!(threads.len(), 2);
        let mut names = Vec::new();
        for index in 0..4 {
            let name = threads
                .handle(index)
                .spawn(async { std::thread::current().name().map(String::from) })
                .await
                .unwrap();
            names.push(name.unwrap());
        }
        assert_eq!(
            names,
            [
                "inferperf-client-0",
                "inferperf-client-1",
                "inferperf-client-0",
                "inferperf-client-1"
            ]
        );
        assert_eq!(ClientThreads::start(0).len(), 1);
    }

    #[tokio::test]
    async fn dropping_the_threads_ends_their_tasks() {
        let threads = ClientThreads::start(1);
        let task = threads.handle(0).spawn(std::future::pending::<()>());
        drop(threads);
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), task).await;
        assert!(ended.expect("the task ended").unwrap_err().is_cancelled());
    }
}
