//! The multi-turn chat-session flags of `profile`: perf_analyzer's `--session-concurrency`
//! and AIPerf's conversation flags (with AIPerf's names and aliases), kept apart so the main
//! flag list stays readable. `config::sessions` checks them.

use clap::Args;

/// How multi-turn chat sessions are made and run (`--service-kind openai`, chat endpoint).
#[derive(Debug, Args, Clone, Default)]
pub struct SessionArgs {
    /// Keeps N multi-turn chat sessions in flight (perf_analyzer's): each sends its turns in
    /// order, every turn carrying the conversation so far, and the next session starts as
    /// one ends. --service-kind openai with --endpoint-type chat.
    #[arg(long, value_name = "N")]
    pub session_concurrency: Option<u64>,
    /// Synthetic sessions: how many distinct sessions to make (AIPerf's; the sessions are
    /// run over again until the measurement ends).
    #[arg(
        long = "conversation-num",
        visible_aliases = ["num-conversations", "num-sessions"],
        value_name = "N"
    )]
    pub conversation_num: Option<u64>,
    /// Synthetic sessions: the mean number of turns of a session (at least 1).
    #[arg(
        long = "session-turns-mean",
        visible_alias = "conversation-turn-mean",
        value_name = "N"
    )]
    pub turns_mean: Option<u64>,
    /// Synthetic sessions: the standard deviation of the number of turns.
    #[arg(
        long = "session-turns-stddev",
        visible_alias = "conversation-turn-stddev",
        value_name = "N"
    )]
    pub turns_stddev: Option<f64>,
    /// The mean wait in milliseconds between a turn's answer and the next turn (a file's
    /// turns without a delay of their own take it too).
    #[arg(
        long = "session-turn-delay-mean",
        visible_alias = "conversation-turn-delay-mean",
        value_name = "MS"
    )]
    pub turn_delay_mean: Option<f64>,
    /// The standard deviation of the wait between turns, in milliseconds.
    #[arg(
        long = "session-turn-delay-stddev",
        visible_alias = "conversation-turn-delay-stddev",
        value_name = "MS"
    )]
    pub turn_delay_stddev: Option<f64>,
    /// Scales every wait between turns drawn from the delay mean and stddev (0: none).
    #[arg(
        long = "session-delay-ratio",
        visible_alias = "conversation-turn-delay-ratio",
        value_name = "RATIO"
    )]
    pub turn_delay_ratio: Option<f64>,
}

impl SessionArgs {
    /// Whether any flag that makes synthetic sessions was given.
    pub fn asks_synthetic(&self) -> bool {
        self.conversation_num.is_some() || self.turns_mean.is_some() || self.turns_stddev.is_some()
    }

    /// Whether any session flag was given.
    pub fn any(&self) -> bool {
        self.asks_synthetic()
            || self.session_concurrency.is_some()
            || self.turn_delay_mean.is_some()
            || self.turn_delay_stddev.is_some()
            || self.turn_delay_ratio.is_some()
    }
}
