//! AIPerf's user-centric rate (`--user-centric-rate Q --num-users N`): N simulated users
//! share Q requests per second. Each user plays one multi-turn session and sends its next
//! turn N/Q seconds (the turn gap) after its previous one was due — at once when the
//! answer came later, the gap then counted from that send — never two turns of its own at
//! once. As in AIPerf the run starts in a steady state: N lanes whose first users start
//! 1/Q apart, all but the newest already part-way through their sessions (a user of lane k
//! has only its session's first few turns left), and each lane starts its next user, with
//! a whole session, when its previous user's turns were due to end — on schedule,
//! whatever the answers do. A user takes the next session of the dataset.
//!
//! `--concurrency C` caps the users with a turn to play (a user waits for a place before
//! its first turn and keeps it until its last); `--request-count` counts turns,
//! `--conversation-num` users. Each client thread runs its share of the lanes and plays
//! their users as its own tasks, on connections it keeps.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use super::{spent, wait_until, Pacing, Reservation, Reserving, Starting};
use crate::config::UserCentric;
use crate::load::client_threads::ClientThreads;
use crate::load::sessions::{Pace, SessionPlan, Stop};

/// One lane's first user: when it starts (in turn gaps of 1/Q from the start) and how
/// many of its session's turns it has left (`None`: all of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstUser {
    pub order: u32,
    pub turns: Option<u32>,
}

/// AIPerf's steady state at the start for `users` users whose sessions have `turns` turns
/// on average: user i of N has lived (N−i)/N of a session's L = max(1, turns−1) gaps, so
/// L − ⌊(N−i)·L/N⌋ turns are left (the oldest, with none, is replaced by a new user with a
/// whole session, who starts first); their starting places spread over 1..=N so that users
/// of a similar age do not start together.
pub fn first_users(users: u32, turns: u32) -> Vec<FirstUser> {
    let n = users.max(1) as u64;
    let lifetime = turns.saturating_sub(1).max(1) as u64;
    let spaced = gcd(n, lifetime) > 1;
    let step = (2..n).find(|&s| gcd(n, s) == 1).unwrap_or(1);
    let mut first = Vec::with_capacity(n as usize);
    for i in 0..n {
        let age = (n - i) * lifetime;
        let left = lifetime - age / n;
        if left == 0 {
            continue;
        }
        let place = match spaced {
            true => (i * step) % n,
            false => age % n,
        };
        first.push(FirstUser {
            order: (n - place) as u32,
            turns: Some(left as u32),
        });
    }
    first.push(FirstUser {
        order: 0,
        turns: None,
    });
    first
}

fn gcd(a: u64, b: u64) -> u64 {
    match b {
        0 => a,
        _ => gcd(b, a % b),
    }
}

/// Starts `users`' lanes on `threads`: their first users 1/Q apart from now, part-way
/// through their sessions as [`first_users`] says.
pub(super) fn start_lanes(
    users: UserCentric,
    starting: &Starting,
    threads: &Arc<ClientThreads>,
) -> Vec<JoinHandle<()>> {
    let origin = Instant::now();
    let stagger = 1.0 / users.rate;
    let first = first_users(users.users, starting.plan.rounded_turns());
    let count = threads.len().max(1);
    (starting.shared.starters).store(first.len(), Ordering::Relaxed);
    let lanes = first.into_iter().enumerate().map(|(lane, user)| {
        let offset = inferperf_wire::number::saturating_secs(user.order as f64 * stagger);
        let run = Lane {
            thread: lane % count,
            first_at: origin + offset,
            first_turns: user.turns,
            gap: users.turn_gap(),
            starting: starting.clone(),
        };
        threads.handle(lane % count).spawn(run.run())
    });
    lanes.collect()
}

impl SessionPlan {
    /// The sessions' mean number of turns, rounded as Python rounds (half to even).
    fn rounded_turns(&self) -> u32 {
        let total: usize = self.sessions.iter().map(Range::len).sum();
        let mean = total as f64 / self.sessions.len().max(1) as f64;
        mean.round_ties_even().max(1.0) as u32
    }
}

/// One lane: its first user, then a user with a whole session each time the previous
/// one's turns were due to end.
struct Lane {
    thread: usize,
    first_at: Instant,
    first_turns: Option<u32>,
    gap: Duration,
    starting: Starting,
}

impl Lane {
    async fn run(self) {
        let shared = self.starting.shared.clone();
        let mut at = self.first_at;
        let mut turns = self.first_turns;
        while wait_until(None, at, &shared).await && !spent(&shared.turns) {
            let pacing = Pacing::Gap {
                start: at,
                gap: self.gap,
            };
            let Some(played) = self.starting.start(self.thread, turns, pacing, false) else {
                break;
            };
            at += self.gap * played as u32;
            turns = None;
        }
        shared.starters.fetch_sub(1, Ordering::AcqRel);
    }
}

/// When a user's turns go: the first at its start, each next one the turn gap after the
/// previous one was due, or at once when that has passed (the gap then counts from now).
pub(super) struct UserPace {
    due: Mutex<Instant>,
    gap: Duration,
    turn: Reservation,
}

impl UserPace {
    pub fn new(start: Instant, gap: Duration, turn: Reservation) -> Self {
        UserPace {
            due: Mutex::new(start),
            gap,
            turn,
        }
    }

    fn lock_due(&self) -> std::sync::MutexGuard<'_, Instant> {
        self.due.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Reserving for UserPace {
    fn reservation(&self) -> &Reservation {
        &self.turn
    }
}

impl Pace for UserPace {
    async fn due(
        &self,
        _plan: &SessionPlan,
        _index: usize,
        place: usize,
    ) -> Result<Option<Instant>, Stop> {
        let due = {
            let mut due = self.lock_due();
            if place > 0 {
                *due = (*due + self.gap).max(Instant::now());
            }
            *due
        };
        let waited = due > Instant::now();
        if !wait_until(None, due, &self.turn.shared).await || !self.turn.take() {
            return Err(Stop);
        }
        Ok(waited.then_some(due))
    }

    fn in_flight(&self, busy: bool) {
        if !busy {
            self.turn.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lanes' first users as (order, turns left).
    fn lanes(users: u32, turns: u32) -> Vec<(u32, Option<u32>)> {
        let mut all: Vec<_> = (first_users(users, turns).into_iter())
            .map(|u| (u.order, u.turns))
            .collect();
        all.sort();
        all
    }

    #[test]
    fn the_start_is_aiperf_s_steady_state() {
        // AIPerf's worked example: 15 users of 20 turns; the new user first, then users
        // with 6, 11, 16, 2, … turns left, one every 1/Q.
        let left: Vec<u32> = lanes(15, 20).iter().skip(1).map(|l| l.1.unwrap()).collect();
        assert_eq!(left, [6, 11, 16, 2, 7, 12, 17, 3, 8, 13, 18, 4, 9, 14]);
        assert_eq!(lanes(15, 20)[0], (0, None));
        // Every user has its own place in 0..N.
        for (users, turns) in [(4, 3), (6, 4), (10, 5), (3, 2), (1, 2), (8, 9)] {
            let all = lanes(users, turns);
            assert_eq!(all.len(), users as usize, "{users} users, {turns} turns");
            let mut orders: Vec<u32> = all.iter().map(|l| l.0).collect();
            orders.dedup();
            assert_eq!(orders.len(), users as usize, "{users}/{turns}: {all:?}");
            assert!(all
                .iter()
                .all(|l| l.1.is_none_or(|t| t >= 1 && t < turns.max(2))));
        }
    }

    #[test]
    fn shared_factors_spread_the_users_by_a_coprime_step() {
        // 4 users of 3 turns: lifetime 2 shares a factor with 4, so places step by 3.
        assert_eq!(
            lanes(4, 3),
            [(0, None), (1, Some(1)), (2, Some(1)), (3, Some(2))]
        );
    }
}
