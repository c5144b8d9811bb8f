//! The embedded server's side of Triton's system shared-memory extension: regions that
//! clients register by name (a POSIX key, an offset and a size into it), and requests whose
//! tensors name them instead of carrying data. Before inference an HTTP body or gRPC message
//! is rewritten into an ordinary one (each shared-memory input's bytes read from its region);
//! after it, each output asked for in a region is written there and its answer entry carries
//! the region's name and the bytes written instead of data. The models, and so the
//! statistics, never see the difference.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::error::InferError;
use inferperf_wire::proto::infer_parameter::ParameterChoice;
use inferperf_wire::proto::model_infer_response::InferOutputTensor;
use inferperf_wire::proto::{InferParameter, ModelInferRequest, ModelInferResponse};
use inferperf_wire::shm::{Mapping, BYTE_SIZE_PARAM, OFFSET_PARAM, REGION_PARAM};
use inferperf_wire::{HttpBody, InferResponse, Tensor};

/// The registered regions, by name.
#[derive(Debug, Default)]
pub struct ShmRegions {
    regions: Mutex<BTreeMap<String, Region>>,
}

/// One registered region as the status lists it.
#[derive(Debug, Clone)]
pub struct Region {
    pub name: String,
    pub key: String,
    pub offset: u64,
    pub byte_size: u64,
    map: Arc<Mapping>,
}

/// Where a tensor lives: a region, and the offset and size within it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub region: String,
    pub offset: u64,
    pub byte_size: u64,
}

/// An output written into its region, for the answer to name.
#[derive(Debug, Clone)]
pub struct Placed {
    pub tensor: Tensor,
    pub place: Place,
}

impl ShmRegions {
    /// Registers `name` as `byte_size` bytes at `offset` of the object `key`.
    pub fn register(
        &self,
        name: &str,
        key: &str,
        offset: u64,
        size: u64,
    ) -> Result<(), InferError> {
        if name.is_empty() {
            return Err(InferError::BadRequest("a region needs a name".into()));
        }
        let mut regions = self.lock();
        if regions.contains_key(name) {
            return Err(InferError::BadRequest(format!(
                "shared memory region '{name}' is already registered"
            )));
        }
        let map = Mapping::open(key).map_err(|e| {
            InferError::BadRequest(format!(
                "unable to open shared memory region '{name}' with key '{key}': {e}"
            ))
        })?;
        if offset.saturating_add(size) > map.len() as u64 {
            return Err(InferError::BadRequest(format!(
                "shared memory region '{name}': offset {offset} + byte_size {size} is beyond the {} bytes of '{key}'",
                map.len()
            )));
        }
        let region = Region {
            name: name.to_string(),
            key: key.to_string(),
            offset,
            byte_size: size,
            map: Arc::new(map),
        };
        regions.insert(name.to_string(), region);
        Ok(())
    }

    /// Unregisters `name` (every region when empty); an unknown name is not an error.
    pub fn unregister(&self, name: &str) {
        let mut regions = self.lock();
        match name {
            "" => regions.clear(),
            name => {
                regions.remove(name);
            }
        }
    }

    /// The regions registered (only `name`'s when given, an error if it is not).
    pub fn status(&self, name: &str) -> Result<Vec<Region>, InferError> {
        let regions = self.lock();
        if name.is_empty() {
            return Ok(regions.values().cloned().collect());
        }
        match regions.get(name) {
            Some(region) => Ok(vec![region.clone()]),
            None => Err(unknown(name)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Region>> {
        self.regions.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, name: &str) -> Result<Region, InferError> {
        self.lock().get(name).cloned().ok_or_else(|| unknown(name))
    }

    /// The bytes at `place`.
    pub fn read(&self, place: &Place) -> Result<Bytes, InferError> {
        let region = self.get(&place.region)?;
        let (start, len) = region.span(place)?;
        let bytes = region.map.read(start, len).ok_or_else(|| outside(place))?;
        Ok(Bytes::from(bytes))
    }

    /// Writes an output's bytes at `place`, which must hold them.
    pub fn write(&self, place: &Place, tensor: &Tensor) -> Result<(), InferError> {
        let region = self.get(&place.region)?;
        let (start, room) = region.span(place)?;
        if tensor.data.len() > room {
            return Err(InferError::BadRequest(format!(
                "shared memory size specified with the request for output '{}' ({room} bytes) should be at least {} bytes to hold the results",
                tensor.name,
                tensor.data.len()
            )));
        }
        match region.map.write(start, &tensor.data) {
            true => Ok(()),
            false => Err(outside(place)),
        }
    }
}

impl Region {
    /// Where `place` is in the mapping: its start and length, inside the registered span.
    fn span(&self, place: &Place) -> Result<(usize, usize), InferError> {
        let end = place.offset.checked_add(place.byte_size);
        if end.is_none_or(|end| end > self.byte_size) {
            return Err(outside(place));
        }
        let start = self.offset + place.offset;
        Ok((start as usize, place.byte_size as usize))
    }
}

fn unknown(name: &str) -> InferError {
    InferError::NotFound(format!(
        "unable to find system shared memory region: '{name}'"
    ))
}

fn outside(place: &Place) -> InferError {
    InferError::BadRequest(format!(
        "offset {} + byte_size {} is outside shared memory region '{}'",
        place.offset, place.byte_size, place.region
    ))
}

/// The place a JSON tensor's `parameters` name, taking those parameters out of them.
fn take_json_place(parameters: Option<&mut Value>) -> Result<Option<Place>, InferError> {
    let Some(Value::Object(map)) = parameters else {
        return Ok(None);
    };
    let Some(region) = map.remove(REGION_PARAM) else {
        return Ok(None);
    };
    let number = |value: Option<Value>, what: &str| match value {
        None if what == OFFSET_PARAM => Ok(0),
        Some(v) => v.as_u64().ok_or_else(|| bad_param(what)),
        None => Err(bad_param(what)),
    };
    let byte_size = number(map.remove(BYTE_SIZE_PARAM), BYTE_SIZE_PARAM)?;
    let offset = number(map.remove(OFFSET_PARAM), OFFSET_PARAM)?;
    let region = region.as_str().ok_or_else(|| bad_param(REGION_PARAM))?;
    Ok(Some(Place {
        region: region.to_string(),
        offset,
        byte_size,
    }))
}

fn bad_param(what: &str) -> InferError {
    InferError::BadRequest(format!(
        "the shared-memory parameter '{what}' is missing or not of the right type"
    ))
}

/// Whether a request's JSON names a region at all (the cheap test before any rewriting).
pub(crate) fn mentions_regions(json: &[u8]) -> bool {
    let needle = REGION_PARAM.as_bytes();
    (json.windows(needle.len())).any(|w| w[0] == b's' && w == needle)
}

/// The outputs asked for in regions, by output name.
pub(crate) type OutputPlaces = Vec<(String, Place)>;

impl ShmRegions {
    /// An HTTP request body with shared-memory inputs made ordinary: their bytes become
    /// binary tensor data (in input order with any binary inputs it had); the outputs asked
    /// for in regions are returned, their parameters taken out.
    pub fn rewrite_http(
        &self,
        body: &Bytes,
        header_len: Option<usize>,
    ) -> Result<(Bytes, Option<usize>, OutputPlaces), InferError> {
        let json_len = header_len.unwrap_or(body.len()).min(body.len());
        let mut request: Value = serde_json::from_slice(&body[..json_len])
            .map_err(|e| InferError::BadRequest(format!("the request is not JSON: {e}")))?;
        let mut old_binary = &body[json_len..];
        let mut binary = Vec::new();
        let mut any_binary = header_len.is_some();
        let inputs = request.get_mut("inputs").and_then(Value::as_array_mut);
        for input in inputs.into_iter().flatten() {
            if let Some(place) = take_json_place(input.get_mut("parameters"))? {
                let data = self.read(&place)?;
                binary.extend_from_slice(&data);
                input["parameters"]["binary_data_size"] = json!(data.len());
                any_binary = true;
                continue;
            }
            let size = input["parameters"]["binary_data_size"].as_u64();
            if let Some(size) = size.map(|s| s as usize).filter(|&s| s <= old_binary.len()) {
                binary.extend_from_slice(&old_binary[..size]);
                old_binary = &old_binary[size..];
            }
        }
        let mut places = Vec::new();
        let outputs = request.get_mut("outputs").and_then(Value::as_array_mut);
        for output in outputs.into_iter().flatten() {
            if let Some(place) = take_json_place(output.get_mut("parameters"))? {
                let name = output["name"].as_str().unwrap_or_default().to_string();
                places.push((name, place));
            }
        }
        let mut out = serde_json::to_vec(&request).unwrap_or_default();
        let json_len = out.len();
        out.extend_from_slice(&binary);
        Ok((Bytes::from(out), any_binary.then_some(json_len), places))
    }

    /// Writes the outputs asked for in regions there and takes them out of the response.
    pub fn place_outputs(
        &self,
        response: &mut InferResponse,
        places: &OutputPlaces,
    ) -> Result<Vec<Placed>, InferError> {
        let mut placed = Vec::new();
        let mut kept = Vec::new();
        for tensor in std::mem::take(&mut response.outputs) {
            match places.iter().find(|(name, _)| *name == tensor.name) {
                Some((_, place)) => {
                    self.write(place, &tensor)?;
                    let place = Place {
                        byte_size: tensor.data.len() as u64,
                        ..place.clone()
                    };
                    placed.push(Placed { tensor, place });
                }
                None => kept.push(tensor),
            }
        }
        response.outputs = kept;
        Ok(placed)
    }
}

/// The parameters an answer gives a placed output (the region, and the bytes written).
fn placed_json(place: &Place) -> Value {
    let mut map = Map::new();
    map.insert(REGION_PARAM.into(), json!(place.region));
    map.insert(BYTE_SIZE_PARAM.into(), json!(place.byte_size));
    if place.offset != 0 {
        map.insert(OFFSET_PARAM.into(), json!(place.offset));
    }
    Value::Object(map)
}

/// Adds the placed outputs (no data) to an encoded HTTP answer.
pub(crate) fn add_placed_http(
    encoded: HttpBody,
    placed: &[Placed],
) -> Result<HttpBody, InferError> {
    if placed.is_empty() {
        return Ok(encoded);
    }
    let json_len = encoded.header_len.unwrap_or(encoded.body.len());
    let mut answer: Value = serde_json::from_slice(&encoded.body[..json_len])
        .map_err(|e| InferError::Internal(format!("the answer is not JSON: {e}")))?;
    let entries = placed.iter().map(|p| {
        json!({"name": p.tensor.name, "datatype": p.tensor.datatype.as_str(),
               "shape": p.tensor.shape, "parameters": placed_json(&p.place)})
    });
    match answer.get_mut("outputs").and_then(Value::as_array_mut) {
        Some(outputs) => outputs.extend(entries),
        None => answer["outputs"] = Value::Array(entries.collect()),
    }
    let mut out = serde_json::to_vec(&answer).unwrap_or_default();
    let new_len = out.len();
    out.extend_from_slice(&encoded.body[json_len..]);
    Ok(HttpBody {
        body: Bytes::from(out),
        header_len: encoded.header_len.map(|_| new_len),
    })
}

/// The place named by a gRPC tensor's parameters, taking them out.
fn take_grpc_place(
    parameters: &mut HashMap<String, InferParameter>,
) -> Result<Option<Place>, InferError> {
    let Some(region) = parameters.remove(REGION_PARAM) else {
        return Ok(None);
    };
    let int = |p: Option<InferParameter>, what: &str| match p.and_then(|p| p.parameter_choice) {
        None if what == OFFSET_PARAM => Ok(0),
        Some(ParameterChoice::Int64Param(n)) if n >= 0 => Ok(n as u64),
        Some(ParameterChoice::Uint64Param(n)) => Ok(n),
        _ => Err(bad_param(what)),
    };
    let byte_size = int(parameters.remove(BYTE_SIZE_PARAM), BYTE_SIZE_PARAM)?;
    let offset = int(parameters.remove(OFFSET_PARAM), OFFSET_PARAM)?;
    let Some(ParameterChoice::StringParam(region)) = region.parameter_choice else {
        return Err(bad_param(REGION_PARAM));
    };
    Ok(Some(Place {
        region,
        offset,
        byte_size,
    }))
}

impl ShmRegions {
    /// A gRPC request with shared-memory inputs made ordinary (their bytes as raw
    /// contents); the outputs asked for in regions, their parameters taken out.
    pub fn rewrite_grpc(&self, msg: &mut ModelInferRequest) -> Result<OutputPlaces, InferError> {
        let names = |p: &HashMap<String, InferParameter>| p.contains_key(REGION_PARAM);
        let inputs = msg.inputs.iter().any(|i| names(&i.parameters));
        if !inputs && !msg.outputs.iter().any(|o| names(&o.parameters)) {
            return Ok(Vec::new());
        }
        let mut old_raw = std::mem::take(&mut msg.raw_input_contents).into_iter();
        let mut raw = Vec::with_capacity(msg.inputs.len());
        for input in &mut msg.inputs {
            match take_grpc_place(&mut input.parameters)? {
                Some(place) => raw.push(self.read(&place)?.to_vec()),
                None if input.contents.is_some() => {
                    return Err(InferError::BadRequest(format!(
                        "input '{}' uses typed contents beside shared-memory inputs; send it as raw contents",
                        input.name
                    )))
                }
                None => raw.push(old_raw.next().unwrap_or_default()),
            }
        }
        msg.raw_input_contents = raw;
        let mut places = Vec::new();
        for output in &mut msg.outputs {
            if let Some(place) = take_grpc_place(&mut output.parameters)? {
                places.push((output.name.clone(), place));
            }
        }
        Ok(places)
    }
}

/// Adds the placed outputs (no raw contents) to a gRPC answer; when the answer has raw
/// contents for other outputs, each placed one gets an empty entry so that they still line
/// up with the outputs.
pub(crate) fn add_placed_grpc(answer: &mut ModelInferResponse, placed: &[Placed]) {
    let with_raw = !answer.raw_output_contents.is_empty();
    for p in placed {
        let mut parameters = HashMap::new();
        let string = |s: &str| InferParameter {
            parameter_choice: Some(ParameterChoice::StringParam(s.to_string())),
        };
        let int = |n: u64| InferParameter {
            parameter_choice: Some(ParameterChoice::Int64Param(n as i64)),
        };
        parameters.insert(REGION_PARAM.to_string(), string(&p.place.region));
        parameters.insert(BYTE_SIZE_PARAM.to_string(), int(p.place.byte_size));
        if p.place.offset != 0 {
            parameters.insert(OFFSET_PARAM.to_string(), int(p.place.offset));
        }
        answer.outputs.push(InferOutputTensor {
            name: p.tensor.name.clone(),
            datatype: p.tensor.datatype.as_str().to_string(),
            shape: p.tensor.shape.clone(),
            parameters,
            contents: None,
        });
        if with_raw {
            answer.raw_output_contents.push(Vec::new());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferperf_wire::model::DataType;

    #[test]
    fn shared_memory_inputs_become_binary_data_beside_the_others() {
        let key = format!(
            "/{}{}_unit_srv",
            inferperf_wire::shm::PREFIX,
            std::process::id()
        );
        let region = Mapping::create(&key, 128).unwrap();
        region.write(8, &[1, 2, 3, 4]);
        let regions = ShmRegions::default();
        regions.register("r", &key, 0, 128).unwrap();
        assert!(
            regions.register("r", &key, 0, 128).is_err(),
            "registered twice"
        );
        let header = json!({"inputs": [
            {"name": "A", "datatype": "INT8", "shape": [2], "parameters": {"binary_data_size": 2}},
            {"name": "B", "datatype": "INT8", "shape": [4], "parameters": {
                "shared_memory_region": "r", "shared_memory_byte_size": 4, "shared_memory_offset": 8}}],
            "outputs": [{"name": "OUT", "parameters": {
                "shared_memory_region": "r", "shared_memory_byte_size": 64}}]});
        let mut body = header.to_string().into_bytes();
        let header_len = body.len();
        body.extend_from_slice(&[9, 9]);
        let body = Bytes::from(body);
        assert!(mentions_regions(&body[..header_len]));
        let (body, len, places) = regions.rewrite_http(&body, Some(header_len)).unwrap();
        let request = inferperf_wire::decode_http_request_bytes(&body, len).unwrap();
        assert_eq!(&request.inputs[0].data[..], &[9, 9]);
        assert_eq!(&request.inputs[1].data[..], &[1, 2, 3, 4]);
        assert_eq!(places[0].0, "OUT");
        let mut response = InferResponse {
            outputs: vec![Tensor {
                name: "OUT".into(),
                datatype: DataType::Int8,
                shape: vec![3],
                data: Bytes::from_static(&[7, 7, 7]),
            }],
            ..Default::default()
        };
        let placed = regions.place_outputs(&mut response, &places).unwrap();
        assert!(response.outputs.is_empty());
        assert_eq!(placed[0].place.byte_size, 3);
        assert_eq!(region.read(0, 3).unwrap(), vec![7, 7, 7]);
        let too_big = vec![(
            "OUT".to_string(),
            Place {
                region: "r".into(),
                offset: 0,
                byte_size: 2,
            },
        )];
        let mut again = InferResponse {
            outputs: placed.into_iter().map(|p| p.tensor).collect(),
            ..Default::default()
        };
        assert!(regions.place_outputs(&mut again, &too_big).is_err());
        regions.unregister("r");
        assert!(regions.status("").unwrap().is_empty());
        assert!(regions.status("r").is_err());
    }
}
