//! A small SVG chart builder: a plot area with a linear or log x axis, a linear y axis,
//! ticks, a legend, and marks (polylines, circles, rects) each carrying a `<title>` so that
//! hovering shows the numbers without any script. Every text is escaped. Series are drawn
//! in a [`Line`] style — a colour, solid or dashed — so that one chart can overlay several
//! runs (a colour each) and several figures (a dash each) with a legend of both.

use std::fmt::Write;

/// Width and height of every chart, px, and the margins around the plot area.
pub const W: f64 = 640.0;
pub const H: f64 = 300.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 44.0;

/// Series colours, in order.
pub const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Escapes text for SVG and HTML content and attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A number short enough for a tick or a tooltip.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_string();
    }
    let a = v.abs();
    if a == 0.0 {
        "0".to_string()
    } else if v.fract() == 0.0 && a < 1e4 {
        format!("{v:.0}")
    } else if !(1e-3..1e12).contains(&a) {
        inferperf_wire::number::readable(v)
    } else if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A tick label: `num` without trailing zeros (0.5, 1.5, 2, 15k rather than 0.500, 1.50,
/// 2, 15.0k).
fn tick(v: f64) -> String {
    let s = num(v);
    let digits = s.trim_end_matches(|c: char| !c.is_ascii_digit());
    if digits.contains('.') {
        let suffix = &s[digits.len()..];
        format!(
            "{}{suffix}",
            digits.trim_end_matches('0').trim_end_matches('.')
        )
    } else {
        s
    }
}

/// Points of a series: x, y and the tooltip.
pub type Points = Vec<(f64, f64, String)>;

/// How a series is drawn: its colour, a dashed line with hollow marks or a solid one with
/// filled marks, and whether it gets a legend entry of its own (an overlay lists its
/// colours and its dashes once each instead).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line<'a> {
    pub color: &'a str,
    pub dashed: bool,
    pub listed: bool,
}

impl<'a> Line<'a> {
    /// A solid line with its own legend entry.
    pub fn solid(color: &'a str) -> Line<'a> {
        Line {
            color,
            dashed: false,
            listed: true,
        }
    }
}

/// A named series in its style, drawn with [`Chart::draw`].
pub struct Series<'a> {
    pub name: String,
    pub style: Line<'a>,
    pub points: Points,
}

/// The smallest and largest x and the largest y of the series' finite points; None when
/// there is no point.
pub fn extent(series: &[Series<'_>]) -> Option<(f64, f64, f64)> {
    series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|(x, y, _)| x.is_finite() && y.is_finite())
        .fold(None, |acc, &(x, y, _)| match acc {
            None => Some((x, x, y)),
            Some((x0, x1, y1)) => Some((x0.min(x), x1.max(x), y1.max(y))),
        })
}

/// A legend entry: a name, a colour, and a line swatch (dashed or not) or a filled box.
struct Key {
    name: String,
    color: String,
    swatch: Option<bool>,
}

/// How x maps to the plot: linear, or HdrHistogram's percentile axis (1/(1−p)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum XAxis {
    Linear,
    /// x is a percentile in (0, 100); drawn at log10(1/(1 − p/100)).
    Percentile,
}

/// A chart being drawn.
pub struct Chart {
    title: String,
    x_label: String,
    y_label: String,
    x: XAxis,
    x_range: (f64, f64),
    y_range: (f64, f64),
    body: String,
    legend: Vec<Key>,
    marks: usize,
    /// x is a count (concurrency): no tick between two whole numbers.
    whole_x: bool,
}

fn nice_step(span: f64, ticks: f64) -> f64 {
    let raw = (span / ticks).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// A line chart of the series from their points' extent, x labelled `x_label` (a load,
/// a time, a rate), ticked at whole numbers when every x is one.
pub fn load_chart(title: &str, x_label: &str, y: &str, series: &[Series<'_>]) -> Chart {
    let (x0, x1, y_max) = extent(series).unwrap_or((0.0, 1.0, 0.0));
    let mut c = Chart::new(title, x_label, y, XAxis::Linear, (x0, x1), y_max);
    if series
        .iter()
        .flat_map(|s| &s.points)
        .all(|p| p.0.fract() == 0.0)
    {
        c.whole_x();
    }
    c.draw(series);
    c
}

/// Named point lists as series drawn in solid lines, one colour each in order.
pub fn colored(series: Vec<(String, Points)>) -> Vec<Series<'static>> {
    (series.into_iter().enumerate())
        .map(|(k, (name, points))| Series {
            name,
            style: Line::solid(COLORS[k % COLORS.len()]),
            points,
        })
        .collect()
}

/// The percentile axis position of `p` (percent).
pub fn percentile_pos(p: f64) -> f64 {
    let q = (1.0 - p / 100.0).max(1e-7);
    (1.0 / q).log10()
}

impl Chart {
    /// A chart over x in `x_range` and y from 0 to `y_max` (both widened to be drawable).
    pub fn new(
        title: &str,
        x_label: &str,
        y_label: &str,
        x: XAxis,
        x_range: (f64, f64),
        y_max: f64,
    ) -> Chart {
        let (mut x0, mut x1) = match x {
            XAxis::Linear => x_range,
            XAxis::Percentile => (percentile_pos(x_range.0), percentile_pos(x_range.1)),
        };
        if x1.partial_cmp(&x0) != Some(std::cmp::Ordering::Greater) {
            x0 -= 0.5;
            x1 = x0 + 1.0;
        }
        let y1 = if y_max.is_finite() && y_max > 0.0 {
            y_max * 1.08
        } else {
            1.0
        };
        Chart {
            title: title.to_string(),
            x_label: x_label.to_string(),
            y_label: y_label.to_string(),
            x,
            x_range: (x0, x1),
            y_range: (0.0, y1),
            body: String::new(),
            legend: Vec::new(),
            marks: 0,
            whole_x: false,
        }
    }

    /// Screen x of a data x.
    pub fn sx(&self, x: f64) -> f64 {
        let x = match self.x {
            XAxis::Linear => x,
            XAxis::Percentile => percentile_pos(x),
        };
        LEFT + (x - self.x_range.0) / (self.x_range.1 - self.x_range.0) * (W - LEFT - RIGHT)
    }

    /// Screen y of a data y.
    pub fn sy(&self, y: f64) -> f64 {
        H - BOTTOM - (y - self.y_range.0) / (self.y_range.1 - self.y_range.0) * (H - TOP - BOTTOM)
    }

    /// The marks drawn so far.
    #[cfg(test)]
    pub fn marks(&self) -> usize {
        self.marks
    }

    /// Ticks x at whole numbers only (x counts something, such as the concurrency).
    pub fn whole_x(&mut self) {
        self.whole_x = true;
    }

    /// Adds a legend entry with a filled box.
    pub fn legend(&mut self, name: &str, color: &str) {
        self.legend.push(Key {
            name: name.to_string(),
            color: color.to_string(),
            swatch: None,
        });
    }

    /// Adds a legend entry with a line swatch, dashed or solid.
    pub fn legend_line(&mut self, name: &str, color: &str, dashed: bool) {
        self.legend.push(Key {
            name: name.to_string(),
            color: color.to_string(),
            swatch: Some(dashed),
        });
    }

    /// A solid line through the points, each point a circle with its tooltip, listed in the
    /// legend.
    pub fn series(&mut self, name: &str, color: &str, points: &[(f64, f64, String)]) {
        self.line(name, Line::solid(color), points);
    }

    /// Every series, in order.
    pub fn draw(&mut self, series: &[Series<'_>]) {
        for s in series {
            self.line(&s.name, s.style, &s.points);
        }
    }

    /// A line through the points in `style`, each point a mark with its tooltip.
    pub fn line(&mut self, name: &str, style: Line<'_>, points: &[(f64, f64, String)]) {
        for (x, y, tip) in self.path(name, style, points) {
            self.dot(x, y, style, &tip);
        }
    }

    /// The line alone (and its legend entry), without a mark per point: for a chart that
    /// draws its points itself, after the line so that they lie on top. Returns the drawable
    /// points in screen coordinates.
    pub fn path(
        &mut self,
        name: &str,
        style: Line<'_>,
        points: &[(f64, f64, String)],
    ) -> Vec<(f64, f64, String)> {
        let pts: Vec<(f64, f64, String)> = points
            .iter()
            .filter(|(x, y, _)| x.is_finite() && y.is_finite())
            .map(|(x, y, t)| (self.sx(*x), self.sy(*y), t.clone()))
            .collect();
        if pts.is_empty() {
            return pts;
        }
        let mut line = String::new();
        for (x, y, _) in &pts {
            let _ = write!(line, "{x:.1},{y:.1} ");
        }
        let color = style.color;
        let _ = write!(
            self.body,
            r#"<polyline class="mark" fill="none" stroke="{color}" stroke-width="1.8"{} points="{}"><title>{}</title></polyline>"#,
            if style.dashed {
                r#" stroke-dasharray="6 3""#
            } else {
                ""
            },
            line.trim_end(),
            esc(name)
        );
        self.marks += 1;
        if style.listed {
            self.legend_line(name, color, style.dashed);
        }
        pts
    }

    fn dot(&mut self, x: f64, y: f64, style: Line<'_>, tip: &str) {
        let (color, fill) = match style.dashed {
            false => (style.color, style.color),
            true => (style.color, "white"),
        };
        let _ = write!(
            self.body,
            r#"<circle class="mark" cx="{x:.1}" cy="{y:.1}" r="3" fill="{fill}" stroke="{color}" stroke-width="1.2"><title>{}</title></circle>"#,
            esc(tip)
        );
        self.marks += 1;
    }

    /// A point with a tooltip (data coordinates), drawn hollow when `hollow`.
    pub fn point(&mut self, x: f64, y: f64, color: &str, hollow: bool, tip: &str) {
        if !(x.is_finite() && y.is_finite()) {
            return;
        }
        let (sx, sy) = (self.sx(x), self.sy(y));
        let fill = if hollow { "white" } else { color };
        let _ = write!(
            self.body,
            r#"<circle class="mark" cx="{sx:.1}" cy="{sy:.1}" r="3.5" fill="{fill}" stroke="{color}" stroke-width="1.5"><title>{}</title></circle>"#,
            esc(tip)
        );
        self.marks += 1;
    }

    /// A bar from y0 to y1 centred on x, `width` in data units.
    pub fn bar(&mut self, x: f64, width: f64, y0: f64, y1: f64, color: &str, tip: &str) {
        let (a, b) = (self.sx(x - width / 2.0), self.sx(x + width / 2.0));
        let (top, bottom) = (self.sy(y1), self.sy(y0));
        let _ = write!(
            self.body,
            r#"<rect class="mark" x="{a:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{}</title></rect>"#,
            (b - a).max(1.0),
            (bottom - top).max(0.0),
            esc(tip)
        );
        self.marks += 1;
    }

    /// A vertical marker line at x with a label.
    pub fn vline(&mut self, x: f64, color: &str, label: &str) {
        let sx = self.sx(x);
        let _ = write!(
            self.body,
            r#"<line class="mark" x1="{sx:.1}" x2="{sx:.1}" y1="{TOP}" y2="{:.1}" stroke="{color}" stroke-dasharray="4 3"><title>{l}</title></line><text x="{:.1}" y="{:.1}" fill="{color}" font-size="11">{l}</text>"#,
            H - BOTTOM,
            sx + 3.0,
            TOP + 12.0,
            l = esc(label)
        );
        self.marks += 1;
    }

    fn x_ticks(&self) -> Vec<(f64, String)> {
        match self.x {
            XAxis::Linear => {
                let mut step = nice_step(self.x_range.1 - self.x_range.0, 6.0);
                if self.whole_x {
                    step = step.max(1.0);
                }
                let mut t = (self.x_range.0 / step).ceil() * step;
                let mut out = Vec::new();
                while t <= self.x_range.1 + step * 1e-9 {
                    out.push((t, tick(t)));
                    t += step;
                }
                out
            }
            XAxis::Percentile => [0.0, 50.0, 90.0, 99.0, 99.9, 99.99, 99.999]
                .iter()
                .map(|&p| (percentile_pos(p), format!("p{p}")))
                .filter(|(x, _)| *x <= self.x_range.1 + 1e-9)
                .collect(),
        }
    }

    /// The finished `<svg>` element.
    pub fn finish(self) -> String {
        // The legend right of the title when it fits, else in a column right of the plot
        // (the chart as much wider), never over the marks.
        let beside_title = LEFT
            + 8.0 * self.title.chars().count() as f64
            + self.legend.iter().map(Key::width).sum::<f64>()
            <= W - RIGHT;
        let column = if beside_title {
            0.0
        } else {
            10.0 + self.legend.iter().map(Key::width).fold(0.0, f64::max)
        };
        let width = W + column;
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg viewBox="0 0 {width} {H}" width="{width}" height="{H}" role="img" aria-label="{t}"><text x="{LEFT}" y="16" font-size="13" font-weight="bold">{t}</text>"#,
            t = esc(&self.title)
        );
        let (x0, x1, y0, y1) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
        for (t, label) in self.x_ticks() {
            let x = LEFT + (t - self.x_range.0) / (self.x_range.1 - self.x_range.0) * (x1 - x0);
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{y0}" y2="{y1}" stroke="#eee"/><text x="{x:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text>"##,
                y1 + 14.0,
                esc(&label)
            );
        }
        let step = nice_step(self.y_range.1 - self.y_range.0, 5.0);
        let mut t = 0.0;
        while t <= self.y_range.1 {
            let y = self.sy(t);
            let _ = write!(
                s,
                r##"<line x1="{x0}" x2="{x1}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"##,
                x0 - 4.0,
                y + 3.0,
                tick(t)
            );
            t += step;
        }
        let _ = write!(
            s,
            r##"<rect x="{x0}" y="{y0}" width="{:.1}" height="{:.1}" fill="none" stroke="#999"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text><text transform="translate(14 {:.1}) rotate(-90)" font-size="11" text-anchor="middle">{}</text>"##,
            x1 - x0,
            y1 - y0,
            (x0 + x1) / 2.0,
            H - 8.0,
            esc(&self.x_label),
            (y0 + y1) / 2.0,
            esc(&self.y_label)
        );
        s.push_str(&self.body);
        if beside_title {
            let mut lx = x1;
            for key in self.legend.iter().rev() {
                lx -= key.width();
                key.draw(&mut s, lx, 8.0);
            }
        } else {
            for (i, key) in self.legend.iter().enumerate() {
                key.draw(&mut s, x1 + 10.0, y0 + 14.0 * i as f64);
            }
        }
        s.push_str("</svg>");
        s
    }
}

impl Key {
    /// The room the entry takes in a row, px.
    fn width(&self) -> f64 {
        let swatch = if self.swatch.is_some() { 20.0 } else { 13.0 };
        swatch + 7.0 + 6.5 * self.name.chars().count() as f64
    }

    /// Draws the entry with its swatch's top left at (x, y).
    fn draw(&self, s: &mut String, x: f64, y: f64) {
        let (color, name) = (&self.color, esc(&self.name));
        let text_x = match self.swatch {
            None => {
                let _ = write!(
                    s,
                    r#"<rect x="{x:.1}" y="{y:.1}" width="10" height="10" fill="{color}"/>"#
                );
                x + 13.0
            }
            Some(dashed) => {
                let _ = write!(
                    s,
                    r#"<line x1="{x:.1}" x2="{:.1}" y1="{m:.1}" y2="{m:.1}" stroke="{color}" stroke-width="2"{}/>"#,
                    x + 16.0,
                    if dashed {
                        r#" stroke-dasharray="6 3""#
                    } else {
                        ""
                    },
                    m = y + 5.0
                );
                x + 20.0
            }
        };
        let _ = write!(
            s,
            r#"<text x="{text_x:.1}" y="{:.1}" font-size="11">{name}</text>"#,
            y + 9.0
        );
    }
}

#[cfg(test)]
#[path = "svg_tests.rs"]
mod tests;
