//! The files of public datasets: a Hugging Face dataset repository's files found in the
//! local hub cache (`HF_HUB_CACHE`, else `HF_HOME/hub`) or fetched from the hub into it
//! unless `HF_HUB_OFFLINE` is set (`HF_TOKEN` for gated ones), and plain URLs kept where
//! AIPerf keeps them (`./.cache/aiperf/datasets/<file>`, so that a file AIPerf fetched is
//! read as it is). A file that cannot be had is one sentence naming it and how to fetch it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hf_hub::{Repo, RepoType};

use super::tokenizer::{hub_cache, offline};
use inferperf_wire::error::{RunError, RunResult};

/// How long fetching one dataset file may take before the run gives up on it.
const FETCH_TIMEOUT: Duration = Duration::from_secs(900);
/// Where AIPerf keeps the datasets it fetches by URL, relative to the working folder.
pub const AIPERF_CACHE: &str = ".cache/aiperf/datasets";

/// A dataset repository at a revision.
#[derive(Debug, Clone)]
pub struct DatasetRepo<'a> {
    /// `--public-dataset NAME`, for messages.
    pub name: &'a str,
    pub id: &'a str,
    pub revision: &'a str,
}

impl DatasetRepo<'_> {
    fn repo(&self) -> Repo {
        Repo::with_revision(self.id.into(), RepoType::Dataset, self.revision.into())
    }

    /// The snapshot folder of the revision in the cache, if the revision is cached.
    fn snapshot(&self) -> Option<PathBuf> {
        let folder = hub_cache().path().join(self.repo().folder_name());
        let commit = std::fs::read_to_string(folder.join("refs").join(self.revision)).ok()?;
        let snapshot = folder.join("snapshots").join(commit.trim());
        snapshot.is_dir().then_some(snapshot)
    }

    /// The repository's files (paths within it): the cached snapshot's, else the hub's
    /// listing; `None` when it is not cached and the hub may not be asked.
    pub fn files(&self) -> RunResult<Option<Vec<String>>> {
        if let Some(snapshot) = self.snapshot() {
            let mut files = Vec::new();
            walk(&snapshot, &snapshot, &mut files);
            files.sort();
            return Ok(Some(files));
        }
        if offline() {
            return Ok(None);
        }
        let repo = self.repo();
        let listed = bounded(move |api| {
            api.repo(repo)
                .info()
                .map(|info| info.siblings.into_iter().map(|s| s.rfilename).collect())
        });
        match listed {
            Ok(files) => Ok(Some(files)),
            Err(why) => Err(self.unreachable(None, &why)),
        }
    }

    /// One file of the repository: from the cache, else fetched.
    pub fn file(&self, file: &str) -> RunResult<PathBuf> {
        let cache = hub_cache();
        if let Some(path) = cache.repo(self.repo()).get(file) {
            return Ok(path);
        }
        if offline() {
            return Err(self.not_cached(file));
        }
        println!(
            "Fetching {file} of the Hugging Face dataset {} into {} ...",
            self.id,
            cache.path().display()
        );
        let repo = self.repo();
        let wanted = file.to_string();
        bounded(move |api| api.repo(repo).get(&wanted))
            .map_err(|why| self.unreachable(Some(file), &why))
    }

    /// The sentence for a file that is not cached while `HF_HUB_OFFLINE` is set.
    pub fn not_cached(&self, file: &str) -> RunError {
        RunError::failed(format!(
            "--public-dataset {}: {file} of the Hugging Face dataset {} (revision {}) is not in the cache ({}) and HF_HUB_OFFLINE is set: fetch it with `hf download --repo-type dataset {} {file}` (or huggingface-cli download), or unset HF_HUB_OFFLINE.",
            self.name,
            self.id,
            self.revision,
            hub_cache().path().display(),
            self.id
        ))
    }

    fn unreachable(&self, file: Option<&str>, why: &str) -> RunError {
        let what = file.map_or(String::from("the file list"), |f| f.to_string());
        let hint = if why.contains("401") || why.contains("403") {
            "the dataset is gated: accept its terms on huggingface.co and set HF_TOKEN to a token of that account"
        } else if why.contains("404") {
            "the hub has no such file (check the name, or --hf-subset)"
        } else {
            "the hub could not be reached"
        };
        RunError::failed(format!(
            "--public-dataset {}: {what} of the Hugging Face dataset {} is not in the cache ({}) and {hint} ({why}); fetch it with `hf download --repo-type dataset {}` or set HF_HUB_CACHE to a cache that holds it.",
            self.name,
            self.id,
            hub_cache().path().display(),
            self.id
        ))
    }
}

/// Every file under `dir`, as paths relative to `root` with `/` separators.
fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(root, &path, out);
        } else if let Ok(relative) = path.strip_prefix(root) {
            let parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push(parts.join("/"));
        }
    }
}

/// Runs a hub call in a thread of its own, bounded in time.
fn bounded<T: Send + 'static>(
    call: impl FnOnce(hf_hub::api::sync::Api) -> Result<T, hf_hub::api::sync::ApiError> + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let cache = hub_cache().path().clone();
    std::thread::spawn(move || {
        let token = std::env::var("HF_TOKEN").ok().filter(|t| !t.is_empty());
        let got = hf_hub::api::sync::ApiBuilder::from_env()
            .with_cache_dir(cache)
            .with_token(token)
            .with_progress(false)
            .build()
            .map_err(|e| e.to_string())
            .and_then(|api| call(api).map_err(|e| e.to_string()));
        let _ = tx.send(got);
    });
    match rx.recv_timeout(FETCH_TIMEOUT) {
        Ok(got) => got,
        Err(_) => Err(format!("no answer within {} s", FETCH_TIMEOUT.as_secs())),
    }
}

/// A dataset AIPerf fetches by plain URL: `./.cache/aiperf/datasets/<file>` (AIPerf's own
/// copy), else fetched there unless `HF_HUB_OFFLINE` is set.
pub fn url_file(name: &str, url: &str, file: &str) -> RunResult<PathBuf> {
    let path = Path::new(AIPERF_CACHE).join(file);
    if path.is_file() {
        return Ok(path);
    }
    let fetch_hint = format!(
        "fetch it with `mkdir -p {AIPERF_CACHE} && curl -Lo {} {url}`",
        path.display()
    );
    if offline() {
        return Err(RunError::failed(format!(
            "--public-dataset {name}: {file} is not in {AIPERF_CACHE} and HF_HUB_OFFLINE is set: {fetch_hint}, or unset HF_HUB_OFFLINE."
        )));
    }
    println!("Fetching {url} into {} ...", path.display());
    let fetched = ureq::AgentBuilder::new()
        .timeout(FETCH_TIMEOUT)
        .build()
        .get(url)
        .call()
        .map_err(|e| e.to_string())
        .and_then(|answer| answer.into_string().map_err(|e| e.to_string()));
    let text = fetched.map_err(|why| {
        RunError::failed(format!(
            "--public-dataset {name}: {url} could not be fetched ({why}): {fetch_hint} on a machine that reaches it."
        ))
    })?;
    std::fs::create_dir_all(AIPERF_CACHE)
        .and_then(|_| std::fs::write(&path, text))
        .map_err(|e| {
            RunError::failed(format!(
                "--public-dataset {name}: cannot keep {} ({e}); run from a folder you can write to.",
                path.display()
            ))
        })?;
    Ok(path)
}
