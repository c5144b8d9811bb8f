//! Triton started in this process (`--service-kind triton_c_api`), as perf_analyzer does:
//! `libtritonserver.so` from `--triton-server-directory` (its `lib/`), the backends from its
//! `backends/`, the models from `--model-repository`, loaded explicitly (the profiled model
//! and any BLS composing models; an ensemble's steps load with it). Metadata, configuration
//! and statistics come back as the same JSON Triton's HTTP front end answers, so the HTTP
//! readers parse them. Triton's own log is off (errors and warnings on stderr with `-v`),
//! so that it cannot mix into the report; an error that stops the run is in its sentence.

use std::ffi::{c_char, c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

use super::ffi::{self, check, CError, Functions, Handle};
use super::request::{self, Answer};
use crate::config::TritonCApiSettings;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::InferRequest;

/// Seconds Triton waits for in-flight requests when the run ends.
const EXIT_TIMEOUT_S: u32 = 10;

/// A pointer the library's threads and ours share; Triton's API is thread-safe.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shared(pub Handle);
// SAFETY: the handles are Triton objects documented as usable from any thread.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

/// The in-process server. Dropping the last handle stops it (models unloaded, backend
/// processes ended).
pub struct InProcessTriton {
    f: &'static Functions,
    server: Shared,
    allocator: Shared,
    /// Where the library was found, for the report.
    pub library: PathBuf,
}

impl std::fmt::Debug for InProcessTriton {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InProcessTriton({})", self.library.display())
    }
}

impl InProcessTriton {
    /// Loads the library, starts the server on the repository and loads `models`.
    pub fn start(settings: &TritonCApiSettings, models: &[String]) -> RunResult<InProcessTriton> {
        let library = find_library(&settings.server_directory)?;
        let f = ffi::load(&library).map_err(|why| {
            RunError::bad_option(format!(
                "--triton-server-directory: {} is not a usable Triton server library: {why}. If a library it needs is missing, add its folder to LD_LIBRARY_PATH.",
                library.display()
            ))
        })?;
        let server = new_server(f, settings).map_err(|e| {
            RunError::failed(format!(
                "Triton did not start in process on --model-repository {}: {e}.",
                settings.model_repository.display()
            ))
        })?;
        let allocator = request::new_allocator(f)
            .map_err(|e| RunError::failed(format!("Triton refused a response allocator: {e}.")))?;
        let triton = InProcessTriton {
            f,
            server: Shared(server),
            allocator: Shared(allocator),
            library,
        };
        for model in models {
            triton.load(model)?;
        }
        Ok(triton)
    }

    fn load(&self, model: &str) -> RunResult<()> {
        let name = c_string(model)?;
        // SAFETY: the server is live and `name` a NUL-terminated string.
        let loaded = check(self.f, unsafe {
            (self.f.load_model)(self.server.0, name.as_ptr())
        });
        loaded.map_err(|e| {
            RunError::failed(format!(
                "Triton in process could not load model '{model}': {e}. Check -m and --model-repository."
            ))
        })
    }

    /// The model's metadata, as `GET /v2/models/M[/versions/V]` answers it.
    pub fn metadata(&self, model: &str, version: i64) -> Result<Value, CError> {
        self.message(model, |f, server, name, out| unsafe {
            (f.model_metadata)(server, name, version, out)
        })
    }

    /// The model's configuration, as `GET …/config` answers it.
    pub fn config(&self, model: &str, version: i64) -> Result<Value, CError> {
        self.message(model, |f, server, name, out| unsafe {
            (f.model_config)(server, name, version, 1, out)
        })
    }

    /// The statistics of `model` (every model when empty), as `GET …/stats` answers them.
    pub fn statistics(&self, model: &str) -> Result<Value, CError> {
        self.message(model, |f, server, name, out| unsafe {
            (f.model_statistics)(server, name, -1, out)
        })
    }

    /// Calls one of the server's message-returning functions and parses the message.
    fn message(
        &self,
        model: &str,
        call: impl FnOnce(&Functions, Handle, *const c_char, *mut Handle) -> ffi::Err,
    ) -> Result<Value, CError> {
        let name = CString::new(model).map_err(|_| CError {
            code: 3,
            message: format!("the model name '{model}' holds a NUL byte"),
        })?;
        let mut message: Handle = std::ptr::null_mut();
        check(
            self.f,
            call(self.f, self.server.0, name.as_ptr(), &mut message),
        )?;
        ffi::message_json(self.f, message)
    }

    /// Sends `request` to `model` and returns the receiver of its answers (the last one
    /// says so). The request's tensors stay alive until Triton releases the request.
    pub fn infer(
        &self,
        model: &std::ffi::CStr,
        version: i64,
        request: Arc<InferRequest>,
    ) -> Result<mpsc::UnboundedReceiver<Answer>, CError> {
        request::send(self.f, self.server, self.allocator, model, version, request)
    }
}

impl Drop for InProcessTriton {
    fn drop(&mut self) {
        // SAFETY: the server and allocator are live and dropped once, here; no request of
        // this run is sent after the last handle goes.
        unsafe {
            let _ = check(self.f, (self.f.server_stop)(self.server.0));
            let _ = check(self.f, (self.f.server_delete)(self.server.0));
            let _ = check(self.f, (self.f.allocator_delete)(self.allocator.0));
        }
    }
}

/// `lib/libtritonserver.so` under the directory (or the directory itself holding it, or a
/// `libtritonserver*.so` there, as Python wheels name it), with symbolic links resolved so
/// that the library's own `$ORIGIN` finds its neighbours.
fn find_library(dir: &Path) -> RunResult<PathBuf> {
    let candidates = [dir.join("lib"), dir.to_path_buf()];
    for folder in &candidates {
        let exact = folder.join("libtritonserver.so");
        if exact.is_file() {
            return Ok(exact.canonicalize().unwrap_or(exact));
        }
    }
    for folder in &candidates {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        let mut named: Vec<PathBuf> = (entries.flatten().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                name.is_some_and(|n| n.starts_with("libtritonserver") && n.contains(".so"))
            })
            .collect();
        named.sort();
        if let Some(found) = named.into_iter().next() {
            return Ok(found.canonicalize().unwrap_or(found));
        }
    }
    Err(RunError::bad_option(format!(
        "--triton-server-directory {} holds no lib/libtritonserver.so: point it at a Triton install (its default is /opt/tritonserver).",
        dir.display()
    )))
}

fn new_server(f: &Functions, settings: &TritonCApiSettings) -> Result<Handle, CError> {
    let mut options: Handle = std::ptr::null_mut();
    // SAFETY: `options` is valid for writes.
    check(f, unsafe { (f.options_new)(&mut options) })?;
    let configured = configure(f, options, settings);
    let mut server: Handle = std::ptr::null_mut();
    // SAFETY: options is live until deleted below; ServerNew copies what it needs.
    let started =
        configured.and_then(|()| check(f, unsafe { (f.server_new)(&mut server, options) }));
    // SAFETY: the options object is deleted once, after use.
    let _ = check(f, unsafe { (f.options_delete)(options) });
    started.map(|()| server)
}

fn configure(f: &Functions, options: Handle, settings: &TritonCApiSettings) -> Result<(), CError> {
    let path = |p: &Path| {
        CString::new(p.as_os_str().as_encoded_bytes()).map_err(|_| CError {
            code: 3,
            message: format!("the path {} holds a NUL byte", p.display()),
        })
    };
    let repository = path(&settings.model_repository)?;
    let backends = path(&settings.server_directory.join("backends"))?;
    let agents = path(&settings.server_directory.join("repoagents"))?;
    // SAFETY: `options` is live; every string outlives the calls, which copy it.
    unsafe {
        check(f, (f.options_repository)(options, repository.as_ptr()))?;
        check(f, (f.options_backends)(options, backends.as_ptr()))?;
        check(f, (f.options_repo_agents)(options, agents.as_ptr()))?;
        check(
            f,
            (f.options_control_mode)(options, ffi::MODEL_CONTROL_EXPLICIT),
        )?;
        check(f, (f.options_strict_config)(options, false))?;
        check(f, (f.options_log_info)(options, false))?;
        check(f, (f.options_log_warn)(options, settings.server_log))?;
        check(f, (f.options_log_error)(options, settings.server_log))?;
        check(f, (f.options_metrics)(options, false))?;
        check(f, (f.options_gpu_metrics)(options, false))?;
        check(f, (f.options_exit_timeout)(options, EXIT_TIMEOUT_S))?;
    }
    Ok(())
}

fn c_string(text: &str) -> RunResult<CString> {
    CString::new(text)
        .map_err(|_| RunError::bad_option(format!("The name '{text}' holds a NUL byte.")))
}

/// `-x` as the C API's version: -1 for "the server's choice".
pub fn version_number(version: &str) -> RunResult<i64> {
    if version.is_empty() {
        return Ok(-1);
    }
    version.parse().map_err(|_| {
        RunError::bad_option(format!(
            "-x {version}: Triton's C API takes a whole version number."
        ))
    })
}

/// A pointer to pass as a C callback's user data.
pub(super) fn user_data<T>(value: Box<T>) -> *mut c_void {
    Box::into_raw(value).cast()
}
