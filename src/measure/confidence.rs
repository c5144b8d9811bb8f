//! A figure measured once per repeated run, summed up as AIPerf's aggregate gives it: the
//! mean of the runs, their sample standard deviation, the coefficient of variation, the
//! standard error and a Student t confidence interval of the mean.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A figure over the runs that measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// How many runs measured the figure.
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator); 0 for one run.
    pub std: f64,
    pub min: f64,
    pub max: f64,
    /// std / mean; `None` when the mean is 0.
    pub cv: Option<f64>,
    /// std / √n.
    pub se: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// The t quantile of the interval; `None` for one run (no interval: it is the mean).
    pub t_critical: Option<f64>,
}

/// The interval of `values` (non-finite ones left out) at confidence `level` (0 < level <
/// 1); `None` when no value is finite.
pub fn over(values: &[f64], level: f64) -> Option<Interval> {
    let values: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let std = match n {
        1 => 0.0,
        _ => (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt(),
    };
    let se = std / (n as f64).sqrt();
    let t_critical = t_quantile(n, level);
    let margin = t_critical.map_or(0.0, |t| t * se);
    Some(Interval {
        n,
        mean,
        std,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        cv: (mean != 0.0).then(|| std / mean),
        se,
        ci_low: mean - margin,
        ci_high: mean + margin,
        t_critical,
    })
}

/// The two-sided Student t quantile for `n` values at confidence `level`: the t of
/// 1 − (1 − level)/2 with n − 1 degrees of freedom; `None` below two values.
pub fn t_quantile(n: usize, level: f64) -> Option<f64> {
    if n < 2 {
        return None;
    }
    t_quantile_df((n - 1) as f64, level)
}

/// The two-sided Student t quantile at confidence `level` with `df` degrees of freedom
/// (fractional for Welch's test); `None` when `df` is not positive.
pub fn t_quantile_df(df: f64, level: f64) -> Option<f64> {
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(t.inverse_cdf(1.0 - (1.0 - level) / 2.0))
}

impl Interval {
    /// Half the interval's width as a share of the mean (`None` when the mean is 0).
    pub fn relative_half_width(&self) -> Option<f64> {
        (self.mean != 0.0).then(|| (self.ci_high - self.ci_low) / 2.0 / self.mean.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_the_mean_plus_and_minus_t_standard_errors() {
        // 10, 12, 14: mean 12, std 2, se 2/√3, t(0.975, 2) = 4.3027.
        let i = over(&[10.0, 12.0, 14.0], 0.95).unwrap();
        assert_eq!(
            (i.n, i.mean, i.std, i.min, i.max),
            (3, 12.0, 2.0, 10.0, 14.0)
        );
        let t = i.t_critical.unwrap();
        assert!((t - 4.302_652_7).abs() < 1e-6, "{t}");
        let margin = t * 2.0 / 3f64.sqrt();
        assert!((i.ci_low - (12.0 - margin)).abs() < 1e-9);
        assert!((i.ci_high - (12.0 + margin)).abs() < 1e-9);
        assert!((i.cv.unwrap() - 2.0 / 12.0).abs() < 1e-12);
        // A higher level is a wider interval.
        let wider = over(&[10.0, 12.0, 14.0], 0.99).unwrap();
        assert!(wider.ci_high > i.ci_high && wider.ci_low < i.ci_low);
    }

    #[test]
    fn one_run_has_no_interval_and_non_finite_values_are_left_out() {
        let i = over(&[5.0, f64::NAN], 0.95).unwrap();
        assert_eq!(
            (i.n, i.std, i.ci_low, i.ci_high, i.t_critical),
            (1, 0.0, 5.0, 5.0, None)
        );
        assert_eq!(over(&[f64::INFINITY], 0.95), None);
        assert_eq!(over(&[0.0, 0.0], 0.95).unwrap().cv, None);
    }
}
