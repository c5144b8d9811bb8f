//! The flags of the OpenAI API (`--service-kind openai`), with GenAI-Perf's and perf_analyzer's
//! names: the endpoint, the synthetic prompts and output lengths, extra request fields and
//! the artifact directory. Kept apart from the tensor flags so each stays readable.

use clap::Args;

/// Flags for OpenAI-compatible servers.
#[derive(Debug, Clone, Args, Default)]
pub struct OpenAiArgs {
    /// With --service-kind openai: the API path appended to -u: v1/chat/completions,
    /// v1/completions or v1/embeddings.
    #[arg(long, value_name = "PATH")]
    pub endpoint: Option<String>,
    /// The tokenizer every token is counted with (AIPerf's and GenAI-Perf's flag): a
    /// tokenizer.json, a folder holding one, a Hugging Face hub id (org/name: looked up in
    /// the local cache — HF_HUB_CACHE, HF_HOME — then fetched from the hub unless
    /// HF_HUB_OFFLINE is set; HF_TOKEN for gated models), or `builtin` (tiktoken's o200k_base,
    /// compiled in). Without it, the server's tokenize endpoint when it has one (vLLM,
    /// SGLang, TGI, llama.cpp, llama-cpp-python), else `builtin` with a warning that token
    /// figures are approximate for the model.
    #[arg(long, value_name = "NAME|PATH")]
    pub tokenizer: Option<String>,
    /// The revision (branch, tag or commit) of a hub --tokenizer.
    #[arg(long, value_name = "REV")]
    pub tokenizer_revision: Option<String>,
    /// Count output tokens by the server's `usage` alone (AIPerf's flag); a server that
    /// sends none is said so, and its answers' tokens are not counted.
    #[arg(long)]
    pub use_server_token_count: bool,
    /// Where a marker goes in each chat request so that the server's prefix cache cannot
    /// serve one trajectory's prompt to another (AIPerf's flag): system_prefix,
    /// system_suffix, first_turn_prefix, first_turn_suffix — `[rid:DIGEST]`, a digest of
    /// its own per request or session, its tokens counted in the input and taken from
    /// synthetic prompts — or warmup_isolation_system, warmup_isolation_first_turn —
    /// `[warmup]` on the warm-up's requests only; none (default) sends no marker.
    #[arg(long, value_name = "WHERE")]
    pub cache_bust: Option<String>,
    /// Count a chat prompt's input tokens as the model sees them: rendered through the
    /// chat template of the tokenizer's tokenizer_config.json (AIPerf's flag); the
    /// template's tokens are taken from synthetic prompts. A tokenizer without one counts
    /// the text alone.
    #[arg(long)]
    pub apply_chat_template: bool,
    /// Tokens per synthetic prompt, on average: each prompt's message content is made of
    /// exactly the drawn number of tokens as the run's tokenizer counts them (a chat
    /// template's tokens are not among them; the server's own prompt count is reported
    /// beside when it sends usage). Default 550.
    #[arg(long, value_name = "N")]
    pub synthetic_input_tokens_mean: Option<u32>,
    /// Standard deviation of the tokens per synthetic prompt.
    #[arg(long, value_name = "N", default_value_t = 0.0)]
    pub synthetic_input_tokens_stddev: f64,
    /// The max_tokens of each request, on average (without it, max_tokens is not sent and
    /// the server decides).
    #[arg(long, value_name = "N")]
    pub output_tokens_mean: Option<u32>,
    /// Standard deviation of max_tokens.
    #[arg(long, value_name = "N", default_value_t = 0.0)]
    pub output_tokens_stddev: f64,
    /// Also send min_tokens equal to max_tokens and ignore_eos, so that the server generates
    /// exactly that many tokens (GenAI-Perf's flag).
    #[arg(long)]
    pub output_tokens_mean_deterministic: bool,
    /// An extra field of every request body, key:value (the value is read as JSON when it
    /// is JSON, else as a string); repeatable.
    #[arg(long = "extra-inputs", value_name = "KEY:VALUE", num_args = 1..)]
    pub extra_inputs: Vec<String>,
    /// Where prompts come from: synthetic, or file (--input-file).
    #[arg(long, value_name = "SOURCE", default_value = "synthetic")]
    pub prompt_source: String,
    /// With --prompt-source file: a JSON Lines file, one prompt per line as {"text": "..."}.
    #[arg(long, value_name = "FILE")]
    pub input_file: Option<std::path::PathBuf>,
    /// Distinct synthetic prompts (conversations), sent in turn. Default as AIPerf's
    /// --num-dataset-entries: --conversation-num if given, else --request-count if given,
    /// else 100.
    #[arg(long, value_name = "N")]
    pub num_prompts: Option<usize>,
    /// Write GenAI-Perf's and AIPerf's exports per level into this directory, with
    /// perf_analyzer's profile_export.json.
    #[arg(long, value_name = "DIR")]
    pub artifact_dir: Option<std::path::PathBuf>,
}
