//! The console report of an LLM level: GenAI-Perf's table (Statistic | avg | min | max |
//! p99 | p90 | p75, the level's figures as rows, the system figures with `N/A` beside
//! their value), then what GenAI-Perf does not show and a reader of inferperf needs: the
//! gaps between streamed events, the HTTP phases, how the output tokens were counted, and
//! whether the server streamed when asked to. It stands where a tensor run's latency lines
//! stand in the level block.

use crate::measure::tokens::TokenStats;
use crate::measure::window::WindowStats;
use crate::results::Settings;

use super::genai_perf::{shown_metrics, stat_cell, system_metrics};
use super::{grouped_two_decimals, Figure};

/// The statistics columns of GenAI-Perf's console table.
const COLUMNS: [&str; 6] = ["avg", "min", "max", "p99", "p90", "p75"];

/// Spaces before every line of the table, so that it sits inside the level's block.
const INDENT: &str = "    ";

/// The table and the lines under it.
pub fn llm_lines(settings: &Settings, w: &WindowStats) -> Vec<String> {
    let mut lines = table(settings, w);
    lines.extend(detail_lines(settings, w));
    lines
}

/// GenAI-Perf's table, drawn as its `rich` table is: a title, a heavy header, light rows.
fn table(settings: &Settings, w: &WindowStats) -> Vec<String> {
    let mut rows: Vec<Vec<String>> = shown_metrics(settings)
        .iter()
        .map(|m| {
            let mut row = vec![m.name.to_string()];
            row.extend(COLUMNS.iter().map(|stat| stat_cell(m, w, stat)));
            row
        })
        .collect();
    for m in system_metrics(settings, w) {
        let mut row = vec![m.name.to_string(), grouped_two_decimals(m.value)];
        row.extend(std::iter::repeat_n("N/A".to_string(), COLUMNS.len() - 1));
        rows.push(row);
    }
    let mut header = vec!["Statistic".to_string()];
    header.extend(COLUMNS.iter().map(|c| c.to_string()));
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .chain(std::iter::once(&header))
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let rule = |left: &str, fill: &str, join: &str, right: &str| {
        let parts: Vec<String> = widths.iter().map(|w| fill.repeat(w + 2)).collect();
        format!("{INDENT}{left}{}{right}", parts.join(join))
    };
    let line = |cells: &[String], bar: &str| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, &width)| format!(" {cell:>width$} "))
            .collect();
        format!("{INDENT}{bar}{}{bar}", parts.join(bar))
    };
    let total: usize = widths.iter().map(|w| w + 3).sum::<usize>() + 1;
    let title = "inferperf | LLM Metrics";
    let mut lines = vec![
        format!("{INDENT}{:^total$}", title, total = total.max(title.len()))
            .trim_end()
            .to_string(),
    ];
    lines.push(rule("┏", "━", "┳", "┓"));
    lines.push(line(&header, "┃"));
    lines.push(rule("┡", "━", "╇", "┩"));
    lines.extend(rows.iter().map(|r| line(r, "│")));
    lines.push(rule("└", "─", "┴", "┘"));
    lines
}

/// Inter-chunk latency, the HTTP phases, the token count's source and the unstreamed note.
fn detail_lines(settings: &Settings, w: &WindowStats) -> Vec<String> {
    let mut lines = Vec::new();
    if settings.streaming {
        lines.push(match Figure::InterChunk.stats(w) {
            Some(gaps) => format!(
                "{INDENT}Inter chunk latency (between streamed events): p50 {} ms, p99 {} ms",
                grouped_two_decimals(gaps.percentile(50.0)),
                grouped_two_decimals(gaps.percentile(99.0))
            ),
            None => format!("{INDENT}Inter chunk latency: none (one event per request)"),
        });
    }
    let avg = |f: Figure| f.stats(w).map_or(0.0, |s| s.avg());
    if Figure::Sending.stats(w).is_some() {
        lines.push(format!(
            "{INDENT}HTTP phases (avg): connecting {} ms, sending {} ms, waiting (to the first body byte) {} ms, receiving {} ms",
            grouped_two_decimals(avg(Figure::Connecting)),
            grouped_two_decimals(avg(Figure::Sending)),
            grouped_two_decimals(avg(Figure::Waiting)),
            grouped_two_decimals(avg(Figure::Receiving)),
        ));
    }
    if let Some(tokens) = &w.tokens {
        lines.extend(token_lines(tokens, w));
        if tokens.unstreamed > 0 {
            let (n, were) = match tokens.unstreamed {
                1 => ("1 request".to_string(), "was"),
                n => (format!("{n} requests"), "were"),
            };
            lines.push(format!(
                "{INDENT}Note: {n} {were} asked to stream but the server answered in one piece; each was measured as one answer."
            ));
        }
    }
    lines
}

/// What counted the tokens, the server's counts beside the tokenizer's, answers shorter
/// than asked, and the requests whose tokens came coalesced.
fn token_lines(tokens: &TokenStats, w: &WindowStats) -> Vec<String> {
    let mut lines = Vec::new();
    let with = tokens
        .counted_with
        .as_deref()
        .unwrap_or("the run's tokenizer");
    if !tokens.generates() {
        let isl = Figure::InputTokens.stats(w).map_or(0.0, |s| s.avg());
        lines.push(format!(
            "{INDENT}Input tokens counted with {with}: {} per request; no output tokens (the endpoint generates no text)",
            grouped_two_decimals(isl)
        ));
        return lines;
    }
    lines.push(format!(
        "{INDENT}Tokens counted with {with}; output lengths {} ({} by usage, {} by the tokenizer{})",
        tokens.main_source().describe(),
        tokens.by_usage,
        tokens.by_tokenizer,
        match tokens.by_nothing {
            0 => String::new(),
            n => format!(", {n} not counted"),
        }
    ));
    if let Some(server) = Figure::UsagePromptTokens.stats(w) {
        let isl = Figure::InputTokens.stats(w).map_or(0.0, |s| s.avg());
        lines.push(format!(
            "{INDENT}Input tokens: {} per prompt by the tokenizer (the message content); the server counted {} (its chat template included)",
            grouped_two_decimals(isl),
            grouped_two_decimals(server.avg())
        ));
    }
    if let Some(cached) = Figure::UsagePromptCacheRead.stats(w) {
        let prompt = Figure::UsagePromptTokens.stats(w);
        let share = super::cache_read_pct(w).map_or("-".into(), grouped_two_decimals);
        lines.push(format!(
            "{INDENT}Prefix cache: {} of {} prompt tokens per request served from the server's cache ({share}% of prompt tokens)",
            grouped_two_decimals(cached.avg()),
            grouped_two_decimals(prompt.map_or(0.0, |s| s.avg())),
        ));
    }
    if let Some(diff) = Figure::UsageCompletionDiff.stats(w) {
        let verdict = if diff.avg() > USAGE_DIFF_WARN_PCT {
            " — [WARNING] more than 2%: the tokenizer is likely not the model's; give --tokenizer with the model's own"
        } else {
            ""
        };
        lines.push(format!(
            "{INDENT}Output tokens, server usage against the tokenizer: {}% apart on average over {} requests{verdict}",
            grouped_two_decimals(diff.avg()),
            diff.count()
        ));
    }
    if tokens.osl_mismatch > 0 {
        let asked = tokens.asked_tokens.max(1) as f64;
        let gap = 100.0 * (tokens.asked_produced as f64 - asked) / asked;
        lines.push(format!(
            "{INDENT}[WARNING] {} of {} requests produced an output length more than 5% off the max_tokens asked ({} tokens produced against {} asked, {}%): add --output-tokens-mean-deterministic to ask for exactly max_tokens.",
            tokens.osl_mismatch,
            tokens.osl_mismatch_diff.count(),
            tokens.asked_produced,
            tokens.asked_tokens,
            grouped_two_decimals(gap)
        ));
    }
    if tokens.coalesced > 0 {
        lines.push(format!(
            "{INDENT}[WARNING] {} requests' tokens arrived coalesced (most gaps between events under 20 us: read together, not decoded that fast); they are left out of the inter-token latency and tokens/s per user figures. {}",
            tokens.coalesced,
            coalesced_cause(w)
        ));
    }
    lines
}

/// The usage-against-tokenizer difference past which the tokenizer is suspect, %.
const USAGE_DIFF_WARN_PCT: f64 = 2.0;

/// Who likely read the events together.
fn coalesced_cause(w: &WindowStats) -> &'static str {
    let secs = w.duration.as_secs_f64();
    let cores = if secs > 0.0 {
        w.client_cpu.as_secs_f64() / secs
    } else {
        0.0
    };
    if cores >= 0.9 {
        "The client's CPU was saturated: the client, not the server, is the likely cause."
    } else {
        "The client was not saturated: the server or the network likely sent them together."
    }
}

#[cfg(test)]
#[path = "console_tests.rs"]
mod tests;
