//! The part of Triton's in-process C API (`tritonserver.h`, API version 1.x) that profiling
//! needs, resolved from `libtritonserver.so` at run time. The library is opened once per
//! process and never closed: its server threads outlive any one caller, and unloading code
//! that threads still run is undefined. Every handle is an opaque pointer; every call
//! returns a `TRITONSERVER_Error*` that is null on success, turned here into [`CError`].

use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::Path;
use std::sync::OnceLock;

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};

/// `TRITONSERVER_Error*` (null: no error).
pub type Err = *mut c_void;
/// Any other opaque handle (server, options, request, response, message, allocator).
pub type Handle = *mut c_void;

/// `TRITONSERVER_MEMORY_CPU`.
pub const MEMORY_CPU: u32 = 0;
/// `TRITONSERVER_MODEL_CONTROL_EXPLICIT`.
pub const MODEL_CONTROL_EXPLICIT: c_int = 2;
/// `TRITONSERVER_REQUEST_FLAG_SEQUENCE_START` / `_END`.
pub const FLAG_SEQUENCE_START: u32 = 1;
pub const FLAG_SEQUENCE_END: u32 = 2;
/// `TRITONSERVER_REQUEST_RELEASE_ALL`.
pub const RELEASE_ALL: u32 = 1;
/// `TRITONSERVER_RESPONSE_COMPLETE_FINAL`.
pub const RESPONSE_FINAL: u32 = 1;
/// The API major version this module speaks.
pub const API_MAJOR: u32 = 1;

/// `TRITONSERVER_ResponseAllocatorAllocFn_t`.
pub type AllocFn = unsafe extern "C" fn(
    Handle,
    *const c_char,
    usize,
    u32,
    i64,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
    *mut u32,
    *mut i64,
) -> Err;
/// `TRITONSERVER_ResponseAllocatorReleaseFn_t`.
pub type ReleaseFn = unsafe extern "C" fn(Handle, *mut c_void, *mut c_void, usize, u32, i64) -> Err;
/// `TRITONSERVER_InferenceRequestReleaseFn_t`.
pub type RequestReleaseFn = unsafe extern "C" fn(Handle, u32, *mut c_void);
/// `TRITONSERVER_InferenceResponseCompleteFn_t`.
pub type ResponseFn = unsafe extern "C" fn(Handle, u32, *mut c_void);

/// Declares the function table: a field per C function, each resolved by its name with the
/// `TRITONSERVER_` prefix.
macro_rules! functions {
    ($($field:ident = $symbol:literal : fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The resolved functions.
        pub struct Functions {
            $(pub $field: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl Functions {
            /// # Safety
            /// `library` must be a Triton server library whose functions have these types.
            unsafe fn resolve(library: &Library) -> Result<Functions, String> {
                Ok(Functions {
                    $($field: *library
                        .get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                            concat!("TRITONSERVER_", $symbol, "\0").as_bytes(),
                        )
                        .map_err(|e| format!("it has no TRITONSERVER_{} ({e})", $symbol))?,)*
                })
            }
        }
    };
}

functions! {
    api_version = "ApiVersion": fn(*mut u32, *mut u32) -> Err;
    error_code = "ErrorCode": fn(Err) -> u32;
    error_message = "ErrorMessage": fn(Err) -> *const c_char;
    error_delete = "ErrorDelete": fn(Err);
    message_json = "MessageSerializeToJson": fn(Handle, *mut *const c_char, *mut usize) -> Err;
    message_delete = "MessageDelete": fn(Handle) -> Err;
    options_new = "ServerOptionsNew": fn(*mut Handle) -> Err;
    options_delete = "ServerOptionsDelete": fn(Handle) -> Err;
    options_repository = "ServerOptionsSetModelRepositoryPath": fn(Handle, *const c_char) -> Err;
    options_backends = "ServerOptionsSetBackendDirectory": fn(Handle, *const c_char) -> Err;
    options_repo_agents = "ServerOptionsSetRepoAgentDirectory": fn(Handle, *const c_char) -> Err;
    options_control_mode = "ServerOptionsSetModelControlMode": fn(Handle, c_int) -> Err;
    options_strict_config = "ServerOptionsSetStrictModelConfig": fn(Handle, bool) -> Err;
    options_log_info = "ServerOptionsSetLogInfo": fn(Handle, bool) -> Err;
    options_log_warn = "ServerOptionsSetLogWarn": fn(Handle, bool) -> Err;
    options_log_error = "ServerOptionsSetLogError": fn(Handle, bool) -> Err;
    options_metrics = "ServerOptionsSetMetrics": fn(Handle, bool) -> Err;
    options_gpu_metrics = "ServerOptionsSetGpuMetrics": fn(Handle, bool) -> Err;
    options_exit_timeout = "ServerOptionsSetExitTimeout": fn(Handle, u32) -> Err;
    server_new = "ServerNew": fn(*mut Handle, Handle) -> Err;
    server_delete = "ServerDelete": fn(Handle) -> Err;
    server_stop = "ServerStop": fn(Handle) -> Err;
    load_model = "ServerLoadModel": fn(Handle, *const c_char) -> Err;
    model_metadata = "ServerModelMetadata": fn(Handle, *const c_char, i64, *mut Handle) -> Err;
    model_config = "ServerModelConfig": fn(Handle, *const c_char, i64, u32, *mut Handle) -> Err;
    model_statistics = "ServerModelStatistics": fn(Handle, *const c_char, i64, *mut Handle) -> Err;
    allocator_new = "ResponseAllocatorNew": fn(*mut Handle, AllocFn, ReleaseFn, *const c_void) -> Err;
    allocator_delete = "ResponseAllocatorDelete": fn(Handle) -> Err;
    request_new = "InferenceRequestNew": fn(*mut Handle, Handle, *const c_char, i64) -> Err;
    request_delete = "InferenceRequestDelete": fn(Handle) -> Err;
    request_correlation_id = "InferenceRequestSetCorrelationId": fn(Handle, u64) -> Err;
    request_correlation_string = "InferenceRequestSetCorrelationIdString": fn(Handle, *const c_char) -> Err;
    request_flags = "InferenceRequestSetFlags": fn(Handle, u32) -> Err;
    request_add_input = "InferenceRequestAddInput": fn(Handle, *const c_char, u32, *const i64, u64) -> Err;
    request_input_data = "InferenceRequestAppendInputData": fn(Handle, *const c_char, *const c_void, usize, u32, i64) -> Err;
    request_add_output = "InferenceRequestAddRequestedOutput": fn(Handle, *const c_char) -> Err;
    request_release_callback = "InferenceRequestSetReleaseCallback": fn(Handle, RequestReleaseFn, *mut c_void) -> Err;
    request_response_callback = "InferenceRequestSetResponseCallback": fn(Handle, Handle, *mut c_void, ResponseFn, *mut c_void) -> Err;
    request_string_parameter = "InferenceRequestSetStringParameter": fn(Handle, *const c_char, *const c_char) -> Err;
    request_int_parameter = "InferenceRequestSetIntParameter": fn(Handle, *const c_char, i64) -> Err;
    request_bool_parameter = "InferenceRequestSetBoolParameter": fn(Handle, *const c_char, bool) -> Err;
    infer_async = "ServerInferAsync": fn(Handle, Handle, Handle) -> Err;
    response_delete = "InferenceResponseDelete": fn(Handle) -> Err;
    response_error = "InferenceResponseError": fn(Handle) -> Err;
    response_output_count = "InferenceResponseOutputCount": fn(Handle, *mut u32) -> Err;
    response_output = "InferenceResponseOutput": fn(Handle, u32, *mut *const c_char, *mut u32, *mut *const i64, *mut u64, *mut *const c_void, *mut usize, *mut u32, *mut i64, *mut *mut c_void) -> Err;
}

/// An error Triton returned: its code (`TRITONSERVER_Error_Code`) and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CError {
    pub code: u32,
    pub message: String,
}

impl CError {
    /// The gRPC status code Triton's own front ends answer this error with.
    pub fn grpc_code(&self) -> i32 {
        match self.code {
            1 => 13, // INTERNAL
            2 => 5,  // NOT_FOUND
            3 => 3,  // INVALID_ARG
            4 => 14, // UNAVAILABLE
            5 => 12, // UNSUPPORTED
            6 => 6,  // ALREADY_EXISTS
            7 => 1,  // CANCELLED
            _ => 2,  // UNKNOWN
        }
    }
}

impl std::fmt::Display for CError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The loaded library, once per process.
static LOADED: OnceLock<Result<Functions, String>> = OnceLock::new();

/// The library's functions, loading `path` the first time (later calls return the first
/// load's outcome whatever their path: a process holds one Triton). `Err` says why, as a
/// phrase.
pub fn load(path: &Path) -> Result<&'static Functions, String> {
    let loaded = LOADED.get_or_init(|| {
        // SAFETY: opening a shared library runs its initialisers; libtritonserver's are
        // those of any program linking it.
        let library = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }
            .map_err(|e| format!("cannot load it ({e})"))?;
        // SAFETY: the symbols have the types tritonserver.h declares for API 1.x.
        let functions = unsafe { Functions::resolve(&library) }?;
        std::mem::forget(library);
        check_version(&functions)?;
        Ok(functions)
    });
    loaded.as_ref().map_err(Clone::clone)
}

fn check_version(f: &Functions) -> Result<(), String> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both pointers are valid for writes.
    check(f, unsafe { (f.api_version)(&mut major, &mut minor) })
        .map_err(|e| format!("it does not say its API version ({e})"))?;
    if major != API_MAJOR {
        return Err(format!(
            "its C API is version {major}.{minor}, and inferperf speaks {API_MAJOR}.x"
        ));
    }
    Ok(())
}

/// `Ok` for a null error, else the error's code and message (the error is freed).
pub fn check(f: &Functions, error: Err) -> Result<(), CError> {
    if error.is_null() {
        return Ok(());
    }
    // SAFETY: `error` is a live error object the library returned; it is freed once, here.
    unsafe {
        let code = (f.error_code)(error);
        let message = text((f.error_message)(error));
        (f.error_delete)(error);
        Err(CError { code, message })
    }
}

/// A C string the library owns, copied (empty for null).
///
/// # Safety
/// `ptr` is null or a NUL-terminated string alive for the call.
pub unsafe fn text(ptr: *const c_char) -> String {
    match ptr.is_null() {
        true => String::new(),
        false => CStr::from_ptr(ptr).to_string_lossy().into_owned(),
    }
}

/// A message's JSON, parsed; the message is freed.
pub fn message_json(f: &Functions, message: Handle) -> Result<serde_json::Value, CError> {
    let (mut base, mut size) = (std::ptr::null(), 0usize);
    // SAFETY: `message` is a live message; base/size are valid for writes, and the bytes
    // they point to live until the message is deleted, after the copy.
    let parsed = unsafe {
        let serialized = check(f, (f.message_json)(message, &mut base, &mut size));
        let parsed = serialized.and_then(|()| {
            let bytes = match base.is_null() {
                true => &[][..],
                false => std::slice::from_raw_parts(base.cast::<u8>(), size),
            };
            serde_json::from_slice(bytes).map_err(|e| CError {
                code: 1,
                message: format!("the library's JSON message does not parse ({e})"),
            })
        });
        let _ = check(f, (f.message_delete)(message));
        parsed
    };
    parsed
}
