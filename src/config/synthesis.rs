//! AIPerf's trace synthesis (`--synthesis-*`): a trace file rebuilt before it is replayed,
//! its shared prefixes and unique prompts stretched or squeezed, spread over more prefix
//! trees, its answers lengthened and its clock sped up; its longest requests dropped and
//! its longest answers capped. The flags are checked here, once; `data::traces::synthesis`
//! rebuilds the records.

use crate::cli::SynthesisArgs;
use inferperf_wire::error::RunResult;
use inferperf_wire::number::within;

/// The largest factor a length may be scaled by (a prompt 100 times its recorded length).
const MOST_SCALE: f64 = 100.0;
/// The most prefix trees a trace may be spread over.
const MOST_ROOTS: f64 = 10_000.0;
/// The longest input or answer a cap may name, in tokens.
const MOST_TOKENS: f64 = 10_000_000.0;

/// How a trace is rebuilt; every factor 1 and no cap: as recorded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Synthesis {
    /// Timestamps are divided by it (2: twice as fast).
    pub speedup: f64,
    /// The shared prefix blocks of each request, scaled.
    pub prefix_len: f64,
    /// Independent prefix trees the requests are dealt over at random.
    pub prefix_roots: u32,
    /// The tokens after the shared prefix, scaled.
    pub prompt_len: f64,
    /// The answer lengths asked for, scaled.
    pub output_len: f64,
    /// Requests with more input tokens than this are dropped before anything else.
    pub max_isl: Option<u32>,
    /// Answer lengths above this are capped to it.
    pub max_osl: Option<u32>,
}

impl Default for Synthesis {
    fn default() -> Synthesis {
        Synthesis {
            speedup: 1.0,
            prefix_len: 1.0,
            prefix_roots: 1,
            prompt_len: 1.0,
            output_len: 1.0,
            max_isl: None,
            max_osl: None,
        }
    }
}

impl Synthesis {
    /// Reads the `--synthesis-*` flags.
    pub fn parse(args: &SynthesisArgs) -> RunResult<Synthesis> {
        let factor = |value: Option<f64>, flag: &str, least: f64| -> RunResult<f64> {
            value.map_or(Ok(1.0), |x| within(flag, x, least, MOST_SCALE, "times"))
        };
        let tokens = |value: Option<u32>, flag: &str| -> RunResult<Option<u32>> {
            let checked = value.map(|n| within(flag, n as f64, 1.0, MOST_TOKENS, "tokens"));
            Ok(checked.transpose()?.map(|n| n as u32))
        };
        let speedup = args.synthesis_speedup_ratio.map_or(Ok(1.0), |x| {
            within("--synthesis-speedup-ratio", x, 0.001, 1e6, "times")
        })?;
        let roots = args.synthesis_prefix_root_multiplier.map_or(Ok(1.0), |n| {
            within(
                "--synthesis-prefix-root-multiplier",
                n as f64,
                1.0,
                MOST_ROOTS,
                "trees",
            )
        })?;
        Ok(Synthesis {
            speedup,
            prefix_len: factor(
                args.synthesis_prefix_len_multiplier,
                "--synthesis-prefix-len-multiplier",
                0.001,
            )?,
            prefix_roots: roots as u32,
            prompt_len: factor(
                args.synthesis_prompt_len_multiplier,
                "--synthesis-prompt-len-multiplier",
                0.001,
            )?,
            output_len: factor(
                args.synthesis_output_len_multiplier,
                "--synthesis-output-len-multiplier",
                0.0,
            )?,
            max_isl: tokens(args.synthesis_max_isl, "--synthesis-max-isl")?,
            max_osl: tokens(args.synthesis_max_osl, "--synthesis-max-osl")?,
        })
    }

    /// Whether any flag was given.
    pub fn given(&self) -> bool {
        *self != Synthesis::default()
    }

    /// Whether the trace is rebuilt (a factor other than 1), as AIPerf runs its synthesizer
    /// only then; the caps alone only drop and cap.
    pub fn rebuilds(&self) -> bool {
        Synthesis {
            max_isl: None,
            max_osl: None,
            ..*self
        } != Synthesis::default()
    }

    /// The first flag given, for messages.
    pub fn first_flag(&self) -> Option<&'static str> {
        [
            (self.speedup != 1.0, "--synthesis-speedup-ratio"),
            (self.prefix_len != 1.0, "--synthesis-prefix-len-multiplier"),
            (self.prefix_roots != 1, "--synthesis-prefix-root-multiplier"),
            (self.prompt_len != 1.0, "--synthesis-prompt-len-multiplier"),
            (self.output_len != 1.0, "--synthesis-output-len-multiplier"),
            (self.max_isl.is_some(), "--synthesis-max-isl"),
            (self.max_osl.is_some(), "--synthesis-max-osl"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}
