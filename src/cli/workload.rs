//! AIPerf's flags for LLM workloads that are more than independent prompts: input files in
//! AIPerf's formats, shared prefixes, and which slice of a trace to replay how fast. Kept
//! apart from the OpenAI flags so that each group stays readable; `config::workload` checks
//! them.

use clap::Args;

#[path = "datasets.rs"]
mod datasets;
pub use datasets::DatasetArgs;

/// The workload flags of an LLM run.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "LLM workloads (AIPerf's flags)")]
pub struct WorkloadArgs {
    /// The format of --input-file, as AIPerf names it (dashes or underscores): single_turn
    /// (a line per request: text or texts, optional images, output_length, extra, timestamp
    /// or delay in ms), multi_turn (a line per session: session_id and its turns),
    /// mooncake_trace (a line per request: timestamp in ms, input_length and hash_ids, or
    /// text_input, messages or payload), random_pool (a file or folder of pools drawn from
    /// at random), raw_payload (a line per whole request body, sent as it is; a folder: a
    /// session per file), bailian_trace, burst_gpt_trace (CSV), sagemaker_data_capture,
    /// speed_bench_* (SPEED-Bench's JSON Lines), inputs_json (AIPerf's inputs.json) or
    /// sharegpt (ShareGPT's JSON). docs/llm-workloads.md describes each. Without it,
    /// --input-file is a JSON Lines file of {"text": ...}.
    #[arg(long, value_name = "TYPE")]
    pub custom_dataset_type: Option<String>,
    /// Tokens per hash id of a trace's hash_ids: requests that share leading ids share those
    /// blocks' text (AIPerf's; default 512 for mooncake_trace, as AIPerf's loader).
    #[arg(
        long,
        value_name = "TOKENS",
        visible_aliases = ["prompt-input-tokens-block-size", "synthetic-input-tokens-block-size"]
    )]
    pub isl_block_size: Option<u32>,
    /// Tokens of each shared prefix (AIPerf's and GenAI-Perf's): every prompt begins with one
    /// of --num-prefix-prompts prefixes of exactly this many tokens, then its own prompt.
    #[arg(long, value_name = "TOKENS", visible_alias = "prompt-prefix-length")]
    pub prefix_prompt_length: Option<u32>,
    /// How many distinct shared prefixes prompts draw from (AIPerf's and GenAI-Perf's).
    #[arg(
        long,
        value_name = "K",
        visible_aliases = ["prompt-prefix-pool-size", "prefix-prompt-pool-size"]
    )]
    pub num_prefix_prompts: Option<u32>,
    /// One system message of this many tokens before every conversation, the same for all
    /// (AIPerf's).
    #[arg(long, value_name = "TOKENS")]
    pub shared_system_prompt_length: Option<u32>,
    /// With --fixed-schedule: skip the trace's requests before this timestamp (ms); the
    /// replay starts at it (AIPerf's).
    #[arg(long, value_name = "MS")]
    pub fixed_schedule_start_offset: Option<f64>,
    /// With --fixed-schedule: send none of the trace's requests after this timestamp (ms)
    /// (AIPerf's).
    #[arg(long, value_name = "MS")]
    pub fixed_schedule_end_offset: Option<f64>,
    /// With --fixed-schedule: the replay starts at the trace's first timestamp (AIPerf's);
    /// inferperf always does so when no start offset is given.
    #[arg(long)]
    pub fixed_schedule_auto_offset: bool,
    /// Replays a trace this many times faster (2: twice as fast, 0.5: half as fast):
    /// timestamps and turn delays are divided by it (AIPerf's name).
    #[arg(long, value_name = "FACTOR")]
    pub replay_speedup: Option<f64>,
    /// Requests whose prompt and asked answer are longer than this many tokens are dropped
    /// and counted, not sent (AIPerf's name).
    #[arg(long, value_name = "TOKENS")]
    pub max_context_length: Option<u32>,
    #[command(flatten)]
    pub datasets: DatasetArgs,
    #[command(flatten)]
    pub synthesis: SynthesisArgs,
}

/// AIPerf's trace synthesis: a trace file rebuilt before it is replayed.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "Trace synthesis (AIPerf's flags)")]
pub struct SynthesisArgs {
    /// Replays a rebuilt trace this many times faster: its timestamps are divided by it
    /// (AIPerf's; turn delays are kept, as AIPerf keeps them).
    #[arg(long, value_name = "FACTOR")]
    pub synthesis_speedup_ratio: Option<f64>,
    /// Scales each request's shared prefix (the leading blocks other requests share): 2
    /// makes each shared block two, still shared (AIPerf's).
    #[arg(long, value_name = "FACTOR")]
    pub synthesis_prefix_len_multiplier: Option<f64>,
    /// Deals the requests at random over this many independent prefix trees, so that fewer
    /// share a prefix (AIPerf's).
    #[arg(long, value_name = "N")]
    pub synthesis_prefix_root_multiplier: Option<u32>,
    /// Scales each request's own prompt (the tokens after its shared prefix) (AIPerf's).
    #[arg(long, value_name = "FACTOR")]
    pub synthesis_prompt_len_multiplier: Option<f64>,
    /// Scales each request's asked answer length (AIPerf's).
    #[arg(long, value_name = "FACTOR")]
    pub synthesis_output_len_multiplier: Option<f64>,
    /// Drops the trace's requests longer than this many input tokens before the rest
    /// (AIPerf's).
    #[arg(long, value_name = "TOKENS")]
    pub synthesis_max_isl: Option<u32>,
    /// Caps the asked answer lengths to this many tokens (AIPerf's).
    #[arg(long, value_name = "TOKENS")]
    pub synthesis_max_osl: Option<u32>,
}
