//! The live progress line on standard error (indicatif), shown only when standard error is a
//! terminal and `--no-progress` was not given. It never writes to standard output, and it is
//! cleared before a level's report is printed and suspended around every other line the run
//! prints while it is drawn, so the report's lines are never mixed with it.
//!
//! A run's line, redrawn at each window cut (the spinner turns every 200 ms):
//!
//! ```text
//! - level 3 of 8: concurrency 11 | window 4/10 | last window 1234.5 infer/sec, p99 12.34 ms, 0 errors | stability: spread 14.2%, over -s 10%
//! ```
//!
//! A `--ramp` / `--load-steps` run's line, its time and target moving with the clock:
//!
//! ```text
//! - load plan 12s of 30s, 18s left, target concurrency 17 | last second 1234.5 infer/sec, p99 12.34 ms, 0 errors
//! ```

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle, TermLike};

use crate::config::{format_rate, LoadLevel, LoadMode, OutputConfig, Timeline, TimelineKind};
use crate::load::plan::Plan;
use crate::load::progress::{LevelStart, Place, Progress, WindowDone};
use crate::measure::timeline::Bucket;
use crate::report::format::format_throughput;

/// How often the line is redrawn between updates (the spinner, a plan's clock).
pub const TICK: Duration = Duration::from_millis(200);

/// Spinner frames; the last is shown when finished. ASCII, so any terminal draws it.
const SPINNER: &str = "-\\|/ ";

/// The progress line of a run; every copy draws the same line. Without a terminal (or with
/// `--no-progress`) it draws nothing and costs nothing.
#[derive(Clone, Default)]
pub struct Live {
    inner: Option<Arc<Mutex<Line>>>,
}

/// What the line shows now.
struct Line {
    /// The run's load mode, which names its levels (`concurrency 11`, `fixed schedule`).
    mode: LoadMode,
    /// The line on the terminal, while one is shown.
    bar: Option<ProgressBar>,
    /// The current level's most windows (`-r`, or 1).
    max_windows: u32,
}

impl Drop for Line {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// Columns left free at the end of the line: the terminal echoes Ctrl-C as `^C` after it.
const ECHO_ROOM: u16 = 3;

/// Standard error as indicatif draws on it, except that a line never reaches the last
/// column: indicatif pads its line with spaces to the terminal's width, which leaves the
/// cursor where the next character (the `^C` a terminal echoes on Ctrl-C) wraps onto a new
/// line, and the line that was drawn could then no longer be cleared.
#[derive(Debug)]
struct Stderr(console::Term);

impl TermLike for Stderr {
    fn width(&self) -> u16 {
        self.0.size().1.saturating_sub(ECHO_ROOM).max(1)
    }
    fn height(&self) -> u16 {
        self.0.size().0
    }
    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_up(n)
    }
    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_down(n)
    }
    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_right(n)
    }
    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_left(n)
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.0.write_line(s)
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        // The padding (and a padded message's tail) is left out; the line is cleared before
        // each redraw anyway.
        match s.trim_end_matches(' ') {
            "" => Ok(()),
            text => self.0.write_str(text),
        }
    }
    fn clear_line(&self) -> std::io::Result<()> {
        self.0.clear_line()
    }
    fn flush(&self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Live {
    /// The line of a run of `plan`: drawn when standard error is a terminal and progress
    /// is on (`output`); otherwise a line that does nothing.
    pub fn for_stderr(output: &OutputConfig, plan: &Plan) -> Live {
        let terminal = std::io::stderr().is_terminal();
        if output.dashboard_asked && output.progress {
            eprintln!("--ui-type dashboard: inferperf has no live dashboard yet; it shows its progress line instead{}.", match terminal {
                true => "",
                false => " (on a terminal)",
            });
        }
        Live::new(plan, output.progress && terminal)
    }

    /// A line that draws when `enabled`.
    pub fn new(plan: &Plan, enabled: bool) -> Live {
        let inner = enabled.then(|| {
            Arc::new(Mutex::new(Line {
                mode: plan.load.mode.clone(),
                bar: None,
                max_windows: plan.measure.max_trials,
            }))
        });
        Live { inner }
    }

    /// Whether this line draws at all.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// The hook the profiler calls, or None when nothing is drawn.
    pub fn hook(&self) -> Option<Box<dyn Progress>> {
        self.inner
            .as_ref()
            .map(|_| Box::new(self.clone()) as Box<dyn Progress>)
    }

    /// Runs `f` (which prints to standard output) with the line cleared, then draws it again.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        let bar = self.with(|line| line.bar.clone()).flatten();
        match bar {
            Some(bar) => bar.suspend(|| {
                let r = f();
                let _ = std::io::stdout().flush();
                r
            }),
            None => f(),
        }
    }

    /// A `--ramp` / `--load-steps` plan starts now: its time left and target follow the clock.
    pub fn timeline_started(&self, plan: &Timeline) {
        let plan = plan.clone();
        self.with(|line| {
            let style = style(PLAN_TEMPLATE).with_key(
                "plan",
                move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = w.write_str(&plan_text(&plan, state.elapsed()));
                },
            );
            line.show(style, String::new(), "waiting for the first second".into());
        });
    }

    /// A second of the plan was cut.
    pub fn bucket(&self, bucket: &Bucket) {
        let s = &bucket.stats;
        let p99_us = if s.ok > 0 { s.percentile_us(99.0) } else { 0.0 };
        let text = figures_text("last second", s.throughput(), s.ok, s.error_count(), p99_us);
        self.with(|line| {
            if let Some(bar) = &line.bar {
                bar.set_message(text);
            }
        });
    }

    /// Clears the line for good.
    pub fn finish(&self) {
        self.with(|line| line.clear());
    }

    fn with<R>(&self, f: impl FnOnce(&mut Line) -> R) -> Option<R> {
        let inner = self.inner.as_ref()?;
        let mut line = inner.lock().unwrap_or_else(|e| e.into_inner());
        Some(f(&mut line))
    }
}

impl Line {
    /// Draws a new line with `style`, replacing the one shown.
    fn show(&mut self, style: ProgressStyle, prefix: String, message: String) {
        self.clear();
        let target =
            ProgressDrawTarget::term_like(Box::new(Stderr(console::Term::buffered_stderr())));
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(style);
        bar.set_prefix(prefix);
        bar.set_message(message);
        bar.enable_steady_tick(TICK);
        self.bar = Some(bar);
    }

    fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Progress for Live {
    fn level_started(&mut self, start: &LevelStart) {
        self.with(|line| {
            line.max_windows = start.max_windows;
            let head = level_head(&line.mode, start);
            let message = format!("window 1/{} | measuring", start.max_windows);
            line.show(style(LEVEL_TEMPLATE), head, message);
        });
    }

    fn window_cut(&mut self, window: &WindowDone) {
        self.with(|line| {
            if let Some(bar) = &line.bar {
                bar.set_message(window_text(window, line.max_windows));
            }
        });
    }

    fn level_finished(&mut self) {
        self.with(|line| line.clear());
    }
}

/// A run's line: the spinner, the level's head, the window and its figures.
const LEVEL_TEMPLATE: &str = "{spinner} {prefix} | {wide_msg}";
/// A load plan's line: the spinner, the plan's clock and target, the last second's figures.
const PLAN_TEMPLATE: &str = "{spinner} {plan} | {wide_msg}";

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("the progress templates are valid")
        .tick_chars(SPINNER)
}

/// `level 3 of 8: concurrency 11`, `search step 4: request rate 250/s`.
pub fn level_head(mode: &LoadMode, start: &LevelStart) -> String {
    let place = match start.place {
        Place::SearchStep(n) => format!("search step {n}"),
        Place::Level {
            number,
            of: Some(of),
            at_most: false,
        } => format!("level {number} of {of}"),
        Place::Level {
            number,
            of: Some(of),
            at_most: true,
        } => format!("level {number} of at most {of}"),
        Place::Level {
            number, of: None, ..
        } => format!("level {number}"),
    };
    format!("{place}: {}", load_text(mode, start.level))
}

/// The load of a level in words: `concurrency 11`, `request rate 250/s`, `fixed schedule`.
fn load_text(mode: &LoadMode, level: LoadLevel) -> String {
    match (mode, level) {
        (LoadMode::FixedSchedule, _) => "fixed schedule".into(),
        (LoadMode::Periodic(r), _) => {
            format!("periodic concurrency {}:{}:{}", r.start, r.end, r.step)
        }
        (LoadMode::Intervals { .. }, LoadLevel::Rate(r)) => {
            format!("request intervals ({}/s)", format_rate(round(r)))
        }
        (_, LoadLevel::Concurrency(c)) => format!("concurrency {c}"),
        (_, LoadLevel::Rate(r)) => format!("request rate {}/s", format_rate(r)),
    }
}

fn round(rate: f64) -> f64 {
    (rate * 10.0).round() / 10.0
}

/// What follows the head once a window was cut: the next window's number out of `-r`, the
/// cut window's figures and the stability of the last windows.
/// `window 4/10 | last window 1234.5 infer/sec, p99 12.34 ms, 0 errors | stability: …`
pub fn window_text(w: &WindowDone, max_windows: u32) -> String {
    let next = (w.number + 1).min(max_windows);
    let figures = figures_text("last window", w.throughput, w.ok, w.errors, w.p99_us);
    format!(
        "window {next}/{max_windows} | {figures} | stability: {}",
        stability_text(w)
    )
}

/// `spread 4.2%, within -s 10%`, `spread 14.2%, over -s 10%`, `2 of 3 windows, spread 4.2%`.
pub fn stability_text(w: &WindowDone) -> String {
    let limit = percent(w.limit);
    match w.spread {
        None => format!("{} of {} windows", w.judged, w.needed),
        Some(s) if w.judged < w.needed => format!(
            "{} of {} windows, spread {} (-s {limit})",
            w.judged,
            w.needed,
            percent(s)
        ),
        Some(s) if w.within() => format!("spread {}, within -s {limit}", percent(s)),
        Some(s) => format!("spread {}, over -s {limit}", percent(s)),
    }
}

/// `last window 1234.5 infer/sec, p99 12.34 ms, 2 errors (0.2%)`.
fn figures_text(what: &str, throughput: f64, ok: u64, errors: u64, p99_us: f64) -> String {
    let mut text = format!("{what} {} infer/sec", format_throughput(throughput));
    if ok > 0 {
        let _ = write!(text, ", p99 {}", latency_text(p99_us));
    }
    match errors {
        0 => text += ", 0 errors",
        1 => text += ", 1 error",
        n => {
            let _ = write!(text, ", {n} errors");
        }
    }
    if errors > 0 {
        let share = errors as f64 / (ok + errors) as f64;
        let _ = write!(text, " ({})", percent(share));
    }
    text
}

/// `850 usec` below a millisecond, `12.34 ms` above.
fn latency_text(us: f64) -> String {
    if us < 1000.0 {
        format!("{} usec", us as u64)
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

/// `4.2%` (one decimal; whole numbers without it: `10%`).
fn percent(share: f64) -> String {
    let pct = (share * 1000.0).round() / 10.0;
    if pct.fract() == 0.0 {
        format!("{}%", pct as i64)
    } else {
        format!("{pct:.1}%")
    }
}

/// `load plan 12s of 30s, 18s left, target concurrency 17`, and once the plan is over
/// `load plan done (30s), waiting for the last answers`.
pub fn plan_text(plan: &Timeline, elapsed: Duration) -> String {
    let total = plan.total();
    if elapsed >= total {
        return format!(
            "load plan done ({}), waiting for the last answers",
            secs(total)
        );
    }
    let value = plan.value_at(elapsed);
    let target = match plan.kind {
        TimelineKind::Concurrency => format!("concurrency {}", value as u64),
        TimelineKind::Rate => format!("rate {}/s", format_rate(round(value))),
    };
    format!(
        "load plan {} of {}, {} left, target {target}",
        secs(elapsed),
        secs(total),
        secs(total.saturating_sub(elapsed) + Duration::from_millis(999))
    )
}

/// Whole seconds, rounded down: `12s`.
fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Segment;

    fn done(number: u32, spread: Option<f64>) -> WindowDone {
        WindowDone {
            number,
            throughput: 1234.5,
            p99_us: 12_340.0,
            ok: 1000,
            errors: 0,
            judged: (number as usize).min(3),
            needed: 3,
            spread,
            limit: 0.10,
        }
    }

    #[test]
    fn a_level_line_names_the_level_window_figures_and_stability() {
        let start = LevelStart {
            place: Place::Level {
                number: 3,
                of: Some(8),
                at_most: false,
            },
            level: LoadLevel::Concurrency(11),
            max_windows: 10,
        };
        assert_eq!(
            level_head(&LoadMode::Concurrency, &start),
            "level 3 of 8: concurrency 11"
        );
        assert_eq!(
            window_text(&done(3, Some(0.142)), 10),
            "window 4/10 | last window 1234.5 infer/sec, p99 12.34 ms, 0 errors | stability: spread 14.2%, over -s 10%"
        );
        assert_eq!(stability_text(&done(1, None)), "1 of 3 windows");
        assert_eq!(
            stability_text(&done(2, Some(0.042))),
            "2 of 3 windows, spread 4.2% (-s 10%)"
        );
        assert_eq!(
            stability_text(&done(5, Some(0.042))),
            "spread 4.2%, within -s 10%"
        );
        let mut failing = done(1, None);
        failing.errors = 10;
        failing.ok = 0;
        assert_eq!(
            window_text(&failing, 10),
            "window 2/10 | last window 1234.5 infer/sec, 10 errors (100%) | stability: 1 of 3 windows"
        );
    }

    #[test]
    fn places_and_loads_read_as_words() {
        let head = |place, level| {
            level_head(
                &LoadMode::Concurrency,
                &LevelStart {
                    place,
                    level,
                    max_windows: 10,
                },
            )
        };
        assert_eq!(
            head(Place::SearchStep(4), LoadLevel::Concurrency(17)),
            "search step 4: concurrency 17"
        );
        assert_eq!(
            head(
                Place::Level {
                    number: 2,
                    of: Some(5),
                    at_most: true
                },
                LoadLevel::Rate(250.0)
            ),
            "level 2 of at most 5: request rate 250/s"
        );
        assert_eq!(
            head(
                Place::Level {
                    number: 7,
                    of: None,
                    at_most: true
                },
                LoadLevel::Concurrency(13)
            ),
            "level 7: concurrency 13"
        );
    }

    #[test]
    fn a_plan_line_counts_down() {
        let plan = Timeline {
            kind: TimelineKind::Concurrency,
            segments: vec![Segment {
                from: 1.0,
                to: 30.0,
                duration: Duration::from_secs(30),
            }],
        };
        assert_eq!(
            plan_text(&plan, Duration::from_millis(12_300)),
            "load plan 12s of 30s, 18s left, target concurrency 13"
        );
        assert_eq!(
            plan_text(&plan, Duration::from_secs(31)),
            "load plan done (30s), waiting for the last answers"
        );
    }

    #[test]
    fn the_templates_are_valid() {
        for template in [LEVEL_TEMPLATE, PLAN_TEMPLATE] {
            assert!(ProgressStyle::with_template(template).is_ok(), "{template}");
        }
    }

    #[test]
    fn without_a_terminal_nothing_is_drawn() {
        let cfg = crate::config::test_config();
        let plan = Plan::new(&cfg.load, &cfg.measure);
        let live = Live::new(&plan, false);
        assert!(!live.is_enabled());
        assert!(live.hook().is_none());
        assert_eq!(live.suspend(|| 7), 7);
        // Under `cargo test` standard error is captured or piped, not a terminal.
        if !std::io::stderr().is_terminal() {
            assert!(!Live::for_stderr(&cfg.output, &plan).is_enabled());
        }
        let mut off = cfg.output.clone();
        off.progress = false;
        assert!(!Live::for_stderr(&off, &plan).is_enabled());
    }
}
