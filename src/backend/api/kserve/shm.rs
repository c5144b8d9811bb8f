//! `--shared-memory system`: the client's side of Triton's system shared-memory extension.
//!
//! When the dataset is encoded, each entry's inputs are written once into a region of their
//! own (`inferperf_<pid>_<run>_in<k>`, the inputs at 64-byte-aligned offsets) and its request
//! names them instead of carrying data. Outputs go to a region per in-flight slot
//! (`inferperf_<pid>_<run>_out<slot>`, six digits): a slot has one request in flight at a
//! time, so no two requests in flight write the same bytes, and the answer a slot reads back
//! is its own. The slot's region holds every output at `output-shared-memory-size × batch`
//! bytes apart (perf_analyzer's size × outputs × batch). Requests are encoded naming slot 0's
//! region; a connection of another slot swaps its own six digits in (same length, so the
//! framing stays valid), once per entry, and keeps the result. Regions are registered before
//! the run, a slot's when its connection first opens, and unregistered and unlinked after it
//! ([`ShmSession::cleanup`]; the creator's mapping also unlinks its key when dropped, and a
//! hard exit unlinks every key this process made). A run first removes what dead runs
//! (`inferperf_<pid>_…` whose pid is gone) left in /dev/shm and on the server.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use prost::Message;
use serde_json::{json, Map, Value};

use super::request::infer_request;
use super::shm_control::Control;
use crate::backend::outcome::ErrorKind;
use crate::backend::{Payload, Target};
use crate::config::{shm::ShmConfig, Protocol};
use crate::data::Entry;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::grpc_frames;
use inferperf_wire::model::ModelSpec;
use inferperf_wire::proto::infer_parameter::ParameterChoice;
use inferperf_wire::proto::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use inferperf_wire::proto::InferParameter;
use inferperf_wire::shm::{Mapping, BYTE_SIZE_PARAM, OFFSET_PARAM, PREFIX, REGION_PARAM};
use inferperf_wire::{self as wire, InferRequest};

/// Sessions made by this process, numbered so that their names never collide.
static SESSIONS: AtomicUsize = AtomicUsize::new(0);
/// Input tensors start at multiples of this many bytes within their region.
const ALIGN: usize = 64;

/// A run's regions and how its requests name them.
#[derive(Debug)]
pub struct ShmSession {
    /// `inferperf_<pid>_<n>`: the start of every region name of this session.
    run: String,
    /// Bytes of each output's share of a slot's region.
    per_output: u64,
    /// The outputs requested, in the order of their shares.
    outputs: OnceLock<Vec<String>>,
    /// Input regions made as entries are encoded, registered by [`ShmSession::register`].
    inputs: Mutex<Vec<Arc<Mapping>>>,
    /// Each slot's output region, made and registered when the slot first connects.
    slots: tokio::sync::Mutex<BTreeMap<usize, Arc<SlotRegion>>>,
    /// Every name registered with the server, to unregister.
    registered: Mutex<Vec<String>>,
}

/// One in-flight slot's output region.
#[derive(Debug)]
pub struct SlotRegion {
    pub name: String,
    map: Mapping,
    per_output: u64,
    outputs: Vec<String>,
}

impl SlotRegion {
    /// The bytes of output `name` in this region: its share, cut to `len` when given.
    pub fn output(&self, name: &str, len: Option<usize>) -> Option<Vec<u8>> {
        let index = self.outputs.iter().position(|o| o == name)?;
        let share = self.per_output as usize;
        let len = len.unwrap_or(share);
        if len > share {
            return None;
        }
        self.map.read(index * share, len)
    }
}

fn key_of(name: &str) -> String {
    format!("/{name}")
}

fn param_json(region: &str, offset: u64, size: u64) -> Value {
    let mut map = Map::new();
    map.insert(REGION_PARAM.into(), json!(region));
    map.insert(BYTE_SIZE_PARAM.into(), json!(size));
    if offset != 0 {
        map.insert(OFFSET_PARAM.into(), json!(offset));
    }
    Value::Object(map)
}

fn param_grpc(
    region: &str,
    offset: u64,
    size: u64,
) -> std::collections::HashMap<String, InferParameter> {
    let int = |n: u64| InferParameter {
        parameter_choice: Some(ParameterChoice::Int64Param(n as i64)),
    };
    let mut map = std::collections::HashMap::new();
    let region = ParameterChoice::StringParam(region.to_string());
    let region = InferParameter {
        parameter_choice: Some(region),
    };
    map.insert(REGION_PARAM.to_string(), region);
    map.insert(BYTE_SIZE_PARAM.to_string(), int(size));
    if offset != 0 {
        map.insert(OFFSET_PARAM.to_string(), int(offset));
    }
    map
}

impl ShmSession {
    pub fn new(shm: &ShmConfig, batch: u32) -> ShmSession {
        let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
        ShmSession {
            run: format!("{PREFIX}{}_{n}", std::process::id()),
            per_output: shm.output_size.saturating_mul(batch.max(1) as u64),
            outputs: OnceLock::new(),
            inputs: Mutex::new(Vec::new()),
            slots: tokio::sync::Mutex::new(BTreeMap::new()),
            registered: Mutex::new(Vec::new()),
        }
    }

    /// The output region name of `slot` (six digits, so every slot's is as long).
    pub fn slot_name(&self, slot: usize) -> String {
        format!("{}_out{:06}", self.run, slot % 1_000_000)
    }

    /// Writes the entry's inputs into a new region and encodes the request naming it.
    pub fn encode(
        &self,
        target: &Target,
        model: &ModelSpec,
        entry: &Entry,
        parameters: &Map<String, Value>,
    ) -> RunResult<Payload> {
        let outputs = self
            .outputs
            .get_or_init(|| model.outputs.iter().map(|o| o.name.clone()).collect());
        let (region, offsets) = self.write_inputs(entry)?;
        let slot0 = self.slot_name(0);
        let per_output = self.per_output;
        let out_offset = |j: usize| j as u64 * per_output;
        Ok(match target.protocol {
            Protocol::Http => {
                let inputs: Vec<Value> = (entry.inputs.iter().zip(&offsets))
                    .map(|(t, &off)| {
                        json!({"name": t.name, "datatype": t.datatype.as_str(), "shape": t.shape,
                           "parameters": param_json(&region, off, t.data.len() as u64)})
                    })
                    .collect();
                let outputs: Vec<Value> = (outputs.iter().enumerate())
                    .map(|(j, name)| {
                        json!({"name": name, "parameters": param_json(&slot0, out_offset(j), per_output)})
                    })
                    .collect();
                let mut body = json!({"inputs": inputs, "outputs": outputs});
                if !parameters.is_empty() {
                    body["parameters"] = Value::Object(parameters.clone());
                }
                Payload::Http(infer_request(target, body.to_string().as_bytes(), None))
            }
            Protocol::Grpc => {
                let request = InferRequest {
                    parameters: parameters.clone(),
                    ..Default::default()
                };
                let mut message = wire::to_grpc_request(&target.model, &target.version, &request);
                message.inputs = (entry.inputs.iter().zip(&offsets))
                    .map(|(t, &off)| InferInputTensor {
                        name: t.name.clone(),
                        datatype: t.datatype.as_str().to_string(),
                        shape: t.shape.clone(),
                        parameters: param_grpc(&region, off, t.data.len() as u64),
                        contents: None,
                    })
                    .collect();
                message.outputs = (outputs.iter().enumerate())
                    .map(|(j, name)| InferRequestedOutputTensor {
                        name: name.clone(),
                        parameters: param_grpc(&slot0, out_offset(j), per_output),
                    })
                    .collect();
                let bytes = message.encode_to_vec();
                Payload::Grpc(grpc_frames::frame(&bytes, target.peer.grpc_compression))
            }
        })
    }

    /// A new region holding the entry's inputs: its name and each input's offset.
    fn write_inputs(&self, entry: &Entry) -> RunResult<(String, Vec<u64>)> {
        let mut offsets = Vec::with_capacity(entry.inputs.len());
        let mut end = 0usize;
        for tensor in &entry.inputs {
            let start = end.div_ceil(ALIGN) * ALIGN;
            offsets.push(start as u64);
            end = start + tensor.data.len();
        }
        let mut inputs = self.inputs.lock().unwrap_or_else(|e| e.into_inner());
        let name = format!("{}_in{}", self.run, inputs.len());
        let map = Mapping::create(&key_of(&name), end).map_err(|e| {
            RunError::failed(format!(
                "Cannot create the shared-memory region {}/{name} ({e}): is /dev/shm full or not writable?",
                inferperf_wire::shm::SHM_DIR
            ))
        })?;
        for (tensor, &offset) in entry.inputs.iter().zip(&offsets) {
            map.write(offset as usize, &tensor.data);
        }
        inputs.push(Arc::new(map));
        Ok((name, offsets))
    }

    fn note_registered(&self, name: &str) {
        let mut registered = self.registered.lock().unwrap_or_else(|e| e.into_inner());
        registered.push(name.to_string());
    }

    /// Before the run: clears what dead runs left, registers every input region and slot
    /// 0's output region. A refusal is the run's error (and what was registered is undone).
    pub async fn register(&self, target: &Target) -> RunResult<()> {
        let mut control = Control::open(target)
            .await
            .map_err(|why| refused(target, "", &why))?;
        clear_stale(target, &mut control).await;
        let inputs: Vec<Arc<Mapping>> =
            (self.inputs.lock().unwrap_or_else(|e| e.into_inner())).clone();
        for map in inputs {
            let name = &map.key()[1..];
            if let Err(why) = control
                .register(target, name, map.key(), map.len() as u64)
                .await
            {
                self.cleanup(target).await;
                return Err(refused(target, name, &why));
            }
            self.note_registered(name);
        }
        if let Err(why) = self.slot_with(target, 0, &mut control).await {
            self.cleanup(target).await;
            return Err(refused(target, &self.slot_name(0), &why));
        }
        Ok(())
    }

    /// The output region of `slot`, made and registered on first use.
    pub async fn slot(&self, target: &Target, slot: usize) -> Result<Arc<SlotRegion>, ErrorKind> {
        if let Some(region) = self.slots.lock().await.get(&slot) {
            return Ok(region.clone());
        }
        let mut control = Control::open(target)
            .await
            .map_err(|_| ErrorKind::Connection)?;
        self.slot_with(target, slot, &mut control)
            .await
            .map_err(|_| ErrorKind::Connection)
    }

    async fn slot_with(
        &self,
        target: &Target,
        slot: usize,
        control: &mut Control,
    ) -> Result<Arc<SlotRegion>, String> {
        let mut slots = self.slots.lock().await;
        if let Some(region) = slots.get(&slot) {
            return Ok(region.clone());
        }
        let name = self.slot_name(slot);
        let outputs = self.outputs.get().cloned().unwrap_or_default();
        let size = self.per_output.saturating_mul(outputs.len().max(1) as u64);
        let map = Mapping::create(&key_of(&name), size as usize).map_err(|e| e.to_string())?;
        control.register(target, &name, map.key(), size).await?;
        self.note_registered(&name);
        let region = Arc::new(SlotRegion {
            name,
            map,
            per_output: self.per_output,
            outputs,
        });
        slots.insert(slot, region.clone());
        Ok(region)
    }

    /// After the run (however it ended): unregisters every region and unlinks it. A server
    /// that cannot be told is said on standard error; the regions are unlinked anyway.
    pub async fn cleanup(&self, target: &Target) {
        let names = std::mem::take(&mut *self.registered.lock().unwrap_or_else(|e| e.into_inner()));
        if !names.is_empty() {
            let failed = match Control::open(target).await {
                Ok(mut control) => {
                    let mut failed = None;
                    for name in &names {
                        if let (Err(why), None) = (control.unregister(target, name).await, &failed)
                        {
                            failed = Some(why);
                        }
                    }
                    failed
                }
                Err(why) => Some(why),
            };
            if let Some(why) = failed {
                eprintln!(
                    "warning: the shared-memory regions could not all be unregistered from {} ({why}); the next inferperf run against it unregisters them.",
                    target.peer.authority
                );
            }
        }
        self.slots.lock().await.clear();
        self.inputs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

/// The sentence for a registration the server refused.
fn refused(target: &Target, name: &str, why: &str) -> RunError {
    RunError::failed(format!(
        "The server at {} refused to register the shared-memory region '{name}' ({why}): --shared-memory system needs a server on this machine that offers the system shared-memory extension and can open this machine's /dev/shm (recent Triton also needs --allow-client-shm=true, and a container --ipc=host); run without --shared-memory otherwise.",
        target.peer.authority
    ))
}

/// Unlinks what dead runs left in /dev/shm and unregisters their regions on the server.
async fn clear_stale(target: &Target, control: &mut Control) {
    inferperf_wire::shm::remove_stale_objects();
    let Ok(names) = control.status(target).await else {
        return;
    };
    for name in names.iter().filter(|n| inferperf_wire::shm::is_stale(n)) {
        let _ = control.unregister(target, name).await;
    }
}
