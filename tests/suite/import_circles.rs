//! No import circles among the library's files. Two files that import each other cannot be
//! read, moved or tested one without the other, and a circle is where a box's edge has
//! been crossed. The module tree is followed from `src/lib.rs` through its `mod`
//! declarations (test modules left out); every `use` and every `crate::`/`super::`/`self::`
//! path is resolved to the file that defines the name (through re-exports), and a circle is
//! a set of files that all reach each other. A file's use of what a folder enclosing it
//! defines (`super::Thing` from a file of that folder) is not an arrow: the folder's face
//! holds what its files share; its use of them, and ties between siblings, are. The one circle kept on purpose is the Triton C
//! API's callback pair: the library calls back into the request file, an FFI shape.
//!
//! To list the circles of any checkout: `cargo test --release --test suite import_circles --
//! --nocapture` prints them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The circle kept on purpose: the C API's request and its server call each other through
/// the library's callbacks.
const KEPT: &[&[&str]] = &[&[
    "backend/api/triton_c_api/request.rs",
    "backend/api/triton_c_api/server.rs",
]];

/// Circles still standing, to be broken (the list only shrinks). Issue 34 emptied it:
/// a new circle is a defect to mend, not an entry to add.
const NOT_YET_BROKEN: &[&[&str]] = &[];

/// One source file of the library: its module path and its text.
struct SourceFile {
    module: Vec<String>,
    text: String,
}

/// The library's files by path relative to `src/`, found through `mod` declarations.
fn library_files(src: &Path) -> BTreeMap<String, SourceFile> {
    let mut files = BTreeMap::new();
    let mut pending = vec![(src.join("lib.rs"), Vec::<String>::new())];
    while let Some((file, module)) = pending.pop() {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (name, child) in declared_modules(&file, &text) {
            let mut path = module.clone();
            path.push(name);
            pending.push((child, path));
        }
        let key = file
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        files.insert(key, SourceFile { module, text });
    }
    files
}

/// The `mod NAME;` declarations of a file that are not test modules, with their files.
fn declared_modules(file: &Path, text: &str) -> Vec<(String, PathBuf)> {
    let dir = file.parent().unwrap();
    let stem = file.file_stem().unwrap().to_string_lossy();
    let own_dir = if stem == "lib" || stem == "mod" || stem == "main" {
        dir.to_path_buf()
    } else {
        dir.join(&*stem)
    };
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let Some(name) = module_declaration(line) else {
            continue;
        };
        let attributes: Vec<&str> = lines[..at]
            .iter()
            .rev()
            .take_while(|l| l.starts_with("#["))
            .copied()
            .collect();
        if attributes.iter().any(|a| a.contains("cfg(test)")) {
            continue;
        }
        let child = match attributes.iter().find_map(|a| path_attribute(a)) {
            Some(path) => dir.join(path),
            None if own_dir.join(format!("{name}.rs")).exists() => {
                own_dir.join(format!("{name}.rs"))
            }
            None => own_dir.join(&name).join("mod.rs"),
        };
        found.push((name, child));
    }
    found
}

fn module_declaration(line: &str) -> Option<String> {
    // Any visibility: `pub`, `pub(crate)`, `pub(super)`, `pub(in crate::x)`.
    let rest = match line.strip_prefix("pub") {
        Some(after) if after.starts_with('(') => after.split_once(") ")?.1,
        Some(after) => after.strip_prefix(' ')?,
        None => line,
    };
    let name = rest.strip_prefix("mod ")?.strip_suffix(';')?;
    Some(name.trim().to_string())
}

#[test]
fn a_module_is_followed_whatever_its_visibility() {
    for line in [
        "mod a;",
        "pub mod a;",
        "pub(crate) mod a;",
        "pub(super) mod a;",
        "pub(in crate::config) mod a;",
    ] {
        assert_eq!(module_declaration(line).as_deref(), Some("a"), "{line}");
    }
    assert_eq!(module_declaration("pub fn a();"), None);
    assert_eq!(module_declaration("mod tests {"), None);
}

fn path_attribute(attribute: &str) -> Option<String> {
    let value = attribute.strip_prefix("#[path = \"")?.strip_suffix("\"]")?;
    Some(value.to_string())
}

/// The code of a line, its comment removed.
fn code(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

/// Every `use` statement of a text, expanded into whole paths (`a::{b, c::d}` is `a::b` and
/// `a::c::d`; `self` in braces is the prefix itself).
fn use_paths(text: &str) -> Vec<Vec<String>> {
    let code: String = text.lines().map(code).collect::<Vec<_>>().join("\n");
    let mut paths = Vec::new();
    for statement in code.split(';') {
        let statement = statement.trim();
        let Some(at) = find_use_keyword(statement) else {
            continue;
        };
        let tokens = tokenize(&statement[at + 4..]);
        let mut position = 0;
        expand_tree(&tokens, &mut position, Vec::new(), &mut paths);
    }
    paths
}

/// Where `use ` starts a statement (after `pub`, `pub(crate)` or attributes).
fn find_use_keyword(statement: &str) -> Option<usize> {
    let last_line = statement.rfind("use ")?;
    let before = statement[..last_line].trim_end();
    let starts = before.is_empty()
        || before.ends_with("pub")
        || before.ends_with(')')
        || before.ends_with(']')
        || before.ends_with('}')
        || before.ends_with('{');
    starts.then_some(last_line)
}

fn tokenize(tree: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut chars = tree.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            tokens.push(std::mem::take(&mut word));
        }
        match c {
            ':' if chars.peek() == Some(&':') => {
                chars.next();
                tokens.push("::".into());
            }
            '{' | '}' | ',' | '*' => tokens.push(c.to_string()),
            _ => {}
        }
    }
    if !word.is_empty() {
        tokens.push(word);
    }
    tokens
}

fn expand_tree(
    tokens: &[String],
    at: &mut usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) {
    while *at < tokens.len() {
        let token = tokens[*at].as_str();
        *at += 1;
        match token {
            "::" => {}
            "{" => {
                loop {
                    expand_tree(tokens, at, prefix.clone(), out);
                    match tokens.get(*at).map(String::as_str) {
                        Some(",") => *at += 1,
                        Some("}") => {
                            *at += 1;
                            break;
                        }
                        _ => break,
                    }
                }
                return;
            }
            "*" => {
                out.push(prefix);
                return;
            }
            "as" => *at += 1,
            "," | "}" => {
                *at -= 1;
                break;
            }
            "self" if !prefix.is_empty() => {}
            name => prefix.push(name.to_string()),
        }
    }
    if !prefix.is_empty() {
        out.push(prefix);
    }
}

/// Every `crate::`, `super::` or `self::` path written in the code outside `use`, and every
/// path that starts with the name of one of the file's own modules (`children`).
fn inline_paths(text: &str, children: &[String]) -> Vec<Vec<String>> {
    let mut starts: Vec<String> = ["crate", "super", "self"]
        .iter()
        .map(|s| s.to_string())
        .chain(children.iter().cloned())
        .map(|s| format!("{s}::"))
        .collect();
    starts.dedup();
    let mut paths = Vec::new();
    for line in text.lines().map(code) {
        if line.trim_start().starts_with("use ") || line.contains(" use ") {
            continue;
        }
        for start in &starts {
            for (at, _) in line.match_indices(start.as_str()) {
                let before = line[..at].chars().last();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let path: Vec<String> = line[at..]
                    .split("::")
                    .map(|s| {
                        s.chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect::<String>()
                    })
                    .take_while(|s| !s.is_empty())
                    .collect();
                paths.push(path);
            }
        }
    }
    paths
}

/// The names a file defines at any depth (functions, types, constants, macros).
fn defined_names(text: &str) -> BTreeSet<String> {
    let kinds = [
        "fn ",
        "struct ",
        "enum ",
        "trait ",
        "type ",
        "const ",
        "static ",
        "union ",
        "macro_rules! ",
    ];
    let mut names = BTreeSet::new();
    for line in text.lines().map(|l| code(l).trim()) {
        for kind in kinds {
            let Some(at) = line.find(kind) else { continue };
            let head = &line[..at];
            let head_ok = head.split_whitespace().all(|w| {
                w.starts_with("pub") || ["async", "unsafe", "extern", "\"C\"", "const"].contains(&w)
            });
            if !head_ok {
                continue;
            }
            let name: String = line[at + kind.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// The files of the library and the files each one takes names from.
struct ImportGraph {
    edges: BTreeMap<String, BTreeSet<String>>,
}

impl ImportGraph {
    fn build(files: &BTreeMap<String, SourceFile>) -> ImportGraph {
        let by_module: BTreeMap<&[String], &str> = files
            .iter()
            .map(|(key, file)| (file.module.as_slice(), key.as_str()))
            .collect();
        let definitions: BTreeMap<&str, BTreeSet<String>> = files
            .iter()
            .map(|(key, file)| (key.as_str(), defined_names(&file.text)))
            .collect();
        let resolver = Resolver {
            files,
            by_module,
            definitions,
        };
        let mut edges = BTreeMap::new();
        for (key, file) in files {
            let mut targets = BTreeSet::new();
            let children: Vec<String> = files
                .values()
                .filter(|f| f.module.len() == file.module.len() + 1)
                .filter(|f| f.module.starts_with(&file.module))
                .map(|f| f.module[file.module.len()].clone())
                .collect();
            let paths = use_paths(&file.text)
                .into_iter()
                .chain(inline_paths(&file.text, &children));
            for path in paths {
                if let Some(absolute) = resolver.absolute(&file.module, &path) {
                    if let Some(target) = resolver.file_of(&absolute, 0) {
                        if !resolver.encloses(target, &file.module) {
                            targets.insert(target.to_string());
                        }
                    }
                }
            }
            edges.insert(key.clone(), targets);
        }
        ImportGraph { edges }
    }

    /// Every set of two or more files that all reach each other, as sorted lists.
    fn circles(&self) -> Vec<Vec<String>> {
        let reach: BTreeMap<&String, BTreeSet<&String>> =
            self.edges.keys().map(|k| (k, self.reachable(k))).collect();
        let mut circles: BTreeSet<Vec<String>> = BTreeSet::new();
        for (node, reached) in &reach {
            let mut circle: Vec<String> = reached
                .iter()
                .filter(|other| reach[*other].contains(node))
                .map(|s| s.to_string())
                .collect();
            if !circle.contains(node) {
                continue;
            }
            circle.sort();
            if circle.len() > 1 {
                circles.insert(circle);
            }
        }
        circles.into_iter().collect()
    }

    fn reachable(&self, from: &String) -> BTreeSet<&String> {
        let mut seen = BTreeSet::new();
        let mut queue: Vec<&String> = self.edges[from].iter().collect();
        while let Some(next) = queue.pop() {
            if seen.insert(next) {
                if let Some(targets) = self.edges.get(next) {
                    queue.extend(targets.iter());
                }
            }
        }
        seen
    }
}

/// Turns paths into the files that define what they name.
struct Resolver<'a> {
    files: &'a BTreeMap<String, SourceFile>,
    by_module: BTreeMap<&'a [String], &'a str>,
    definitions: BTreeMap<&'a str, BTreeSet<String>>,
}

impl Resolver<'_> {
    /// Whether `target` is the file of `module` itself or of a module enclosing it: a file
    /// that uses what its folder's face (`mod.rs`, or `x.rs` for the folder `x/`) defines
    /// is inside that face's room, not tied to it.
    fn encloses(&self, target: &str, module: &[String]) -> bool {
        (0..=module.len()).any(|depth| self.by_module.get(&module[..depth]) == Some(&target))
    }

    /// The path from the crate's root, or `None` for another crate's path.
    fn absolute(&self, module: &[String], path: &[String]) -> Option<Vec<String>> {
        let mut base: Vec<String> = module.to_vec();
        let mut rest = path;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                base.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                let mut child = base.clone();
                child.push(first.to_string());
                if !self.by_module.contains_key(child.as_slice()) {
                    return None;
                }
            }
            None => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file that defines the item `path` names (or the module, when it names one).
    fn file_of(&self, path: &[String], depth: usize) -> Option<&str> {
        let mut module: Vec<String> = Vec::new();
        let mut at = 0;
        while at < path.len() {
            let mut longer = module.clone();
            longer.push(path[at].clone());
            if !self.by_module.contains_key(longer.as_slice()) {
                break;
            }
            module = longer;
            at += 1;
        }
        let file = *self.by_module.get(module.as_slice())?;
        let Some(name) = path.get(at) else {
            return Some(file);
        };
        if self.definitions[file].contains(name) || depth > 8 {
            return Some(file);
        }
        let reexported = use_paths(&self.files[file].text)
            .into_iter()
            .find(|p| p.last() == Some(name))
            .and_then(|p| self.absolute(&module, &p));
        match reexported {
            Some(target) if target != path => self.file_of(&target, depth + 1).or(Some(file)),
            _ => Some(file),
        }
    }
}

fn kept(circle: &[String]) -> bool {
    KEPT.iter()
        .chain(NOT_YET_BROKEN)
        .any(|allowed| allowed.iter().eq(circle.iter()))
}

/// The graph's circles, each printed with its arrows (`--nocapture` shows them).
fn print_circles(graph: &ImportGraph) -> Vec<Vec<String>> {
    let circles = graph.circles();
    for circle in &circles {
        println!("circle: {}", circle.join(" "));
        for file in circle {
            let inside = graph.edges[file].iter().filter(|t| circle.contains(t));
            println!(
                "  {file} -> {}",
                inside.cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    circles
}

#[test]
fn no_import_circles_but_the_c_api_callback_pair() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut circles = Vec::new();
    // Each crate of the workspace by itself: between crates, cargo refuses a circle.
    for (crate_src, at_least) in [
        ("src", 100),
        ("crates/wire/src", 8),
        ("crates/server/src", 30),
    ] {
        let files = library_files(&root.join(crate_src));
        assert!(
            files.len() > at_least,
            "{crate_src}: the module tree was not followed"
        );
        let graph = ImportGraph::build(&files);
        circles.extend(print_circles(&graph));
    }
    let new: Vec<String> = circles
        .iter()
        .filter(|c| !kept(c))
        .map(|c| c.join(", "))
        .collect();
    assert!(new.is_empty(), "import circles:\n{}", new.join("\n"));
    let broken: Vec<String> = NOT_YET_BROKEN
        .iter()
        .filter(|known| !circles.iter().any(|c| c.iter().eq(known.iter())))
        .map(|known| known.join(", "))
        .collect();
    assert!(
        broken.is_empty(),
        "these circles are gone: take them off NOT_YET_BROKEN:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_check_sees_a_circle_through_a_reexport() {
    let file = |module: &[&str], text: &str| SourceFile {
        module: module.iter().map(|s| s.to_string()).collect(),
        text: text.to_string(),
    };
    let files = BTreeMap::from([
        ("lib.rs".to_string(), file(&[], "pub mod a;\npub mod b;\n")),
        (
            "a/mod.rs".to_string(),
            file(&["a"], "mod inner;\npub use inner::Thing;\n"),
        ),
        (
            "a/inner.rs".to_string(),
            file(
                &["a", "inner"],
                "use crate::b::{self, Other as O};\npub struct Thing;\n",
            ),
        ),
        (
            "b.rs".to_string(),
            file(
                &["b"],
                "pub fn other() { crate::a::Thing; }\npub struct Other;\n",
            ),
        ),
    ]);
    let circles = ImportGraph::build(&files).circles();
    assert_eq!(
        circles,
        vec![vec!["a/inner.rs".to_string(), "b.rs".to_string()]]
    );
}
