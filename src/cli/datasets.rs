//! AIPerf 0.13's dataset and prompt flags: public datasets, the order entries are drawn in,
//! system and per-conversation context prompts, the synthetic corpus and its length
//! distributions, and what is done with a trace's recorded waits. Kept apart from the
//! workload flags so each group stays readable; `config::datasets` checks them.

use clap::Args;

/// AIPerf's dataset flags.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "Datasets and prompts (AIPerf's flags)")]
pub struct DatasetArgs {
    /// A public dataset AIPerf 0.13 knows (sharegpt, aimo, instruct_coder, spec_al_gsm8k,
    /// ...; dashes or underscores), read from the Hugging Face cache (HF_HUB_CACHE,
    /// HF_HOME) or fetched from the hub unless HF_HUB_OFFLINE is set. See
    /// docs/llm-workloads.md for each name and what it sends.
    #[arg(long, value_name = "NAME")]
    pub public_dataset: Option<String>,
    /// The Hugging Face subset (config) of a --public-dataset read from the hub, in place of
    /// the dataset's own (AIPerf's).
    #[arg(long, value_name = "NAME")]
    pub hf_subset: Option<String>,
    /// The order entries (conversations) are drawn in (AIPerf's): sequential (in order,
    /// wrapping), random (with replacement) or shuffle (each pass a new permutation).
    /// Default: sequential, shuffle for random_pool, as AIPerf.
    #[arg(long, value_name = "STRATEGY")]
    pub dataset_sampling_strategy: Option<String>,
    /// Drop the recorded timestamps and turn delays of an input file, so that its requests
    /// go back to back under a concurrency or request rate (AIPerf's). No effect under
    /// --fixed-schedule, whose schedule they are.
    #[arg(long)]
    pub ignore_trace_delays: bool,
    /// Each turn's recorded delay of an input file is at most this many seconds (AIPerf's).
    #[arg(long, value_name = "SECONDS")]
    pub inter_turn_delay_cap_seconds: Option<f64>,
    /// A system message of this text before every conversation (AIPerf's); prepended with a
    /// blank line to a conversation's own system message. Chat and responses only.
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,
    /// --system-prompt read from this UTF-8 file, as it is (AIPerf's).
    #[arg(long, value_name = "FILE")]
    pub system_prompt_file: Option<std::path::PathBuf>,
    /// Synthetic prompts: each conversation begins with a user message of its own of
    /// exactly this many tokens, after the system message (AIPerf's). Chat and responses.
    #[arg(long, value_name = "TOKENS")]
    pub user_context_prompt_length: Option<u32>,
    /// The text synthetic prompts are made of (AIPerf's names, inferperf's texts, each of
    /// exactly the drawn number of tokens): sonnet (pseudo-words, the default), coding
    /// (code-like lines of identifiers, keywords and punctuation) or random (random
    /// letter strings, which share no words across prompts).
    #[arg(long, value_name = "CORPUS")]
    pub prompt_corpus: Option<String>,
    /// vllm (default) or sglang: the window --random-range-ratio draws lengths from, as
    /// the two benchmarks draw them (AIPerf's).
    #[arg(long, value_name = "STYLE")]
    pub random_corpus_style: Option<String>,
    /// Synthetic prompts: a mixture of (input, output) lengths with percentage weights
    /// (AIPerf's forms): "ISL,OSL:P;ISL,OSL:P" (with optional |STDDEV after a length),
    /// "[(ISL,OSL):P,...]" or JSON {"pairs": [{"isl", "osl", "prob"}]}; the output length
    /// is each request's max_tokens.
    #[arg(long, visible_alias = "sequence-distribution", value_name = "PAIRS")]
    pub seq_dist: Option<String>,
    /// Synthetic prompts: input and output lengths drawn uniformly around --isl and --osl
    /// (both needed) by this ratio in [0, 1), or {"input": R, "output": R}; the window is
    /// --random-corpus-style's (AIPerf's).
    #[arg(long, value_name = "RATIO")]
    pub random_range_ratio: Option<String>,
    /// Synthetic prompts (or random_pool): texts per request (AIPerf's): N text parts of a
    /// chat message, N prompts of a completions request, N inputs of an embeddings one.
    #[arg(
        long,
        visible_aliases = ["batch-size-text", "batch-size"],
        value_name = "N"
    )]
    pub prompt_batch_size: Option<u32>,
}
