//! POSIX shared memory (`shm_open` + `mmap`), the ground that Triton's system shared-memory
//! extension stands on, shared by the client's KServe adapter (which creates the regions and
//! writes the inputs into them) and the embedded server (which maps the registered keys,
//! reads inputs and writes outputs). Also the naming of the regions a run creates
//! (`inferperf_<pid>_…`), so that a later run can tell which ones a dead run left behind,
//! and the list of the keys this process created, which a hard exit unlinks.

use std::ffi::CString;
use std::io;
use std::sync::Mutex;

/// Every region a run creates is named `inferperf_<pid>_…` (and its key is `/` + the name).
pub const PREFIX: &str = "inferperf_";
/// The tensor parameters of the extension.
pub const REGION_PARAM: &str = "shared_memory_region";
pub const BYTE_SIZE_PARAM: &str = "shared_memory_byte_size";
pub const OFFSET_PARAM: &str = "shared_memory_offset";

/// Where POSIX shared-memory objects appear as files on Linux.
pub const SHM_DIR: &str = "/dev/shm";

/// The keys this process created and has not unlinked yet.
static CREATED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A mapped shared-memory object. The creator's mapping unlinks the key when dropped (a
/// run's regions never outlive it); a mapping of a key opened by name only unmaps.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
    key: String,
    owner: bool,
}

// The mapping is plain memory shared with other processes; every access copies in or out.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl std::fmt::Debug for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mapping({}, {} bytes)", self.key, self.len)
    }
}

fn c_key(key: &str) -> io::Result<CString> {
    if !key.starts_with('/') || key[1..].contains('/') || key.len() < 2 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{key}' is not a shared-memory key (one '/' then a name)"),
        ));
    }
    CString::new(key).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in key"))
}

impl Mapping {
    /// Creates the object `key` (which must not exist) of `len` bytes, zeroed, and maps it.
    pub fn create(key: &str, len: usize) -> io::Result<Mapping> {
        let name = c_key(key)?;
        let len = len.max(1);
        let flags = libc::O_CREAT | libc::O_EXCL | libc::O_RDWR;
        // SAFETY: `name` is a valid C string; the descriptor is closed below.
        let fd = unsafe { libc::shm_open(name.as_ptr(), flags, 0o600) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        CREATED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(key.to_string());
        // SAFETY: `fd` is an open descriptor.
        let sized = unsafe { libc::ftruncate(fd, len as libc::off_t) };
        let mapped = if sized == 0 {
            map(fd, len)
        } else {
            Err(io::Error::last_os_error())
        };
        // SAFETY: `fd` is open and no longer needed once mapped.
        unsafe { libc::close(fd) };
        match mapped {
            Ok(ptr) => Ok(Mapping {
                ptr,
                len,
                key: key.to_string(),
                owner: true,
            }),
            Err(e) => {
                let _ = unlink(key);
                Err(e)
            }
        }
    }

    /// Maps the existing object `key` whole (the embedded server's side).
    pub fn open(key: &str) -> io::Result<Mapping> {
        let name = c_key(key)?;
        // SAFETY: as in `create`.
        let fd = unsafe { libc::shm_open(name.as_ptr(), libc::O_RDWR, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `stat` is plain data, filled by fstat on an open descriptor.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        let len = if unsafe { libc::fstat(fd, &mut stat) } == 0 {
            Ok(stat.st_size.max(0) as usize)
        } else {
            Err(io::Error::last_os_error())
        };
        let mapped = len.and_then(|len| match len {
            0 => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the object is empty",
            )),
            len => map(fd, len).map(|ptr| (ptr, len)),
        });
        // SAFETY: `fd` is open.
        unsafe { libc::close(fd) };
        let (ptr, len) = mapped?;
        Ok(Mapping {
            ptr,
            len,
            key: key.to_string(),
            owner: false,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// A copy of `len` bytes at `offset`; `None` when that runs past the end.
    pub fn read(&self, offset: usize, len: usize) -> Option<Vec<u8>> {
        let end = offset.checked_add(len)?;
        if end > self.len {
            return None;
        }
        let mut out = vec![0u8; len];
        // SAFETY: the range is inside the mapping, and `out` is a distinct allocation.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset), out.as_mut_ptr(), len) };
        Some(out)
    }

    /// Writes `data` at `offset`; false (nothing written) when it runs past the end.
    pub fn write(&self, offset: usize, data: &[u8]) -> bool {
        let Some(end) = offset.checked_add(data.len()) else {
            return false;
        };
        if end > self.len {
            return false;
        }
        // SAFETY: the range is inside the mapping, which is writable and not `data`'s memory
        // as Rust sees it (another process may write it too: the extension's contract).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(offset), data.len()) };
        true
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are the mapping made in `map`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
        if self.owner {
            let _ = unlink(&self.key);
        }
    }
}

fn map(fd: libc::c_int, len: usize) -> io::Result<*mut u8> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: a fresh shared mapping of an open descriptor; checked for MAP_FAILED.
    let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(ptr.cast())
}

/// Removes the object `key`; one already gone is not an error.
pub fn unlink(key: &str) -> io::Result<()> {
    CREATED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|k| k != key);
    let name = c_key(key)?;
    // SAFETY: a valid C string.
    if unsafe { libc::shm_unlink(name.as_ptr()) } == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    match error.kind() {
        io::ErrorKind::NotFound => Ok(()),
        _ => Err(error),
    }
}

/// Unlinks every key this process created and still holds: the last thing a hard exit
/// (a second Ctrl-C) does, since no destructor runs then.
pub fn unlink_all_created() {
    let keys = std::mem::take(&mut *CREATED.lock().unwrap_or_else(|e| e.into_inner()));
    for key in keys {
        let _ = unlink(&key);
    }
}

/// The pid in a region name of ours (`inferperf_<pid>_…`).
pub fn pid_of(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, _) = rest.split_once('_')?;
    pid.parse().ok().filter(|&p| p > 0)
}

/// Whether process `pid` is alive (it exists, whoever owns it).
pub fn is_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// A name of ours whose run is gone.
pub fn is_stale(name: &str) -> bool {
    pid_of(name).is_some_and(|pid| !is_alive(pid))
}

/// Unlinks the objects in /dev/shm that dead runs left; the names removed.
pub fn remove_stale_objects() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(SHM_DIR) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_stale(&name) && unlink(&format!("/{name}")).is_ok() {
            removed.push(name);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_region_is_shared_and_unlinked_when_dropped() {
        let key = format!("/{PREFIX}{}_unit_a", std::process::id());
        let made = Mapping::create(&key, 64).unwrap();
        assert!(made.write(60, &[1, 2, 3, 4]));
        assert!(!made.write(61, &[1, 2, 3, 4]));
        let seen = Mapping::open(&key).unwrap();
        assert_eq!(seen.len(), 64);
        assert_eq!(seen.read(60, 4).unwrap(), vec![1, 2, 3, 4]);
        assert!(seen.read(61, 4).is_none());
        assert!(Mapping::create(&key, 8).is_err(), "the key exists");
        drop(made);
        assert!(Mapping::open(&key).is_err(), "the creator's drop unlinks");
    }

    #[test]
    fn names_of_dead_runs_are_stale() {
        let me = std::process::id();
        assert_eq!(pid_of(&format!("{PREFIX}{me}_3")), Some(me as i32));
        assert!(!is_stale(&format!("{PREFIX}{me}_3")));
        assert!(!is_stale("other_12_3"));
        assert!(pid_of("inferperf_x_1").is_none());
        assert!(c_key("no-slash").is_err());
    }
}
