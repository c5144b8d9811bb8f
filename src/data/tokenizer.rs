//! The tokenizer a run counts tokens with. Tokens are the unit of every LLM figure, so they
//! are counted by the model's own tokenizer — a `tokenizer.json` file, a folder holding one,
//! a Hugging Face hub id (found in the local cache, or fetched) — or by the server's
//! tokenize endpoint (counted in `backend`, behind the same [`TokenCount`] interface), or by
//! a tokenizer compiled in (tiktoken's `o200k_base`, AIPerf's `builtin`), which is only an
//! approximation for other models and says so. Never by words or streamed events.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::chat_template::ChatTemplate;
use inferperf_wire::error::{RunError, RunResult};

/// How long fetching a tokenizer from the hub may take before the run gives up on it.
const HUB_TIMEOUT: Duration = Duration::from_secs(30);

/// What counted a run's tokens, for the console, the results file and every artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterInfo {
    /// `file`, `hub`, `builtin` or `server`.
    pub kind: &'static str,
    /// The file, hub id (with its revision) or endpoint.
    pub name: String,
    /// The count is not the model's own (the builtin tokenizer for another model).
    pub approximate: bool,
}

impl CounterInfo {
    /// One line saying what counted the tokens.
    pub fn describe(&self) -> String {
        let how = match self.kind {
            "file" => format!("the tokenizer {}", self.name),
            "hub" => format!("the tokenizer of {} (Hugging Face hub)", self.name),
            "server" => format!("the server's tokenize endpoint ({})", self.name),
            _ => format!("the builtin tokenizer ({})", self.name),
        };
        let approximate = if self.approximate {
            " — approximate for this model"
        } else {
            ""
        };
        format!("{how}{approximate}")
    }
}

/// Counts the tokens of a text. Implementations are the Hugging Face and builtin tokenizers
/// here and the server's endpoint in `backend`.
pub trait TokenCount: Send + Sync {
    /// Tokens of `text`, without special tokens or a chat template.
    fn count(&self, text: &str) -> Result<u32, String>;
    /// What this counter is.
    fn info(&self) -> &CounterInfo;
    /// Tokens of chat `messages` rendered through the tokenizer's chat template
    /// (`--apply-chat-template`); `None` when it has none or the run did not ask for it.
    fn count_chat(&self, _messages: &[serde_json::Value]) -> Option<Result<u32, String>> {
        None
    }
}

impl std::fmt::Debug for dyn TokenCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.info().describe())
    }
}

/// The run's counter, shared by the dataset and the drivers.
pub type Counter = Arc<dyn TokenCount>;

/// A Hugging Face tokenizer (`tokenizer.json`), with its chat template when the run
/// renders prompts through it.
pub struct HfTokenizer {
    tokenizer: tokenizers::Tokenizer,
    info: CounterInfo,
    template: Option<ChatTemplate>,
}

impl TokenCount for HfTokenizer {
    fn count(&self, text: &str) -> Result<u32, String> {
        let encoding = self
            .tokenizer
            .encode_fast(text, false)
            .map_err(|e| e.to_string())?;
        Ok(encoding.len() as u32)
    }

    fn info(&self) -> &CounterInfo {
        &self.info
    }

    fn count_chat(&self, messages: &[serde_json::Value]) -> Option<Result<u32, String>> {
        let template = self.template.as_ref()?;
        Some(template.render(messages).and_then(|text| self.count(&text)))
    }
}

/// tiktoken's `o200k_base`, compiled in.
pub struct Builtin {
    bpe: tiktoken_rs::CoreBPE,
    info: CounterInfo,
}

impl TokenCount for Builtin {
    fn count(&self, text: &str) -> Result<u32, String> {
        Ok(self.bpe.encode_ordinary(text).len() as u32)
    }

    fn info(&self) -> &CounterInfo {
        &self.info
    }
}

/// The builtin tokenizer; `approximate` when it stands in for a model's own.
pub fn builtin(approximate: bool) -> RunResult<Counter> {
    let bpe = tiktoken_rs::o200k_base()
        .map_err(|e| RunError::failed(format!("The builtin tokenizer did not load: {e}.")))?;
    Ok(Arc::new(Builtin {
        bpe,
        info: CounterInfo {
            kind: "builtin",
            name: "tiktoken o200k_base".into(),
            approximate,
        },
    }))
}

/// Loads `--tokenizer NAME|PATH` (`revision`: `--tokenizer-revision`).
pub fn load(name: &str, revision: Option<&str>) -> RunResult<Counter> {
    load_with(name, revision, false)
}

/// [`load`], with the chat template beside a Hugging Face tokenizer when `chat_template`
/// (`--apply-chat-template`).
pub fn load_with(name: &str, revision: Option<&str>, chat_template: bool) -> RunResult<Counter> {
    if name == "builtin" {
        return builtin(false);
    }
    let path = Path::new(name);
    if path.exists() {
        return from_path(path, chat_template);
    }
    if looks_like_path(name) {
        return Err(RunError::bad_option(format!(
            "--tokenizer {name}: no such file or folder; give a tokenizer.json, a folder holding one, a Hugging Face hub id (org/name) or builtin."
        )));
    }
    let revision = revision.unwrap_or("main");
    let file = hub_file(name, revision)?;
    if chat_template {
        // Best effort: a hub tokenizer without a tokenizer_config.json has no template.
        let _ = hub_get(name, revision, "tokenizer_config.json");
    }
    let info = CounterInfo {
        kind: "hub",
        name: format!("{name}@{revision}"),
        approximate: false,
    };
    hf_counter(&file, info, chat_template)
}

/// The Hugging Face tokenizer of `file`, with the chat template beside it when asked.
fn hf_counter(file: &Path, info: CounterInfo, chat_template: bool) -> RunResult<Counter> {
    let template = match (chat_template, file.parent()) {
        (true, Some(dir)) => ChatTemplate::beside(dir)?,
        _ => None,
    };
    Ok(Arc::new(HfTokenizer {
        tokenizer: read_tokenizer(file)?,
        info,
        template,
    }))
}

/// A name that can only be meant as a path (a hub id is `name` or `org/name`).
fn looks_like_path(name: &str) -> bool {
    name.starts_with('.')
        || name.starts_with('/')
        || name.starts_with('~')
        || name.ends_with(".json")
        || name.matches('/').count() > 1
}

/// A `tokenizer.json` file, or a folder holding one.
fn from_path(path: &Path, chat_template: bool) -> RunResult<Counter> {
    let file = if path.is_dir() {
        let file = path.join("tokenizer.json");
        if !file.is_file() {
            return Err(RunError::bad_option(format!(
                "--tokenizer {}: the folder holds no tokenizer.json; give the folder of a Hugging Face tokenizer, its tokenizer.json, a hub id or builtin.",
                path.display()
            )));
        }
        file
    } else {
        path.to_path_buf()
    };
    let info = CounterInfo {
        kind: "file",
        name: file.display().to_string(),
        approximate: false,
    };
    hf_counter(&file, info, chat_template)
}

fn read_tokenizer(file: &Path) -> RunResult<tokenizers::Tokenizer> {
    tokenizers::Tokenizer::from_file(file).map_err(|e| {
        RunError::bad_option(format!(
            "--tokenizer {}: not a Hugging Face tokenizer.json ({e}).",
            file.display()
        ))
    })
}

/// The hub caches to look in: `HF_HUB_CACHE`, else `HF_HOME/hub`, else the default folder.
pub(crate) fn hub_cache() -> hf_hub::Cache {
    match std::env::var_os("HF_HUB_CACHE") {
        Some(dir) => hf_hub::Cache::new(PathBuf::from(dir)),
        None => hf_hub::Cache::from_env(),
    }
}

/// Whether `HF_HUB_OFFLINE` forbids reaching the hub.
pub(crate) fn offline() -> bool {
    std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

/// `tokenizer.json` of hub id `id` at `revision`: from the cache, else from the hub.
fn hub_file(id: &str, revision: &str) -> RunResult<PathBuf> {
    hub_get(id, revision, "tokenizer.json")
}

/// File `name` of hub id `id` at `revision`: from the cache, else from the hub.
fn hub_get(id: &str, revision: &str, name: &'static str) -> RunResult<PathBuf> {
    let cache = hub_cache();
    let repo = hf_hub::Repo::with_revision(id.into(), hf_hub::RepoType::Model, revision.into());
    if let Some(file) = cache.repo(repo.clone()).get(name) {
        return Ok(file);
    }
    let looked = cache.path().display().to_string();
    if offline() {
        return Err(RunError::bad_option(format!(
            "--tokenizer {id}: not in the Hugging Face cache ({looked}, revision {revision}) and HF_HUB_OFFLINE is set: download it, or give a tokenizer.json or builtin."
        )));
    }
    fetch(id, revision, repo, &looked, name)
}

/// Fetches from the hub in a thread of its own, bounded in time.
fn fetch(
    id: &str,
    revision: &str,
    repo: hf_hub::Repo,
    looked: &str,
    name: &'static str,
) -> RunResult<PathBuf> {
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
            .and_then(|api| api.repo(repo).get(name).map_err(|e| e.to_string()));
        let _ = tx.send(got);
    });
    let not_found = |why: String| {
        let hint = if why.contains("404") {
            format!("the hub has no {name} for {id} at revision {revision} (check the id and --tokenizer-revision)")
        } else {
            format!("the hub could not be reached ({why})")
        };
        RunError::bad_option(format!(
            "--tokenizer {id}: not in the Hugging Face cache ({looked}) and {hint}: give a tokenizer.json, a folder holding one, or builtin."
        ))
    };
    match rx.recv_timeout(HUB_TIMEOUT) {
        Ok(Ok(file)) => Ok(file),
        Ok(Err(why)) => Err(not_found(why)),
        Err(_) => Err(not_found(format!(
            "no answer within {} s",
            HUB_TIMEOUT.as_secs()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word-level tokenizer.json: each of `words` one token, split on whitespace.
    pub fn word_level(dir: &Path) -> PathBuf {
        let vocab: serde_json::Map<String, serde_json::Value> = ["[UNK]", "hello", "world"]
            .iter()
            .enumerate()
            .map(|(i, w)| (w.to_string(), i.into()))
            .collect();
        let json = serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
            "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
            "decoder": null,
            "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
        });
        let file = dir.join("tokenizer.json");
        std::fs::write(&file, json.to_string()).unwrap();
        file
    }

    #[test]
    fn a_file_and_its_folder_count_alike() {
        let dir = tempfile::tempdir().unwrap();
        let file = word_level(dir.path());
        for given in [file.clone(), dir.path().to_path_buf()] {
            let counter = load(given.to_str().unwrap(), None).unwrap();
            assert_eq!(counter.count("hello world hello").unwrap(), 3);
            assert_eq!(counter.info().kind, "file");
        }
    }

    #[test]
    fn the_builtin_counts_o200k_tokens() {
        let counter = load("builtin", None).unwrap();
        assert_eq!(counter.count("hello world").unwrap(), 2);
        assert!(!counter.info().approximate);
        assert!(builtin(true)
            .unwrap()
            .info()
            .describe()
            .contains("approximate"));
    }

    #[test]
    fn bad_tokenizers_get_one_sentence() {
        let dir = tempfile::tempdir().unwrap();
        let message = |name: &str| load(name, None).err().unwrap().to_string();
        let missing = dir.path().join("nope.json");
        assert!(message(missing.to_str().unwrap()).contains("no such file"));
        assert!(message(dir.path().to_str().unwrap()).contains("holds no tokenizer.json"));
        let junk = dir.path().join("junk.json");
        std::fs::write(&junk, "{\"x\": 1}").unwrap();
        assert!(message(junk.to_str().unwrap()).contains("not a Hugging Face tokenizer.json"));
    }

    #[test]
    fn a_hub_id_is_found_in_the_cache_or_refused_offline() {
        let home = tempfile::tempdir().unwrap();
        let snapshot = home.path().join("models--org--tiny/snapshots/abc");
        std::fs::create_dir_all(&snapshot).unwrap();
        word_level(&snapshot);
        std::fs::create_dir_all(home.path().join("models--org--tiny/refs")).unwrap();
        std::fs::write(home.path().join("models--org--tiny/refs/main"), "abc").unwrap();
        std::env::set_var("HF_HUB_CACHE", home.path());
        std::env::set_var("HF_HUB_OFFLINE", "1");
        let counter = load("org/tiny", None).unwrap();
        assert_eq!(counter.count("hello").unwrap(), 1);
        assert_eq!(counter.info().name, "org/tiny@main");
        let message = load("org/tiny", Some("v2")).err().unwrap().to_string();
        assert!(
            message.contains("not in the Hugging Face cache"),
            "{message}"
        );
        assert!(message.contains("HF_HUB_OFFLINE"), "{message}");
        std::env::remove_var("HF_HUB_OFFLINE");
        std::env::remove_var("HF_HUB_CACHE");
    }
}

/// Counters for unit tests.
#[cfg(test)]
pub(crate) mod test_counters {
    use super::{CounterInfo, TokenCount};

    /// One token per byte, a space one too, as the e2e tests' llama model counts: texts
    /// joined with a space cost that space.
    pub struct Bytes(CounterInfo);

    impl TokenCount for Bytes {
        fn count(&self, text: &str) -> Result<u32, String> {
            Ok(text.len() as u32)
        }

        fn info(&self) -> &CounterInfo {
            &self.0
        }
    }

    pub fn bytes() -> Bytes {
        Bytes(CounterInfo {
            kind: "file",
            name: "bytes".into(),
            approximate: false,
        })
    }
}
