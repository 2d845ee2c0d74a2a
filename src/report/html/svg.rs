//! Chart primitives: one `Chart` (axes, gridlines, stage bands, line,
//! point and bar series) drawn as an inline `<svg>` string, so the page
//! reads without JavaScript. Colours come from CSS classes (`s0`…`s7`) so
//! one drawing serves light, dark and print. The trade-off is in long
//! lines: a series with more points than the plot has pixel columns keeps
//! only each column's first, lowest, highest and last point, which keeps
//! spikes and the file small but drops what a pixel could not show anyway.

use std::fmt::Write;

use super::axis::{Axis, Domain, Unit, tick};
use super::esc;

/// The drawing's default width in SVG units; the page scales it to its
/// column, so a narrower drawing has relatively larger text.
const WIDTH: f64 = 720.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 34.0;

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mark {
    Line,
    /// A line with a dot (and a native tooltip) at every point.
    LinePoints,
}

/// One named series; a NaN y is a gap in the line.
#[derive(Clone, Debug)]
pub(super) struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub mark: Mark,
    pub dashed: bool,
    /// Colour index (`s0`…`s7`).
    pub color: usize,
    /// Per-point labels for dots (e.g. the stage of each point).
    pub labels: Vec<String>,
    /// Read against the right-hand axis (`Chart::y2`).
    pub right: bool,
    /// What the legend says, when not the name.
    pub legend: Option<String>,
}

impl Series {
    pub(super) fn line(name: &str, color: usize, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.to_string(),
            points,
            mark: Mark::Line,
            dashed: false,
            color,
            labels: Vec::new(),
            right: false,
            legend: None,
        }
    }

    pub(super) fn dashed(mut self) -> Series {
        self.dashed = true;
        self
    }

    pub(super) fn right(mut self) -> Series {
        self.right = true;
        self
    }
}

/// A shaded (or only labelled) range of x, e.g. a stage.
#[derive(Clone, Debug)]
pub(super) struct Band {
    pub x0: f64,
    pub x1: f64,
    pub label: String,
    pub shade: bool,
}

/// One chart. `kind` is its `data-plot`.
#[derive(Clone, Debug)]
pub(super) struct Chart {
    pub kind: String,
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    /// A second value axis on the right, for series of another magnitude.
    pub y2: Option<Axis>,
    pub series: Vec<Series>,
    /// Histogram bars `[low, high, count]`, drawn as the series `bars`.
    pub bars: Vec<[f64; 3]>,
    pub bands: Vec<Band>,
    /// Plot height and drawing width in SVG units (small charts for
    /// server metrics).
    pub height: f64,
    pub width: f64,
}

impl Chart {
    pub(super) fn new(kind: &str, title: &str, x: Axis, y: Axis) -> Chart {
        Chart {
            kind: kind.to_string(),
            title: title.to_string(),
            x,
            y,
            y2: None,
            series: Vec::new(),
            bars: Vec::new(),
            bands: Vec::new(),
            height: 240.0,
            width: WIDTH,
        }
    }

    /// The names of what the legend lists.
    fn legend(&self) -> Vec<(String, String, usize, bool, bool)> {
        let mut out: Vec<(String, String, usize, bool, bool)> = Vec::new();
        for s in &self.series {
            if !out.iter().any(|l| l.0 == s.name) {
                let shown = s.legend.clone().unwrap_or_else(|| s.name.clone());
                out.push((s.name.clone(), shown, s.color, s.dashed, s.right));
            }
        }
        if !self.bars.is_empty() {
            out.push(("count".into(), "count".into(), 0, false, false));
        }
        out
    }

    /// The chart as a `<figure>`: caption, SVG, and an HTML legend whose
    /// items toggle their series when JavaScript runs.
    pub(super) fn render(&self) -> String {
        let mut o = String::new();
        let _ = write!(
            o,
            "<figure class=\"chart\"><figcaption>{}</figcaption>",
            esc(&self.title)
        );
        self.svg(&mut o);
        let legend = self.legend();
        if legend.len() > 1 || (legend.len() == 1 && self.bars.is_empty()) {
            o.push_str("<ul class=\"legend\">");
            for (name, shown, color, dashed, right) in legend {
                let _ = write!(
                    o,
                    "<li data-toggle=\"{}\"><span class=\"sw s{}{}\"></span>{}{}</li>",
                    esc(&name),
                    color % 8,
                    if dashed { " dash" } else { "" },
                    esc(&shown),
                    if right { " (right axis)" } else { "" }
                );
            }
            o.push_str("</ul>");
        }
        o.push_str("</figure>\n");
        o
    }

    fn svg(&self, o: &mut String) {
        let h = self.height + TOP + BOTTOM;
        let xs = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(self.bars.iter().flat_map(|b| [b[0], b[1]]));
        let ys = |right: bool| {
            self.series
                .iter()
                .filter(move |s| s.right == right)
                .flat_map(|s| s.points.iter().map(|p| p.1))
        };
        let xd = Domain::of(&self.x, xs);
        let yd = Domain::of(&self.y, ys(false).chain(self.bars.iter().map(|b| b[2])));
        let y2 = self.y2.as_ref().map(|a| (a, Domain::of(a, ys(true))));
        let right = if y2.is_some() { 58.0 } else { RIGHT };
        let px = Px {
            x0: LEFT,
            x1: self.width - right,
            y0: TOP + self.height,
            y1: TOP,
        };
        let _ = write!(
            o,
            "<svg class=\"plot\" data-plot=\"{}\" viewBox=\"0 0 {} {h}\" role=\"img\" \
             data-x=\"{} {} {}\" data-y=\"{} {} {}\"{} data-box=\"{} {} {} {}\">\
             <title>{}</title>",
            esc(&self.kind),
            self.width,
            xd.lo,
            xd.hi,
            xd.code(self.x.unit),
            yd.lo,
            yd.hi,
            yd.code(self.y.unit),
            match &y2 {
                Some((a, d)) => format!(" data-y2=\"{} {} {}\"", d.lo, d.hi, d.code(a.unit)),
                None => String::new(),
            },
            px.x0,
            px.y1,
            px.x1,
            px.y0,
            esc(&self.title)
        );
        // Stage bands under everything else.
        for b in &self.bands {
            let (a, z) = (px.x(&xd, b.x0.max(xd.lo)), px.x(&xd, b.x1.min(xd.hi)));
            if z <= a {
                continue;
            }
            // A label wider than its band would run into the next one's.
            let label = if b.shade && (z - a) < 6.5 * b.label.chars().count() as f64 {
                ""
            } else {
                b.label.as_str()
            };
            if b.shade {
                let _ = write!(
                    o,
                    "<rect class=\"band\" x=\"{a:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>",
                    px.y1,
                    z - a,
                    px.y0 - px.y1
                );
            } else {
                let _ = write!(
                    o,
                    "<line class=\"edge\" x1=\"{a:.1}\" x2=\"{a:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>",
                    px.y1, px.y0
                );
            }
            let _ = write!(
                o,
                "<text class=\"bandlabel\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                a + 3.0,
                px.y1 + 12.0,
                esc(label)
            );
        }
        self.axes(o, &xd, &yd, &px);
        if let Some((a, d)) = &y2 {
            right_axis(o, a, d, &px);
        }
        if !self.bars.is_empty() {
            o.push_str("<g class=\"series bars\" data-series=\"count\"><title>count</title>");
            for b in &self.bars {
                let (a, z) = (px.x(&xd, b[0]), px.x(&xd, b[1]));
                let top = px.y(&yd, b[2]);
                let _ = write!(
                    o,
                    "<rect class=\"b0\" x=\"{a:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\">\
                     <title>{}–{}: {}</title></rect>",
                    (z - a - 0.5).max(0.5),
                    (px.y0 - top).max(0.0),
                    tick(b[0], Unit::Count, 0.0),
                    tick(b[1], Unit::Count, 0.0),
                    b[2]
                );
            }
            o.push_str("</g>");
        }
        for s in &self.series {
            let d = match &y2 {
                Some((_, d)) if s.right => d,
                _ => &yd,
            };
            self.series_svg(o, s, &xd, d, &px);
        }
        if self.series.is_empty() && self.bars.is_empty() {
            let _ = write!(
                o,
                "<text class=\"nodata\" x=\"{:.1}\" y=\"{:.1}\">no data</text>",
                (px.x0 + px.x1) / 2.0,
                (px.y0 + px.y1) / 2.0
            );
        }
        o.push_str("</svg>");
    }

    fn series_svg(&self, o: &mut String, s: &Series, xd: &Domain, yd: &Domain, px: &Px) {
        let _ = write!(
            o,
            "<g class=\"series\" data-series=\"{}\"{}><title>{}</title>",
            esc(&s.name),
            if s.right { " data-axis=\"2\"" } else { "" },
            esc(&s.name)
        );
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|&(x, y)| {
                let yv = if y.is_finite() && yd.fits(y) {
                    px.y(yd, y)
                } else {
                    f64::NAN
                };
                let xv = if x.is_finite() && xd.fits(x) {
                    px.x(xd, x)
                } else {
                    f64::NAN
                };
                (xv, if xv.is_nan() { f64::NAN } else { yv })
            })
            .collect();
        let thin = thin(&pts);
        let mut d = String::new();
        let mut pen_up = true;
        for (x, y) in &thin {
            if y.is_nan() {
                pen_up = true;
                continue;
            }
            let _ = write!(d, "{}{x:.1},{y:.1}", if pen_up { 'M' } else { 'L' });
            pen_up = false;
        }
        if !d.is_empty() {
            let _ = write!(
                o,
                "<path class=\"line s{}{}\" d=\"{d}\"/>",
                s.color % 8,
                if s.dashed { " dash" } else { "" }
            );
        }
        if s.mark == Mark::LinePoints {
            for (i, ((x, y), raw)) in pts.iter().zip(&s.points).enumerate() {
                if x.is_nan() || y.is_nan() {
                    continue;
                }
                let label = s.labels.get(i).map(String::as_str).unwrap_or("");
                let _ = write!(
                    o,
                    "<circle class=\"dot s{}\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\"><title>{}{}{}: {}, {}</title></circle>",
                    s.color % 8,
                    esc(label),
                    if label.is_empty() { "" } else { " — " },
                    esc(&s.name),
                    tick(raw.0, self.x.unit, 0.0),
                    tick(raw.1, self.y.unit, 0.0),
                );
            }
        }
        o.push_str("</g>");
    }

    fn axes(&self, o: &mut String, xd: &Domain, yd: &Domain, px: &Px) {
        o.push_str("<g class=\"axes\">");
        for (v, minor) in yd.ticks(self.y.unit) {
            let y = px.y(yd, v);
            let _ = write!(
                o,
                "<line class=\"grid{}\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>",
                if minor { " minor" } else { "" },
                px.x0,
                px.x1
            );
            if !minor {
                let _ = write!(
                    o,
                    "<text class=\"tick y\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                    px.x0 - 5.0,
                    y + 4.0,
                    tick(v, self.y.unit, if yd.log { 0.0 } else { yd.hi })
                );
            }
        }
        for (v, minor) in xd.ticks(self.x.unit) {
            let x = px.x(xd, v);
            let _ = write!(
                o,
                "<line class=\"grid{}\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>",
                if minor { " minor" } else { "" },
                px.y1,
                px.y0
            );
            if !minor {
                // The last label would stick out of the drawing.
                let end = if x > px.x1 - 16.0 { " end" } else { "" };
                let span = if xd.log { 0.0 } else { xd.hi - xd.lo };
                let _ = write!(
                    o,
                    "<text class=\"tick x{end}\" x=\"{x:.1}\" y=\"{:.1}\">{}</text>",
                    px.y0 + 14.0,
                    tick(v, self.x.unit, span)
                );
            }
        }
        let _ = write!(
            o,
            "<rect class=\"frame\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>\
             <text class=\"label x\" x=\"{:.1}\" y=\"{:.1}\">{}</text>\
             <text class=\"label y\" x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
            px.x0,
            px.y1,
            px.x1 - px.x0,
            px.y0 - px.y1,
            px.x1,
            px.y0 + 29.0,
            esc(&self.x.label),
            px.x0,
            px.y1 - 7.0,
            esc(&self.y.label)
        );
    }
}

/// Tick labels of the right-hand axis (its gridlines would clash with the
/// left's).
fn right_axis(o: &mut String, a: &Axis, d: &Domain, px: &Px) {
    o.push_str("<g class=\"axes\">");
    for (v, minor) in d.ticks(a.unit) {
        if !minor {
            let _ = write!(
                o,
                "<text class=\"tick y2\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                px.x1 + 5.0,
                px.y(d, v) + 4.0,
                tick(v, a.unit, d.hi)
            );
        }
    }
    let _ = write!(
        o,
        "<text class=\"label y2\" x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
        px.x1,
        px.y1 - 7.0,
        esc(&a.label)
    );
}

/// The plot rectangle in SVG units (`y0` is the bottom).
struct Px {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

impl Px {
    fn x(&self, d: &Domain, v: f64) -> f64 {
        self.x0 + d.at(v) * (self.x1 - self.x0)
    }

    fn y(&self, d: &Domain, v: f64) -> f64 {
        self.y0 - d.at(v) * (self.y0 - self.y1)
    }
}

/// Keeps, of each run of points in one pixel column, the first, the
/// lowest, the highest and the last, in order; NaN points (gaps) pass.
fn thin(pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if pts.len() <= 2 * (WIDTH as usize) {
        return pts.to_vec();
    }
    let mut out = Vec::with_capacity(4 * WIDTH as usize);
    let mut i = 0;
    while i < pts.len() {
        if pts[i].1.is_nan() {
            out.push(pts[i]);
            i += 1;
            continue;
        }
        let col = pts[i].0.floor();
        let mut j = i;
        let (mut lo, mut hi) = (i, i);
        while j < pts.len() && !pts[j].1.is_nan() && pts[j].0.floor() == col {
            if pts[j].1 < pts[lo].1 {
                lo = j;
            }
            if pts[j].1 > pts[hi].1 {
                hi = j;
            }
            j += 1;
        }
        let mut keep = [i, lo, hi, j - 1];
        keep.sort_unstable();
        let mut last = usize::MAX;
        for k in keep {
            if k != last {
                out.push(pts[k]);
                last = k;
            }
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_each_columns_extremes() {
        // 10 points per pixel column over 1000 columns, a spike in one.
        let mut pts: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64 / 10.0, 1.0)).collect();
        pts[5005].1 = 99.0;
        pts[7003].1 = -5.0;
        let t = thin(&pts);
        assert!(t.len() <= 4 * 1000, "{}", t.len());
        assert!(t.contains(&(500.5, 99.0)) && t.contains(&(700.3, -5.0)));
        assert!(t.windows(2).all(|w| w[0].0 <= w[1].0));
        // Few points pass untouched.
        let few = [(0.0, 1.0), (1.0, f64::NAN), (2.0, 3.0)];
        assert_eq!(thin(&few).len(), 3);
    }
}
