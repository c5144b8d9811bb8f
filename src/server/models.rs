//! The models the embedded server serves: how a `--model NAME=KIND[:key=value,...]`
//! definition is parsed, which tensors each kind declares, how a request is checked against
//! them, and what each kind computes. Kept free of HTTP and gRPC so both front ends share it.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::model::{DataType, TensorSpec};
use crate::wire::{InferRequest, InferResponse, RequestedOutput, Tensor};

/// What a model does with a request.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelKind {
    /// `OUTPUT0` = `INPUT0`, any datatype.
    Identity,
    /// INT32 `OUTPUT0` = `INPUT0 + INPUT1`, `OUTPUT1` = `INPUT0 - INPUT1` (wrapping).
    AddSub,
    /// Identity, but a fraction `rate` of requests fails with an internal error.
    Fail { rate: f64 },
    /// Identity after a wait of `ms` milliseconds.
    Sleep { ms: u64 },
    /// Identity-shaped and doing nothing but returning the input.
    Noop,
}

impl ModelKind {
    pub fn name(&self) -> &'static str {
        match self {
            ModelKind::Identity => "identity",
            ModelKind::AddSub => "add_sub",
            ModelKind::Fail { .. } => "fail",
            ModelKind::Sleep { .. } => "sleep",
            ModelKind::Noop => "noop",
        }
    }

    /// The kind for a name, with its default options.
    fn from_name(name: &str) -> Option<ModelKind> {
        Some(match name {
            "identity" => ModelKind::Identity,
            "add_sub" => ModelKind::AddSub,
            "fail" => ModelKind::Fail { rate: 0.1 },
            "sleep" => ModelKind::Sleep { ms: 10 },
            "noop" => ModelKind::Noop,
            _ => return None,
        })
    }
}

const KINDS: &str = "identity, add_sub, fail, sleep, noop";

/// One served model: its kind, datatype, dimensions (without the batch dimension) and
/// maximum batch size (0 = the model does not batch).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelDef {
    pub name: String,
    pub kind: ModelKind,
    pub datatype: DataType,
    pub dims: Vec<i64>,
    pub max_batch: u32,
}

impl ModelDef {
    /// A model of the kind with its default options.
    pub fn new(name: &str, kind: ModelKind) -> ModelDef {
        let (datatype, max_batch) = match kind {
            ModelKind::AddSub => (DataType::Int32, 0),
            _ => (DataType::Fp32, 8),
        };
        ModelDef {
            name: name.to_string(),
            kind,
            datatype,
            dims: vec![16],
            max_batch,
        }
    }

    /// The model's inputs, shapes without the batch dimension.
    pub fn inputs(&self) -> Vec<TensorSpec> {
        let names: &[&str] = match self.kind {
            ModelKind::AddSub => &["INPUT0", "INPUT1"],
            _ => &["INPUT0"],
        };
        self.specs(names)
    }

    /// The model's outputs, shapes without the batch dimension.
    pub fn outputs(&self) -> Vec<TensorSpec> {
        let names: &[&str] = match self.kind {
            ModelKind::AddSub => &["OUTPUT0", "OUTPUT1"],
            _ => &["OUTPUT0"],
        };
        self.specs(names)
    }

    fn specs(&self, names: &[&str]) -> Vec<TensorSpec> {
        let spec = |name: &&str| TensorSpec {
            name: name.to_string(),
            datatype: self.datatype,
            shape: self.dims.clone(),
        };
        names.iter().map(spec).collect()
    }

    /// The shape the metadata reports: `[-1] + dims` for a batching model, else `dims`.
    pub fn metadata_shape(&self) -> Vec<i64> {
        if self.max_batch > 0 {
            std::iter::once(-1)
                .chain(self.dims.iter().copied())
                .collect()
        } else {
            self.dims.clone()
        }
    }

    /// Applies one `key=value` option.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let bad = |what: &str| format!("option '{key}={value}' is not valid: {what}");
        match (key, &mut self.kind) {
            ("datatype", ModelKind::AddSub) => return Err(bad("add_sub is INT32 only")),
            ("datatype", _) => {
                self.datatype = value
                    .parse::<DataType>()
                    .map_err(|e| bad(&format!("{e}; use e.g. FP32, INT8 or BYTES")))?
            }
            ("shape", _) => self.dims = parse_dims(value).map_err(|e| bad(&e))?,
            ("max_batch", _) => {
                self.max_batch = value
                    .parse()
                    .map_err(|_| bad("expected a whole number ≥ 0"))?
            }
            ("rate", ModelKind::Fail { rate }) => {
                *rate = value
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .ok_or_else(|| bad("expected a number between 0 and 1"))?
            }
            ("ms", ModelKind::Sleep { ms }) => {
                *ms = value
                    .parse()
                    .map_err(|_| bad("expected whole milliseconds ≥ 0"))?
            }
            _ => {
                return Err(format!(
                    "option '{key}' is not known for kind {}; it takes {}",
                    self.kind.name(),
                    options_of(&self.kind)
                ))
            }
        }
        Ok(())
    }
}

fn options_of(kind: &ModelKind) -> &'static str {
    match kind {
        ModelKind::AddSub => "shape, max_batch",
        ModelKind::Fail { .. } => "datatype, shape, max_batch, rate",
        ModelKind::Sleep { .. } => "datatype, shape, max_batch, ms",
        _ => "datatype, shape, max_batch",
    }
}

/// Parses comma-separated dimensions; -1 marks a variable dimension.
fn parse_dims(value: &str) -> Result<Vec<i64>, String> {
    if value.trim().is_empty() {
        return Err("expected dimensions such as 16 or 3,224,224".into());
    }
    let dim = |d: &str| {
        let d = d.trim();
        d.parse::<i64>()
            .ok()
            .filter(|&n| n >= -1)
            .ok_or_else(|| format!("dimension '{d}' is not a whole number ≥ -1"))
    };
    value.split(',').map(dim).collect()
}

/// Splits `key=value,key=value` where a value may itself hold commas (`shape=2,3`): a
/// piece without `=` continues the previous value.
fn split_options(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for piece in text.split(',') {
        match (piece.split_once('='), out.last_mut()) {
            (Some((k, v)), _) => out.push((k.trim().to_string(), v.trim().to_string())),
            (None, Some((_, v))) => {
                v.push(',');
                v.push_str(piece.trim());
            }
            (None, None) => return Err(format!("option '{piece}' is not of the form key=value")),
        }
    }
    Ok(out)
}

impl FromStr for ModelDef {
    type Err = String;

    /// Parses `NAME=KIND[:key=value,...]`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, rest) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}' is not of the form NAME=KIND[:key=value,...]"))?;
        let name = name.trim();
        let name_ok = !name.is_empty()
            && (name.chars()).all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
        if !name_ok {
            return Err(format!(
                "model name '{name}' must be non-empty and use only letters, digits, '_', '-' and '.'"
            ));
        }
        let (kind, options) = rest.split_once(':').unwrap_or((rest, ""));
        let kind = ModelKind::from_name(kind.trim()).ok_or_else(|| {
            format!(
                "model kind '{}' is not known; use one of {KINDS}",
                kind.trim()
            )
        })?;
        let mut def = ModelDef::new(name, kind);
        if !options.trim().is_empty() {
            for (key, value) in split_options(options)? {
                def.set(&key, &value)?;
            }
        }
        Ok(def)
    }
}

impl fmt::Display for ModelDef {
    /// The definition in the form [`ModelDef::from_str`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.dims.iter().map(i64::to_string).collect();
        write!(f, "{}={}:", self.name, self.kind.name())?;
        if self.kind != ModelKind::AddSub {
            write!(f, "datatype={},", self.datatype)?;
        }
        write!(f, "shape={},max_batch={}", dims.join(","), self.max_batch)?;
        match self.kind {
            ModelKind::Fail { rate } => write!(f, ",rate={rate}"),
            ModelKind::Sleep { ms } => write!(f, ",ms={ms}"),
            _ => Ok(()),
        }
    }
}

/// The models served when none are given: `identity` (FP32 [16], max batch 8) and `add_sub`.
pub fn default_models() -> Vec<ModelDef> {
    vec![
        ModelDef::new("identity", ModelKind::Identity),
        ModelDef::new("add_sub", ModelKind::AddSub),
    ]
}

/// Why a request failed, mapped to an HTTP status and a gRPC code by the front ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InferError {
    NotFound(String),
    BadRequest(String),
    Internal(String),
}

impl InferError {
    pub fn message(&self) -> &str {
        match self {
            InferError::NotFound(m) | InferError::BadRequest(m) | InferError::Internal(m) => m,
        }
    }

    pub fn unknown_model(name: &str, version: &str) -> InferError {
        let msg = if version.is_empty() {
            format!("Request for unknown model: '{name}' is not found")
        } else {
            format!("Request for unknown model: '{name}' version {version} is not found")
        };
        InferError::NotFound(msg)
    }
}

thread_local! {
    /// Per-thread generator for the `fail` kind: fast and lock-free.
    static RNG: std::cell::RefCell<SmallRng> = std::cell::RefCell::new(SmallRng::from_os_rng());
}

/// A true draw with probability `rate` (a Bernoulli trial per request).
fn draw(rate: f64) -> bool {
    RNG.with(|r| r.borrow_mut().random::<f64>() < rate)
}

/// A model ready to serve: its definition and declared tensors, computed once at start.
#[derive(Debug)]
pub struct Model {
    pub def: ModelDef,
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
}

impl Model {
    pub fn new(def: ModelDef) -> Model {
        Model {
            inputs: def.inputs(),
            outputs: def.outputs(),
            def,
        }
    }

    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// Checks the request, runs the model and answers with the requested outputs.
    pub async fn infer(&self, req: InferRequest) -> Result<InferResponse, InferError> {
        self.infer_parts(req.id, req.inputs, &req.outputs).await
    }

    /// [`Model::infer`] on the parts of a request, leaving the requested outputs with the
    /// caller (which needs them to encode the answer).
    pub async fn infer_parts(
        &self,
        id: String,
        inputs: Vec<Tensor>,
        requested: &[RequestedOutput],
    ) -> Result<InferResponse, InferError> {
        let inputs = self.check_inputs(inputs)?;
        let wanted = self.check_outputs(requested)?;
        match self.def.kind {
            ModelKind::Fail { rate } if draw(rate) => {
                return Err(InferError::Internal(format!(
                    "model '{}' failed this request on purpose (rate {rate})",
                    self.def.name
                )))
            }
            ModelKind::Sleep { ms } => tokio::time::sleep(Duration::from_millis(ms)).await,
            _ => {}
        }
        let mut outputs = self.compute(inputs)?;
        if let Some(wanted) = wanted {
            outputs.retain(|t| wanted.contains(&t.name.as_str()));
        }
        Ok(InferResponse {
            model_name: self.def.name.clone(),
            model_version: "1".to_string(),
            id,
            outputs,
        })
    }

    /// The requested output names (None = all), each of which must exist.
    fn check_outputs<'a>(
        &self,
        requested: &'a [RequestedOutput],
    ) -> Result<Option<Vec<&'a str>>, InferError> {
        if requested.is_empty() {
            return Ok(None);
        }
        for o in requested {
            if !self.outputs.iter().any(|s| s.name == o.name) {
                return Err(self.bad(format!("unexpected output name '{}'", o.name)));
            }
        }
        Ok(Some(requested.iter().map(|o| o.name.as_str()).collect()))
    }

    fn bad(&self, what: String) -> InferError {
        InferError::BadRequest(format!("model '{}': {what}", self.def.name))
    }

    /// Orders the inputs as declared and checks each one's datatype and shape.
    fn check_inputs(&self, mut given: Vec<Tensor>) -> Result<Vec<Tensor>, InferError> {
        if let Some(extra) = (given.iter()).find(|t| !self.inputs.iter().any(|s| s.name == t.name))
        {
            return Err(self.bad(format!("unexpected input name '{}'", extra.name)));
        }
        let mut ordered = Vec::with_capacity(self.inputs.len());
        for spec in &self.inputs {
            let at = given
                .iter()
                .position(|t| t.name == spec.name)
                .ok_or_else(|| {
                    self.bad(format!(
                        "expected input '{}', which the request lacks",
                        spec.name
                    ))
                })?;
            let tensor = given.swap_remove(at);
            self.check_tensor(spec, &tensor)?;
            ordered.push(tensor);
        }
        if let Some(dup) = given.first() {
            return Err(self.bad(format!("input '{}' is given twice", dup.name)));
        }
        Ok(ordered)
    }

    fn check_tensor(&self, spec: &TensorSpec, t: &Tensor) -> Result<(), InferError> {
        if t.datatype != spec.datatype {
            return Err(self.bad(format!(
                "input '{}' has datatype {}, expected {}",
                t.name, t.datatype, spec.datatype
            )));
        }
        let batch = self.def.max_batch;
        let (batch_dim, dims) = match (batch, t.shape.split_first()) {
            (0, _) => (None, t.shape.as_slice()),
            (_, Some((b, rest))) => (Some(*b), rest),
            (_, None) => (None, t.shape.as_slice()),
        };
        let dims_ok = dims.len() == spec.shape.len()
            && (dims.iter().zip(&spec.shape)).all(|(&d, &s)| s == -1 || d == s);
        let batch_ok = batch == 0 || batch_dim.is_some_and(|b| b >= 1 && b <= i64::from(batch));
        if !dims_ok || !batch_ok {
            return Err(self.bad(shape_message(&t.name, &t.shape, &spec.shape, batch)));
        }
        Ok(())
    }

    /// The outputs of the model for checked inputs, in declared order.
    fn compute(&self, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, InferError> {
        match self.def.kind {
            ModelKind::AddSub => self.add_sub(&inputs),
            _ => Ok(inputs
                .into_iter()
                .zip(&self.outputs)
                .map(|(t, spec)| Tensor {
                    name: spec.name.clone(),
                    ..t
                })
                .collect()),
        }
    }

    fn add_sub(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, InferError> {
        let [a, b] = inputs else {
            return Err(InferError::Internal("add_sub needs two inputs".into()));
        };
        if a.shape != b.shape {
            return Err(self.bad(format!(
                "inputs 'INPUT0' {:?} and 'INPUT1' {:?} must have the same shape",
                a.shape, b.shape
            )));
        }
        let mut sum = BytesMut::with_capacity(a.data.len());
        let mut diff = BytesMut::with_capacity(a.data.len());
        for (x, y) in a.data.chunks_exact(4).zip(b.data.chunks_exact(4)) {
            let x = i32::from_le_bytes([x[0], x[1], x[2], x[3]]);
            let y = i32::from_le_bytes([y[0], y[1], y[2], y[3]]);
            sum.put_i32_le(x.wrapping_add(y));
            diff.put_i32_le(x.wrapping_sub(y));
        }
        let out = |name: &str, data: BytesMut| Tensor {
            name: name.to_string(),
            datatype: DataType::Int32,
            shape: a.shape.clone(),
            data: data.freeze(),
        };
        Ok(vec![out("OUTPUT0", sum), out("OUTPUT1", diff)])
    }
}

fn shape_message(name: &str, shape: &[i64], dims: &[i64], max_batch: u32) -> String {
    if max_batch == 0 {
        return format!("input '{name}' has shape {shape:?}, expected {dims:?}");
    }
    format!(
        "input '{name}' has shape {shape:?}, expected [batch] + {dims:?} with batch between 1 and {max_batch}"
    )
}

#[cfg(test)]
#[path = "models_tests.rs"]
mod tests;
