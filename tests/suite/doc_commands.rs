//! Every `inferperf …` command line in README.md and in the book (`docs/`) is checked with
//! inferperf's own command-line definition, so no example drifts from the flags. Nothing is
//! run: a line is parsed as `main` parses its arguments (clap, AIPerf's refusals), then a
//! `profile` line goes through the whole flag check that precedes any request, a `sweep` line
//! through the sweep's checks, a `serve` line's `--model` definitions are parsed, and
//! `compare`'s `--fail-on`. A block whose info string is `sh,bad-option` holds lines that must
//! be refused (exit 3). The rules for reading a line are in docs/contributing.md ("The
//! book's command lines").

use std::path::{Path, PathBuf};

use inferperf::cli::{clap_sentence, normalize_args, refuse_aiperf_only, top_help, Cli, Command};

mod extract;

use extract::{doc_commands, DocCommand, BAD_OPTION_TAG};

/// Fewer lines than this means the extraction broke, not that the docs lost their examples.
const FEWEST_LINES: usize = 60;

/// Flags whose value must name an existing file or folder before anything is sent, and what
/// stands in for one a doc names that does not exist here.
const INPUT_PATHS: [(&str, StandIn); 11] = [
    ("--input-data", StandIn::File("{}")),
    ("--data-directory", StandIn::Folder),
    ("--request-intervals", StandIn::File("1000\n2000\n")),
    ("--input-file", StandIn::File("{\"text\": \"hello\"}\n")),
    ("--model-repository", StandIn::Folder),
    ("--ssl-grpc-root-certifications-file", StandIn::File("")),
    ("--ssl-grpc-certificate-chain-file", StandIn::File("")),
    ("--ssl-grpc-private-key-file", StandIn::File("")),
    ("--ssl-https-ca-certificates-file", StandIn::File("")),
    ("--ssl-https-client-certificate-file", StandIn::File("")),
    ("--ssl-https-private-key-file", StandIn::File("")),
];

#[derive(Clone, Copy)]
enum StandIn {
    File(&'static str),
    Folder,
}

/// The words with each input path resolved against the repository (so the check does not
/// depend on the working directory) or, when it does not exist, replaced by a scratch file
/// or folder in `scratch`.
fn with_inputs(words: &[String], scratch: &Path) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut pending: Option<StandIn> = None;
    for word in words {
        if let Some(stand_in) = pending.take() {
            out.push(input_path(word, stand_in, root, scratch));
            continue;
        }
        let flag = INPUT_PATHS
            .iter()
            .find(|(flag, _)| word == flag || word.starts_with(&format!("{flag}=")));
        match flag {
            Some((flag, stand_in)) if word == flag => {
                pending = Some(*stand_in);
                out.push(word.clone());
            }
            Some((flag, stand_in)) => {
                let value = &word[flag.len() + 1..];
                let path = input_path(value, *stand_in, root, scratch);
                out.push(format!("{flag}={path}"));
            }
            None => out.push(word.clone()),
        }
    }
    out
}

fn input_path(value: &str, stand_in: StandIn, root: &Path, scratch: &Path) -> String {
    if ["random", "zero"].contains(&value) {
        return value.to_string();
    }
    let here = root.join(value);
    if here.exists() {
        return here.display().to_string();
    }
    let name = value.replace(['/', '\\'], "_");
    let path = scratch.join(format!("{}-{name}", scratch_count(scratch)));
    match stand_in {
        StandIn::File(content) => std::fs::write(&path, content).expect("scratch file"),
        StandIn::Folder => std::fs::create_dir_all(&path).expect("scratch folder"),
    }
    path.display().to_string()
}

fn scratch_count(scratch: &Path) -> usize {
    std::fs::read_dir(scratch).map_or(0, |d| d.count())
}

/// What inferperf would say of the words, without running anything: `Ok` when it would
/// start, `Err(sentence)` when it would refuse them (exit 3). Missing input files get a
/// stand-in in `scratch`.
fn check(words: &[String], scratch: &Path) -> Result<(), String> {
    if top_help(words).is_some() {
        // A bare `inferperf` prints the short help as a mistake (exit 3).
        return if words.len() == 1 {
            Err("a bare `inferperf` exits 3".to_string())
        } else {
            Ok(())
        };
    }
    let args = with_inputs(&normalize_args(words.to_vec()), scratch);
    if let Some(sentence) = refuse_aiperf_only(&args) {
        return Err(sentence);
    }
    // AIPerf's comma-separated sweep: each of its runs is checked.
    if args.get(1).is_some_and(|a| a == "profile") {
        if let Some(sweep) = inferperf::cli::expand_sweep(&args[2..])? {
            for variation in sweep.variations {
                let line = args[..2].iter().cloned().chain(variation.args);
                check_line(&line.collect::<Vec<_>>())?;
            }
            return Ok(());
        }
    }
    check_line(&args)
}

/// [`check`] of a line with no sweep in it.
fn check_line(args: &[String]) -> Result<(), String> {
    let cli = match inferperf::cli::parse_command_line(args.iter().cloned()) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => return Err(clap_sentence(&e, args)),
        Err(_) => return Ok(()), // --help, --version
    };
    whole_flags(args)?;
    check_command(cli.command)
}

/// A long flag written in part (`--concurrency-r`) works, as clap takes an unambiguous prefix
/// for the flag, and breaks the day a flag sharing that prefix is added: the docs write every
/// flag whole. The flags after a sweep's `--` are `profile`'s.
fn whole_flags(args: &[String]) -> Result<(), String> {
    let Some(command) = args.get(1) else {
        return Ok(());
    };
    let mut known = long_flags(command);
    for word in args.iter().skip(2) {
        if word == "--" {
            known = long_flags("profile");
            continue;
        }
        let name = word.split('=').next().unwrap_or(word);
        if name.starts_with("--") && name.len() > 2 && !known.iter().any(|k| k == name) {
            return Err(format!(
                "{name} is not a whole flag of `inferperf {command}`: write the flag in full"
            ));
        }
    }
    Ok(())
}

/// The long flags of a command and their aliases, as its clap definition declares them.
fn long_flags(command: &str) -> Vec<String> {
    let cli = <Cli as clap::CommandFactory>::command();
    let Some(sub) = cli.find_subcommand(command) else {
        return Vec::new();
    };
    let names: Vec<String> = sub
        .get_arguments()
        .flat_map(|a| {
            a.get_long()
                .into_iter()
                .chain(a.get_all_aliases().unwrap_or_default())
        })
        .map(|name| format!("--{name}"))
        .collect();
    names
        .into_iter()
        .chain(["--help".into(), "--version".into()])
        .collect()
}

/// The checks each command makes of its flags before it does anything.
fn check_command(command: Command) -> Result<(), String> {
    match command {
        Command::Profile(args) => inferperf::config::Config::from_args(&args)
            .map(drop)
            .map_err(|e| e.to_string()),
        Command::Sweep(args) => inferperf::config::sweep::SweepPlan::from_args(&args)
            .map(drop)
            .map_err(|e| e.to_string()),
        Command::Serve(args) => args.models.iter().try_for_each(|m| {
            m.parse::<inferperf_server::ModelDef>()
                .map(drop)
                .map_err(|e| format!("--model {m}: {e}"))
        }),
        Command::Compare(args) => args.fail_on.as_deref().map_or(Ok(()), |limits| {
            inferperf::commands::compare::parse_fail_on(limits).map(drop)
        }),
        Command::Demo(_) | Command::Report(_) | Command::Merge(_) => Ok(()),
    }
}

/// README.md and every Markdown file under docs/, as (name, text).
fn doc_files() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = vec![root.join("README.md")];
    markdown_under(&root.join("docs"), &mut paths);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable doc");
            let name = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            (name, text)
        })
        .collect()
}

fn markdown_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("docs/ is there")
        .map(|e| e.expect("a folder entry").path())
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            markdown_under(&entry, out);
        } else if entry.extension().is_some_and(|e| e == "md") {
            out.push(entry);
        }
    }
}

/// Every problem with the commands: a line refused that should parse, or a line marked
/// `bad-option` that is accepted.
fn problems(commands: &[DocCommand], scratch: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for command in commands {
        let line = command.words.join(" ");
        match (check(&command.words, scratch), command.must_fail) {
            (Err(why), false) => {
                found.push(format!("{}: `{line}` is refused: {why}", command.place))
            }
            (Ok(()), true) => found.push(format!(
                "{}: `{line}` is accepted, but its block is tagged {BAD_OPTION_TAG}",
                command.place
            )),
            _ => {}
        }
    }
    found
}

fn scratch_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a scratch folder")
}

#[test]
fn every_inferperf_line_of_readme_and_docs_parses() {
    let mut commands = Vec::new();
    let files = doc_files();
    for (name, text) in &files {
        commands.extend(doc_commands(name, text).unwrap_or_else(|e| panic!("{e}")));
    }
    let scratch = scratch_dir();
    let found = problems(&commands, scratch.path());
    let refused = commands.iter().filter(|c| c.must_fail).count();
    println!(
        "checked {} inferperf command lines ({} meant to be refused) in {} files",
        commands.len(),
        refused,
        files.len()
    );
    assert!(
        found.is_empty(),
        "{} doc command line(s) drifted from the flags:\n{}",
        found.len(),
        found.join("\n")
    );
    assert!(
        commands.len() >= FEWEST_LINES,
        "only {} inferperf lines found in README.md and docs/: the extraction is broken",
        commands.len()
    );
    assert!(
        commands.iter().any(|c| c.place.starts_with("README.md")),
        "README.md has no inferperf line in a code block"
    );
}

/// The commands of a Markdown snippet, checked: the problems found.
fn snippet_problems(markdown: &str) -> Vec<String> {
    let commands = doc_commands("snippet.md", markdown).expect("readable");
    assert!(!commands.is_empty(), "no command found in {markdown}");
    problems(&commands, scratch_dir().path())
}

#[test]
fn a_misspelt_flag_fails_the_check() {
    let found =
        snippet_problems("```sh\ninferperf -m m -u localhost:8000 --concurency-range 4\n```\n");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("--concurency-range"), "{found:?}");
    // A value no flag check takes, and a combination refused before anything is sent.
    assert_eq!(
        snippet_problems("```\ninferperf -m m -i carrier-pigeon\n```\n").len(),
        1
    );
    let found = snippet_problems("```sh\ninferperf -m m --ramp 30s --concurrency-range 1:8 --profile-export-file x.json\n```\n");
    assert_eq!(found.len(), 1, "{found:?}");
    // A flag written in part works today, and breaks when a flag sharing the prefix comes.
    let found =
        snippet_problems("```sh\ninferperf -m m --ssl-https-client-certificate-fil c.pem\n```\n");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("write the flag in full"), "{found:?}");
    // The other commands' own checks.
    assert_eq!(
        snippet_problems("```sh\ninferperf serve --model m=no-such-kind\n```\n").len(),
        1
    );
    assert_eq!(
        snippet_problems("```sh\ninferperf compare a b --fail-on 'speed>+5%'\n```\n").len(),
        1
    );
}

#[test]
fn a_bad_option_block_must_be_refused() {
    let accepted =
        "```sh,bad-option\ninferperf -m m -u localhost:8000 --concurrency-range 4\n```\n";
    assert_eq!(snippet_problems(accepted).len(), 1);
    let refused = "```sh,bad-option\ninferperf -m m --concurency-range 4\ninferperf\n```\n";
    assert!(snippet_problems(refused).is_empty());
}

#[test]
fn lines_are_read_as_the_shell_reads_them() {
    let markdown = r#"Some prose with `inferperf -m not-in-a-block`.

```sh
$ inferperf -m a -u localhost:8000 \
    --concurrency-range 1:4 -f out.csv   # a comment
HF_TOKEN=x inferperf -m "b c" --service-kind openai 2>&1 | tee log.txt && echo done
for i in 0 1 2 3; do
  mpirun -n 4 ./target/release/inferperf -m 'd' --shard $i/4 > /dev/null &
done; wait
pip install .   # no inferperf here
echo inferperf-sweep/sweep.html
```
"#;
    let commands = doc_commands("snippet.md", markdown).expect("readable");
    let words: Vec<Vec<&str>> = commands
        .iter()
        .map(|c| c.words.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        words,
        vec![
            vec![
                "inferperf",
                "-m",
                "a",
                "-u",
                "localhost:8000",
                "--concurrency-range",
                "1:4",
                "-f",
                "out.csv"
            ],
            vec!["inferperf", "-m", "b c", "--service-kind", "openai"],
            vec!["inferperf", "-m", "d", "--shard", "0/4"],
        ]
    );
    assert_eq!(commands[0].place, "snippet.md:4");
    let unknown = "```sh\ninferperf -m m --shard $SHARD/4\n```\n";
    assert!(doc_commands("snippet.md", unknown).is_err());
}

#[test]
fn missing_input_files_get_a_stand_in_and_existing_ones_are_kept() {
    let scratch = scratch_dir();
    let words: Vec<String> = [
        "inferperf",
        "-m",
        "m",
        "--input-data",
        "examples/expected_outputs.json",
        "--request-intervals=no-such-intervals.txt",
        "-f",
        "no-such-output.csv",
    ]
    .map(String::from)
    .to_vec();
    let out = with_inputs(&words, scratch.path());
    assert!(out[4].ends_with("examples/expected_outputs.json") && Path::new(&out[4]).is_file());
    let intervals = out[5]
        .strip_prefix("--request-intervals=")
        .expect("flag kept");
    assert!(intervals.starts_with(&scratch.path().display().to_string()));
    assert_eq!(out[7], "no-such-output.csv", "outputs are left as written");
    assert_eq!(check(&words, scratch.path()), Ok(()));
}
