//! The one-way path of DESIGN.md, held against the code: each box may use the boxes above it
//! (configuration → dataset → adapters → measurement → drivers → the results file → reports →
//! the live progress line → the commands) and none below it. A module that names a lower box
//! (`crate::load` inside `src/measure/`, say) fails this test with the file and the line, so
//! an import loop cannot come back unseen. The reports are also held apart from the
//! configuration: they are rendered from the run's recorded settings, so `src/report/`
//! names nothing of `crate::config`.

use std::path::{Path, PathBuf};

/// The boxes in order, each with the source it is made of. The shared ground every box may
/// use (error, number, model, wire, proto, prometheus, cli, server) is not listed.
const BOXES: [(&str, &[&str]); 9] = [
    ("config", &["src/config.rs", "src/config"]),
    ("data", &["src/data"]),
    ("backend", &["src/backend"]),
    ("measure", &["src/measure"]),
    ("load", &["src/load"]),
    ("results", &["src/results"]),
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
        "imports against DESIGN.md's one-way path:\n{}",
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
