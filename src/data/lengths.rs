//! How long each synthetic prompt and its answer are, and what words it is made of — AIPerf's
//! `--seq-dist` (a weighted mixture of input/output length pairs), `--random-range-ratio`
//! (lengths uniform in a window around `--isl` and `--osl`, vLLM's or SGLang's) and
//! `--prompt-corpus` (inferperf's pseudo-words, code-like tokens or random letter strings).
//! Without them lengths are drawn from the mean and standard deviation, as before.

use rand::rngs::SmallRng;
use rand::Rng;

use crate::config::datasets::{window, Corpus, DatasetSettings, LengthPair};
use crate::config::OpenAiConfig;
use rand_distr::{Distribution, Normal};

/// A drawer of (input tokens, answer tokens) per synthetic prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum LengthDraw {
    /// `--seq-dist`: a pair picked by its weight, each length around its mean.
    Pairs(Vec<LengthPair>),
    /// `--random-range-ratio`: uniform within each window (both ends included).
    Windows {
        input: (u32, u32),
        output: (u32, u32),
    },
}

impl LengthDraw {
    /// The drawer the settings ask for, if any (`None`: the mean and standard deviation).
    pub fn of(settings: &DatasetSettings, llm: &OpenAiConfig) -> Option<LengthDraw> {
        if let Some(pairs) = &settings.seq_dist {
            return Some(LengthDraw::Pairs(pairs.clone()));
        }
        let ratio = settings.range_ratio?;
        let style = settings.corpus_style;
        let answer = llm.output_tokens_mean.unwrap_or(1);
        Some(LengthDraw::Windows {
            input: window(llm.input_tokens_mean, ratio.input, style, 1),
            output: window(answer, ratio.output, style, 1),
        })
    }

    /// One prompt's input length and the answer's length to ask for.
    pub fn draw(&self, rng: &mut SmallRng) -> (u32, Option<u32>) {
        match self {
            LengthDraw::Pairs(pairs) => {
                let pick = rng.random::<f64>() * 100.0;
                let mut sum = 0.0;
                let pair = pairs
                    .iter()
                    .find(|p| {
                        sum += p.percent;
                        pick < sum
                    })
                    .unwrap_or(&pairs[pairs.len() - 1]);
                let isl = draw(rng, pair.isl, pair.isl_stddev);
                let osl = draw(rng, pair.osl, pair.osl_stddev);
                (isl, Some(osl))
            }
            LengthDraw::Windows { input, output } => (
                rng.random_range(input.0..=input.1).max(1),
                Some(rng.random_range(output.0..=output.1).max(1)),
            ),
        }
    }
}

/// Code-like tokens: keywords, names, operators and brackets.
const CODE: [&str; 48] = [
    "fn", "let", "return", "if", "else", "for", "while", "def", "class", "import", "const",
    "struct", "impl", "pub", "self", "None", "true", "false", "match", "async", "await", "user_id",
    "config", "buffer", "index", "count", "result", "value", "items", "request", "=", "==", "+=",
    "->", "=>", "(", ")", "{", "}", "[", "]", ";", ":", ".", ",", "0", "1", "42",
];

/// Letters of random strings.
const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
/// Random strings of the random corpus.
const RANDOM_WORDS: usize = 20_000;

/// The words a corpus draws texts from (seeded by `rng`).
pub fn corpus_words(corpus: Corpus, rng: &mut SmallRng) -> Vec<String> {
    match corpus {
        Corpus::Sonnet => vocabulary(rng),
        Corpus::Coding => CODE.iter().map(|w| w.to_string()).collect(),
        Corpus::Random => (0..RANDOM_WORDS)
            .map(|_| {
                let n = rng.random_range(2..=8);
                (0..n)
                    .map(|_| LETTERS[rng.random_range(0..LETTERS.len())] as char)
                    .collect()
            })
            .collect(),
    }
}

/// Distinct words synthetic prompts draw from.
const VOCABULARY: usize = 1000;
pub(crate) const SYLLABLES: [&str; 16] = [
    "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "da", "fe", "go", "hu", "ji", "po", "re", "zu",
];

/// Pseudo-words of two to four syllables.
pub(crate) fn vocabulary(rng: &mut SmallRng) -> Vec<String> {
    (0..VOCABULARY)
        .map(|_| {
            let syllables = rng.random_range(2..=4);
            (0..syllables)
                .map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())])
                .collect()
        })
        .collect()
}

/// A whole number drawn from Normal(mean, stddev), at least 1.
pub(crate) fn draw(rng: &mut SmallRng, mean: u32, stddev: f64) -> u32 {
    if stddev <= 0.0 {
        return mean.max(1);
    }
    let normal = Normal::new(mean as f64, stddev).expect("stddev was checked to be finite");
    normal.sample(rng).round().clamp(1.0, u32::MAX as f64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::datasets::{parse_seq_dist, CorpusStyle, RangeRatio};
    use crate::config::{Endpoint, PromptSource};
    use rand::SeedableRng;

    fn llm(isl: u32, osl: Option<u32>) -> OpenAiConfig {
        OpenAiConfig {
            endpoint: Endpoint::Chat,
            input_tokens_mean: isl,
            input_tokens_stddev: 0.0,
            output_tokens_mean: osl,
            output_tokens_stddev: 0.0,
            output_deterministic: false,
            extra_inputs: Vec::new(),
            prompt_source: PromptSource::Synthetic,
            num_prompts: 3,
            artifact_dir: None,
            tokenizer: None,
            tokenizer_revision: None,
            use_server_token_count: false,
            cache_bust: None,
            apply_chat_template: false,
        }
    }

    #[test]
    fn pairs_are_drawn_by_their_weights() {
        let settings = DatasetSettings {
            seq_dist: Some(parse_seq_dist("100,10:25;400,40:75").unwrap()),
            ..DatasetSettings::default()
        };
        let drawer = LengthDraw::of(&settings, &llm(550, None)).unwrap();
        let mut rng = SmallRng::seed_from_u64(3);
        let draws: Vec<(u32, Option<u32>)> = (0..4000).map(|_| drawer.draw(&mut rng)).collect();
        let long = draws.iter().filter(|d| d.0 == 400).count() as f64 / 4000.0;
        assert!((long - 0.75).abs() < 0.03, "{long}");
        assert!(draws
            .iter()
            .all(|d| *d == (100, Some(10)) || *d == (400, Some(40))));
    }

    #[test]
    fn windows_hold_every_draw() {
        let settings = DatasetSettings {
            range_ratio: Some(RangeRatio {
                input: 0.5,
                output: 0.0,
            }),
            ..DatasetSettings::default()
        };
        let drawer = LengthDraw::of(&settings, &llm(100, Some(20))).unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        let draws: Vec<(u32, Option<u32>)> = (0..2000).map(|_| drawer.draw(&mut rng)).collect();
        assert!(draws
            .iter()
            .all(|d| (50..=150).contains(&d.0) && d.1 == Some(20)));
        assert!(draws.iter().any(|d| d.0 < 60) && draws.iter().any(|d| d.0 > 140));
        let sglang = DatasetSettings {
            corpus_style: CorpusStyle::Sglang,
            ..settings
        };
        let LengthDraw::Windows { input, .. } =
            LengthDraw::of(&sglang, &llm(100, Some(20))).unwrap()
        else {
            panic!("windows");
        };
        assert_eq!(input, (50, 100));
    }

    #[test]
    fn corpora_differ() {
        let mut rng = SmallRng::seed_from_u64(1);
        let code = corpus_words(Corpus::Coding, &mut rng);
        assert!(code.contains(&"fn".to_string()));
        let random = corpus_words(Corpus::Random, &mut rng);
        assert_eq!(random.len(), RANDOM_WORDS);
        assert!(random.iter().all(|w| (2..=8).contains(&w.len())));
    }
}
