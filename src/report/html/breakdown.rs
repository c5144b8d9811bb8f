//! Where the time went per level, as stacked bars of average ms per request: client send,
//! network + server overhead, queue, compute input / infer / output, client receive when the
//! server's statistics are known; else client send, wait, client receive. A streamed
//! generation is split as it went: client send, time to first token (network, queue,
//! prefill) and generation (the server's decode), not "client receive".

use super::svg::{Chart, XAxis, COLORS};
use super::{load_name, load_x, ms};
use crate::results::{LevelRecord, ResultsFile};

/// The parts of a level's average latency, ms, named.
pub fn parts(level: &LevelRecord) -> Vec<(&'static str, f64)> {
    let m = &level.merged;
    let n = m.completed.max(1) as f64;
    let send = ms(m.client.send_ns_sum as f64 / n);
    let recv = ms(m.client.receive_ns_sum as f64 / n);
    let avg = ms(m.latency.mean);
    if m.tokens.is_some() && m.inter_response.count > 0 {
        let late = (avg - ms(m.service.mean)).max(0.0);
        let first = ms(m.first_response.mean);
        return vec![
            ("client queue (late sends)", late),
            ("client send", send),
            ("time to first token", (first - late - send).max(0.0)),
            ("generation (decode)", (avg - first).max(0.0)),
        ];
    }
    match &m.server {
        Some(server) => {
            let b = &server.breakdown_us;
            let us = |v: f64| v / 1e3;
            let inside = us(b.queue + b.compute_input + b.compute_infer + b.compute_output);
            vec![
                ("client send", send),
                ("network + server", (avg - send - recv - inside).max(0.0)),
                ("queue", us(b.queue)),
                ("compute input", us(b.compute_input)),
                ("compute infer", us(b.compute_infer)),
                ("compute output", us(b.compute_output)),
                ("client receive", recv),
            ]
        }
        None => vec![
            ("client send", send),
            ("wait (network + server)", (avg - send - recv).max(0.0)),
            ("client receive", recv),
        ],
    }
}

/// The stacked bars of every level, one bar per level at its load.
pub fn breakdown(file: &ResultsFile) -> String {
    type Bar = (f64, String, Vec<(&'static str, f64)>);
    let all: Vec<Bar> = file
        .levels
        .iter()
        .map(|l| (load_x(l), load_name(l), parts(l)))
        .collect();
    let y_max = all
        .iter()
        .map(|(_, _, p)| p.iter().map(|x| x.1).sum::<f64>())
        .fold(0.0, f64::max);
    let n = all.len().max(1) as f64;
    let mut c = Chart::new(
        "Average latency by part",
        "level",
        "ms per request",
        XAxis::Linear,
        (0.5, n + 0.5),
        y_max,
    );
    c.whole_x();
    for (i, (_, name, parts)) in all.iter().enumerate() {
        let mut base = 0.0;
        for (k, (part, v)) in parts.iter().enumerate() {
            if *v > 0.0 {
                let tip = format!("{name}: {part} {} ms", inferperf_wire::number::fixed(*v, 3));
                c.bar(
                    i as f64 + 1.0,
                    0.7,
                    base,
                    base + v,
                    COLORS[k % COLORS.len()],
                    &tip,
                );
            }
            base += v;
        }
    }
    if let Some((_, _, parts)) = all.first() {
        for (k, (part, _)) in parts.iter().enumerate() {
            c.legend(part, COLORS[k % COLORS.len()]);
        }
    }
    let mut out = c.finish();
    out.push_str("<p>Levels numbered in the order of the table above.</p>");
    out
}
