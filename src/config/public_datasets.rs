//! The public datasets AIPerf 0.13 knows by name (`--public-dataset`), with where each is
//! read from and what a row becomes — the facts of AIPerf's registry, kept as a table so
//! that the name is checked with the other flags and the dataset box only reads it. A
//! name inferperf cannot send says why in one sentence.

use inferperf_wire::error::{RunError, RunResult};

/// How a public dataset's rows become requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// ShareGPT's JSON: every human→gpt pair a turn, filtered by length (AIPerf's rules).
    ShareGpt,
    /// One request per row: `column` (or `template` filled from the row's columns), with
    /// the first image of `image` when given.
    Instruction {
        column: &'static str,
        template: Option<&'static str>,
        image: Option<&'static str>,
    },
    /// A row's list of prompts (`prompt`) is a multi-turn conversation (MT-Bench).
    PromptList,
    /// The question and its lettered choices, with the row's video (MMVU).
    VideoQuestion,
    /// The first user message of a conversation column, with its first image.
    Conversation {
        column: &'static str,
        content_key: &'static str,
        image: &'static str,
    },
    /// Spec-Bench's JSON Lines: the first of each row's `turns`.
    SpecBench,
}

/// Where a dataset comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A Hugging Face dataset repository, its split and subset (config).
    Hub {
        repo: &'static str,
        split: &'static str,
        subset: Option<&'static str>,
    },
    /// One file of a Hugging Face dataset repository.
    HubFile {
        repo: &'static str,
        file: &'static str,
    },
    /// A plain URL (AIPerf caches it as `./.cache/aiperf/datasets/<file>`).
    Url {
        url: &'static str,
        file: &'static str,
    },
}

/// A public dataset inferperf reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublicDataset {
    pub name: &'static str,
    pub source: Source,
    pub shape: Shape,
}

impl PublicDataset {
    /// Whether AIPerf streams the dataset, reading only the rows a run needs (its large
    /// ones): inferperf then reads the split's files in order until it has them.
    pub fn streamed(&self) -> bool {
        matches!(self.name, "vision_arena" | "llava_onevision")
    }
}

/// `--public-dataset` and `--hf-subset`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicChoice {
    pub dataset: PublicDataset,
    /// `--hf-subset`, in place of the dataset's own.
    pub subset: Option<String>,
    /// The rows a streamed dataset is read to (AIPerf's cap: the request count, else the
    /// number of dataset entries).
    pub rows: usize,
}

const fn hub(repo: &'static str, split: &'static str, subset: Option<&'static str>) -> Source {
    Source::Hub {
        repo,
        split,
        subset,
    }
}

const fn instruction(column: &'static str) -> Shape {
    Shape::Instruction {
        column,
        template: None,
        image: None,
    }
}

/// Blazedit's prompt, as vLLM's benchmark and AIPerf build it.
const BLAZEDIT: &str = "Given a code file, please apply the change requests and generate the new file.\n\nOriginal file:\n```python\n{code}\n```\n\nChange request:\n{change_request}\n\nPlease generate the new code file in the \"New file\" section below.";

const fn blazedit(repo: &'static str) -> Source {
    hub(repo, "train", None)
}

/// Every public dataset inferperf sends.
pub const PUBLIC_DATASETS: &[PublicDataset] = &[
    PublicDataset {
        name: "sharegpt",
        source: Source::HubFile {
            repo: "anon8231489123/ShareGPT_Vicuna_unfiltered",
            file: "ShareGPT_V3_unfiltered_cleaned_split.json",
        },
        shape: Shape::ShareGpt,
    },
    PublicDataset {
        name: "aimo",
        source: hub("AI-MO/NuminaMath-TIR", "train", None),
        shape: instruction("problem"),
    },
    PublicDataset {
        name: "aimo_aime",
        source: hub("AI-MO/aimo-validation-aime", "train", None),
        shape: instruction("problem"),
    },
    PublicDataset {
        name: "aimo_numina_cot",
        source: hub("AI-MO/NuminaMath-CoT", "train", None),
        shape: instruction("problem"),
    },
    PublicDataset {
        name: "aimo_numina_1_5",
        source: hub("AI-MO/NuminaMath-1.5", "train", None),
        shape: instruction("problem"),
    },
    PublicDataset {
        name: "mmstar",
        source: hub("Lin-Chen/MMStar", "val", None),
        shape: Shape::Instruction {
            column: "question",
            template: None,
            image: Some("image"),
        },
    },
    PublicDataset {
        name: "mmvu",
        source: hub("yale-nlp/MMVU", "validation", None),
        shape: Shape::VideoQuestion,
    },
    PublicDataset {
        name: "vision_arena",
        source: hub("lmarena-ai/VisionArena-Chat", "train", None),
        shape: Shape::Conversation {
            column: "conversation",
            content_key: "content",
            image: "images",
        },
    },
    PublicDataset {
        name: "llava_onevision",
        source: hub("lmms-lab/LLaVA-OneVision-Data", "train", Some("sharegpt4o")),
        shape: Shape::Conversation {
            column: "conversations",
            content_key: "value",
            image: "image",
        },
    },
    PublicDataset {
        name: "instruct_coder",
        source: hub("likaixin/InstructCoder", "train", None),
        shape: instruction("instruction"),
    },
    PublicDataset {
        name: "blazedit_5k",
        source: blazedit("vdaita/edit_5k_char"),
        shape: Shape::Instruction {
            column: "change_request",
            template: Some(BLAZEDIT),
            image: None,
        },
    },
    PublicDataset {
        name: "blazedit_10k",
        source: blazedit("vdaita/edit_10k_char"),
        shape: Shape::Instruction {
            column: "change_request",
            template: Some(BLAZEDIT),
            image: None,
        },
    },
    PublicDataset {
        name: "spec_bench",
        source: Source::Url {
            url: "https://raw.githubusercontent.com/hemingkx/Spec-Bench/fd2c1cd7d2201ef71db4c5f4e455008f017967bf/data/spec_bench/question.jsonl",
            file: "spec_bench.jsonl",
        },
        shape: Shape::SpecBench,
    },
    PublicDataset {
        name: "spec_al_gsm8k",
        source: hub("openai/gsm8k", "test", Some("main")),
        shape: instruction("question"),
    },
    PublicDataset {
        name: "spec_al_math500",
        source: hub("HuggingFaceH4/MATH-500", "test", None),
        shape: instruction("problem"),
    },
    PublicDataset {
        name: "spec_al_humaneval",
        source: hub("openai/openai_humaneval", "test", None),
        shape: instruction("prompt"),
    },
    PublicDataset {
        name: "spec_al_mbpp",
        source: hub("google-research-datasets/mbpp", "test", Some("full")),
        shape: instruction("text"),
    },
    PublicDataset {
        name: "spec_al_mtbench",
        source: hub("HuggingFaceH4/mt_bench_prompts", "train", None),
        shape: Shape::PromptList,
    },
];

/// AIPerf's number of dataset entries when nothing says how many.
const DEFAULT_ROWS: usize = 100;

/// AIPerf's names inferperf does not send, each with why.
const REFUSED: &[(&str, &str)] = &[
    ("librispeech", AUDIO),
    ("voxpopuli", AUDIO),
    ("gigaspeech", AUDIO),
    ("ami", AUDIO),
    ("spgispeech", AUDIO),
    ("exgentic", AGENT),
    ("exgentic_v2", AGENT),
    ("weka_hf", WEKA),
];

const AUDIO: &str = "is a speech dataset whose clips go as audio input, which inferperf's requests do not carry yet: use a text dataset, or --input-file with --custom-dataset-type single_turn";
const AGENT: &str = "replays recorded agent spans with their tools, sampling settings and timing, which inferperf does not rebuild yet: use --custom-dataset-type mooncake_trace with a file of messages";
const WEKA: &str = "is a Weka agentic trace whose subagents run as concurrent child sessions, which inferperf's sessions do not model: use --custom-dataset-type mooncake_trace";

/// Reads `--public-dataset NAME` (dashes or underscores) and `--hf-subset`.
pub fn parse(name: Option<&str>, subset: Option<&str>) -> RunResult<Option<PublicChoice>> {
    let Some(given) = name else {
        if subset.is_some() {
            return Err(RunError::bad_option(
                "--hf-subset picks the subset of a --public-dataset read from the Hugging Face hub: add --public-dataset NAME.",
            ));
        }
        return Ok(None);
    };
    let key = given.trim().replace('-', "_");
    if let Some(dataset) = PUBLIC_DATASETS.iter().find(|d| d.name == key) {
        if subset.is_some() && !matches!(dataset.source, Source::Hub { .. }) {
            return Err(RunError::bad_option(format!(
                "--hf-subset applies to datasets read through Hugging Face's datasets layout; --public-dataset {key} is one file: drop --hf-subset."
            )));
        }
        return Ok(Some(PublicChoice {
            dataset: *dataset,
            subset: subset.map(|s| s.trim().to_string()),
            rows: DEFAULT_ROWS,
        }));
    }
    if let Some((_, why)) = REFUSED.iter().find(|(n, _)| *n == key) {
        return Err(RunError::bad_option(format!(
            "--public-dataset {key} {why}."
        )));
    }
    if key.starts_with("semianalysis_cc_traces_weka") {
        return Err(RunError::bad_option(format!(
            "--public-dataset {key} {WEKA}."
        )));
    }
    if key.starts_with("speed_bench") {
        return Err(RunError::bad_option(format!(
            "--public-dataset {key}: SPEED-Bench is a file dataset in AIPerf 0.13: give --input-file qualitative.jsonl (or throughput_*.jsonl) --custom-dataset-type {key}."
        )));
    }
    let names: Vec<&str> = PUBLIC_DATASETS.iter().map(|d| d.name).collect();
    Err(RunError::bad_option(format!(
        "--public-dataset '{given}' is not a public dataset AIPerf 0.13 knows: use one of {}.",
        names.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_take_dashes_or_underscores_and_refused_ones_say_why() {
        let choice = parse(Some("aimo-numina-1-5"), None).unwrap().unwrap();
        assert_eq!(choice.dataset.name, "aimo_numina_1_5");
        let choice = parse(Some("spec_al_gsm8k"), Some("socratic"))
            .unwrap()
            .unwrap();
        assert_eq!(choice.subset.as_deref(), Some("socratic"));
        for (name, said) in [
            ("librispeech", "audio input"),
            ("exgentic-v2", "agent spans"),
            ("semianalysis_cc_traces_weka_061326_256k", "Weka"),
            (
                "speed_bench_coding",
                "--custom-dataset-type speed_bench_coding",
            ),
            ("nope", "not a public dataset AIPerf 0.13 knows"),
        ] {
            let message = parse(Some(name), None).unwrap_err().to_string();
            assert!(message.contains(said), "{name}: {message}");
        }
        let message = parse(None, Some("main")).unwrap_err().to_string();
        assert!(message.contains("add --public-dataset"), "{message}");
        let message = parse(Some("sharegpt"), Some("x")).unwrap_err().to_string();
        assert!(message.contains("drop --hf-subset"), "{message}");
    }

    #[test]
    fn every_name_of_aiperf_is_sent_or_refused() {
        let aiperf = [
            "exgentic_v2",
            "exgentic",
            "sharegpt",
            "aimo",
            "mmstar",
            "mmvu",
            "vision_arena",
            "llava_onevision",
            "aimo_aime",
            "aimo_numina_cot",
            "aimo_numina_1_5",
            "spec_bench",
            "spec_al_gsm8k",
            "spec_al_math500",
            "spec_al_humaneval",
            "spec_al_mbpp",
            "spec_al_mtbench",
            "instruct_coder",
            "blazedit_5k",
            "blazedit_10k",
            "librispeech",
            "voxpopuli",
            "gigaspeech",
            "ami",
            "spgispeech",
            "semianalysis_cc_traces_weka",
            "semianalysis_cc_traces_weka_with_subagents_060826_256k",
            "weka_hf",
        ];
        for name in aiperf {
            let message = match parse(Some(name), None) {
                Ok(found) => found.unwrap().dataset.name.to_string(),
                Err(e) => e.to_string(),
            };
            assert!(!message.contains("not a public dataset"), "{name}");
        }
    }
}
