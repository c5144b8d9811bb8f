//! The flags of `inferperf merge`: the shards' results files and where the merged run's
//! reports go (the same output flags as a run's). Only the flags live here; the command is
//! `commands::merge`.

use std::path::PathBuf;

use clap::Args;

/// What `inferperf merge --help` adds after the flags.
pub const MERGE_HELP: &str = "\
Example: inferperf merge runs/shard-*/results.json --report-dir runs/merged (or \
inferperf merge runs --report-dir runs/merged: a folder of shard-I/ folders)\n\n\
The shards of one run (--shard I/N, MPI ranks, an Indexed Job's pods) each write their own \
results file; merge makes them the one run they measured together. Per level, the shards' \
windows are lined up in time (each shard's clock corrected by its clock_offset_s) and \
added: histograms without loss, counts and errors summed; a merged window lasts as long as \
the shards' windows (they ran side by side), so its throughput is theirs together. A window \
not measured by every shard at the same time is left out with a note. The run's stability \
rule (-s, -r, --percentile, -l, --slo) is judged on the merged windows, and each level \
reports the merge of its last windows, as one process would. The server's statistics and \
metrics are the first shard's (every shard saw the same server). Every report follows: the \
console's, the CSV (-f, --report-dir), the per-URL CSV (--per-url-csv), results.json (--report-dir, --results-file) and \
report.html (--report-dir). Files of different runs (any setting but the shard and the \
output paths differs), a shard given twice or of another shard count, and a missing shard \
(unless --allow-missing) are refused: exit 3. Exit 2 when a merged level is unstable.";

/// Flags of `inferperf merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' results files (results.json) or --report-dir folders holding one, or the
    /// run's folder holding the shards' shard-I/ folders; at least two shards.
    #[arg(value_name = "SHARD")]
    pub shards: Vec<PathBuf>,
    /// Write perf_analyzer's CSV report of the merged run to this file.
    #[arg(short = 'f', value_name = "FILE")]
    pub csv_file: Option<PathBuf>,
    /// A folder for the merged run's reports (created if missing): results.json,
    /// results.csv and report.html.
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
    /// Write the merged run's results file to this path alone.
    #[arg(long, value_name = "FILE")]
    pub results_file: Option<PathBuf>,
    /// Write a CSV with a row per level and server (`-u` URL) of the merged run, as a run's
    /// `--per-url-csv` does.
    #[arg(long, value_name = "FILE")]
    pub per_url_csv: Option<PathBuf>,
    /// Merge the shards given although some of the run's shards are missing (their load is
    /// then not in the figures, which a note says).
    #[arg(long)]
    pub allow_missing: bool,
}
