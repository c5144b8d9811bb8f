//! Unit tests of the SVG chart builder.

use super::*;

#[test]
fn escapes_names() {
    assert_eq!(esc(r#"<a&"b'>"#), "&lt;a&amp;&quot;b&#39;&gt;");
    let mut c = Chart::new("m<x>", "x", "y", XAxis::Linear, (0.0, 1.0), 1.0);
    c.series("a&b", COLORS[0], &[(0.0, 1.0, "<p>".into())]);
    let s = c.finish();
    assert!(s.contains("m&lt;x&gt;") && s.contains("a&amp;b") && s.contains("&lt;p&gt;"));
    assert!(!s.contains("<p>"));
}

#[test]
fn counts_marks_and_draws_axes() {
    let mut c = Chart::new("t", "x", "y", XAxis::Linear, (1.0, 10.0), 5.0);
    c.series(
        "s",
        COLORS[0],
        &[(1.0, 1.0, "a".into()), (5.0, 4.0, "b".into())],
    );
    c.bar(3.0, 1.0, 0.0, 2.0, COLORS[1], "bar");
    assert_eq!(c.marks(), 4);
    let s = c.finish();
    assert_eq!(s.matches("class=\"mark\"").count(), 4);
    assert!(s.matches("<title>").count() >= 4);
    assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
}

#[test]
fn overlaid_lines_share_a_legend_of_colours_and_dashes() {
    let mut c = Chart::new("t", "x", "y", XAxis::Linear, (1.0, 4.0), 5.0);
    c.whole_x();
    let points = vec![(1.0, 1.0, "a".into()), (4.0, 4.0, "b".into())];
    let dashed = Line {
        color: COLORS[1],
        dashed: true,
        listed: false,
    };
    c.draw(&[
        Series {
            name: "run A p50".into(),
            style: Line::solid(COLORS[0]),
            points: points.clone(),
        },
        Series {
            name: "run B p99".into(),
            style: dashed,
            points,
        },
    ]);
    c.legend_line("p99", "#555", true);
    let s = c.finish();
    assert_eq!(s.matches("<polyline").count(), 2);
    // The dashed line and its legend swatch; its marks hollow.
    assert_eq!(s.matches("stroke-dasharray=\"6 3\"").count(), 2);
    assert_eq!(s.matches("fill=\"white\"").count(), 2);
    assert!(s.contains(">run A p50</text>") && s.contains(">p99</text>"));
    assert!(
        !s.contains(">run B p99</text>"),
        "an unlisted series has no entry"
    );
    assert!(!s.contains(">1.50</text>"), "whole ticks only");
}

#[test]
fn percentile_axis_spreads_the_tail() {
    let c = Chart::new("t", "p", "ms", XAxis::Percentile, (0.0, 99.9), 1.0);
    assert!(c.sx(99.0) - c.sx(90.0) > (c.sx(90.0) - c.sx(0.0)) * 0.9);
    assert!(c.sx(99.9) <= W - RIGHT + 0.01);
    assert!(c.finish().contains("p99.9"));
}

#[test]
fn whole_ticks_of_one_level() {
    let mut c = Chart::new("t", "level", "y", XAxis::Linear, (0.5, 1.5), 1.0);
    c.whole_x();
    let s = c.finish();
    assert!(s.contains(r#"text-anchor="middle">1</text>"#), "{s}");
    assert!(!s.contains(">0.6<") && !s.contains(">1.2<"), "{s}");
}

#[test]
fn tick_labels_have_no_trailing_zeros() {
    assert_eq!(tick(0.5), "0.5");
    assert_eq!(tick(1.5), "1.5");
    assert_eq!(tick(0.25), "0.25");
    assert_eq!(tick(2.0), "2");
    assert_eq!(tick(100.0), "100");
    assert_eq!(tick(15000.0), "15k");
    assert_eq!(tick(12500.0), "12.5k");
    assert_eq!(tick(2_500_000.0), "2.5M");
    assert_eq!(tick(-0.5), "-0.5");
    assert_eq!(tick(1e300), "1e300");
    assert_eq!(num(2.5e-7), "2.5e-7");
}

#[test]
fn a_long_legend_goes_right_of_the_plot() {
    let parts = [
        "client send",
        "network + server",
        "queue",
        "compute infer",
        "client receive",
    ];
    let mut c = Chart::new(
        "Average latency by part",
        "x",
        "y",
        XAxis::Linear,
        (0.5, 1.5),
        1.0,
    );
    for (k, p) in parts.iter().enumerate() {
        c.bar(1.0, 0.7, 0.0, 1.0, COLORS[k], p);
        c.legend(p, COLORS[k]);
    }
    let s = c.finish();
    // Wider than a plain chart by the longest entry, every entry right of the plot.
    let width = W + 10.0 + 13.0 + 7.0 + 6.5 * 16.0;
    assert!(
        s.starts_with(&format!(r#"<svg viewBox="0 0 {width} {H}""#)),
        "{s:.80}"
    );
    for p in parts {
        let at = s.find(&format!(">{p}</text>")).unwrap();
        let x: f64 = s[..at]
            .rsplit("<text x=\"")
            .next()
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(x > W - RIGHT, "{p} at x {x}");
    }
    // A short one stays beside the title, the chart its usual width.
    let mut c = Chart::new("t", "x", "y", XAxis::Linear, (0.0, 1.0), 1.0);
    c.series("p50", COLORS[0], &[(0.5, 0.5, "a".into())]);
    assert!(c
        .finish()
        .starts_with(&format!(r#"<svg viewBox="0 0 {W} {H}""#)));
}
