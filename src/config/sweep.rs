//! `inferperf sweep`'s plan, checked before any server starts: the `--param` values and
//! their combinations (the settings), the `{NAME}` placeholders of the server command and of
//! the profile flags after `--` (each one a parameter or a port inferperf picks), and each
//! setting's profile configuration — `inferperf profile`'s flags with `-u` pointed at the
//! setting's server and `--report-dir` at its folder. Every wrong flag is one sentence here
//! (exit 3), so a sweep never fails on its third server for a typo.

use std::path::PathBuf;
use std::time::Duration;

use super::{parse_protocol, Config, Protocol};
use crate::cli::{clap_sentence, Cli, Command, ProfileArgs, SweepArgs};
use inferperf_wire::error::{RunError, RunResult};

/// The ports a server command may name; `{port}` is the HTTP port checked for readiness.
pub const PORT: &str = "port";
pub const GRPC_PORT: &str = "grpc_port";
pub const METRICS_PORT: &str = "metrics_port";
const PORT_NAMES: [&str; 3] = [PORT, GRPC_PORT, METRICS_PORT];

/// A piece of a command or flag: text as written, or a `{NAME}` to fill.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Name(String),
}

/// A text with `{NAME}` placeholders; `{{` and `}}` are braces, and a brace that does not
/// enclose a name (`{print $1}`) is text.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    pub fn parse(text: &str) -> Template {
        let mut parts = Vec::new();
        let mut text_part = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if rest.starts_with("{{") || rest.starts_with("}}") {
                text_part.push(c);
                rest = &rest[2..];
                continue;
            }
            if c == '{' {
                if let Some(end) = rest.find('}') {
                    let name = &rest[1..end];
                    if is_name(name) {
                        if !text_part.is_empty() {
                            parts.push(Part::Text(std::mem::take(&mut text_part)));
                        }
                        parts.push(Part::Name(name.to_string()));
                        rest = &rest[end + 1..];
                        continue;
                    }
                }
            }
            text_part.push(c);
            rest = &rest[c.len_utf8()..];
        }
        if !text_part.is_empty() {
            parts.push(Part::Text(text_part));
        }
        Template { parts }
    }

    /// The names it holds, in order, each once.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for part in &self.parts {
            if let Part::Name(n) = part {
                if !names.contains(&n.as_str()) {
                    names.push(n);
                }
            }
        }
        names
    }

    /// The text with every name replaced by `value(name)`.
    pub fn fill(&self, value: impl Fn(&str) -> String) -> String {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.clone(),
                Part::Name(n) => value(n),
            })
            .collect()
    }
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A `--param`: its name and values in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    pub values: Vec<String>,
}

/// One combination of parameter values: a server to start and a profile to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub values: Vec<(String, String)>,
}

impl Setting {
    /// `instances=2` or `instances=2,max_batch=8`: the row's name and its folder's.
    pub fn label(&self) -> String {
        let pairs: Vec<String> = self
            .values
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        pairs.join(",")
    }

    /// The folder name: the label with anything a path would misread replaced by `_`.
    pub fn dir_name(&self) -> String {
        self.label()
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '=' | ',' | '+' | '-' => c,
                _ => '_',
            })
            .collect()
    }

    fn value(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The free ports chosen for one setting's server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ports {
    pub port: u16,
    pub grpc_port: Option<u16>,
    pub metrics_port: Option<u16>,
}

/// A checked `inferperf sweep`.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    /// The server command as typed.
    pub command_text: String,
    command: Template,
    pub params: Vec<Param>,
    /// The flags after `--`.
    profile: Vec<Template>,
    pub ready_timeout: Duration,
    pub stop_grace: Duration,
    pub report_dir: PathBuf,
}

impl SweepPlan {
    /// Checks every flag, and the profile flags of every setting.
    pub fn from_args(args: &SweepArgs) -> RunResult<SweepPlan> {
        if args.params.is_empty() {
            return Err(RunError::bad_option(
                "A sweep needs at least one --param NAME=V1,V2,... (e.g. --param instances=1,2,4).",
            ));
        }
        let params = parse_params(&args.params)?;
        if args.profile.is_empty() {
            return Err(RunError::bad_option(
                "Give the profile flags after --, e.g. `-- -m MODEL --concurrency-range 1:16:4`.",
            ));
        }
        if args.report_dir.as_os_str().is_empty() {
            return Err(RunError::bad_option(
                "--report-dir needs a path, e.g. --report-dir inferperf-sweep.",
            ));
        }
        let plan = SweepPlan {
            command_text: args.server.clone(),
            command: Template::parse(&args.server),
            profile: args.profile.iter().map(|f| Template::parse(f)).collect(),
            ready_timeout: seconds(args.ready_timeout, "--ready-timeout", false)?,
            stop_grace: seconds(args.stop_grace, "--stop-grace", true)?,
            report_dir: args.report_dir.clone(),
            params,
        };
        plan.check_names()?;
        plan.check_profiles()?;
        Ok(plan)
    }

    /// Every combination of the parameters' values, the first parameter varying slowest.
    pub fn settings(&self) -> Vec<Setting> {
        product(&self.params)
    }

    /// Whether the command or the profile flags name `name` (`grpc_port`, `metrics_port`).
    pub fn names(&self, name: &str) -> bool {
        self.templates().any(|t| t.names().contains(&name))
    }

    fn templates(&self) -> impl Iterator<Item = &Template> {
        std::iter::once(&self.command).chain(self.profile.iter())
    }

    /// The setting's folder.
    pub fn setting_dir(&self, setting: &Setting) -> PathBuf {
        self.report_dir.join(setting.dir_name())
    }

    /// The server command of a setting.
    pub fn command(&self, setting: &Setting, ports: &Ports) -> String {
        self.command.fill(|n| fill(setting, ports, n))
    }

    /// The profile of a setting: its flags, `-u` at the setting's server unless given, and
    /// `--report-dir` at its folder.
    pub fn profile_config(&self, setting: &Setting, ports: &Ports) -> RunResult<Config> {
        let flags: Vec<String> = self
            .profile
            .iter()
            .map(|t| t.fill(|n| fill(setting, ports, n)))
            .collect();
        let mut args = parse_profile_flags(&flags)?;
        if let Some(flag) = [
            ("--report-dir", args.report_dir.is_some()),
            ("--results-file", args.results_file.is_some()),
        ]
        .iter()
        .find_map(|(flag, given)| given.then_some(flag))
        {
            return Err(RunError::bad_option(format!(
                "{flag} after -- is the sweep's to set: each setting's results go to {}/<setting>/; give --report-dir DIR before -- to choose DIR.",
                self.report_dir.display()
            )));
        }
        if args.url.is_empty() {
            let port = match parse_protocol(&args.protocol)? {
                Protocol::Grpc => ports.grpc_port.ok_or_else(|| {
                    RunError::bad_option(
                        "With -i grpc, -u is 127.0.0.1:{grpc_port}: name {grpc_port} in --server (e.g. --grpc-port {grpc_port}) or give -u.",
                    )
                })?,
                Protocol::Http => ports.port,
            };
            args.url = vec![format!("127.0.0.1:{port}")];
        }
        args.report_dir = Some(self.setting_dir(setting));
        let cfg = Config::from_args(&args)?;
        if cfg.target.service_kind().in_process() {
            return Err(RunError::bad_option(format!(
                "--service-kind {} runs the models inside inferperf: a sweep needs a server to start; drop it.",
                cfg.target.service_kind().label().to_ascii_lowercase()
            )));
        }
        if cfg.load.mode.timeline().is_some() {
            return Err(RunError::bad_option(
                "A sweep tabulates load levels, and a --ramp or --load-steps run has none: give --concurrency-range or --request-rate-range after --.",
            ));
        }
        Ok(cfg)
    }

    /// Each `{NAME}` is a parameter or a port, and the command names `{port}`.
    fn check_names(&self) -> RunResult<()> {
        for (what, template) in std::iter::once(("--server", &self.command))
            .chain(self.profile.iter().map(|t| ("the flags after --", t)))
        {
            for name in template.names() {
                let known =
                    PORT_NAMES.contains(&name) || self.params.iter().any(|p| p.name == name);
                if !known {
                    return Err(RunError::bad_option(format!(
                        "{what} names {{{name}}}, which is neither a --param nor {{port}}, {{grpc_port}} or {{metrics_port}}; write {{{{{name}}}}} for the text {{{name}}}."
                    )));
                }
            }
        }
        if !self.command.names().contains(&PORT) {
            return Err(RunError::bad_option(
                "--server must name {port}, the free HTTP port inferperf gives the server and checks for readiness (e.g. --http-port {port}).",
            ));
        }
        Ok(())
    }

    /// Every setting's profile flags make a valid profile, and no two settings write the
    /// same file.
    fn check_profiles(&self) -> RunResult<()> {
        let ports = Ports {
            port: 8000,
            grpc_port: self.names(GRPC_PORT).then_some(8001),
            metrics_port: self.names(METRICS_PORT).then_some(8002),
        };
        let mut outputs: Vec<(&str, PathBuf)> = Vec::new();
        for setting in self.settings() {
            let cfg = self.profile_config(&setting, &ports)?;
            let written = [
                ("-f", cfg.output.csv_file.clone()),
                (
                    "--profile-export-file",
                    cfg.output.profile_export_file.clone(),
                ),
                (
                    "--artifact-dir",
                    cfg.target.llm().and_then(|l| l.artifact_dir.clone()),
                ),
            ];
            for (flag, path) in written {
                let Some(path) = path else { continue };
                if outputs.iter().any(|(f, p)| *f == flag && *p == path) {
                    let example = &self.params[0].name;
                    return Err(RunError::bad_option(format!(
                        "{flag} {} would be written by every setting: name a parameter in it (e.g. {flag} out-{{{example}}}) or drop it (each setting's folder has its results).",
                        path.display()
                    )));
                }
                outputs.push((flag, path));
            }
        }
        Ok(())
    }
}

fn fill(setting: &Setting, ports: &Ports, name: &str) -> String {
    let port = match name {
        PORT => Some(ports.port),
        GRPC_PORT => ports.grpc_port,
        METRICS_PORT => ports.metrics_port,
        _ => None,
    };
    match port {
        Some(p) => p.to_string(),
        None => setting.value(name).unwrap_or_default().to_string(),
    }
}

/// `--param NAME=V1,V2,...`, each name once, each value non-empty and once.
fn parse_params(texts: &[String]) -> RunResult<Vec<Param>> {
    let mut params: Vec<Param> = Vec::new();
    for text in texts {
        let Some((name, values)) = text.split_once('=') else {
            return Err(RunError::bad_option(format!(
                "--param {text} needs values: NAME=V1,V2,... (e.g. --param instances=1,2,4)."
            )));
        };
        let name = name.trim();
        if !is_name(name) || PORT_NAMES.contains(&name) {
            return Err(RunError::bad_option(format!(
                "--param {text}: the name must be letters, digits and _ (not starting with a digit) and not port, grpc_port or metrics_port."
            )));
        }
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        if values.iter().any(String::is_empty) {
            return Err(RunError::bad_option(format!(
                "--param {text} has an empty value: give NAME=V1,V2,... with every value written."
            )));
        }
        if let Some(v) = values
            .iter()
            .enumerate()
            .find_map(|(i, v)| values[..i].contains(v).then_some(v))
        {
            return Err(RunError::bad_option(format!(
                "--param {text} gives {v} twice: give each value once."
            )));
        }
        if params.iter().any(|p| p.name == name) {
            return Err(RunError::bad_option(format!(
                "--param {name} is given twice: give all its values in one, {name}=V1,V2,..."
            )));
        }
        params.push(Param {
            name: name.to_string(),
            values,
        });
    }
    let dirs: Vec<String> = product(&params).iter().map(Setting::dir_name).collect();
    if let Some(dir) = dirs
        .iter()
        .enumerate()
        .find_map(|(i, d)| dirs[..i].contains(d).then_some(d))
    {
        return Err(RunError::bad_option(format!(
            "Two settings would share the folder {dir}: use values that differ in letters, digits or . _ + -."
        )));
    }
    Ok(params)
}

/// Every combination of the parameters' values, the first parameter varying slowest.
fn product(params: &[Param]) -> Vec<Setting> {
    let mut settings = vec![Setting { values: Vec::new() }];
    for param in params {
        settings = settings
            .into_iter()
            .flat_map(|s| {
                param.values.iter().map(move |v| {
                    let mut values = s.values.clone();
                    values.push((param.name.clone(), v.clone()));
                    Setting { values }
                })
            })
            .collect();
    }
    settings
}

fn seconds(value: f64, flag: &str, zero_ok: bool) -> RunResult<Duration> {
    let min = if zero_ok {
        0.0
    } else {
        super::bounds::MIN_TIMEOUT_S
    };
    super::bounds::seconds_flag(flag, value, min)
}

/// `inferperf profile`'s flags, parsed as the command line would; a clap error becomes one
/// sentence.
fn parse_profile_flags(flags: &[String]) -> RunResult<ProfileArgs> {
    let argv = ["inferperf", "profile"]
        .into_iter()
        .map(String::from)
        .chain(flags.iter().cloned());
    match crate::cli::parse_command_line(argv) {
        Ok(Cli {
            command: Command::Profile(args),
        }) => Ok(*args),
        Ok(_) => Err(RunError::bad_option(
            "The flags after -- must be those of `inferperf profile`.",
        )),
        Err(e) => {
            let sentence = clap_sentence(&e, flags);
            let sentence = sentence
                .trim_end_matches("; see inferperf --help.")
                .trim_end_matches('.');
            Err(RunError::bad_option(format!(
                "After --: {sentence} (the flags after -- are those of `inferperf profile --help`)."
            )))
        }
    }
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
