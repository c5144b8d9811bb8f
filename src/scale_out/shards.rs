//! How the shards of a run keep together. Each shard applies its part of the load by
//! itself (see `config::shard`); what they must share is *when*: the first window starts at
//! `--start-at` on every shard, or, under MPI, when every rank has warmed up; and under MPI a
//! level ends only when every rank's windows meet the stability rule, as perf_analyzer's
//! ranks agree. Under MPI each rank also measures its clock against rank 0's, which its
//! results file records so that `inferperf merge` can line the windows up.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;

use super::mpi::MpiWorld;
use crate::config::shard::{ShardPlan, ShardSource};
use crate::config::LoadConfig;
use crate::load::interrupt::Interrupt;
use crate::load::ties::{Agreement, Ties};
use inferperf_wire::error::{RunError, RunResult};

/// The ties between this process and the other shards of its run.
pub struct Coordinator {
    start_at: Option<SystemTime>,
    mpi: Option<MpiWorld>,
    /// This host's clock minus rank 0's, in seconds, when measured.
    clock_offset_s: Option<f64>,
}

impl Coordinator {
    /// No ties: an unsharded run.
    pub fn alone() -> Coordinator {
        Coordinator {
            start_at: None,
            mpi: None,
            clock_offset_s: None,
        }
    }

    /// Joins the run's shards: under MPI, initialises MPI, checks that the ranks are the
    /// shards the configuration says, and measures this clock against rank 0's.
    pub async fn join(load: &LoadConfig) -> RunResult<Coordinator> {
        let Some(shard) = &load.shard else {
            return Ok(Coordinator::alone());
        };
        let mut coordinator = Coordinator {
            start_at: shard.start_at,
            mpi: None,
            clock_offset_s: None,
        };
        if shard.source == ShardSource::Mpi {
            let world = MpiWorld::start()?;
            check_world(shard, &world)?;
            coordinator.clock_offset_s = Some(clock_offset(&world).await?);
            coordinator.mpi = Some(world);
        }
        Ok(coordinator)
    }

    /// This host's clock minus the reference shard's (rank 0), when measured.
    pub fn clock_offset_s(&self) -> Option<f64> {
        self.clock_offset_s
    }

    /// Waits until the first window may start: `--start-at`, or every MPI rank ready.
    /// Returns a note when `--start-at` had already passed.
    async fn wait_first_window(&self, interrupt: &Interrupt) -> RunResult<Option<String>> {
        if let Some(world) = &self.mpi {
            world.barrier().await?;
        }
        let Some(at) = self.start_at else {
            return Ok(None);
        };
        match at.duration_since(SystemTime::now()) {
            Ok(wait) => {
                interrupt.sleep(wait).await;
                Ok(None)
            }
            Err(late) => Ok(Some(format!(
                "The first window started {:.3} s after --start-at: discovery and warm-up took longer; start the shards earlier or set --start-at later.",
                late.duration().as_secs_f64()
            ))),
        }
    }

    /// Shares this shard's view of the window just cut; alone, its own view is the answer.
    async fn agree_on(&self, done: bool, interrupted: bool) -> RunResult<Agreement> {
        let Some(world) = &self.mpi else {
            return Ok(Agreement::alone(done, interrupted));
        };
        let min = world
            .all_min(vec![i32::from(done), -i32::from(interrupted)])
            .await?;
        Ok(Agreement {
            all_done: min.first() == Some(&1),
            any_interrupted: min.get(1) == Some(&-1),
        })
    }
}

impl Ties for Coordinator {
    fn first_window<'a>(
        &'a self,
        interrupt: &'a Interrupt,
    ) -> BoxFuture<'a, RunResult<Option<String>>> {
        Box::pin(self.wait_first_window(interrupt))
    }

    fn agree(&self, done: bool, interrupted: bool) -> BoxFuture<'_, RunResult<Agreement>> {
        Box::pin(self.agree_on(done, interrupted))
    }
}

/// The ranks must be the shards: a `--shard` flag beside MPI would split the load twice.
fn check_world(shard: &ShardPlan, world: &MpiWorld) -> RunResult<()> {
    if (world.rank, world.size) != (shard.index, shard.count) {
        return Err(RunError::failed(format!(
            "MPI says this is rank {} of {}, the environment said {} of {}: start every rank with the same MPI launcher.",
            world.rank, world.size, shard.index, shard.count
        )));
    }
    Ok(())
}

/// This clock minus rank 0's: every rank reads its clock as it leaves a barrier, and rank 0
/// sends its reading. Good to the barrier's exit spread (microseconds on one host).
async fn clock_offset(world: &MpiWorld) -> RunResult<f64> {
    let mine = unix_seconds(world.barrier().await?);
    let reference = world.broadcast(mine).await?;
    Ok(mine - reference)
}

fn unix_seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs_f64()
}
