//! The figures of text generation, per window: what a request to an LLM produced (output
//! and input tokens) and how fast (time to second token, inter-token latency, tokens per
//! second per user), the HTTP phases of each request, and how many requests met the
//! `--slo` limits (goodput). Defined as GenAI-Perf defines them: inter-token latency is one
//! value per request, `(request latency − time to first token) / (output tokens − 1)`, so an
//! event that carries several tokens counts as that many; the raw gaps between events
//! (inter-chunk latency) and time to first token are the window's `inter_response` and
//! `first_response`.

use super::distribution::{Compaction, Distribution};
use super::sample::Sample;
use crate::backend::TokenSource;
use crate::config::{MeasureConfig, SloCondition, SloFigure};

/// Per-request limits a request must meet to count towards goodput (ns each; `None`: no
/// limit on that figure). Built from the `--slo` conditions and AIPerf's `--goodput`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GoodputRule {
    pub ttft_ns: Option<u64>,
    pub itl_ns: Option<u64>,
    pub latency_ns: Option<u64>,
}

impl GoodputRule {
    /// The strictest limit of each figure among the `--slo` conditions: a request is good
    /// when each of its own figures is within them (as GenAI-Perf's `--goodput`).
    pub fn from_slo(conditions: &[SloCondition]) -> GoodputRule {
        let mut rule = GoodputRule::default();
        for c in conditions {
            let limit = Some(((c.limit_us * 1000.0) as u64).saturating_sub(c.strict as u64));
            let slot = match c.figure {
                SloFigure::Latency => &mut rule.latency_ns,
                SloFigure::Ttft => &mut rule.ttft_ns,
                SloFigure::Itl => &mut rule.itl_ns,
            };
            *slot = (*slot).min(limit).or(limit);
        }
        rule
    }

    /// The run's rule: its `--slo` conditions and its `--goodput` limits, the strictest of
    /// each figure.
    pub fn for_run(measure: &MeasureConfig) -> GoodputRule {
        let rule = GoodputRule::from_slo(&measure.slo);
        let ns = |ms: Option<f64>| ms.map(|ms| (ms * 1e6) as u64);
        let limits = &measure.goodput;
        let stricter = |a: Option<u64>, b: Option<u64>| a.min(b).or(a).or(b);
        GoodputRule {
            ttft_ns: stricter(rule.ttft_ns, ns(limits.ttft_ms)),
            itl_ns: stricter(rule.itl_ns, ns(limits.itl_ms)),
            latency_ns: stricter(rule.latency_ns, ns(limits.latency_ms)),
        }
    }

    /// Whether any limit is set.
    pub fn is_set(&self) -> bool {
        self.ttft_ns.is_some() || self.itl_ns.is_some() || self.latency_ns.is_some()
    }

    fn met(&self, ttft_ns: u64, itl_ns: Option<u64>, latency_ns: u64) -> bool {
        let within = |limit: Option<u64>, value: u64| limit.is_none_or(|l| value <= l);
        within(self.ttft_ns, ttft_ns)
            && within(self.latency_ns, latency_ns)
            && itl_ns.is_none_or(|itl| within(self.itl_ns, itl))
    }
}

/// The generation figures of the successful requests of a window (or of merged windows).
#[derive(Debug, Clone, Default)]
pub struct TokenStats {
    /// Output tokens per request.
    pub output_tokens: Distribution,
    /// Input (prompt) tokens per request.
    pub input_tokens: Distribution,
    /// From the first answer to the second, ns (requests with two answers or more).
    pub second_token: Distribution,
    /// Inter-token latency per request, ns (requests with two output tokens or more).
    pub inter_token: Distribution,
    /// Output tokens per second per user (1 / inter-token latency), in thousandths.
    pub per_user_milli: Distribution,
    /// HTTP phases per request, ns: opening a connection (0 when one was reused), sending,
    /// waiting for the first byte of the body (of a stream: its first event), receiving
    /// from there to the end.
    pub connecting: Distribution,
    pub sending: Distribution,
    pub waiting: Distribution,
    pub receiving: Distribution,
    /// Reasoning tokens per request (among its output tokens).
    pub reasoning_tokens: Distribution,
    /// Output tokens that are not reasoning, per request (AIPerf's `output_token_count`).
    pub content_tokens: Distribution,
    /// From the scheduled send to the first content that is not reasoning, ns (time to
    /// first output token; requests that had some).
    pub first_output: Distribution,
    /// The server's `usage.prompt_tokens` per request that sent it (its chat template in).
    pub usage_input_tokens: Distribution,
    /// The server's `usage.prompt_tokens_details.cached_tokens` per request that sent it:
    /// prompt tokens served from its prefix cache (AIPerf's
    /// `usage_prompt_cache_read_tokens`).
    pub usage_cached_tokens: Distribution,
    /// |server − tokenizer| / tokenizer of the prompt and of the answer, in thousandths of a
    /// percent, per request that both counted (AIPerf's `usage_*_tokens_diff_pct`).
    pub usage_prompt_diff: Distribution,
    pub usage_completion_diff: Distribution,
    /// Requests whose output length differs from the `max_tokens` asked by more than
    /// [`OSL_MISMATCH_PCT`], and |output − asked| / asked of every request that asked, in
    /// thousandths of a percent (AIPerf's `osl_mismatch_count`, `osl_mismatch_diff_pct`).
    pub osl_mismatch: u64,
    pub osl_mismatch_diff: Distribution,
    /// Tokens asked and produced by the requests that asked for a length.
    pub asked_tokens: u64,
    pub asked_produced: u64,
    /// Requests whose tokens arrived coalesced: most gaps between their events shorter
    /// than [`COALESCED_GAP_NS`], as when the client read many events at once. Kept out of
    /// the inter-token and per-user figures, which would be near 0 and near infinite.
    pub coalesced: u64,
    /// Requests within every `--slo` limit (only counted when a limit is set).
    pub good: u64,
    /// Requests per way their output tokens were counted.
    pub by_usage: u64,
    pub by_tokenizer: u64,
    pub by_nothing: u64,
    /// Requests asked to stream whose answer came in one piece.
    pub unstreamed: u64,
    /// What counted the tokens (the run's tokenizer, described).
    pub counted_with: Option<std::sync::Arc<str>>,
}

/// A gap between two events shorter than this is the client reading them together, not
/// the server's decode time (a CPU-bound decode step takes tens of microseconds at least).
pub const COALESCED_GAP_NS: u64 = 20_000;
/// The output length may differ from `max_tokens` by this much before it is a mismatch.
pub const OSL_MISMATCH_PCT: f64 = 5.0;

/// |a − b| / b in thousandths of a percent.
fn diff_milli_pct(a: u32, b: u32) -> u64 {
    ((a as f64 - b as f64).abs() / b.max(1) as f64 * 1e5).round() as u64
}

/// Whether most of a stream's gaps are shorter than [`COALESCED_GAP_NS`].
pub fn coalesced(gaps: &[u64]) -> bool {
    let short = gaps.iter().filter(|&&g| g < COALESCED_GAP_NS).count();
    gaps.len() >= 2 && short * 2 > gaps.len()
}

impl TokenStats {
    /// Adds one successful generation; `gaps` are the gaps between its answers.
    pub fn add(&mut self, sample: &Sample, gaps: &[u64], goodput: &GoodputRule) {
        let tokens = sample.tokens;
        self.output_tokens.record(tokens.output as u64);
        self.input_tokens.record(tokens.input as u64);
        if let Some(&gap) = gaps.first() {
            self.second_token.record(gap);
        }
        let coalesced = coalesced(gaps);
        self.coalesced += coalesced as u64;
        let itl = inter_token_ns(sample).filter(|_| !coalesced);
        if let Some(itl) = itl {
            self.inter_token.record(itl);
            self.per_user_milli
                .record((1e12 / itl.max(1) as f64).round() as u64);
        }
        self.add_counts(sample);
        let service = sample.latency_ns();
        let (send, recv) = (sample.send_ns as u64, sample.recv_ns as u64);
        self.connecting.record(sample.connect_ns as u64);
        self.sending.record(send);
        self.waiting.record(service.saturating_sub(send + recv));
        self.receiving.record(recv);
        if goodput.is_set()
            && goodput.met(
                sample.first_response_ns(),
                itl,
                sample.latency_from_schedule_ns(),
            )
        {
            self.good += 1;
        }
        match tokens.source {
            TokenSource::Usage => self.by_usage += 1,
            TokenSource::Tokenizer => self.by_tokenizer += 1,
            TokenSource::Missing => self.by_nothing += 1,
            TokenSource::None | TokenSource::InputOnly => {}
        }
        self.unstreamed += tokens.unstreamed as u64;
    }

    /// The counts beside the output length: reasoning, time to first output token, the
    /// server's and the tokenizer's counts against each other, the length asked.
    fn add_counts(&mut self, sample: &Sample) {
        let tokens = &sample.tokens;
        self.reasoning_tokens.record(tokens.reasoning as u64);
        self.content_tokens
            .record(tokens.output.saturating_sub(tokens.reasoning) as u64);
        if let Some(at) = tokens.first_output {
            let ns = at.saturating_duration_since(sample.scheduled).as_nanos() as u64;
            self.first_output.record(ns);
        }
        if let Some(cached) = tokens.usage_cached {
            self.usage_cached_tokens.record(cached as u64);
        }
        if let Some(server) = tokens.usage_input {
            self.usage_input_tokens.record(server as u64);
            if tokens.input > 0 {
                self.usage_prompt_diff
                    .record(diff_milli_pct(server, tokens.input));
            }
        }
        if let (Some(server), Some(counted)) = (tokens.usage_output, tokens.counted_output) {
            if counted > 0 {
                self.usage_completion_diff
                    .record(diff_milli_pct(server, counted));
            }
        }
        if let Some(asked) = tokens.asked.filter(|&a| a > 0) {
            let diff = diff_milli_pct(tokens.output, asked);
            self.osl_mismatch_diff.record(diff);
            self.osl_mismatch += (diff as f64 > OSL_MISMATCH_PCT * 1000.0) as u64;
            self.asked_tokens += asked as u64;
            self.asked_produced += tokens.output as u64;
        }
    }

    fn distributions(&mut self) -> [&mut Distribution; 17] {
        [
            &mut self.output_tokens,
            &mut self.input_tokens,
            &mut self.second_token,
            &mut self.inter_token,
            &mut self.per_user_milli,
            &mut self.connecting,
            &mut self.sending,
            &mut self.waiting,
            &mut self.receiving,
            &mut self.reasoning_tokens,
            &mut self.content_tokens,
            &mut self.first_output,
            &mut self.usage_input_tokens,
            &mut self.usage_cached_tokens,
            &mut self.usage_prompt_diff,
            &mut self.usage_completion_diff,
            &mut self.osl_mismatch_diff,
        ]
    }

    /// Adds another window's figures; neither may be compacted.
    pub fn merge(&mut self, other: &TokenStats) {
        let mut theirs = other.clone();
        for (mine, theirs) in self.distributions().into_iter().zip(theirs.distributions()) {
            mine.merge(theirs);
        }
        self.good += other.good;
        self.by_usage += other.by_usage;
        self.by_tokenizer += other.by_tokenizer;
        self.by_nothing += other.by_nothing;
        self.unstreamed += other.unstreamed;
        self.osl_mismatch += other.osl_mismatch;
        self.asked_tokens += other.asked_tokens;
        self.asked_produced += other.asked_produced;
        self.coalesced += other.coalesced;
        if self.counted_with.is_none() {
            self.counted_with = other.counted_with.clone();
        }
    }

    /// Drops the histograms, keeping what `keep` says (see `Distribution::compact`).
    pub fn compact(&mut self, keep: &Compaction) {
        for d in self.distributions() {
            d.compact(keep);
        }
    }

    /// Whether any request generated text (not only embeddings or rankings, whose input
    /// tokens alone are counted).
    pub fn generates(&self) -> bool {
        self.by_usage + self.by_tokenizer + self.by_nothing > 0
    }

    /// The way most requests' output tokens were counted.
    pub fn main_source(&self) -> TokenSource {
        let counts = [
            (self.by_usage, TokenSource::Usage),
            (self.by_tokenizer, TokenSource::Tokenizer),
            (self.by_nothing, TokenSource::Missing),
        ];
        counts
            .into_iter()
            .filter(|(n, _)| *n > 0)
            .max_by_key(|(n, _)| *n)
            .map_or(TokenSource::None, |(_, s)| s)
    }
}

/// `(latency − time to first token) / (output tokens − 1)` in ns, for a request of two
/// output tokens or more that came in two answers or more (as GenAI-Perf requires): an
/// answer in one piece has no decode time to share out, and would count as 0 ns per token.
pub fn inter_token_ns(sample: &Sample) -> Option<u64> {
    let tokens = sample.tokens.output;
    if tokens < 2 || sample.answers < 2 {
        return None;
    }
    let decode = sample
        .done
        .saturating_duration_since(sample.first)
        .as_nanos() as u64;
    Some(decode / (tokens as u64 - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Tokens;
    use std::time::{Duration, Instant};

    fn generation(first_ms: u64, done_ms: u64, output: u32) -> Sample {
        let t = Instant::now();
        Sample {
            scheduled: t,
            sent: t,
            send_ns: 1_000,
            recv_ns: 2_000,
            first: t + Duration::from_millis(first_ms),
            done: t + Duration::from_millis(done_ms),
            answers: output.div_ceil(4),
            gaps: output.div_ceil(4) - 1,
            connect_ns: 0,
            request: 0,
            replica: 0,
            sequence_id: 0,
            sequence_end: false,
            turn: 0,
            tokens: Tokens {
                output,
                input: 100,
                source: TokenSource::Usage,
                unstreamed: false,
                ..Default::default()
            },
            error: None,
        }
    }

    #[test]
    fn events_of_several_tokens_count_every_token() {
        // 20 tokens, 4 per event: 5 events 8 ms apart; the decode took 32 ms for 19 tokens.
        let s = generation(40, 72, 20);
        let mut stats = TokenStats::default();
        stats.add(&s, &[8_000_000; 4], &GoodputRule::default());
        let itl = stats.inter_token.mean();
        assert!((itl - 32e6 / 19.0).abs() < 1.0, "{itl}");
        assert!((stats.second_token.mean() - 8e6).abs() < 1.0);
        assert!((stats.per_user_milli.mean() / 1000.0 - 19.0 / 0.032).abs() < 0.01);
        assert_eq!(stats.output_tokens.sum(), 20);
        assert_eq!(stats.main_source(), TokenSource::Usage);
        assert_eq!(stats.good, 0, "no rule, no goodput count");
    }

    #[test]
    fn the_rule_takes_the_strictest_limit_of_each_figure() {
        let slo =
            crate::config::parse_slo(&["ttft_p99<=200ms,ttft_avg<=100ms,itl_p99<20ms".into()]);
        let rule = GoodputRule::from_slo(&slo.unwrap());
        assert_eq!(rule.ttft_ns, Some(100_000_000));
        assert_eq!(rule.itl_ns, Some(19_999_999));
        assert_eq!(rule.latency_ns, None);
        assert!(!GoodputRule::from_slo(&[]).is_set());
    }

    #[test]
    fn an_answer_in_one_piece_has_no_inter_token_latency() {
        let mut stats = TokenStats::default();
        stats.add(&generation(40, 40, 3), &[], &GoodputRule::default());
        assert_eq!(stats.output_tokens.sum(), 3);
        assert_eq!(stats.inter_token.count(), 0);
        assert_eq!(stats.per_user_milli.count(), 0);
    }

    #[test]
    fn goodput_counts_requests_within_every_limit() {
        let rule = GoodputRule {
            ttft_ns: Some(50_000_000),
            itl_ns: Some(2_000_000),
            latency_ns: None,
        };
        let mut stats = TokenStats::default();
        stats.add(&generation(40, 72, 20), &[], &rule);
        stats.add(&generation(60, 92, 20), &[], &rule);
        stats.add(&generation(10, 100, 20), &[], &rule);
        stats.add(&generation(10, 11, 1), &[], &rule);
        assert_eq!(stats.good, 2, "late first token, slow decode: not good");
        let mut merged = TokenStats::default();
        merged.merge(&stats);
        merged.merge(&stats);
        assert_eq!((merged.good, merged.output_tokens.count()), (4, 8));
    }
}
