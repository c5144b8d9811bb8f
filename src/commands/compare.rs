//! The `compare` command: read the `--fail-on` limits and the results files, compare each
//! run with the first ([`report::compare`](crate::report::compare)), print the table, the
//! warnings and the `--fail-on` verdict, and write the comparison page when asked.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::config::bounds::is_percentile;
use crate::report::compare::text::console_text;
use crate::report::compare::{compare, validity, Figure, Limit, Run};
use crate::report::html::comparison_page;
use crate::results::{self, replace_file};
use inferperf_wire::error::{RunError, RunResult};

/// What `compare` was asked.
pub struct CompareRequest<'a> {
    pub paths: &'a [PathBuf],
    pub fail_on: Option<&'a str>,
    pub output: Option<&'a Path>,
    /// `--allow-partial`: a run that is not whole is compared on what it measured.
    pub allow_partial: bool,
}

/// `inferperf compare`: reads the runs, prints the comparison, writes the page to `output`
/// when asked (and prints its path), and returns the exit code: 1 when a --fail-on limit
/// was passed beyond noise, or when a run is not whole (ended on an error, interrupted,
/// cut off, lacking a baseline level, a level with no success) and `--allow-partial` was not
/// given, else 0 — the page is written either way; a page that cannot be written is an
/// error (exit 99).
pub fn run(request: &CompareRequest) -> RunResult<i32> {
    let CompareRequest {
        paths,
        fail_on,
        output,
        allow_partial,
    } = *request;
    let limits = match fail_on {
        Some(text) => parse_fail_on(text).map_err(RunError::bad_option)?,
        None => Vec::new(),
    };
    let runs = paths
        .iter()
        .map(|p| {
            Ok(Run {
                name: display_name(p),
                file: results::read(p)?,
            })
        })
        .collect::<RunResult<Vec<_>>>()?;
    let comparison = compare(&runs, &limits);
    for warning in &comparison.warnings {
        eprintln!("warning: {warning}");
    }
    print!("{}", console_text(&runs, &comparison));
    let mut code = 0;
    for problem in validity::problems(&runs) {
        match allow_partial {
            true => println!("Accepted (--allow-partial): {problem}"),
            false => {
                println!("FAIL {problem} Compare whole runs, or accept it with --allow-partial.");
                code = 1;
            }
        }
    }
    if let Some(fail_on) = fail_on {
        if comparison.failures.is_empty() {
            println!("--fail-on '{fail_on}': no figure moved past its limit beyond noise.");
        } else {
            for failure in &comparison.failures {
                println!("FAIL {failure}");
            }
            code = 1;
        }
    }
    if let Some(path) = output {
        let page = comparison_page(&runs, &comparison, fail_on);
        replace_file(path, |out| out.write_all(page.as_bytes())).map_err(|e| {
            RunError::failed(format!(
                "Cannot write the comparison page {}: {e}.",
                path.display()
            ))
        })?;
        println!("{}", path.display());
    }
    Ok(code)
}

fn display_name(path: &Path) -> String {
    path.display().to_string()
}

/// Parses `--fail-on`: `throughput<-5%,p99>+10%`.
pub fn parse_fail_on(text: &str) -> Result<Vec<Limit>, String> {
    let usage = "each limit is FIGURE<-N% (a drop) or FIGURE>+N% (a rise), FIGURE being throughput, avg or pNN (p50, p99, p99.9), e.g. 'throughput<-5%,p99>+10%'";
    let mut limits = Vec::new();
    for item in text.split(',').map(str::trim) {
        let bad = |why: &str| format!("--fail-on '{text}': '{item}' {why}; {usage}.");
        let Some(at) = item.find(['<', '>']) else {
            return Err(bad("has no < or >"));
        };
        let (name, rest) = item.split_at(at);
        let name = name.trim().to_ascii_lowercase();
        let drop = rest.starts_with('<');
        let figure = match name.as_str() {
            "throughput" => Figure::Throughput,
            "avg" => Figure::Avg,
            _ => match name.strip_prefix('p').and_then(|p| p.parse::<f64>().ok()) {
                Some(p) if is_percentile(p) => Figure::Percentile(p),
                _ => return Err(bad(&format!("names no figure ('{name}')"))),
            },
        };
        let number = rest[1..].trim();
        let Some(number) = number.strip_suffix('%') else {
            return Err(bad("has no percentage ending in %"));
        };
        let percent: f64 = match number.trim().parse() {
            Ok(v) if f64::is_finite(v) => v,
            _ => return Err(bad(&format!("has no number ('{number}')"))),
        };
        if drop && percent >= 0.0 {
            return Err(bad("uses < with a percentage that is not negative"));
        }
        if !drop && percent <= 0.0 {
            return Err(bad("uses > with a percentage that is not positive"));
        }
        limits.push(Limit { figure, percent });
    }
    Ok(limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_on_parses_drops_and_rises() {
        let limits = parse_fail_on("throughput<-5%, p99>+10%,p99.9>20%,avg>+1.5%").unwrap();
        assert_eq!(
            limits,
            vec![
                Limit {
                    figure: Figure::Throughput,
                    percent: -5.0
                },
                Limit {
                    figure: Figure::Percentile(99.0),
                    percent: 10.0
                },
                Limit {
                    figure: Figure::Percentile(99.9),
                    percent: 20.0
                },
                Limit {
                    figure: Figure::Avg,
                    percent: 1.5
                },
            ]
        );
    }

    #[test]
    fn bad_fail_on_is_one_sentence() {
        for bad in [
            "throughput<5%",
            "p99>-10%",
            "p99=10%",
            "latency>10%",
            "p100>1%",
            "p99>10",
            "p99>x%",
            "",
        ] {
            let e = parse_fail_on(bad).unwrap_err();
            assert!(e.starts_with("--fail-on") && e.ends_with('.'), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
