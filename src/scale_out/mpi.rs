//! MPI, loaded at run time: under `mpirun` the ranks of a sharded run agree on when a level
//! ends and on a common clock, over MPI itself, as perf_analyzer's ranks do. The library is
//! opened with `dlopen` only when the process runs under an MPI launcher, so inferperf builds
//! and runs where MPI is absent. Every MPI call is made from one thread of its own (MPI is
//! initialised for that thread only); the async profiler talks to it through a channel.
//!
//! Open MPI's handles (`MPI_COMM_WORLD`, `MPI_INT`, …) are the addresses of its predefined
//! objects; MPICH's are integer constants. Both are passed in a pointer-sized argument, which
//! the C calling conventions of x86-64 and AArch64 read back as the 32-bit integer MPICH
//! declares.

use std::ffi::{c_int, c_void};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::SystemTime;

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
use tokio::sync::oneshot;

use inferperf_wire::error::{RunError, RunResult};

/// The library names tried in order, after `$INFERPERF_LIBMPI`.
const LIBRARY_NAMES: [&str; 4] = ["libmpi.so.40", "libmpi.so.12", "libmpi.so", "libmpich.so"];
/// MPI_THREAD_FUNNELED: only the thread that initialised MPI calls it.
const THREAD_FUNNELED: c_int = 1;

type Handle = usize;
type InitThread = unsafe extern "C" fn(*mut c_int, *mut c_void, c_int, *mut c_int) -> c_int;
type CommQuery = unsafe extern "C" fn(Handle, *mut c_int) -> c_int;
type Barrier = unsafe extern "C" fn(Handle) -> c_int;
type Allreduce =
    unsafe extern "C" fn(*const c_void, *mut c_void, c_int, Handle, Handle, Handle) -> c_int;
type Bcast = unsafe extern "C" fn(*mut c_void, c_int, Handle, c_int, Handle) -> c_int;
type Finalize = unsafe extern "C" fn() -> c_int;

/// What the MPI thread is asked to do.
enum Call {
    /// Replies with the clock read as the barrier returned.
    Barrier(oneshot::Sender<Option<SystemTime>>),
    /// Element-wise minimum of every rank's values.
    AllMin(Vec<i32>, oneshot::Sender<Option<Vec<i32>>>),
    /// Rank 0's value, to every rank.
    Broadcast(f64, oneshot::Sender<Option<f64>>),
}

/// The ranks of `MPI_COMM_WORLD`, reached through the MPI thread.
pub struct MpiWorld {
    pub rank: u32,
    pub size: u32,
    calls: Option<mpsc::Sender<Call>>,
    thread: Option<JoinHandle<()>>,
}

impl MpiWorld {
    /// Opens the MPI library and initialises MPI on a thread of its own.
    pub fn start() -> RunResult<MpiWorld> {
        let (ready_tx, ready_rx) = mpsc::channel();
        let (calls, inbox) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("inferperf-mpi".into())
            .spawn(move || match Mpi::open() {
                Ok(mpi) => {
                    let _ = ready_tx.send(Ok((mpi.rank, mpi.size)));
                    mpi.serve(inbox);
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            })
            .map_err(|e| RunError::failed(format!("Cannot start the MPI thread: {e}.")))?;
        let (rank, size) = ready_rx
            .recv()
            .map_err(|_| RunError::failed("The MPI thread stopped while starting MPI."))??;
        Ok(MpiWorld {
            rank,
            size,
            calls: Some(calls),
            thread: Some(thread),
        })
    }

    /// Waits until every rank calls it; the clock as the barrier returned.
    pub async fn barrier(&self) -> RunResult<SystemTime> {
        let (tx, rx) = oneshot::channel();
        self.send(Call::Barrier(tx))?;
        rx.await.ok().flatten().ok_or_else(|| lost("MPI_Barrier"))
    }

    /// The element-wise minimum over every rank of `values`.
    pub async fn all_min(&self, values: Vec<i32>) -> RunResult<Vec<i32>> {
        let (tx, rx) = oneshot::channel();
        self.send(Call::AllMin(values, tx))?;
        rx.await.ok().flatten().ok_or_else(|| lost("MPI_Allreduce"))
    }

    /// Rank 0's `value`, on every rank.
    pub async fn broadcast(&self, value: f64) -> RunResult<f64> {
        let (tx, rx) = oneshot::channel();
        self.send(Call::Broadcast(value, tx))?;
        rx.await.ok().flatten().ok_or_else(|| lost("MPI_Bcast"))
    }

    fn send(&self, call: Call) -> RunResult<()> {
        self.calls
            .as_ref()
            .and_then(|c| c.send(call).ok())
            .ok_or_else(|| lost("the MPI thread"))
    }
}

impl Drop for MpiWorld {
    /// Finalises MPI (every rank must): closing the channel ends the thread's loop.
    fn drop(&mut self) {
        self.calls = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn lost(what: &str) -> RunError {
    RunError::failed(format!(
        "{what} failed: another rank of the MPI run has stopped; see its output."
    ))
}

/// The library and the handles of `MPI_COMM_WORLD`, `MPI_INT`, `MPI_DOUBLE` and `MPI_MIN`.
struct Mpi {
    library: Library,
    world: Handle,
    int: Handle,
    double: Handle,
    min: Handle,
    rank: u32,
    size: u32,
}

impl Mpi {
    fn open() -> RunResult<Mpi> {
        let library = open_library()?;
        // SAFETY: the symbols are MPI's own, called with the signatures of the MPI standard.
        unsafe {
            let (world, int, double, min) = handles(&library);
            let init: InitThread = *symbol(&library, b"MPI_Init_thread\0")?;
            let mut provided: c_int = 0;
            let code = init(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                THREAD_FUNNELED,
                &mut provided,
            );
            if code != 0 {
                return Err(RunError::failed(format!(
                    "MPI_Init_thread failed (code {code}): check the MPI launcher's output."
                )));
            }
            let query = |name: &[u8]| -> RunResult<u32> {
                let f: CommQuery = *symbol(&library, name)?;
                let mut out: c_int = 0;
                f(world, &mut out);
                Ok(out.max(0) as u32)
            };
            let rank = query(b"MPI_Comm_rank\0")?;
            let size = query(b"MPI_Comm_size\0")?;
            Ok(Mpi {
                library,
                world,
                int,
                double,
                min,
                rank,
                size,
            })
        }
    }

    /// Answers calls until the channel closes, then finalises MPI.
    fn serve(self, inbox: mpsc::Receiver<Call>) {
        // SAFETY: as in `open`; buffers live for the whole of each call.
        unsafe {
            let barrier = symbol::<Barrier>(&self.library, b"MPI_Barrier\0").map(|s| *s);
            let allreduce = symbol::<Allreduce>(&self.library, b"MPI_Allreduce\0").map(|s| *s);
            let bcast = symbol::<Bcast>(&self.library, b"MPI_Bcast\0").map(|s| *s);
            for call in inbox {
                match call {
                    Call::Barrier(reply) => {
                        let ok = barrier.as_ref().is_ok_and(|f| f(self.world) == 0);
                        let _ = reply.send(ok.then(SystemTime::now));
                    }
                    Call::AllMin(values, reply) => {
                        let mut out = vec![0i32; values.len()];
                        let ok = allreduce.as_ref().is_ok_and(|f| {
                            let (send, recv) = (values.as_ptr().cast(), out.as_mut_ptr().cast());
                            f(
                                send,
                                recv,
                                values.len() as c_int,
                                self.int,
                                self.min,
                                self.world,
                            ) == 0
                        });
                        let _ = reply.send(ok.then_some(out));
                    }
                    Call::Broadcast(mut value, reply) => {
                        let ok = bcast.as_ref().is_ok_and(|f| {
                            let buf = (&mut value as *mut f64).cast();
                            f(buf, 1, self.double, 0, self.world) == 0
                        });
                        let _ = reply.send(ok.then_some(value));
                    }
                }
            }
            if let Ok(finalize) = symbol::<Finalize>(&self.library, b"MPI_Finalize\0") {
                finalize();
            }
        }
    }
}

/// `$INFERPERF_LIBMPI`, else the usual names of Open MPI's and MPICH's libraries. Opened
/// with RTLD_GLOBAL: Open MPI's plugins look its symbols up globally.
fn open_library() -> RunResult<Library> {
    let chosen = std::env::var("INFERPERF_LIBMPI").ok();
    let names: Vec<String> = match &chosen {
        Some(name) => vec![name.clone()],
        None => LIBRARY_NAMES.iter().map(|s| s.to_string()).collect(),
    };
    for name in &names {
        // SAFETY: loading MPI runs its initialisers, which expect nothing of us.
        if let Ok(library) = unsafe { Library::open(Some(name), RTLD_NOW | RTLD_GLOBAL) } {
            return Ok(library);
        }
    }
    Err(RunError::failed(format!(
        "This process runs under an MPI launcher, but no MPI library could be opened (tried {}): install the MPI that started it (e.g. Debian's libopenmpi3) or set INFERPERF_LIBMPI to its libmpi.so.",
        names.join(", ")
    )))
}

/// Open MPI's handles are its predefined objects' addresses; MPICH's are fixed integers.
unsafe fn handles(library: &Library) -> (Handle, Handle, Handle, Handle) {
    let address = |name: &[u8]| {
        library
            .get::<*mut c_void>(name)
            .ok()
            .map(|s| s.into_raw() as Handle)
    };
    match address(b"ompi_mpi_comm_world\0") {
        Some(world) => (
            world,
            address(b"ompi_mpi_int\0").unwrap_or(0),
            address(b"ompi_mpi_double\0").unwrap_or(0),
            address(b"ompi_mpi_op_min\0").unwrap_or(0),
        ),
        None => (0x4400_0000, 0x4c00_0405, 0x4c00_080b, 0x5800_0002),
    }
}

unsafe fn symbol<T>(library: &Library, name: &[u8]) -> RunResult<libloading::os::unix::Symbol<T>> {
    library.get::<T>(name).map_err(|e| {
        RunError::failed(format!(
            "The MPI library lacks {}: {e}; use Open MPI or MPICH.",
            String::from_utf8_lossy(&name[..name.len().saturating_sub(1)])
        ))
    })
}
