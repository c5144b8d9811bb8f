//! Texts of exactly so many tokens, as the run's tokenizer counts them: synthetic prompts,
//! a trace's blocks and shared prefixes, made of pseudo-words whose first word is the text's
//! own, with the lengths asked drawn from the flags. Split from the prompts' sources so that
//! each file keeps one concern: this one knows tokens, not files or protocols.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::lengths::{corpus_words, LengthDraw};
pub(crate) use super::lengths::{draw, vocabulary, SYLLABLES};
use super::tokenizer::{CounterInfo, TokenCount};
use crate::config::datasets::{Corpus, DatasetSettings};
use crate::config::OpenAiConfig;
use inferperf_wire::error::{RunError, RunResult};

/// Makes the texts of a run's prompts: exactly so many tokens of pseudo-words (each text's
/// first word its own), drawn lengths, and counts by the run's tokenizer.
pub struct PromptMaker<'a> {
    llm: &'a OpenAiConfig,
    rng: SmallRng,
    vocabulary: Vec<String>,
    counter: &'a dyn TokenCount,
    made: usize,
    inexact: usize,
    /// `--seq-dist` or `--random-range-ratio`, when given.
    lengths: Option<LengthDraw>,
    /// The answer's length drawn with the last input length, not yet asked for.
    pending_answer: Option<Option<u32>>,
}

impl<'a> PromptMaker<'a> {
    pub fn new(llm: &'a OpenAiConfig, seed: u64, counter: &'a dyn TokenCount) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let vocabulary = vocabulary(&mut rng);
        PromptMaker {
            llm,
            rng,
            vocabulary,
            counter,
            made: 0,
            inexact: 0,
            lengths: None,
            pending_answer: None,
        }
    }

    /// Makes texts of `--prompt-corpus`'s words.
    pub fn with_corpus(mut self, corpus: Corpus) -> Self {
        if corpus != Corpus::Sonnet {
            self.vocabulary = corpus_words(corpus, &mut self.rng);
        }
        self
    }

    /// Makes texts of `--prompt-corpus`'s words, of lengths drawn as `--seq-dist` or
    /// `--random-range-ratio` asks.
    pub fn shaped(self, settings: &DatasetSettings) -> Self {
        let lengths = LengthDraw::of(settings, self.llm);
        PromptMaker {
            lengths,
            ..self.with_corpus(settings.corpus)
        }
    }

    /// A new text of `tokens` tokens (as near as the tokenizer allows).
    pub fn text_of(&mut self, tokens: u32) -> RunResult<String> {
        Ok(self.counted_text_of(tokens)?.0)
    }

    /// A new text of `tokens` tokens, with the tokenizer's count of it (`tokens` unless the
    /// tokenizer makes that impossible): a long text is not counted twice.
    pub fn counted_text_of(&mut self, tokens: u32) -> RunResult<(String, u32)> {
        let number = self.next_number();
        let (text, counted) = exact_text(
            self.counter,
            &mut self.rng,
            &self.vocabulary,
            number,
            tokens,
        )?;
        self.inexact += (counted != tokens) as usize;
        Ok((text, counted))
    }

    /// A new text of `tokens` tokens that follows another after a space, the space counted
    /// in: `head + " " + it` has `tokens` more than `head` wherever the tokenizer's counts
    /// add up (a byte-level one counts the space; most BPE ones fold it into the word).
    pub fn continuation(&mut self, tokens: u32) -> RunResult<String> {
        let number = self.next_number();
        self.exact(number, tokens, Place::AfterSpace)
    }

    /// The text of a trace's block `id`, of `tokens` tokens, at the start of its prompt or
    /// after another block (as [`Self::continuation`]).
    pub fn block_text(&mut self, id: u64, tokens: u32, place: Place) -> RunResult<String> {
        self.exact(id.min(usize::MAX as u64) as usize, tokens, place)
    }

    fn next_number(&mut self) -> usize {
        self.made += 1;
        self.made - 1
    }

    /// `head + " " + tail` where `tail` is a continuation of `tokens` tokens made from
    /// `number`, checked whole against `total`: when the tokenizer counts the joined text
    /// otherwise (its counts do not add up across the join), the tail is made once more,
    /// longer or shorter by what was missed, and the nearer of the two is kept.
    pub fn join_exact(
        &mut self,
        head: &str,
        tail: &str,
        tail_tokens: u32,
        total: u32,
    ) -> RunResult<String> {
        let joined = format!("{head} {tail}");
        let counted = self.count(&joined, "a synthetic prompt")?;
        if counted == total || head.is_empty() {
            return Ok(joined);
        }
        let wanted = (tail_tokens as i64 + total as i64 - counted as i64).max(1) as u32;
        let number = self.next_number();
        let again = format!("{head} {}", self.exact(number, wanted, Place::AfterSpace)?);
        let recounted = self.count(&again, "a synthetic prompt")?;
        if recounted == total {
            return Ok(again);
        }
        self.inexact += 1;
        Ok(if total.abs_diff(recounted) < total.abs_diff(counted) {
            again
        } else {
            joined
        })
    }

    fn exact(&mut self, number: usize, tokens: u32, place: Place) -> RunResult<String> {
        let after_space = AfterSpace(self.counter);
        let counter: &dyn TokenCount = match place {
            Place::First => self.counter,
            Place::AfterSpace => &after_space,
        };
        let (text, counted) = exact_text(counter, &mut self.rng, &self.vocabulary, number, tokens)?;
        self.inexact += (counted != tokens) as usize;
        Ok(text)
    }

    /// A prompt length drawn from `--synthetic-input-tokens-mean`/`-stddev` (or with its
    /// answer's, from `--seq-dist` or `--random-range-ratio`).
    pub fn draw_input(&mut self) -> u32 {
        if let Some(lengths) = &self.lengths {
            let (input, answer) = lengths.draw(&mut self.rng);
            self.pending_answer = Some(answer);
            return input;
        }
        draw(
            &mut self.rng,
            self.llm.input_tokens_mean,
            self.llm.input_tokens_stddev,
        )
    }

    /// A count drawn from Normal(`mean`, `stddev`), at least 1.
    pub fn draw(&mut self, mean: u32, stddev: f64) -> u32 {
        draw(&mut self.rng, mean, stddev)
    }

    /// One of `k` choices, at random.
    pub fn pick(&mut self, k: usize) -> usize {
        self.rng.random_range(0..k)
    }

    /// The answer's length to ask for, drawn from `--output-tokens-mean`/`-stddev` (or the
    /// one drawn with the last input length).
    pub fn max_tokens(&mut self) -> Option<u32> {
        match self.pending_answer.take() {
            Some(answer) => answer,
            None => max_tokens(&mut self.rng, self.llm),
        }
    }

    /// The tokens of a text, as the run's tokenizer counts them.
    pub fn count(&self, text: &str, origin: &str) -> RunResult<u32> {
        count_given(self.counter, text, origin)
    }

    /// Says how many texts could not be made of exactly their number of tokens.
    pub fn warn_inexact(&self, of: usize) {
        if self.inexact > 0 {
            println!(
                "Warning: {} of {of} synthetic texts could not be made of exactly the drawn number of tokens with {}; their input length is the tokenizer's count of what was sent.",
                self.inexact,
                self.counter.info().describe()
            );
        }
    }
}

/// Where a text goes: first, or after another text and a space (counted in its tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    First,
    AfterSpace,
}

/// A counter that counts a text as it costs after a separating space: `count(" " + text)`.
struct AfterSpace<'a>(&'a dyn TokenCount);

impl TokenCount for AfterSpace<'_> {
    fn count(&self, text: &str) -> Result<u32, String> {
        self.0.count(&format!(" {text}"))
    }

    fn info(&self) -> &CounterInfo {
        self.0.info()
    }
}

/// Pieces tried, in turn, to add exactly one token to a text that is short of its length.
const FILLERS: [&str; 8] = [" a", "a", " the", ".", " x", "x", " ", ","];
/// Fillers appended at most, past the words (a tokenizer that merges every filler into the
/// text before it gives up here, with the count it reached).
const MOST_FILLERS: usize = 64;

/// A text of `tokens` tokens as `counter` counts them, and the count reached (equal unless
/// the tokenizer makes that impossible): the most words of a random text that stay within
/// the count, then one-token fillers up to it. Its first word is made from the prompt's
/// number, so that prompts differ from their first tokens on.
pub(crate) fn exact_text(
    counter: &dyn TokenCount,
    rng: &mut SmallRng,
    vocabulary: &[String],
    number: usize,
    tokens: u32,
) -> RunResult<(String, u32)> {
    let count = |text: &str| {
        counter.count(text).map_err(|e| {
            RunError::failed(format!(
                "Counting a synthetic prompt's tokens with {} failed: {e}.",
                counter.info().describe()
            ))
        })
    };
    let mut words = vec![leading_word(number)];
    words.extend(
        (1..tokens.max(1)).map(|_| vocabulary[rng.random_range(0..vocabulary.len())].clone()),
    );
    let (within, counted) = most_words_within(&count, &words, tokens)?;
    fill(&count, words[..within].join(" "), counted, tokens)
}

/// Interpolated probes before the search falls back to halving.
const INTERPOLATED_PROBES: usize = 6;

/// The most words whose text counts `tokens` at most (`count(words[..n])` grows with n), and
/// that count. The counts grow about linearly, so each probe aims where the tokens seen per
/// word say the limit is: a text of 20,000 tokens takes about four counts instead of the
/// fifteen of a bisection (each a pass of the tokenizer over the whole text). Halves the
/// range when the aim does not settle.
fn most_words_within(
    count: &impl Fn(&str) -> RunResult<u32>,
    words: &[String],
    tokens: u32,
) -> RunResult<(usize, u32)> {
    let (mut low, mut low_count) = (0usize, 0u32);
    // The fewest words known to count more than `tokens` (one past them all: none known).
    let mut high = words.len() + 1;
    let sample = words.len().min(64);
    let mut per_word = match sample {
        0 => 1.0,
        n => (count(&words[..n].join(" "))? as f64 / n as f64).max(0.01),
    };
    let mut probes = 0;
    while high - low > 1 {
        let aimed = low + (tokens.saturating_sub(low_count) as f64 / per_word) as usize;
        let probe = match probes < INTERPOLATED_PROBES {
            true => aimed,
            false => low + (high - low) / 2,
        };
        let probe = probe.clamp(low + 1, high - 1);
        let counted = count(&words[..probe].join(" "))?;
        probes += 1;
        per_word = (counted as f64 / probe as f64).max(0.01);
        match counted <= tokens {
            true => (low, low_count) = (probe, counted),
            false => high = probe,
        }
    }
    Ok((low, low_count))
}

/// `text` (of `counted` tokens) with one-token fillers appended up to `tokens`. A filler is
/// tried on the text's last words first, and counted over the whole text only when it adds
/// one token there; the ones that did not are then tried over the whole text too.
fn fill(
    count: &impl Fn(&str) -> RunResult<u32>,
    mut text: String,
    mut counted: u32,
    tokens: u32,
) -> RunResult<(String, u32)> {
    let mut added = 0;
    while counted < tokens && added < MOST_FILLERS {
        let tail = &text[tail_start(&text)..];
        let tail_count = count(tail)?;
        let mut promising = Vec::with_capacity(FILLERS.len());
        for filler in FILLERS {
            promising.push(count(&format!("{tail}{filler}"))? == tail_count + 1);
        }
        let order = (FILLERS.iter().zip(&promising))
            .filter(|(_, &p)| p)
            .chain(FILLERS.iter().zip(&promising).filter(|(_, &p)| !p));
        let mut grew = false;
        for (filler, _) in order {
            let candidate = format!("{text}{filler}");
            if count(&candidate)? == counted + 1 {
                text = candidate;
                counted += 1;
                grew = true;
                break;
            }
        }
        added += 1;
        if !grew {
            break;
        }
    }
    Ok((text, counted))
}

/// Where a text's last two words begin (its start when it has fewer).
fn tail_start(text: &str) -> usize {
    let mut spaces = text.rmatch_indices(' ');
    spaces.nth(1).map_or(0, |(at, _)| at + 1)
}

/// A word no other prompt of the run begins with: the prompt's number in syllables.
fn leading_word(number: usize) -> String {
    let mut word = String::new();
    let mut n = number;
    loop {
        word.push_str(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
        if n == 0 {
            break;
        }
    }
    word.push_str("zo");
    word
}

pub(crate) fn max_tokens(rng: &mut SmallRng, llm: &OpenAiConfig) -> Option<u32> {
    llm.output_tokens_mean
        .map(|mean| draw(rng, mean, llm.output_tokens_stddev))
}

/// The tokens of a prompt read from a file.
pub(crate) fn count_given(counter: &dyn TokenCount, text: &str, origin: &str) -> RunResult<u32> {
    counter.count(text).map_err(|e| {
        RunError::failed(format!(
            "Counting the tokens of {origin} with {} failed: {e}.",
            counter.info().describe()
        ))
    })
}
