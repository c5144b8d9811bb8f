//! The multi-turn chat-session settings, checked once: how synthetic sessions are made
//! (AIPerf's `--conversation-num`, `--session-turns-mean/-stddev`), how long a session waits
//! between turns (`--session-turn-delay-mean/-stddev`, `--session-delay-ratio`) — both for
//! the dataset box — and how many sessions are in flight (perf_analyzer's
//! `--session-concurrency`), for the load box. Sessions carry their history as chat
//! messages: they need `--service-kind openai` and the chat endpoint.

use super::{ConcurrencyRange, Endpoint, LoadMode, OpenAiConfig, ServiceKind};
use crate::cli::{ProfileArgs, SessionArgs};
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::number::within;

/// Most synthetic sessions, and most turns a session is drawn with on average.
const MAX_SESSIONS: u64 = 100_000;
const MAX_TURNS_MEAN: u64 = 1_000;
/// Longest mean wait between turns: an hour.
const MAX_DELAY_MS: f64 = 3_600_000.0;
/// Most sessions in flight.
const MAX_SESSION_CONCURRENCY: u64 = 100_000;

/// How long a session waits after a turn's answer before its next turn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnDelay {
    pub mean_ms: f64,
    pub stddev_ms: f64,
    /// Multiplies every drawn wait.
    pub ratio: f64,
}

impl TurnDelay {
    /// Whether any wait is asked for at all.
    pub fn waits(&self) -> bool {
        self.mean_ms > 0.0 && self.ratio > 0.0
    }
}

/// The dataset's part: synthetic sessions to make, and the waits between turns.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionData {
    /// Synthetic sessions to make (`None`: the sessions come from the input file, if any).
    pub synthetic: Option<SyntheticSessions>,
    pub delay: TurnDelay,
}

/// `--conversation-num` sessions of a drawn number of turns each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyntheticSessions {
    pub count: u32,
    pub turns_mean: u32,
    pub turns_stddev: f64,
}

/// Reads the session flags: the dataset's part (`None` when no session flag was given),
/// and the load's part, the number of sessions in flight. `llm` is the OpenAI settings of
/// an OpenAI run.
pub(super) fn parse(
    args: &ProfileArgs,
    kind: ServiceKind,
    llm: Option<&OpenAiConfig>,
) -> RunResult<(Option<SessionData>, Option<u32>)> {
    let flags = &args.sessions;
    if !flags.any() {
        return Ok((None, None));
    }
    let concurrency = parse_concurrency(flags)?;
    check_api(flags, kind, llm)?;
    let synthetic = match flags.asks_synthetic() || concurrency.is_some() {
        true => Some(synthetic(flags, llm)?),
        false => None,
    };
    let delay = TurnDelay {
        mean_ms: delay_ms(flags.turn_delay_mean, "--session-turn-delay-mean")?,
        stddev_ms: delay_ms(flags.turn_delay_stddev, "--session-turn-delay-stddev")?,
        ratio: within(
            "--session-delay-ratio",
            flags.turn_delay_ratio.unwrap_or(1.0),
            0.0,
            1000.0,
            "",
        )?,
    };
    Ok((Some(SessionData { synthetic, delay }), concurrency))
}

fn parse_concurrency(flags: &SessionArgs) -> RunResult<Option<u32>> {
    match flags.session_concurrency {
        None => Ok(None),
        Some(n) if n == 0 || n > MAX_SESSION_CONCURRENCY => Err(RunError::bad_option(format!(
            "--session-concurrency {n} must be between 1 and {MAX_SESSION_CONCURRENCY}."
        ))),
        Some(n) => Ok(Some(n as u32)),
    }
}

/// Sessions carry their history as chat messages: an OpenAI run on the chat endpoint.
fn check_api(flags: &SessionArgs, kind: ServiceKind, llm: Option<&OpenAiConfig>) -> RunResult<()> {
    let flag = if flags.session_concurrency.is_some() {
        "--session-concurrency"
    } else {
        "The session flags (--conversation-num, --session-turns-mean, --session-turn-delay-mean, ...)"
    };
    if kind != ServiceKind::OpenAi {
        return Err(RunError::bad_option(format!(
            "{flag} runs multi-turn chat sessions, which perf_analyzer supports only with --service-kind openai."
        )));
    }
    match llm.map(|l| l.endpoint) {
        Some(Endpoint::Chat) => Ok(()),
        _ => Err(RunError::bad_option(format!(
            "{flag} runs multi-turn chat sessions, whose history goes as chat messages: use --endpoint-type chat (or --endpoint v1/chat/completions)."
        ))),
    }
}

/// The synthetic sessions: `--conversation-num` (default `--num-prompts`) sessions.
fn synthetic(flags: &SessionArgs, llm: Option<&OpenAiConfig>) -> RunResult<SyntheticSessions> {
    let default_count = llm.map_or(100, |l| l.num_prompts as u64);
    let count = flags.conversation_num.unwrap_or(default_count);
    if count == 0 || count > MAX_SESSIONS {
        return Err(RunError::bad_option(format!(
            "--conversation-num {count} must be between 1 and {MAX_SESSIONS}."
        )));
    }
    let turns_mean = flags.turns_mean.unwrap_or(1);
    if turns_mean == 0 || turns_mean > MAX_TURNS_MEAN {
        return Err(RunError::bad_option(format!(
            "--session-turns-mean {turns_mean} must be between 1 and {MAX_TURNS_MEAN}."
        )));
    }
    let turns_stddev = within(
        "--session-turns-stddev",
        flags.turns_stddev.unwrap_or(0.0),
        0.0,
        MAX_TURNS_MEAN as f64,
        "turns",
    )?;
    Ok(SyntheticSessions {
        count: count as u32,
        turns_mean: turns_mean as u32,
        turns_stddev,
    })
}

fn delay_ms(value: Option<f64>, flag: &str) -> RunResult<f64> {
    within(flag, value.unwrap_or(0.0), 0.0, MAX_DELAY_MS, "ms")
}

/// `--session-concurrency N` is the closed loop's concurrency N, run by the session driver;
/// it does not combine with another load mode or a concurrency range.
pub(super) fn apply_concurrency(
    sessions: Option<u32>,
    args: &ProfileArgs,
    mode: &LoadMode,
    concurrency: &mut ConcurrencyRange,
) -> RunResult<()> {
    let Some(n) = sessions else {
        return Ok(());
    };
    let other_concurrency = args.concurrency_range.is_some()
        || args.old_concurrency.is_some()
        || args.old_max_concurrency.is_some()
        || args.old_dynamic_concurrency;
    if other_concurrency || !matches!(mode, LoadMode::Concurrency) {
        return Err(RunError::bad_option(
            "--session-concurrency is the load mode of a sessions run (N sessions in flight): drop the other load flag (--concurrency-range, --request-rate-range, ...), or use --concurrency-range alone to sweep the sessions in flight.",
        ));
    }
    *concurrency = ConcurrencyRange {
        start: n,
        end: n,
        step: 1,
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::cli::{normalize_args, Cli, Command};
    use crate::config::Config;
    use clap::Parser;
    use inferperf_wire::error::RunResult;

    fn from_line(args: &[&str]) -> RunResult<Config> {
        let mut all = vec!["inferperf", "-m", "m"];
        all.extend_from_slice(args);
        let line = normalize_args(all.iter().map(|s| s.to_string()).collect());
        let Command::Profile(p) = Cli::try_parse_from(line).expect("flags parse").command else {
            panic!("expected profile");
        };
        Config::from_args(&p)
    }

    #[test]
    fn session_flags_make_synthetic_sessions_and_their_concurrency() {
        let cfg = from_line(&[
            "--service-kind",
            "openai",
            "--endpoint-type",
            "chat",
            "--conversation-num",
            "4",
            "--session-turns-mean",
            "3",
            "--session-turn-delay-mean",
            "5",
            "--session-concurrency",
            "2",
        ])
        .unwrap();
        let data = cfg.data.sessions.unwrap();
        let synthetic = data.synthetic.unwrap();
        assert_eq!((synthetic.count, synthetic.turns_mean), (4, 3));
        assert_eq!(data.delay.mean_ms, 5.0);
        assert_eq!(cfg.load.session_concurrency, Some(2));
        assert_eq!(
            (cfg.load.concurrency.start, cfg.load.concurrency.end),
            (2, 2)
        );
        let aliases = from_line(&[
            "--service-kind",
            "openai",
            "--endpoint-type",
            "chat",
            "--num-sessions",
            "7",
            "--conversation-turn-mean",
            "2",
            "--conversation-turn-delay-ratio",
            "0.5",
        ])
        .unwrap();
        let data = aliases.data.sessions.unwrap();
        assert_eq!(data.synthetic.unwrap().count, 7);
        assert_eq!(data.delay.ratio, 0.5);
    }

    #[test]
    fn bad_session_flags_are_one_sentence() {
        let refused = |line: &[&str]| from_line(line).unwrap_err().to_string();
        let message = refused(&["--session-concurrency", "2"]);
        assert!(
            message.contains("only with --service-kind openai"),
            "{message}"
        );
        let message = refused(&[
            "--service-kind",
            "openai",
            "--endpoint-type",
            "completions",
            "--num-sessions",
            "2",
        ]);
        assert!(message.contains("--endpoint-type chat"), "{message}");
        let message = refused(&[
            "--service-kind",
            "openai",
            "--endpoint-type",
            "chat",
            "--session-turns-mean",
            "0",
        ]);
        assert!(message.contains("--session-turns-mean 0"), "{message}");
        let message = refused(&[
            "--service-kind",
            "openai",
            "--endpoint-type",
            "chat",
            "--session-concurrency",
            "2",
            "--request-rate-range",
            "5",
        ]);
        assert!(message.contains("drop the other load flag"), "{message}");
        let message = refused(&[
            "--service-kind",
            "openai",
            "--endpoint-type",
            "chat",
            "--session-turn-delay-mean=-1",
        ]);
        assert!(message.contains("--session-turn-delay-mean"), "{message}");
    }
}
