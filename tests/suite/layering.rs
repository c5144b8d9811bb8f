//! The one-way path of docs/architecture.md, held against the code: each box may use the boxes above it
//! (configuration → dataset → adapters → measurement → drivers → the results file → the
//! shards of a run tied and merged (scale_out) → reports →
//! the live progress line → the commands) and none below it. A module that names a lower box
//! (`crate::load` inside `src/measure/`, say) fails this test with the file and the line, so
//! an import loop cannot come back unseen. The reports are also held apart from the
//! configuration: they are rendered from the run's recorded settings, so `src/report/`
//! names nothing of `crate::config`. And only the commands take the whole configuration:
//! every other box takes its own section of it (`TargetConfig`, `DataConfig`, `LoadConfig`,
//! `MeasureConfig`, `OutputConfig`) and the values handed down the path.

use std::path::{Path, PathBuf};

/// The boxes in order, each with the source it is made of. What every box may use is not
/// listed: the wire formats and the embedded server are crates of their own
/// (`crates/wire`, `crates/server`, whose edges the compiler holds: neither can name the
/// client), and in this crate only the Prometheus text reader, the flag definitions and
/// the table of APIs (`prometheus`, `cli`, `apis`) are shared ground.
const BOXES: [(&str, &[&str]); 10] = [
    ("config", &["src/config.rs", "src/config"]),
    ("data", &["src/data"]),
    ("backend", &["src/backend"]),
    ("measure", &["src/measure"]),
    ("load", &["src/load"]),
    ("results", &["src/results"]),
    ("scale_out", &["src/scale_out"]),
    ("report", &["src/report"]),
    ("ui", &["src/ui"]),
    ("commands", &["src/commands"]),
];

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for entry in entries {
            rust_files(&entry, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// Every line of the box's files that names a box below it, as `file:line: text`.
fn imports_from_below(position: usize) -> Vec<String> {
    let (_, sources) = BOXES[position];
    let lower: Vec<String> = BOXES[position + 1..]
        .iter()
        .map(|(name, _)| format!("crate::{name}"))
        .collect();
    lines_naming(sources, &lower, "is below it")
}

/// Every line of the files under `sources` that names one of `modules`, as
/// `file:line: text (module why)`.
fn lines_naming(sources: &[&str], modules: &[String], why: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for source in sources {
        rust_files(&root.join(source), &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let shown = file.strip_prefix(root).unwrap().display().to_string();
        found.extend(lines_of_text_naming(&shown, &text, modules, why));
    }
    found
}

/// The lines of one file's `text` that name one of `modules` (comments aside).
fn lines_of_text_naming(file: &str, text: &str, modules: &[String], why: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        if let Some(name) = modules.iter().find(|name| names(code, name)) {
            found.push(format!(
                "{file}:{}: {} ({name} {why})",
                number + 1,
                line.trim()
            ));
        }
    }
    found
}

/// What the reports may not name: the configuration. A report is rendered from the run's
/// recorded settings (results.json's `settings`), so that a run merged from its shards'
/// files is reported by the same code as a run measured whole.
const NOT_IN_REPORTS: &str = "crate::config";

/// Whether `code` names the module `path` (not merely a longer name starting with it).
fn names(code: &str, path: &str) -> bool {
    code.match_indices(path).any(|(at, _)| {
        let after = code[at + path.len()..].chars().next();
        !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn no_box_imports_one_below_it() {
    let mut found = Vec::new();
    for position in 0..BOXES.len() {
        found.extend(imports_from_below(position));
    }
    assert!(
        found.is_empty(),
        "imports against the one-way path (docs/architecture.md):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_an_import_from_below() {
    assert!(names("use crate::backend::Target;", "crate::backend"));
    assert!(names("crate::load::x", "crate::load"));
    assert!(!names("use crate::loader;", "crate::load"));
    // The dataset really is checked against the adapters: a line naming them is caught.
    let data = BOXES.iter().position(|(name, _)| *name == "data").unwrap();
    let lower: Vec<&str> = BOXES[data + 1..].iter().map(|(name, _)| *name).collect();
    assert!(lower.contains(&"backend"));
    // The drivers know nothing of the shards' ties: they sit above them, below the reports.
    let at = |box_name: &str| {
        BOXES
            .iter()
            .position(|(name, _)| *name == box_name)
            .unwrap()
    };
    assert!(at("load") < at("scale_out") && at("scale_out") < at("report"));
    assert!(names(
        "use crate::scale_out::shards::Coordinator;",
        "crate::scale_out"
    ));
}

/// The adapters' folders under `src/backend/api/`, one per API.
const APIS: [&str; 7] = [
    "kserve",
    "openai",
    "tfserving",
    "torchserve",
    "triton_c_api",
    "dynamic_grpc",
    "local",
];

/// The `::` paths a file names, each with the line it starts on: every `use` tree expanded
/// (`a::{b, c::d}` is `a::b` and `a::c::d`), and every path written in the code. Comments
/// are left out.
fn named_paths(text: &str) -> Vec<(usize, Vec<String>)> {
    let lines: Vec<&str> = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect();
    let mut found = Vec::new();
    let mut number = 0;
    while number < lines.len() {
        let line = lines[number].trim_start();
        let start = number;
        if line.starts_with("use ")
            || line.starts_with("pub use ")
            || line.starts_with("pub(crate) use ")
        {
            let mut statement = String::new();
            while number < lines.len() {
                statement.push_str(lines[number]);
                number += 1;
                if statement.contains(';') {
                    break;
                }
            }
            let tree = statement.split("use ").nth(1).unwrap_or("");
            let tree: String = tree
                .chars()
                .filter(|c| !c.is_whitespace() && *c != ';')
                .collect();
            for path in expand_use_tree(&tree) {
                found.push((start + 1, path));
            }
            continue;
        }
        for path in code_paths(lines[number]) {
            found.push((start + 1, path));
        }
        number += 1;
    }
    found
}

/// `a::{b, c::{d, e}}` as `a::b`, `a::c::d`, `a::c::e` (each split into its segments).
fn expand_use_tree(tree: &str) -> Vec<Vec<String>> {
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree);
        return vec![path
            .split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()];
    };
    let prefix: Vec<String> = tree[..open]
        .split("::")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut depth, mut from, mut parts) = (0, 0, Vec::new());
    for (at, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[from..at]);
                from = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[from..]);
    let mut paths = Vec::new();
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        for rest in expand_use_tree(part) {
            paths.push(prefix.iter().cloned().chain(rest).collect());
        }
    }
    paths
}

/// The `a::b::c` paths written on a line of code.
fn code_paths(line: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = line.chars().collect();
    let mut at = 0;
    while at <= chars.len() {
        let c = chars.get(at).copied().unwrap_or(' ');
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            at += 1;
            continue;
        }
        if c == ':' && chars.get(at + 1) == Some(&':') && !word.is_empty() {
            current.push(std::mem::take(&mut word));
            at += 2;
            continue;
        }
        if !current.is_empty() {
            if !word.is_empty() {
                current.push(std::mem::take(&mut word));
            }
            paths.push(std::mem::take(&mut current));
        }
        word.clear();
        at += 1;
    }
    paths
}

/// Whether a path reaches into an API's folder other than `own`: through `api::NAME`, or
/// `super::NAME` / `super::super::NAME` from inside the API folders.
fn names_other_api(path: &[String], own: &str) -> Option<String> {
    path.windows(2).find_map(|pair| {
        let via = pair[0] == "api" || pair[0] == "super";
        (via && APIS.contains(&pair[1].as_str()) && pair[1] != own).then(|| pair[1].clone())
    })
}

/// Whether a path names an API: the adapters' floor (`api`, `open_inference`) or one of
/// the API folders.
fn names_an_api(path: &[String]) -> Option<String> {
    let banned = |s: &String| s == "api" || s == "open_inference" || APIS.contains(&s.as_str());
    // A path's first segment may be a local name (`local::…` is never one of ours here:
    // transport has no such module); only the segments after a crate or module path count.
    path.iter().skip(1).find(|s| banned(s)).cloned()
}

fn backend_files(folder: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src/backend").join(folder), &mut files);
    assert!(!files.is_empty(), "src/backend/{folder} has no files");
    files
}

fn shown(file: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    file.strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string()
}

/// Every line of `src/backend/transport/` that names an API, as `file:line: path`.
fn transport_naming_apis() -> Vec<String> {
    let mut found = Vec::new();
    for file in backend_files("transport") {
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, path) in named_paths(&text) {
            if let Some(api) = names_an_api(&path) {
                found.push(format!(
                    "{}:{line}: {} (names {api})",
                    shown(&file),
                    path.join("::")
                ));
            }
        }
    }
    found
}

/// Every line of `src/backend/api/X/` that imports `src/backend/api/Y/`, Y ≠ X.
fn apis_importing_siblings() -> Vec<String> {
    let mut found = Vec::new();
    for api in APIS {
        for file in backend_files(&format!("api/{api}")) {
            let text = std::fs::read_to_string(&file).unwrap();
            for (line, path) in named_paths(&text) {
                if let Some(other) = names_other_api(&path, api) {
                    found.push(format!(
                        "{}:{line}: {} (api/{api} imports api/{other})",
                        shown(&file),
                        path.join("::")
                    ));
                }
            }
        }
    }
    found
}

#[test]
fn transport_names_no_api() {
    let found = transport_naming_apis();
    assert!(
        found.is_empty(),
        "src/backend/transport/ carries bytes for every API and names none:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_api_imports_a_sibling() {
    let found = apis_importing_siblings();
    assert!(
        found.is_empty(),
        "an API folder imports another (shared parts belong in transport/ or open_inference/):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checks_see_an_api_named_where_it_must_not_be() {
    let paths = |text: &str| {
        named_paths(text)
            .into_iter()
            .map(|(_, p)| p)
            .collect::<Vec<_>>()
    };
    // In transport: an import of an adapter, however it is written, is caught.
    let imports = paths(
        "use crate::backend::api::kserve::rest::HttpConn;\nuse crate::backend::{\n    api::openai, Target,\n};\nlet x = crate::backend::open_inference::answer::check(y);",
    );
    let caught: Vec<_> = imports.iter().filter_map(|p| names_an_api(p)).collect();
    assert_eq!(caught, ["api", "api", "open_inference"], "{imports:?}");
    let fine =
        paths("use super::tcp::connect_tcp;\nuse crate::backend::{Target, outcome::ErrorKind};");
    assert!(fine.iter().all(|p| names_an_api(p).is_none()), "{fine:?}");
    // In an API folder: a sibling is caught, the folder itself and the floors are not.
    let sibling =
        paths("use crate::backend::api::{kserve, openai::events};\nuse super::super::local::x;");
    let others: Vec<_> = sibling
        .iter()
        .filter_map(|p| names_other_api(p, "openai"))
        .collect();
    assert_eq!(others, ["kserve", "local"], "{sibling:?}");
    let own =
        paths("use crate::backend::api::openai::events;\nuse crate::backend::transport::http1;");
    assert!(
        own.iter().all(|p| names_other_api(p, "openai").is_none()),
        "{own:?}"
    );
    // And the line of the statement is the one reported.
    let numbered = named_paths("// x\nuse crate::backend::{\n    api::kserve,\n};");
    assert_eq!(numbered[0].0, 2);
}

#[test]
fn the_reports_do_not_name_the_configuration() {
    let found = lines_naming(
        &["src/report"],
        &[NOT_IN_REPORTS.to_string()],
        "is the configuration: read the recorded settings instead",
    );
    assert!(
        found.is_empty(),
        "reports that read the configuration:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_reports_check_sees_a_line_naming_the_configuration() {
    let text = "//! A report.\nuse crate::results::Settings;\nuse crate::config::{Config, LoadMode};\n// crate::config in a comment is no import\nfn f(c: &crate::configuration::X) {}\n";
    let found = lines_of_text_naming(
        "src/report/x.rs",
        text,
        &[NOT_IN_REPORTS.to_string()],
        "is the configuration",
    );
    assert_eq!(
        found,
        ["src/report/x.rs:3: use crate::config::{Config, LoadMode}; (crate::config is the configuration)"]
    );
}

/// Where the whole `Config` may be taken: the commands, and the configuration itself.
const TAKE_CONFIG: [&str; 3] = ["src/commands", "src/config.rs", "src/config"];

/// Whether a line of code takes the whole configuration: a parameter or field typed
/// `Config` or a reference to it (`cfg: &Config`, `&'a Config`, `&crate::config::Config`).
/// Naming it otherwise (`Config::from_args`, a `use`, a test helper's `-> Config` or
/// `RunResult<Config>`) is not taking it.
fn takes_config(code: &str) -> bool {
    code.match_indices("Config").any(|(at, word)| {
        let before = &code[..at];
        let after = code[at + word.len()..].chars().next();
        let whole = !before.ends_with(|c: char| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        let before = before
            .trim_end_matches("crate::config::")
            .trim_end_matches("config::")
            .trim_end();
        let before = before.strip_suffix("mut").unwrap_or(before).trim_end();
        let lifetime = before.rfind('\'').filter(|&q| {
            before[q + 1..]
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_')
        });
        let before = lifetime.map_or(before, |q| before[..q].trim_end());
        let typed = before.ends_with('&') || (before.ends_with(':') && !before.ends_with("::"));
        whole && typed
    })
}

/// The lines of one file's `text` that take the whole configuration (comments aside), as
/// `file:line: text`.
fn lines_taking_config(file: &str, text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| takes_config(line.split("//").next().unwrap_or("")))
        .map(|(number, line)| format!("{file}:{}: {}", number + 1, line.trim()))
        .collect()
}

#[test]
fn only_the_commands_take_the_whole_configuration() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let allowed: Vec<PathBuf> = TAKE_CONFIG.iter().map(|p| root.join(p)).collect();
    let mut found = Vec::new();
    for file in files {
        if allowed.iter().any(|a| file.starts_with(a)) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        found.extend(lines_taking_config(&shown(&file), &text));
    }
    assert!(
        found.is_empty(),
        "only src/commands/ takes the whole Config; take its section (TargetConfig, DataConfig, LoadConfig, MeasureConfig, OutputConfig) instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_config_check_sees_a_box_taking_the_whole_configuration() {
    for taking in [
        "pub fn new(cfg: &Config, replicas: Arc<Replicas>) -> Driver {",
        "    cfg: &'a Config,",
        "fn f(c: &mut crate::config::Config) {}",
        "fn g(c: Config) {}",
        "    held: Option<&Config>,",
        "pub fn for_run(cfg: &crate::config::Config) -> Self {",
    ] {
        assert!(takes_config(taking), "{taking}");
    }
    for not_taking in [
        "pub fn resolve(cfg: &TargetConfig, shape: RequestShape) -> RunResult<Target> {",
        "use crate::config::{Config, LoadMode};",
        "let cfg = crate::config::Config::from_args(&args)?;",
        "fn test_config() -> Config {",
        "fn config(args: &[&str]) -> RunResult<Config> {",
        "fn f(m: &MeasureConfig, l: &ConfigFacts) {}",
    ] {
        assert!(!takes_config(not_taking), "{not_taking}");
    }
    let text = "//! A box.\nuse crate::config::LoadConfig;\n// fn f(cfg: &Config) in a comment\npub fn start(cfg: &Config) {}\n";
    assert_eq!(
        lines_taking_config("src/load/x.rs", text),
        ["src/load/x.rs:4: pub fn start(cfg: &Config) {}"]
    );
}
