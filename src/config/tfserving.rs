//! The flags of `--service-kind tfserving`: which signature of the model to call, the REST
//! body's form, and TF Serving's default ports. Kept apart so that the rest of the
//! configuration need not know TF Serving's conventions.

use super::{Protocol, ServiceKind};
use crate::cli::ProfileArgs;
use inferperf_wire::error::{RunError, RunResult};

/// The signature TF Serving calls when a request names none.
pub const DEFAULT_SIGNATURE: &str = "serving_default";

/// How a REST predict request carries its tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestFormat {
    /// Columnar: `{"inputs": {name: nested list}}`, answered with `outputs`.
    Inputs,
    /// Row-wise: `{"instances": [row, …]}` split along the first axis, answered with
    /// `predictions`.
    Instances,
}

/// What a TF Serving run needs beyond the common flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TfServingConfig {
    /// `--model-signature-name`.
    pub signature: String,
    /// `--tfserving-rest-format` (HTTP only).
    pub rest_format: RestFormat,
}

/// TF Serving's ports: 8500 for gRPC, 8501 for REST.
pub fn default_url(kind: ServiceKind, protocol: Protocol) -> Option<&'static str> {
    match (kind, protocol) {
        (ServiceKind::TfServing, Protocol::Grpc) => Some("localhost:8500"),
        (ServiceKind::TfServing, Protocol::Http) => Some("localhost:8501"),
        _ => None,
    }
}

/// Reads the TF Serving flags for `--service-kind tfserving`; refuses them elsewhere.
pub fn parse(args: &ProfileArgs, kind: ServiceKind) -> RunResult<Option<TfServingConfig>> {
    if kind != ServiceKind::TfServing {
        if args.model_signature_name.is_some() || args.tfserving_rest_format.is_some() {
            let flag = if args.model_signature_name.is_some() {
                "--model-signature-name"
            } else {
                "--tfserving-rest-format"
            };
            return Err(RunError::bad_option(format!(
                "{flag} applies to TF Serving only: add --service-kind tfserving, or drop {flag}."
            )));
        }
        return Ok(None);
    }
    if args.streaming {
        return Err(RunError::bad_option(
            "--streaming does not apply to TF Serving, whose Predict answers once: drop --streaming.",
        ));
    }
    let version = args.model_version.trim();
    if !version.is_empty() && version.parse::<i64>().is_err() {
        return Err(RunError::bad_option(format!(
            "-x '{version}' is not a TF Serving model version, which is a number (e.g. -x 2)."
        )));
    }
    let signature = args
        .model_signature_name
        .as_deref()
        .unwrap_or(DEFAULT_SIGNATURE)
        .trim();
    if signature.is_empty() {
        return Err(RunError::bad_option(
            "--model-signature-name must not be empty (TF Serving's default is serving_default).",
        ));
    }
    let rest_format = match args.tfserving_rest_format.as_deref() {
        None | Some("inputs") => RestFormat::Inputs,
        Some("instances") => RestFormat::Instances,
        Some(other) => {
            return Err(RunError::bad_option(format!(
                "--tfserving-rest-format '{other}' is unknown: use inputs (columnar) or instances (row-wise)."
            )))
        }
    };
    Ok(Some(TfServingConfig {
        signature: signature.to_string(),
        rest_format,
    }))
}
