//! The page's section of a repeated profile (`--num-profile-runs`): per level, each
//! headline figure's mean over the runs, its confidence interval, its run-to-run variation
//! and every run's value, from the results file's `repetitions`.

use super::esc;
use crate::report::compare::model::load_text;
use crate::report::repeats::{convergence_sentence, HEADLINE};
use crate::results::ResultsFile;

/// The section, empty for a single run.
pub fn repeats(file: &ResultsFile) -> String {
    let Some(rep) = &file.repetitions else {
        return String::new();
    };
    let measured = rep.runs.iter().filter(|r| r.measured > 0).count();
    let mut s = format!(
        "<h2>Over {measured} profile runs of {}</h2><p>Each figure's mean over the runs, its {}% confidence interval (Student t) and its run-to-run variation (cv); the tables above are the first run's.</p>",
        rep.asked,
        inferperf_wire::number::readable(rep.confidence_level * 100.0)
    );
    let labels: Vec<String> = rep
        .runs
        .iter()
        .map(|r| format!("<th>{}</th>", esc(&r.label)))
        .collect();
    for level in &rep.levels {
        s.push_str(&format!(
            "<h3>{}</h3><table><tr><th class=\"l\">figure</th><th>mean</th><th>interval</th><th>cv</th>{}</tr>",
            esc(&load_text(&level.load)),
            labels.concat()
        ));
        for (name, title) in HEADLINE {
            let Some(f) = level.figures.get(name) else {
                continue;
            };
            let i = &f.interval;
            let interval = match i.t_critical {
                Some(_) => format!("{:.2} to {:.2}", i.ci_low, i.ci_high),
                None => "one run".to_string(),
            };
            let cv =
                i.cv.map_or("n/a".to_string(), |cv| format!("{:.2}%", cv * 100.0));
            let values: Vec<String> = (f.values.iter())
                .map(|v| v.map_or("<td>n/a</td>".to_string(), |v| format!("<td>{v:.2}</td>")))
                .collect();
            s.push_str(&format!(
                "<tr><td class=\"l\">{} ({})</td><td>{:.2}</td><td>{interval}</td><td>{cv}</td>{}</tr>",
                esc(title),
                esc(&f.unit),
                i.mean,
                values.concat()
            ));
        }
        s.push_str("</table>");
    }
    if let Some(c) = &rep.convergence {
        s.push_str(&format!("<p>{}</p>", esc(&convergence_sentence(c))));
    }
    s
}
