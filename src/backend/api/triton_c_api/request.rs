//! One inference through Triton's C API: a `TRITONSERVER_InferenceRequest` built from the
//! protocol-neutral request (its tensors passed by pointer, no copy: the request is held
//! until Triton releases it), the sequence id and flags and the other request parameters
//! set through their functions, and each response's outputs copied out on Triton's thread
//! and handed to the waiting slot over a channel. Output buffers come from a heap allocator
//! the server holds once for the run.

use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use super::ffi::{self, check, CError, Functions, Handle};
use super::server::{user_data, Shared};
use inferperf_wire::model::DataType;
use inferperf_wire::{InferRequest, Tensor};

/// One response of a request: its outputs (or Triton's error), and whether it is the last.
#[derive(Debug)]
pub struct Answer {
    pub outputs: Result<Vec<Tensor>, CError>,
    pub last: bool,
}

/// What the response callback needs: the functions and where answers go.
struct Responder {
    f: &'static Functions,
    answers: mpsc::UnboundedSender<Answer>,
}

/// What the release callback frees: the request's tensors, alive until then.
struct Held {
    f: &'static Functions,
    _request: Arc<InferRequest>,
}

/// The run's response allocator: output buffers on the heap.
pub(super) fn new_allocator(f: &Functions) -> Result<Handle, CError> {
    let mut allocator: Handle = std::ptr::null_mut();
    // SAFETY: `allocator` is valid for writes; the callbacks have the declared types and no
    // start function is given.
    check(f, unsafe {
        (f.allocator_new)(&mut allocator, allocate, release, std::ptr::null())
    })?;
    Ok(allocator)
}

/// Builds and sends one request; the answers arrive on the returned receiver.
pub(super) fn send(
    f: &'static Functions,
    server: Shared,
    allocator: Shared,
    model: &CStr,
    version: i64,
    request: Arc<InferRequest>,
) -> Result<mpsc::UnboundedReceiver<Answer>, CError> {
    let mut handle: Handle = std::ptr::null_mut();
    // SAFETY: the server is live; `handle` is valid for writes.
    check(f, unsafe {
        (f.request_new)(&mut handle, server.0, model.as_ptr(), version)
    })?;
    let (sender, answers) = mpsc::unbounded_channel();
    let held = user_data(Box::new(Held {
        f,
        _request: request.clone(),
    }));
    let responder = user_data(Box::new(Responder { f, answers: sender }));
    // SAFETY: `handle` is a live request; the tensors it points to are kept by `held`
    // until the release callback; both boxes are freed exactly once: by the callbacks
    // after a successful ServerInferAsync, else here.
    unsafe {
        let sent = build(f, handle, &request)
            .and_then(|()| {
                check(f, (f.request_release_callback)(handle, on_release, held))?;
                check(
                    f,
                    (f.request_response_callback)(
                        handle,
                        allocator.0,
                        std::ptr::null_mut(),
                        on_response,
                        responder,
                    ),
                )
            })
            .and_then(|()| check(f, (f.infer_async)(server.0, handle, std::ptr::null_mut())));
        if let Err(e) = sent {
            let _ = check(f, (f.request_delete)(handle));
            drop(Box::from_raw(held.cast::<Held>()));
            drop(Box::from_raw(responder.cast::<Responder>()));
            return Err(e);
        }
    }
    Ok(answers)
}

/// The request's inputs, requested outputs and parameters.
///
/// # Safety
/// `handle` is a live request, and `request` outlives it.
unsafe fn build(f: &Functions, handle: Handle, request: &InferRequest) -> Result<(), CError> {
    for input in &request.inputs {
        let name = c_name(&input.name)?;
        let datatype = triton_datatype(input.datatype);
        let shape = &input.shape;
        check(
            f,
            (f.request_add_input)(
                handle,
                name.as_ptr(),
                datatype,
                shape.as_ptr(),
                shape.len() as u64,
            ),
        )?;
        let data = input.data.as_ptr().cast::<c_void>();
        let size = input.data.len();
        check(
            f,
            (f.request_input_data)(handle, name.as_ptr(), data, size, ffi::MEMORY_CPU, 0),
        )?;
    }
    for output in &request.outputs {
        let name = c_name(&output.name)?;
        check(f, (f.request_add_output)(handle, name.as_ptr()))?;
    }
    let mut flags = 0;
    for (key, value) in &request.parameters {
        flags |= parameter(f, handle, key, value)?;
    }
    if flags != 0 {
        check(f, (f.request_flags)(handle, flags))?;
    }
    Ok(())
}

/// Sets one request parameter; returns the sequence flags it stands for (0 for others).
///
/// # Safety
/// `handle` is a live request.
unsafe fn parameter(
    f: &Functions,
    handle: Handle,
    key: &str,
    value: &Value,
) -> Result<u32, CError> {
    match (key, value) {
        ("sequence_id", Value::String(id)) => {
            let id = c_name(id)?;
            check(f, (f.request_correlation_string)(handle, id.as_ptr()))?;
        }
        ("sequence_id", id) => {
            check(
                f,
                (f.request_correlation_id)(handle, id.as_u64().unwrap_or(0)),
            )?;
        }
        ("sequence_start", start) => return Ok(flag(start, ffi::FLAG_SEQUENCE_START)),
        ("sequence_end", end) => return Ok(flag(end, ffi::FLAG_SEQUENCE_END)),
        (_, Value::Bool(b)) => {
            check(
                f,
                (f.request_bool_parameter)(handle, c_name(key)?.as_ptr(), *b),
            )?;
        }
        (_, Value::Number(n)) if n.is_i64() => {
            let n = n.as_i64().unwrap_or(0);
            check(
                f,
                (f.request_int_parameter)(handle, c_name(key)?.as_ptr(), n),
            )?;
        }
        (_, Value::String(s)) => {
            let (key, s) = (c_name(key)?, c_name(s)?);
            check(
                f,
                (f.request_string_parameter)(handle, key.as_ptr(), s.as_ptr()),
            )?;
        }
        _ => {}
    }
    Ok(0)
}

fn flag(value: &Value, bit: u32) -> u32 {
    match value.as_bool() {
        Some(true) => bit,
        _ => 0,
    }
}

fn c_name(text: &str) -> Result<CString, CError> {
    CString::new(text).map_err(|_| CError {
        code: 3,
        message: format!("'{text}' holds a NUL byte"),
    })
}

/// `TRITONSERVER_DataType`'s number for a datatype: the model configuration's numbering.
fn triton_datatype(datatype: DataType) -> u32 {
    datatype.config_enum() as u32
}

/// Triton frees a request once it is done with it: so are its tensors.
unsafe extern "C" fn on_release(request: Handle, flags: u32, userp: *mut c_void) {
    if flags & ffi::RELEASE_ALL != 0 {
        let held = Box::from_raw(userp.cast::<Held>());
        let _ = check(held.f, (held.f.request_delete)(request));
    }
}

/// Each response: its outputs copied out and sent to the slot; the last one frees the
/// responder.
unsafe extern "C" fn on_response(response: Handle, flags: u32, userp: *mut c_void) {
    let last = flags & ffi::RESPONSE_FINAL != 0;
    let responder = &*userp.cast::<Responder>();
    let f = responder.f;
    if !response.is_null() {
        let outputs = read_outputs(f, response);
        let _ = check(f, (f.response_delete)(response));
        let _ = responder.answers.send(Answer { outputs, last });
    } else if last {
        let outputs = Ok(Vec::new());
        let _ = responder.answers.send(Answer { outputs, last });
    }
    if last {
        drop(Box::from_raw(userp.cast::<Responder>()));
    }
}

/// The response's error, or its outputs copied into tensors.
///
/// # Safety
/// `response` is a live response.
unsafe fn read_outputs(f: &Functions, response: Handle) -> Result<Vec<Tensor>, CError> {
    check(f, (f.response_error)(response))?;
    let mut count = 0u32;
    check(f, (f.response_output_count)(response, &mut count))?;
    (0..count)
        .map(|index| read_output(f, response, index))
        .collect()
}

unsafe fn read_output(f: &Functions, response: Handle, index: u32) -> Result<Tensor, CError> {
    let (mut name, mut datatype, mut shape, mut dims): (*const c_char, u32, *const i64, u64) =
        (std::ptr::null(), 0, std::ptr::null(), 0);
    let (mut base, mut size, mut memory, mut memory_id): (*const c_void, usize, u32, i64) =
        (std::ptr::null(), 0, 0, 0);
    let mut userp: *mut c_void = std::ptr::null_mut();
    check(
        f,
        (f.response_output)(
            response,
            index,
            &mut name,
            &mut datatype,
            &mut shape,
            &mut dims,
            &mut base,
            &mut size,
            &mut memory,
            &mut memory_id,
            &mut userp,
        ),
    )?;
    let name = ffi::text(name);
    let datatype = (DataType::ALL.into_iter())
        .find(|d| triton_datatype(*d) == datatype)
        .ok_or_else(|| CError {
            code: 1,
            message: format!(
                "output '{name}' has a datatype (number {datatype}) inferperf does not know"
            ),
        })?;
    let shape = match shape.is_null() {
        true => Vec::new(),
        false => std::slice::from_raw_parts(shape, dims as usize).to_vec(),
    };
    let data = match base.is_null() || size == 0 {
        true => Bytes::new(),
        false => Bytes::copy_from_slice(std::slice::from_raw_parts(base.cast::<u8>(), size)),
    };
    Ok(Tensor {
        name,
        datatype,
        shape,
        data,
    })
}

/// An output buffer on the heap (none for an empty output).
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn allocate(
    _allocator: Handle,
    _name: *const c_char,
    size: usize,
    _memory: u32,
    _memory_id: i64,
    _userp: *mut c_void,
    buffer: *mut *mut c_void,
    buffer_userp: *mut *mut c_void,
    actual_memory: *mut u32,
    actual_memory_id: *mut i64,
) -> ffi::Err {
    *buffer = match size {
        0 => std::ptr::null_mut(),
        _ => libc::malloc(size),
    };
    *buffer_userp = std::ptr::null_mut();
    *actual_memory = ffi::MEMORY_CPU;
    *actual_memory_id = 0;
    std::ptr::null_mut()
}

/// Frees what [`allocate`] gave.
unsafe extern "C" fn release(
    _allocator: Handle,
    buffer: *mut c_void,
    _buffer_userp: *mut c_void,
    _size: usize,
    _memory: u32,
    _memory_id: i64,
) -> ffi::Err {
    libc::free(buffer);
    std::ptr::null_mut()
}
