//! The dataset: what the requests of a run carry, built once from the model and the flags —
//! input tensors, the outputs each request expects (`validation_data`) and its timestamp for
//! `--fixed-schedule`. It knows no protocol: the adapters of `backend` turn each entry into
//! the bytes of their API once, when the run starts, so that sending only clones a `Bytes`.

pub mod chat_template;
pub mod directory;
pub mod entry;
pub mod generate;
pub mod hub;
pub mod json_file;
pub mod lengths;
mod marker;
pub mod media;
pub mod message_generator;
pub mod parts;
pub mod prompt_maker;
pub mod prompts;
pub mod public;
pub mod rankings;
pub mod sessions;
pub mod shape;
pub mod shaping;
pub mod tokenizer;
pub mod torchserve;
pub mod traces;
pub mod values;

use crate::config::shard::ShardPlan;
use crate::config::{DataConfig, InputData, OpenAiConfig};
pub use entry::{Entry, Prompt};
use generate::{element_count, tensor_bytes, GenerateOptions};
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::{DataType, ModelSpec, TensorSpec};
use inferperf_wire::Tensor;

/// The request data of a run, one entry per distinct request, in the order they are sent.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Each entry holds one whole request's inputs (batched, shapes complete), its expected
    /// outputs and its timestamp.
    pub entries: Vec<Entry>,
    /// What counts the tokens of an LLM run's prompts and answers.
    pub tokenizer: Option<tokenizer::Counter>,
    /// The tokens of `--cache-bust`'s marker, counted in each prompt's input (0: none).
    pub marker_tokens: u32,
}

/// The prompts of an LLM run, from beyond the data section: the API's prompt settings (the
/// target section), the seed they are drawn with (the load section), and what counts their
/// tokens (`None`: the builtin tokenizer, as an approximation).
pub struct PromptSettings<'a> {
    pub llm: &'a OpenAiConfig,
    pub seed: u64,
    pub counter: Option<tokenizer::Counter>,
    /// `--input-file` in an AIPerf format, read and checked before anything was sent.
    pub file: Option<traces::TraceFile>,
}

impl Dataset {
    /// Builds the run's request data: random or zero data is generated once and reused, as
    /// perf_analyzer does; user data is read and batched.
    pub fn build(data: &DataConfig, model: &ModelSpec) -> RunResult<Dataset> {
        Dataset::build_with(data, model, None)
    }

    /// [`Dataset::build`], or an LLM run's prompts when `prompts` are given.
    pub fn build_with(
        data: &DataConfig,
        model: &ModelSpec,
        prompts: Option<PromptSettings>,
    ) -> RunResult<Dataset> {
        if let Some(PromptSettings {
            llm,
            seed,
            counter,
            file,
        }) = prompts
        {
            let counter = match counter {
                Some(counter) => counter,
                None => tokenizer::builtin(true)?,
            };
            let marker_tokens = marker::tokens(llm, counter.as_ref())?;
            let synthetic = synthetic_prompts(data, file.as_ref(), llm);
            let templated = llm.apply_chat_template && llm.endpoint.facts().system_message;
            let system = data.workload.system_prompt_tokens.is_some()
                || data.workload.dataset.system_prompt.is_some();
            let room = marker::Room {
                marker: marker_tokens,
                template: match templated {
                    true => marker::template_overhead(counter.as_ref(), system)?,
                    false => 0,
                },
            };
            let roomed = marker::make_room(llm, data, synthetic, room);
            let (llm, data) = match &roomed {
                Some((llm, data)) => (llm, data),
                None => (llm, data),
            };
            let mut entries = prompt_entries(data, file.as_ref(), llm, seed, counter.as_ref())?;
            marker::count_in(&mut entries, marker_tokens);
            if templated {
                marker::count_templated(&mut entries, counter.as_ref(), marker_tokens)?;
            }
            return Ok(Dataset {
                entries,
                tokenizer: Some(counter),
                marker_tokens,
            });
        }
        let model = &with_declared_inputs(data, model)?;
        shape::check_request_flags(model, &data.shapes, data.batch_size)?;
        let entries = match load_entries(data, model)? {
            Some(entries) => entry::batch_entries(&entries, model, data.batch_size)?,
            None => vec![generated_entry(data, model)?],
        };
        Ok(Dataset {
            entries,
            tokenizer: None,
            marker_tokens: 0,
        })
    }

    /// This process's part of the data when it is one shard of a run (the whole data
    /// otherwise); `fixed_schedule`: the entries' timestamps are the schedule.
    pub fn for_shard(
        mut self,
        shard: Option<&ShardPlan>,
        fixed_schedule: bool,
    ) -> RunResult<Dataset> {
        if let Some(shard) = shard {
            self.entries = shard_entries(shard, fixed_schedule, self.entries)?;
        }
        Ok(self)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Per entry: its `"timestamp"` in milliseconds, if it has one.
    pub fn timestamps_ms(&self) -> impl Iterator<Item = Option<f64>> + '_ {
        self.entries.iter().map(|e| e.timestamp_ms)
    }
}

/// An LLM run's entries: synthetic sessions when they are asked for and the prompts are
/// synthetic, else the prompts; a session's turns without a wait of their own get one
/// drawn from the delay flags.
fn prompt_entries(
    data: &DataConfig,
    file: Option<&traces::TraceFile>,
    llm: &OpenAiConfig,
    seed: u64,
    counter: &dyn tokenizer::TokenCount,
) -> RunResult<Vec<Entry>> {
    let asked = data.sessions.as_ref();
    let synthetic_prompts = synthetic_prompts(data, file, llm);
    let mut entries = match asked.and_then(|s| s.synthetic.as_ref().map(|n| (n, &s.delay))) {
        Some((synthetic, delay)) if synthetic_prompts => {
            sessions::synthetic(synthetic, delay, llm, &data.workload.dataset, seed, counter)?
        }
        _ => match file {
            Some(file) => traces::entries(file, &data.workload, llm, seed, counter)?,
            None if synthetic_prompts && llm.endpoint.rankings() => {
                rankings::synthetic(&data.rankings, llm, seed, counter)?
            }
            None => {
                let sources = prompts::Sources {
                    input_data: &data.input_data,
                    workload: &data.workload,
                };
                prompts::build(&sources, llm, seed, counter)?
            }
        },
    };
    if let Some(asked) = asked {
        sessions::fill_delays(&mut entries, &asked.delay, seed);
    }
    if let Some(tokens) = data.workload.system_prompt_tokens {
        prompts::add_system_prompt(&mut entries, tokens, llm, seed, counter)?;
    }
    let origin = match file.map(|f| f.format) {
        _ if synthetic_prompts => shaping::Origin::Synthetic,
        Some(crate::config::workload::FileFormat::RandomPool) => shaping::Origin::Pool,
        _ => shaping::Origin::Dataset,
    };
    let mut entries = shaping::apply(entries, &data.workload.dataset, llm, seed, counter, origin)?;
    attach_media(&mut entries, &data.media, seed)?;
    Ok(entries)
}

/// Whether the run's prompts are made here (no file, no `--input-data` of prompts).
fn synthetic_prompts(
    data: &DataConfig,
    file: Option<&traces::TraceFile>,
    llm: &OpenAiConfig,
) -> bool {
    file.is_none()
        && matches!(llm.prompt_source, crate::config::PromptSource::Synthetic)
        && !matches!(
            data.input_data,
            InputData::Json(_) | InputData::Directory(_)
        )
}

/// Attaches the run's media to its synthetic prompts (those not sent as given), in order.
pub(crate) fn attach_media(
    entries: &mut [Entry],
    config: &crate::config::media::MediaConfig,
    seed: u64,
) -> RunResult<()> {
    if !config.is_on() {
        return Ok(());
    }
    let mut prompts: Vec<&mut entry::Prompt> = (entries.iter_mut())
        .filter_map(|e| e.prompt.as_mut())
        .filter(|p| p.body.is_none() && p.messages.is_none())
        .collect();
    let media = media::make(config, seed, prompts.len())?;
    for (prompt, media) in prompts.iter_mut().zip(media) {
        prompt.media = Some(std::sync::Arc::new(media));
    }
    Ok(())
}

/// The run's file or public dataset, read and checked before anything is sent, its waits
/// as the dataset flags have them (`None`: the prompts come from elsewhere).
pub fn load_dataset_file(
    workload: &crate::config::workload::WorkloadConfig,
    seed: u64,
) -> RunResult<Option<traces::TraceFile>> {
    let file = match (
        traces::read_input_file(workload, seed)?,
        &workload.dataset.public,
    ) {
        (Some(file), _) => file,
        (None, Some(choice)) => public::read(choice)?,
        (None, None) => return Ok(None),
    };
    traces::settle_delays(file, workload)
}

/// A shard's part of the data: every N-th entry from its index (generated data, a single
/// entry, is every shard's). Timestamps are taken from the whole data's first, so that the
/// shards of a fixed schedule replay the whole one together.
fn shard_entries(shard: &ShardPlan, fixed: bool, mut entries: Vec<Entry>) -> RunResult<Vec<Entry>> {
    if shard.count <= 1 {
        return Ok(entries);
    }
    if entries.len() <= 1 && !fixed {
        return Ok(entries);
    }
    if entries.len() < shard.count as usize {
        return Err(RunError::bad_option(format!(
            "--input-data has {} entries, fewer than the {} shards it is dealt out to: give at least one entry per shard, or run fewer shards.",
            entries.len(),
            shard.count
        )));
    }
    let origin = entries
        .iter()
        .filter_map(|e| e.timestamp_ms)
        .fold(f64::INFINITY, f64::min);
    if origin.is_finite() {
        for entry in &mut entries {
            entry.timestamp_ms = entry.timestamp_ms.map(|t| t - origin);
        }
    }
    Ok(entries
        .into_iter()
        .enumerate()
        .filter(|(n, _)| shard.takes(*n as u64))
        .map(|(_, e)| e)
        .collect())
}

/// Reads the entries of a JSON or directory source; `None` for generated data.
fn load_entries(data: &DataConfig, model: &ModelSpec) -> RunResult<Option<Vec<Entry>>> {
    match &data.input_data {
        InputData::Random | InputData::Zero => Ok(None),
        InputData::Json(files) => {
            let mut entries = Vec::new();
            for file in files {
                // Each file's streams follow the previous files' ones.
                let streams_before = entries.iter().filter_map(|e: &Entry| e.stream).max();
                let offset = streams_before.map_or(0, |s| s + 1);
                let read = json_file::read(file, model, &data.shapes)?;
                entries.extend(read.into_iter().map(|e| Entry {
                    stream: e.stream.map(|s| s + offset),
                    ..e
                }));
            }
            Ok(Some(entries))
        }
        InputData::Directory(dir) => Ok(Some(vec![directory::read(dir, model, &data.shapes)?])),
    }
}

/// Some servers (the KServe model server) list no inputs in their metadata: then the inputs
/// are the ones named by `--shape`, with `--input-datatype` (FP32 by default), taken as
/// full shapes.
fn with_declared_inputs(data: &DataConfig, model: &ModelSpec) -> RunResult<ModelSpec> {
    if !model.inputs.is_empty() {
        return Ok(model.clone());
    }
    if data.shapes.is_empty() {
        return Err(RunError::bad_option(format!(
            "Model '{}' lists no inputs in its metadata: pass --shape NAME:d1,d2,... for each input (and --input-datatype NAME:TYPE when it is not FP32).",
            model.name
        )));
    }
    let mut model = model.clone();
    model.max_batch_size = 0;
    model.inputs = data
        .shapes
        .iter()
        .map(|(name, dims)| TensorSpec {
            name: name.clone(),
            datatype: data
                .input_datatypes
                .get(name)
                .copied()
                .unwrap_or(DataType::Fp32),
            shape: dims.clone(),
        })
        .collect();
    Ok(model)
}

/// The one entry of generated data: every input filled with zeros or seeded random values.
fn generated_entry(data: &DataConfig, model: &ModelSpec) -> RunResult<Entry> {
    let mut shapes = Vec::with_capacity(model.inputs.len());
    for input in &model.inputs {
        shapes.push(shape::request_shape(
            input,
            model,
            &data.shapes,
            data.batch_size,
        )?);
    }
    check_generated_size(data, model, &shapes)?;
    let mut inputs = Vec::with_capacity(model.inputs.len());
    for (index, (input, shape)) in model.inputs.iter().zip(shapes).enumerate() {
        let opts = GenerateOptions {
            source: data.input_data.clone(),
            string_length: data.string_length,
            string_data: data.string_data.clone(),
            seed: 0x1f_e2e5 + index as u64,
        };
        inputs.push(Tensor {
            name: input.name.clone(),
            datatype: input.datatype,
            data: tensor_bytes(input.datatype, element_count(&shape), &opts),
            shape,
        });
    }
    Ok(Entry {
        inputs,
        timestamp_ms: None,
        expected: None,
        origin: format!("generated {} data", input_data_name(&data.input_data)),
        prompt: None,
        stream: None,
        turn: None,
    })
}

/// Refuses a generated request that would not fit in memory, before a byte of it is built.
fn check_generated_size(
    data: &DataConfig,
    model: &ModelSpec,
    shapes: &[Vec<i64>],
) -> RunResult<()> {
    let string_bytes = data
        .string_data
        .as_ref()
        .map_or(data.string_length, String::len) as u128;
    let mut total: u128 = 0;
    let mut strings = false;
    for (input, shape) in model.inputs.iter().zip(shapes) {
        let elements = shape
            .iter()
            .try_fold(1u128, |n, &d| n.checked_mul(d.max(0) as u128))
            .unwrap_or(u128::MAX);
        let element = match input.datatype.element_size() {
            Some(size) => size as u128,
            None => {
                strings = true;
                4 + string_bytes
            }
        };
        total = total.saturating_add(elements.saturating_mul(element));
    }
    let lower = if strings {
        "--string-length or the shape (--shape, -b)"
    } else {
        "the shape (--shape) or -b"
    };
    crate::config::bounds::request_size(total, lower)
}

fn input_data_name(source: &InputData) -> &'static str {
    match source {
        InputData::Zero => "zero",
        _ => "random",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_config;

    fn model(extensions: &[&str], inputs: Vec<TensorSpec>) -> ModelSpec {
        ModelSpec {
            name: "m".into(),
            inputs,
            server_extensions: extensions.iter().map(|e| e.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn undeclared_inputs_come_from_shape_flags() {
        let mut cfg = test_config();
        let bare = model(&[], vec![]);
        let err = Dataset::build(&cfg.data, &bare).unwrap_err();
        assert!(err.to_string().contains("--shape NAME:"), "{err}");
        cfg.data.shapes.insert("x".into(), vec![2, 3]);
        cfg.data.input_datatypes.insert("x".into(), DataType::Int8);
        let data = Dataset::build(&cfg.data, &bare).unwrap();
        let input = &data.entries[0].inputs[0];
        assert_eq!((input.name.as_str(), input.datatype), ("x", DataType::Int8));
        assert_eq!(input.shape, vec![2, 3]);
        assert_eq!(input.data.len(), 6);
    }
}
