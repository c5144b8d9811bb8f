//! The run-to-run variation of a figure, where both runs compared were repeated
//! (`--num-profile-runs`; the comparison gathers each run's value of the figure at the
//! level): Welch's t-test on the two means — the change's confidence interval at the baseline's
//! `--confidence-level`, from the two runs' own spreads and counts (Welch–Satterthwaite
//! degrees of freedom). A change is beyond the variation when its interval excludes zero.

use crate::measure::confidence::t_quantile_df;

/// Two sets of repeated runs of a figure at a level, side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct RunToRun {
    pub runs_a: usize,
    pub runs_b: usize,
    pub mean_a: f64,
    pub mean_b: f64,
    /// Half the change's interval, percent of A's mean.
    pub half_width: f64,
    /// The interval's confidence level.
    pub level: f64,
}

/// Welch's test of B's mean against A's, at confidence `level`; `None` when A's mean is
/// not positive.
pub fn welch(a: &[f64], b: &[f64], level: f64) -> Option<RunToRun> {
    let (mean_a, var_a) = mean_var(a);
    let (mean_b, var_b) = mean_var(b);
    if mean_a <= 0.0 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (sa, sb) = (var_a / na, var_b / nb);
    let se = (sa + sb).sqrt();
    let half_width = match se > 0.0 {
        true => {
            let df = (sa + sb).powi(2) / (sa.powi(2) / (na - 1.0) + sb.powi(2) / (nb - 1.0));
            t_quantile_df(df, level)? * se
        }
        false => 0.0,
    };
    Some(RunToRun {
        runs_a: a.len(),
        runs_b: b.len(),
        mean_a,
        mean_b,
        half_width: half_width / mean_a * 100.0,
        level,
    })
}

/// The mean and sample variance (n − 1) of at least two values.
fn mean_var(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

impl RunToRun {
    /// The change of B's mean against A's, percent.
    pub fn change(&self) -> f64 {
        (self.mean_b - self.mean_a) / self.mean_a * 100.0
    }

    /// How the verdict sentence names the test.
    pub fn named(&self) -> String {
        format!(
            "Welch's t-test over {} and {} runs: ±{}% at {}%",
            self.runs_a,
            self.runs_b,
            inferperf_wire::number::fixed(self.half_width, 1),
            inferperf_wire::number::readable(self.level * 100.0)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_of_the_change_is_welchs() {
        // A: 100, 102, 98 (var 4); B: 90, 91, 89 (var 1). se = √(4/3 + 1/3) = 1.291;
        // df = (5/3)² / ((4/3)²/2 + (1/3)²/2) = 2.941; t(0.975, 2.941) ≈ 3.2.
        let r = welch(&[100.0, 102.0, 98.0], &[90.0, 91.0, 89.0], 0.95).unwrap();
        assert_eq!(
            (r.runs_a, r.runs_b, r.mean_a, r.mean_b),
            (3, 3, 100.0, 90.0)
        );
        assert!((r.change() + 10.0).abs() < 1e-12);
        let t = t_quantile_df(2.941_176_470_588_235, 0.95).unwrap();
        assert!(
            (r.half_width - t * (5.0f64 / 3.0).sqrt()).abs() < 1e-9,
            "{r:?}"
        );
        assert!(r.half_width > 3.0 && r.half_width < 5.0, "{r:?}");
        // No spread on either side: any change is beyond it.
        let flat = welch(&[10.0, 10.0], &[10.5, 10.5], 0.95).unwrap();
        assert_eq!(flat.half_width, 0.0);
    }
}
