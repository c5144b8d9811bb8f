//! What the console says about each `-u` server when a run spreads its load over several:
//! a line per URL under each level's client figures (and under each second of a `--ramp` /
//! `--load-steps` run, with the server's requests, and under its totals) and a settings
//! line naming the servers (the `--per-url-csv` file is [`super::per_url_csv`]). With one
//! server nothing here prints a line, so a single-server report is what it always was.

use crate::measure::window::WindowStats;
use crate::results::Settings;

use crate::report::format::{format_throughput, usec};

/// The settings line naming the servers, when there are several.
pub fn settings_line(settings: &Settings) -> Option<String> {
    let servers = settings.servers();
    (servers.len() > 1).then(|| {
        format!(
            "  Servers: {} (load spread round-robin; server statistics and metrics from {})",
            servers.join(", "),
            settings.url
        )
    })
}

/// Under the server's figures, with several servers: whose they are.
pub fn first_server_note(settings: &Settings) -> Option<String> {
    (settings.servers().len() > 1).then(|| {
        format!(
            "    (server figures of {} only, the first -u; the client figures are every server's)",
            settings.url
        )
    })
}

/// `    URL host:port: throughput 98.5 infer/sec, p50 2034 usec, p99 2210 usec, errors 0`,
/// one per server of the window (none with one server).
pub fn replica_lines(settings: &Settings, w: &WindowStats) -> Vec<String> {
    (w.replicas.iter().zip(settings.servers()))
        .map(|(r, url)| {
            format!(
                "    URL {url}: throughput {} infer/sec, p50 {} usec, p99 {} usec, errors {}",
                format_throughput(w.replica_throughput(r)),
                usec(r.percentile_us(50.0)),
                usec(r.percentile_us(99.0)),
                r.failed
            )
        })
        .collect()
}

/// Under a timeline's second, with several servers: each server's share of it, as
/// [`replica_lines`] and indented under the table's row, with the requests it answered (or
/// failed) in that second, so that the servers' shares add up to the second's.
pub fn bucket_replica_lines(settings: &Settings, w: &WindowStats) -> Vec<String> {
    (replica_lines(settings, w).into_iter().zip(&w.replicas))
        .map(|(line, r)| format!("  {line}, requests {}", r.completed()))
        .collect()
}
