//! Lining up the shards' windows of one level in time. Shards run in parallel, so the
//! merged run's window k is the shards' windows that covered the same seconds: each window
//! of the first shard is matched with the window of every other shard whose start is
//! nearest to its own, within half its length. A window without a partner in every shard
//! is left out (with a note), so that no merged window holds part of the load only. The
//! shards' matched windows are added, histograms and all; the merged window's length is
//! their common length, not the sum (they ran side by side), so that its throughput is the
//! shards' together.

use std::time::{Duration, Instant};

use crate::measure::window::WindowStats;

/// The merged windows of a level, and what was left out.
pub struct Aligned {
    pub windows: Vec<WindowStats>,
    pub notes: Vec<String>,
}

/// Lines up the shards' windows of a level (`labels[i]` names shard `i` in notes); a
/// single-window level (`--request-count`, a fixed schedule) merges its one window per shard.
pub fn align(
    level: usize,
    labels: &[String],
    shards: &[Vec<WindowStats>],
    single: bool,
) -> Aligned {
    let groups = if single || !all_placed(shards) {
        by_position(shards)
    } else {
        by_time(shards)
    };
    let windows = groups
        .iter()
        .map(|group| merged(shards, group, single))
        .collect();
    let notes = left_out(level, labels, shards, &groups);
    Aligned { windows, notes }
}

fn all_placed(shards: &[Vec<WindowStats>]) -> bool {
    shards.iter().flatten().all(|w| w.bounds.is_some())
}

/// Window k of every shard, for as many windows as every shard has.
fn by_position(shards: &[Vec<WindowStats>]) -> Vec<Vec<usize>> {
    let common = shards.iter().map(Vec::len).min().unwrap_or(0);
    (0..common).map(|k| vec![k; shards.len()]).collect()
}

/// For each window of the first shard, the nearest unused window of every other shard
/// within half its length; a window without a partner everywhere starts no group.
fn by_time(shards: &[Vec<WindowStats>]) -> Vec<Vec<usize>> {
    let Some((first, rest)) = shards.split_first() else {
        return Vec::new();
    };
    let mut used: Vec<Vec<bool>> = rest.iter().map(|w| vec![false; w.len()]).collect();
    let mut groups = Vec::new();
    for (k, window) in first.iter().enumerate() {
        let Some((start, _)) = window.bounds else {
            continue;
        };
        let tolerance = window.duration / 2;
        let partners: Option<Vec<usize>> = rest
            .iter()
            .zip(&used)
            .map(|(windows, used)| nearest(windows, used, start, tolerance))
            .collect();
        if let Some(partners) = partners {
            for (used, &m) in used.iter_mut().zip(&partners) {
                used[m] = true;
            }
            groups.push(std::iter::once(k).chain(partners).collect());
        }
    }
    groups
}

/// The unused window starting nearest to `start`, if within `tolerance`.
fn nearest(
    windows: &[WindowStats],
    used: &[bool],
    start: Instant,
    tolerance: Duration,
) -> Option<usize> {
    windows
        .iter()
        .enumerate()
        .filter(|(m, _)| !used[*m])
        .filter_map(|(m, w)| Some((m, distance(w.bounds?.0, start))))
        .filter(|(_, d)| *d <= tolerance)
        .min_by_key(|(_, d)| *d)
        .map(|(m, _)| m)
}

fn distance(a: Instant, b: Instant) -> Duration {
    a.saturating_duration_since(b)
        .max(b.saturating_duration_since(a))
}

/// The shards' windows of a group added; its length is theirs in common: their mean for
/// windows cut side by side, from the first start to the last end for single windows.
fn merged(shards: &[Vec<WindowStats>], group: &[usize], single: bool) -> WindowStats {
    let parts: Vec<&WindowStats> = shards.iter().zip(group).map(|(w, &k)| &w[k]).collect();
    let batch = parts.first().map_or(1, |w| w.batch_size);
    let mut window = WindowStats::merged(parts.iter().copied(), batch);
    let mean = parts.iter().map(|w| w.duration).sum::<Duration>() / parts.len().max(1) as u32;
    let span = window
        .bounds
        .map(|(start, end)| end.saturating_duration_since(start));
    window.duration = match span {
        Some(span) if single => span.max(mean),
        _ => mean,
    };
    window.windows = parts.first().map_or(1, |w| w.windows);
    window
}

/// "shard 2 had 1 window more at level 3 …" for each shard with windows left out.
fn left_out(
    level: usize,
    labels: &[String],
    shards: &[Vec<WindowStats>],
    groups: &[Vec<usize>],
) -> Vec<String> {
    shards
        .iter()
        .zip(labels)
        .filter_map(|(windows, label)| {
            let extra = windows.len().saturating_sub(groups.len());
            let plural = if extra == 1 { "" } else { "s" };
            (extra > 0).then(|| {
                format!(
                    "{label} had {extra} window{plural} more at level {level} than every shard measured at the same time: left out of the merged windows."
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::sample::Sample;

    /// A window of `ok` requests of 1 ms from `start_ms` for `len_ms`.
    fn window(base: Instant, start_ms: u64, len_ms: u64, ok: u64) -> WindowStats {
        let at = base + Duration::from_millis(start_ms);
        let samples: Vec<Sample> = (0..ok)
            .map(|_| Sample::once(at, at, at + Duration::from_millis(1)))
            .collect();
        let mut w = WindowStats::from_samples(&samples, Duration::from_millis(len_ms), 1);
        w.bounds = Some((at, at + Duration::from_millis(len_ms)));
        w
    }

    fn labels(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("shard {i}")).collect()
    }

    #[test]
    fn windows_side_by_side_add_up_over_one_length() {
        let t = Instant::now();
        let a = vec![window(t, 0, 500, 100), window(t, 500, 500, 110)];
        let b = vec![window(t, 20, 500, 50), window(t, 520, 500, 60)];
        let aligned = align(1, &labels(2), &[a.clone(), b.clone()], false);
        assert!(aligned.notes.is_empty(), "{:?}", aligned.notes);
        assert_eq!(aligned.windows.len(), 2);
        let first = &aligned.windows[0];
        assert_eq!(first.ok, 150);
        assert_eq!(first.windows, 1);
        assert_eq!(first.duration, Duration::from_millis(500));
        assert!((first.throughput() - (a[0].throughput() + b[0].throughput())).abs() < 1e-9);
        assert_eq!(first.latency.count(), 150);
    }

    #[test]
    fn a_window_without_a_partner_everywhere_is_left_out() {
        let t = Instant::now();
        let a = vec![window(t, 0, 500, 1), window(t, 500, 500, 1)];
        let b = vec![
            window(t, 0, 500, 1),
            window(t, 500, 500, 1),
            window(t, 1000, 500, 1),
        ];
        // Shard 2 started too late for the first window.
        let c = vec![window(t, 400, 500, 1), window(t, 900, 500, 1)];
        let aligned = align(3, &labels(3), &[a, b, c], false);
        assert_eq!(aligned.windows.len(), 1);
        assert_eq!(aligned.windows[0].ok, 3);
        assert_eq!(aligned.notes.len(), 3, "{:?}", aligned.notes);
        assert!(aligned.notes[1].starts_with("shard 1 had 2 windows more at level 3"));
    }

    #[test]
    fn single_windows_span_from_the_first_start_to_the_last_end() {
        let t = Instant::now();
        let a = vec![window(t, 0, 300, 10)];
        let b = vec![window(t, 100, 400, 10)];
        let aligned = align(1, &labels(2), &[a, b], true);
        assert_eq!(aligned.windows[0].duration, Duration::from_millis(500));
        assert_eq!(aligned.windows[0].ok, 20);
    }
}
