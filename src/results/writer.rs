//! Writing the results file. Its path is checked before anything is measured (an unusable
//! one stops the run at once, exit 3); every write goes to a temporary file beside it that
//! is then renamed over it (no fsync: the point is a file that a crash of inferperf, or a
//! reader in the middle of a write, never sees half-written).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::schema::ResultsFile;
use super::ResultsPath;
use inferperf_wire::error::{RunError, RunResult};

/// Creates the folder the file goes in and tries writing a file there; a refusal names the
/// flag that gave the path.
pub fn check_writable(at: &ResultsPath) -> RunResult<()> {
    let path = at.path.as_path();
    let refuse =
        |what: String| RunError::bad_option(format!("{} {}: {what}.", at.flag, at.given.display()));
    if path.is_dir() {
        return Err(refuse(format!(
            "{} is a folder; name a file, e.g. {}",
            path.display(),
            path.join("results.json").display()
        )));
    }
    let folder = parent(path);
    std::fs::create_dir_all(folder).map_err(|e| {
        refuse(format!(
            "cannot create the folder {}: {e}",
            folder.display()
        ))
    })?;
    let probe = temporary_path(path);
    File::create(&probe)
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| refuse(format!("cannot write in {}: {e}", folder.display())))
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `.results.json.tmp-<pid>` beside the file.
fn temporary_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or("results.json".into(), |n| n.to_string_lossy());
    parent(path).join(format!(".{name}.tmp-{}", std::process::id()))
}

/// Writes the whole file, pretty-printed, through a temporary file renamed over it.
pub fn write_file(path: &Path, file: &ResultsFile) -> std::io::Result<()> {
    replace_file(path, |out| {
        serde_json::to_writer_pretty(&mut *out, file)?;
        out.write_all(b"\n")
    })
}

/// Writes a file whole through a temporary file beside it renamed over it, so that a reader
/// (a browser reloading the HTML page, a second inferperf reading results.json) never sees
/// it half-written; the temporary file is removed when the write fails.
pub fn replace_file(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let temporary = temporary_path(path);
    let written = (|| {
        let mut out = BufWriter::new(File::create(&temporary)?);
        fill(&mut out)?;
        out.flush()
    })();
    match written.and_then(|()| std::fs::rename(&temporary, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&temporary);
            Err(e)
        }
    }
}
