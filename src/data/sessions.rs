//! Multi-turn chat sessions, protocol-free: synthetic sessions (`--conversation-num` sessions
//! of a drawn number of turns, each turn a synthetic prompt of exactly the drawn number of
//! tokens, as the prompts module makes them), the waits between turns drawn from the delay
//! flags, where each session lies in the dataset's entries, and the text a turn sends with
//! its history — what its input length is counted from. The driver puts the history
//! together as the session runs; the adapter turns it into a request.

use std::ops::Range;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

use super::entry::{Entry, Prompt, Turn};
use super::lengths::{corpus_words, LengthDraw};
use super::prompt_maker::{draw, exact_text, max_tokens, vocabulary};
use super::prompts::entry;
use super::tokenizer::TokenCount;
use crate::config::datasets::{Corpus, DatasetSettings};
use crate::config::sessions::{SyntheticSessions, TurnDelay};
use crate::config::OpenAiConfig;
use inferperf_wire::error::RunResult;

/// Offsets the seed of the delays from the prompts' one, so that they are drawn apart.
const DELAY_SEED: u64 = 0x5e55_1015;

/// `sessions.count` sessions, their turns consecutive entries in order; each turn a prompt
/// of `--synthetic-input-tokens-mean/-stddev` tokens, each turn after the first waiting a
/// wait drawn from `delay`.
pub fn synthetic(
    sessions: &SyntheticSessions,
    delay: &TurnDelay,
    llm: &OpenAiConfig,
    shape: &DatasetSettings,
    seed: u64,
    counter: &dyn TokenCount,
) -> RunResult<Vec<Entry>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut delays = SmallRng::seed_from_u64(seed ^ DELAY_SEED);
    let words = match shape.corpus {
        Corpus::Sonnet => vocabulary(&mut rng),
        other => corpus_words(other, &mut rng),
    };
    let lengths = LengthDraw::of(shape, llm);
    let mut entries = Vec::new();
    for session in 0..sessions.count {
        let turns = draw(&mut rng, sessions.turns_mean, sessions.turns_stddev);
        for number in 0..turns {
            let (tokens, answer) = match &lengths {
                Some(lengths) => {
                    let (tokens, answer) = lengths.draw(&mut rng);
                    (tokens, Some(answer))
                }
                None => (
                    draw(&mut rng, llm.input_tokens_mean, llm.input_tokens_stddev),
                    None,
                ),
            };
            let leading = entries.len();
            let (text, counted) = exact_text(counter, &mut rng, &words, leading, tokens)?;
            let prompt = Prompt {
                text,
                input_tokens: counted,
                max_tokens: answer.unwrap_or_else(|| max_tokens(&mut rng, llm)),
                body: None,
                system: None,
                messages: None,
                ..Prompt::default()
            };
            let mut turn_entry = entry(
                prompt,
                format!("synthetic session {session} turn {}", number + 1),
            );
            turn_entry.turn = Some(Turn {
                session,
                number,
                of: turns,
                delay_ms: (number > 0).then(|| draw_delay(&mut delays, delay)),
                history: true,
            });
            entries.push(turn_entry);
        }
    }
    Ok(entries)
}

/// Gives every turn after a session's first that has no wait of its own one drawn from
/// `delay` (a file's turns keep the waits the file gives).
pub fn fill_delays(entries: &mut [Entry], delay: &TurnDelay, seed: u64) {
    if !delay.waits() {
        return;
    }
    let mut rng = SmallRng::seed_from_u64(seed ^ DELAY_SEED);
    for entry in entries {
        if let Some(turn) = entry.turn.as_mut() {
            if turn.number > 0 && turn.delay_ms.is_none() {
                turn.delay_ms = Some(draw_delay(&mut rng, delay));
            }
        }
    }
}

/// A wait in milliseconds: Normal(mean, stddev), at least 0, times the ratio.
fn draw_delay(rng: &mut SmallRng, delay: &TurnDelay) -> f64 {
    if !delay.waits() {
        return 0.0;
    }
    let drawn = match Normal::new(delay.mean_ms, delay.stddev_ms) {
        Ok(normal) if delay.stddev_ms > 0.0 => normal.sample(rng).round().max(0.0),
        _ => delay.mean_ms,
    };
    drawn * delay.ratio
}

/// Where each session lies among `entries`: consecutive entries of one session number
/// (an entry of no session is a session of one turn).
pub fn spans(entries: &[Entry]) -> Vec<Range<usize>> {
    let mut spans: Vec<Range<usize>> = Vec::new();
    let mut previous: Option<u32> = None;
    for (index, entry) in entries.iter().enumerate() {
        let session = entry.turn.map(|t| t.session);
        match (spans.last_mut(), session) {
            (Some(last), Some(s)) if previous == Some(s) => last.end = index + 1,
            _ => spans.push(index..index + 1),
        }
        previous = session;
    }
    spans
}

/// The text of a turn sent with its history, as its input length is counted: the system
/// message, each earlier prompt and answer, then the prompt — contents joined by spaces,
/// as a request body's messages are counted.
pub fn conversation_text(prompt: &Prompt, history: &[(String, String)]) -> String {
    let mut parts: Vec<&str> = Vec::with_capacity(history.len() * 2 + 3);
    let more = prompt.parts.as_deref();
    if let Some(system) = &prompt.system {
        parts.push(system);
    }
    if let Some(context) = more.and_then(|p| p.user_context.as_deref()) {
        parts.push(context);
    }
    for (asked, answered) in history {
        parts.push(asked);
        parts.push(answered);
    }
    parts.push(&prompt.text);
    parts.extend(
        more.into_iter()
            .flat_map(|p| p.texts.iter().map(String::as_str)),
    );
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Endpoint, PromptSource};

    fn llm() -> OpenAiConfig {
        OpenAiConfig {
            endpoint: Endpoint::Chat,
            input_tokens_mean: 20,
            input_tokens_stddev: 0.0,
            output_tokens_mean: Some(5),
            output_tokens_stddev: 0.0,
            output_deterministic: false,
            extra_inputs: Vec::new(),
            prompt_source: PromptSource::Synthetic,
            num_prompts: 10,
            artifact_dir: None,
            tokenizer: None,
            tokenizer_revision: None,
            use_server_token_count: false,
            cache_bust: None,
            apply_chat_template: false,
        }
    }

    const DELAY: TurnDelay = TurnDelay {
        mean_ms: 40.0,
        stddev_ms: 0.0,
        ratio: 0.5,
    };

    #[test]
    fn synthetic_sessions_have_their_turns_in_order() {
        let counter = crate::data::tokenizer::builtin(false).unwrap();
        let asked = SyntheticSessions {
            count: 4,
            turns_mean: 3,
            turns_stddev: 0.0,
        };
        let entries = synthetic(
            &asked,
            &DELAY,
            &llm(),
            &DatasetSettings::default(),
            7,
            counter.as_ref(),
        )
        .unwrap();
        assert_eq!(entries.len(), 12);
        let found = spans(&entries);
        assert_eq!(found, vec![0..3, 3..6, 6..9, 9..12]);
        for (s, span) in found.iter().enumerate() {
            for (k, entry) in entries[span.clone()].iter().enumerate() {
                let turn = entry.turn.unwrap();
                assert_eq!(
                    (turn.session, turn.number, turn.of),
                    (s as u32, k as u32, 3)
                );
                let wait = if k == 0 { None } else { Some(20.0) };
                assert_eq!(turn.delay_ms, wait, "the first turn waits for nothing");
                let prompt = entry.prompt.as_ref().unwrap();
                assert_eq!(prompt.input_tokens, 20);
                assert_eq!(counter.count(&prompt.text).unwrap(), 20);
            }
        }
        let again = synthetic(
            &asked,
            &DELAY,
            &llm(),
            &DatasetSettings::default(),
            7,
            counter.as_ref(),
        )
        .unwrap();
        assert_eq!(again, entries, "a seed gives the same sessions");
        let varied = SyntheticSessions {
            count: 50,
            turns_mean: 3,
            turns_stddev: 2.0,
        };
        let entries = synthetic(
            &varied,
            &DELAY,
            &llm(),
            &DatasetSettings::default(),
            1,
            counter.as_ref(),
        )
        .unwrap();
        let lengths: Vec<usize> = spans(&entries).iter().map(|s| s.len()).collect();
        assert_eq!(lengths.len(), 50);
        assert!(lengths.iter().all(|&n| n >= 1));
        assert!(lengths.iter().any(|&n| n != 3), "the stddev varies them");
    }

    #[test]
    fn file_turns_without_a_wait_get_one_and_entries_without_a_session_stand_alone() {
        let counter = crate::data::tokenizer::builtin(false).unwrap();
        let asked = SyntheticSessions {
            count: 2,
            turns_mean: 2,
            turns_stddev: 0.0,
        };
        let none = TurnDelay {
            mean_ms: 0.0,
            ..DELAY
        };
        let mut entries = synthetic(
            &asked,
            &none,
            &llm(),
            &DatasetSettings::default(),
            3,
            counter.as_ref(),
        )
        .unwrap();
        assert_eq!(entries[1].turn.unwrap().delay_ms, Some(0.0));
        entries[1].turn.as_mut().unwrap().delay_ms = None;
        entries[3].turn.as_mut().unwrap().delay_ms = Some(7.0);
        fill_delays(&mut entries, &DELAY, 3);
        assert_eq!(entries[1].turn.unwrap().delay_ms, Some(20.0));
        assert_eq!(
            entries[3].turn.unwrap().delay_ms,
            Some(7.0),
            "kept as given"
        );
        entries[2].turn = None;
        assert_eq!(spans(&entries), vec![0..2, 2..3, 3..4]);
    }

    #[test]
    fn a_turn_is_counted_with_its_history() {
        let prompt = Prompt {
            text: "now".into(),
            input_tokens: 1,
            max_tokens: None,
            body: None,
            system: Some("be brief".into()),
            messages: None,
            ..Prompt::default()
        };
        let history = vec![("hi".to_string(), "hello there".to_string())];
        assert_eq!(
            conversation_text(&prompt, &history),
            "be brief hi hello there now"
        );
    }
}
