//! perf_analyzer's dynamic gRPC input data: an entry `{"message_generator": "<command>"}`
//! names a shell command whose standard output is the request's protobuf messages, each
//! preceded by its length as a 4-byte little-endian number. The command runs once, when the
//! dataset is built, and its output becomes a UINT8 tensor of that name, so that the
//! dynamic gRPC adapter splits and frames it while the rest of the dataset (cycling,
//! sharding) treats it like any input.

use std::process::{Command, Stdio};

use bytes::Bytes;
use serde_json::Value;

use inferperf_wire::model::{DataType, TensorSpec};
use inferperf_wire::Tensor;

/// The input name perf_analyzer's dynamic gRPC data uses.
pub const INPUT: &str = "message_generator";

/// The longest a generator may run.
const GENERATOR_SECONDS: u64 = 60;
/// `timeout`'s exit status when it stopped the command.
const TIMED_OUT: i32 = 124;

/// The largest output a generator may print (the messages of one request).
const MAX_OUTPUT: usize = 1 << 30;

/// The input a generator fills: the messages' bytes, of any length.
pub fn input_spec() -> TensorSpec {
    TensorSpec {
        name: INPUT.to_string(),
        datatype: DataType::Uint8,
        shape: vec![-1],
    }
}

/// Whether `spec` is the generator input.
pub fn is_generator_input(spec: &TensorSpec) -> bool {
    spec.name == INPUT && spec.datatype == DataType::Uint8
}

/// Runs the command a `message_generator` value names and keeps its output; `Err` is the
/// phrase to report.
pub fn run_generator(value: &Value) -> Result<Tensor, String> {
    let command = value
        .as_str()
        .filter(|c| !c.trim().is_empty())
        .ok_or("the value must be a shell command, as a string, that prints the request's length-prefixed messages")?;
    // Bounded in time (coreutils' `timeout`) and with no input, so that a command that
    // never ends or waits for a terminal cannot hang the run.
    let output = Command::new("timeout")
        .arg(GENERATOR_SECONDS.to_string())
        .args(["sh", "-c", command])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("the command cannot be started ({e})"))?;
    if output.status.code() == Some(TIMED_OUT) {
        return Err(format!(
            "the command '{command}' did not finish within {GENERATOR_SECONDS} s"
        ));
    }
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        let said = said.trim().lines().last().unwrap_or("");
        return Err(format!(
            "the command '{command}' failed ({}){}",
            output.status,
            if said.is_empty() {
                String::new()
            } else {
                format!(": {said}")
            }
        ));
    }
    if output.stdout.len() > MAX_OUTPUT {
        return Err(format!("the command '{command}' printed more than 1 GiB"));
    }
    split_messages(&output.stdout).map_err(|why| format!("the output of '{command}' {why}"))?;
    Ok(Tensor {
        name: INPUT.to_string(),
        datatype: DataType::Uint8,
        shape: vec![output.stdout.len() as i64],
        data: Bytes::from(output.stdout),
    })
}

/// The messages in a generator's output: each a 4-byte little-endian length, then that
/// many bytes. `Err` says where the output stops making sense.
pub fn split_messages(output: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut messages = Vec::new();
    let mut rest = output;
    while !rest.is_empty() {
        let Some((size, after)) = rest.split_first_chunk::<4>() else {
            return Err(format!(
                "ends with {} byte(s) that are not a whole 4-byte length",
                rest.len()
            ));
        };
        let size = u32::from_le_bytes(*size) as usize;
        if after.len() < size {
            return Err(format!(
                "declares a message of {size} bytes after message {}, but only {} bytes follow",
                messages.len(),
                after.len()
            ));
        }
        let (message, next) = after.split_at(size);
        messages.push(message);
        rest = next;
    }
    if messages.is_empty() {
        return Err("holds no message".to_string());
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefixed(messages: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            out.extend_from_slice(&(m.len() as u32).to_le_bytes());
            out.extend_from_slice(m);
        }
        out
    }

    #[test]
    fn messages_are_split_on_their_lengths() {
        let out = prefixed(&[b"ab", b"", b"\x00\x01\x02"]);
        let messages = split_messages(&out).unwrap();
        assert_eq!(messages, [&b"ab"[..], &b""[..], &b"\x00\x01\x02"[..]]);
        assert!(split_messages(&out[..out.len() - 1])
            .unwrap_err()
            .contains("only 2 bytes follow"));
        assert!(split_messages(&[1, 0])
            .unwrap_err()
            .contains("not a whole 4-byte length"));
        assert!(split_messages(&[]).unwrap_err().contains("no message"));
    }

    #[test]
    fn the_command_runs_once_and_its_output_is_kept() {
        let tensor = run_generator(&Value::from("printf '\\002\\000\\000\\000hi'")).unwrap();
        assert_eq!(&tensor.data[..], b"\x02\x00\x00\x00hi");
        let failed = run_generator(&Value::from("echo oops >&2; exit 3")).unwrap_err();
        assert!(
            failed.contains("failed") && failed.contains("oops"),
            "{failed}"
        );
        assert!(run_generator(&Value::from(1)).is_err());
        let waits = run_generator(&Value::from("cat; exit 9")).unwrap_err();
        assert!(
            waits.contains("exit status: 9"),
            "no input, so no wait: {waits}"
        );
        let garbage = run_generator(&Value::from("printf xy")).unwrap_err();
        assert!(garbage.contains("not a whole 4-byte length"), "{garbage}");
    }
}
