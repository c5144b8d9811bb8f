//! Multi-turn sessions at a request rate (`--request-rate` or `--request-intervals` over a
//! dataset of sessions), as AIPerf plays them: the rate's schedule ticks, and each tick sends
//! one turn — the later turn of a session that has waited longest for one (its previous
//! turn answered, and its `delay` passed), or else the first turn of a new session. A tick
//! that finds neither (every session started, none waiting; or `--concurrency` sessions
//! already playing) sends nothing. So the rate is the rate of turns, a session's turns go
//! in order, and sessions under way finish before new ones crowd them out.

use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio::sync::oneshot;

use super::{spent, wait_until, Pacing, Reservation, Reserving, Starting, STOP_CHECK};
use crate::load::schedule::Schedule;
use crate::load::sessions::{Pace, SessionPlan, Stop};
use crate::load::timer::{lower_timer_slack, PreciseTimer};

/// Ticks the schedule and gives each tick to a waiting turn or a new session.
pub(super) struct Ticker {
    schedule: Schedule,
    starting: Starting,
    threads: usize,
}

impl Ticker {
    pub fn new(schedule: Schedule, starting: Starting, threads: usize) -> Self {
        Ticker {
            schedule,
            starting,
            threads: threads.max(1),
        }
    }

    pub async fn run(mut self) {
        let shared = self.starting.shared.clone();
        lower_timer_slack();
        let timer = PreciseTimer::new().ok();
        let origin = Instant::now();
        let mut started = 0usize;
        while let Some(offset) = self.schedule.next_offset() {
            let at = origin + offset;
            if !wait_until(timer.as_ref(), at, &shared).await || spent(&shared.turns) {
                break;
            }
            if shared.give_tick(at) {
                continue;
            }
            if shared.sessions_spent() {
                if shared.live.load(Ordering::Acquire) == 0 {
                    break;
                }
                continue;
            }
            if let Some(cap) = &shared.cap {
                if !cap.try_enter() {
                    continue;
                }
            }
            let pacing = Pacing::Ticks { start: at };
            let thread = started % self.threads;
            let placed = shared.cap.is_some();
            if self.starting.start(thread, None, pacing, placed).is_none() {
                if let Some(cap) = &shared.cap {
                    cap.leave();
                }
                continue;
            }
            started += 1;
        }
        // No tick comes any more: the turns in line, and any that would join it, stop.
        shared.starters.fetch_sub(1, Ordering::AcqRel);
        shared.end_ticks();
    }
}

/// When a session's turns go at a rate: the first at the tick that started it, each later
/// one (after its `delay`, when the dataset gives one) at the next tick it is given.
pub(super) struct TickPace {
    start: Instant,
    turn: Reservation,
}

impl TickPace {
    pub fn new(start: Instant, turn: Reservation) -> Self {
        TickPace { start, turn }
    }

    /// Waits in line for a tick; the tick's instant, or `Stop`.
    async fn next_tick(&self) -> Result<Instant, Stop> {
        let shared = &self.turn.shared;
        let (sender, mut tick) = oneshot::channel();
        shared.wait_for_tick(sender);
        loop {
            if shared.stopped() || shared.starters.load(Ordering::Acquire) == 0 {
                return Err(Stop);
            }
            match tokio::time::timeout(STOP_CHECK, &mut tick).await {
                Ok(Ok(at)) => return Ok(at),
                Ok(Err(_)) => return Err(Stop),
                Err(_) => {}
            }
        }
    }
}

impl Reserving for TickPace {
    fn reservation(&self) -> &Reservation {
        &self.turn
    }
}

impl Pace for TickPace {
    async fn due(
        &self,
        plan: &SessionPlan,
        index: usize,
        place: usize,
    ) -> Result<Option<Instant>, Stop> {
        let due = match place {
            0 => self.start,
            _ => {
                if let Some(delay) = plan.turns[index].delay() {
                    let after = Instant::now() + delay;
                    if !wait_until(None, after, &self.turn.shared).await {
                        return Err(Stop);
                    }
                }
                self.next_tick().await?
            }
        };
        match self.turn.take() {
            true => Ok(Some(due)),
            false => Err(Stop),
        }
    }

    fn in_flight(&self, busy: bool) {
        if !busy {
            self.turn.release();
        }
    }
}
