//! The page's charts: one `<section class="slice">` per stage × scenario
//! (time series from `timeline`, CDFs and length histograms from
//! `distributions`, the percentile table), the throughput-vs-latency curve
//! across stages, and the server's own metrics on the run's time axis. The
//! timeline covers the whole run with a stage per point, so a slice draws
//! only its stage's seconds (the first stage with the warm-up before it,
//! shaded): a 3-stage run does not repeat the whole run nine times.

use std::fmt::Write;

use super::axis::{Axis, Unit};
use super::sections::{load, run_length_s};
use super::svg::{Band, Chart, Mark, Series};
use super::{esc, n, opt, tables};
use crate::report::summary::distributions::Distributions;
use crate::report::summary::timeline::{Timeline, TimelinePoint};
use crate::report::summary::{Numbers, Stage, Summary};

pub(super) fn slices(o: &mut String, s: &Summary) {
    for (i, st) in s.stages.iter().enumerate() {
        slice(o, s, i, st, None, &st.numbers);
        if st.scenarios.len() > 1 {
            for (j, sc) in st.scenarios.iter().enumerate() {
                slice(o, s, i, st, Some((j, &sc.name)), &sc.numbers);
            }
        }
    }
}

fn slice(
    o: &mut String,
    s: &Summary,
    i: usize,
    st: &Stage,
    scenario: Option<(usize, &str)>,
    x: &Numbers,
) {
    let (id, name) = match scenario {
        Some((j, name)) => (j.to_string(), name),
        None => ("all".to_string(), "all"),
    };
    let _ = write!(
        o,
        "<section class=\"slice\" id=\"slice-{i}-{id}\" data-stage=\"{}\" data-scenario=\"{}\"><h2>Stage {}{}</h2>",
        esc(&st.name),
        esc(name),
        esc(&st.name),
        match scenario {
            Some(_) => format!(" — scenario {}", esc(name)),
            None if st.scenarios.len() > 1 => " — all scenarios".to_string(),
            None => String::new(),
        }
    );
    let r = &x.requests;
    let _ = write!(
        o,
        "<p>{} · {} completed, {} failed · {} req/s · {} output tok/s · TTFT p50 {} · e2e p50 {} · window {} s</p>",
        esc(&load(st.load.as_ref())),
        r.completed,
        r.failed,
        n(x.throughput.requests_per_s),
        n(x.throughput.output_tokens_per_s),
        opt(x.latency_ms.ttft.p50, " ms"),
        opt(x.latency_ms.e2e.p50, " ms"),
        n(x.window_s)
    );
    o.push_str("<div class=\"charts\">");
    match s
        .timeline
        .as_ref()
        .and_then(|t| Window::of(t, scenario.map(|s| s.1), &st.name))
    {
        Some(w) => time_charts(o, &w, scenario.is_none()),
        None => o.push_str("<p class=\"muted\">No timeline for this slice in the summary.</p>"),
    }
    let others: Vec<(&str, &Distributions)> = match scenario {
        None if st.scenarios.len() > 1 => st
            .scenarios
            .iter()
            .filter_map(|sc| Some((sc.name.as_str(), sc.numbers.distributions.as_ref()?)))
            .collect(),
        _ => Vec::new(),
    };
    match &x.distributions {
        Some(d) => distribution_charts(o, name, d, &others),
        None => {
            o.push_str("<p class=\"muted\">No distributions for this slice in the summary.</p>")
        }
    }
    o.push_str("</div><h3>Percentiles</h3>");
    tables::percentiles(o, x);
    tables::error_messages(o, x);
    o.push_str("</section>\n");
}

/// A slice's seconds on the timeline.
struct Window<'a> {
    points: &'a [TimelinePoint],
    /// The slice's stage: a second shared with another stage has a point
    /// for each (the timeline's rule), and only this stage's are drawn.
    stage: &'a str,
    /// Where the stage's own points begin; warm-up points before it are
    /// drawn in the shaded band.
    first_t: f64,
    interval: f64,
    lo: f64,
    hi: f64,
    bands: Vec<Band>,
}

impl<'a> Window<'a> {
    fn of(t: &'a Timeline, scenario: Option<&str>, stage: &'a str) -> Option<Window<'a>> {
        let pts = &t
            .series
            .iter()
            .find(|se| se.scenario.as_deref() == scenario)?
            .points;
        let first = pts.iter().position(|p| p.stage == stage)?;
        let last = pts.iter().rposition(|p| p.stage == stage)?;
        let mut start = first;
        while start > 0 && pts[start - 1].stage == "warmup" {
            start -= 1;
        }
        let interval = if t.interval_s > 0.0 {
            t.interval_s
        } else {
            1.0
        };
        let (lo, hi) = (pts[start].t_s, pts[last].t_s + interval);
        let mut bands = Vec::new();
        if start < first {
            bands.push(Band {
                x0: lo,
                x1: pts[first].t_s,
                label: "warmup".into(),
                shade: true,
            });
        }
        bands.push(Band {
            x0: pts[first].t_s,
            x1: hi,
            label: stage.to_string(),
            shade: false,
        });
        Some(Window {
            points: &pts[start..=last],
            stage,
            first_t: pts[first].t_s,
            interval,
            lo,
            hi,
            bands,
        })
    }

    /// `(mid-interval time, value)` for each point.
    fn line(&self, f: impl Fn(&TimelinePoint) -> Option<f64>) -> Vec<(f64, f64)> {
        self.points
            .iter()
            .filter(|p| p.stage == self.stage || (p.stage == "warmup" && p.t_s < self.first_t))
            .map(|p| (p.t_s + self.interval / 2.0, f(p).unwrap_or(f64::NAN)))
            .collect()
    }

    fn chart(&self, kind: &str, title: &str, y: Axis) -> Chart {
        let mut c = Chart::new(
            kind,
            title,
            Axis::new("time since start", Unit::Time).fixed(self.lo, self.hi),
            y,
        );
        c.bands = self.bands.clone();
        c.height = 200.0;
        c
    }
}

fn time_charts(o: &mut String, w: &Window, whole: bool) {
    let mut c = w.chart(
        "throughput",
        "Throughput",
        Axis::new("requests/s", Unit::Count),
    );
    c.y2 = Some(Axis::new("output tokens/s", Unit::Count));
    c.series = vec![
        Series::line("requests/s", 0, w.line(|p| Some(p.requests_per_s))),
        Series::line(
            "output tokens/s",
            3,
            w.line(|p| Some(p.output_tokens_per_s)),
        )
        .right(),
    ];
    if w.points.iter().any(|p| p.good.is_some()) {
        let per_s = w.interval;
        c.series.push(
            Series::line(
                "good requests/s",
                2,
                w.line(|p| p.good.map(|g| g as f64 / per_s)),
            )
            .dashed(),
        );
    }
    o.push_str(&c.render());

    let mut c = w.chart("latency", "Latency", Axis::new("ms", Unit::Ms));
    c.series = vec![
        Series::line("TTFT p50", 0, w.line(|p| p.ttft_p50_ms)),
        Series::line("TTFT p99", 0, w.line(|p| p.ttft_p99_ms)).dashed(),
        Series::line("e2e p50", 1, w.line(|p| p.e2e_p50_ms)),
        Series::line("e2e p99", 1, w.line(|p| p.e2e_p99_ms)).dashed(),
    ];
    o.push_str(&c.render());

    if whole {
        let mut c = w.chart("inflight", "In flight", Axis::new("requests", Unit::Count));
        c.series = vec![Series::line(
            "in flight",
            2,
            w.line(|p| Some(p.in_flight as f64)),
        )];
        o.push_str(&c.render());
    }

    let mut keys: Vec<&str> = w
        .points
        .iter()
        .flat_map(|p| p.errors.keys().map(String::as_str))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let mut c = w.chart(
        "errors",
        "Failures by class",
        Axis::new("per interval", Unit::Count),
    );
    c.series = if keys.is_empty() {
        vec![Series::line("failed", 1, w.line(|p| Some(p.failed as f64)))]
    } else {
        keys.iter()
            .enumerate()
            .map(|(k, key)| {
                Series::line(
                    key,
                    k + 1,
                    w.line(|p| Some(p.errors.get(*key).copied().unwrap_or(0) as f64)),
                )
            })
            .collect()
    };
    o.push_str(&c.render());
}

/// CDFs (log x) and length histograms; an "all" slice overlays its
/// scenarios' curves.
fn distribution_charts(
    o: &mut String,
    name: &str,
    d: &Distributions,
    others: &[(&str, &Distributions)],
) {
    type Cdf = fn(&Distributions) -> &Vec<[f64; 2]>;
    let cdfs: [(&str, &str, Cdf); 4] = [
        ("cdf-ttft", "TTFT", |d| &d.ttft_ms),
        ("cdf-tpot", "TPOT", |d| &d.tpot_ms),
        ("cdf-itl", "ITL", |d| &d.itl_ms),
        ("cdf-e2e", "e2e latency", |d| &d.e2e_ms),
    ];
    for (kind, title, get) in cdfs {
        if get(d).is_empty() {
            continue;
        }
        let mut c = Chart::new(
            kind,
            &format!("{title}: cumulative distribution"),
            Axis::new("ms (log)", Unit::Ms).log(),
            Axis::new("share of requests ≤ x", Unit::Fraction),
        );
        c.height = 200.0;
        let pts = |d: &Distributions| get(d).iter().map(|p| (p[0], p[1])).collect();
        c.series.push(Series::line(name, 0, pts(d)));
        for (k, (other, od)) in others.iter().enumerate() {
            if !get(od).is_empty() {
                c.series.push(Series::line(other, k + 1, pts(od)).dashed());
            }
        }
        o.push_str(&c.render());
    }
    for (kind, title, bins) in [
        ("hist-isl", "Input length", &d.isl),
        ("hist-osl", "Output length", &d.osl),
    ] {
        if bins.is_empty() {
            continue;
        }
        let mut c = Chart::new(
            kind,
            title,
            Axis::new("tokens", Unit::Count),
            Axis::new("requests", Unit::Count),
        );
        c.height = 200.0;
        c.bars = bins.clone();
        o.push_str(&c.render());
    }
}

/// Throughput against latency, a point per stage: where the endpoint
/// saturates.
pub(super) fn stage_curve(o: &mut String, s: &Summary) {
    if s.stages.len() < 2 {
        return;
    }
    o.push_str(
        "<section id=\"stages\"><h2>Throughput vs latency across stages</h2>\
         <p class=\"muted\">One point per stage: achieved requests/s against its latency.</p>",
    );
    let mut c = Chart::new(
        "stages",
        "Latency against achieved throughput",
        Axis::new("achieved requests/s", Unit::Count),
        Axis::new("ms", Unit::Ms),
    );
    let labels: Vec<String> = s.stages.iter().map(|st| st.name.clone()).collect();
    let rps: Vec<f64> = s
        .stages
        .iter()
        .map(|st| st.numbers.throughput.requests_per_s)
        .collect();
    type Get = fn(&Stage) -> Option<f64>;
    let lines: [(&str, usize, bool, Get); 4] = [
        ("e2e p50", 1, false, |st| st.numbers.latency_ms.e2e.p50),
        ("e2e p99", 1, true, |st| st.numbers.latency_ms.e2e.p99),
        ("TTFT p50", 0, false, |st| st.numbers.latency_ms.ttft.p50),
        ("TTFT p99", 0, true, |st| st.numbers.latency_ms.ttft.p99),
    ];
    for (name, color, dashed, get) in lines {
        let pts = s
            .stages
            .iter()
            .zip(&rps)
            .map(|(st, &x)| (x, get(st).unwrap_or(f64::NAN)))
            .collect();
        let mut series = Series::line(name, color, pts);
        series.mark = Mark::LinePoints;
        series.dashed = dashed;
        series.labels = labels.clone();
        c.series.push(series);
    }
    o.push_str("<div class=\"charts\">");
    o.push_str(&c.render());
    o.push_str(
        "<table class=\"stages\"><thead><tr><th>stage</th><th>load</th><th class=\"num\">req/s</th>\
         <th class=\"num\">TTFT p50</th><th class=\"num\">TTFT p99</th><th class=\"num\">e2e p50</th>\
         <th class=\"num\">e2e p99</th></tr></thead><tbody>",
    );
    for st in &s.stages {
        let l = &st.numbers.latency_ms;
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&st.name),
            esc(&load(st.load.as_ref())),
            n(st.numbers.throughput.requests_per_s),
            opt(l.ttft.p50, ""),
            opt(l.ttft.p99, ""),
            opt(l.e2e.p50, ""),
            opt(l.e2e.p99, ""),
        );
    }
    o.push_str("</tbody></table></div></section>\n");
}

/// Each stage's range on the whole run's timeline, the warm-up shaded.
fn stage_bands(t: &Timeline) -> Vec<Band> {
    let Some(whole) = t.series.first() else {
        return Vec::new();
    };
    let interval = if t.interval_s > 0.0 {
        t.interval_s
    } else {
        1.0
    };
    let mut bands: Vec<Band> = Vec::new();
    for p in &whole.points {
        match bands.last_mut() {
            Some(b) if b.label == p.stage => b.x1 = p.t_s + interval,
            _ => bands.push(Band {
                x0: p.t_s,
                x1: p.t_s + interval,
                label: p.stage.clone(),
                shade: p.stage == "warmup",
            }),
        }
    }
    bands
}

/// The server's own metrics, a small chart per kept series on the run's
/// time axis, under the client's curves.
pub(super) fn server_metrics(o: &mut String, s: &Summary) {
    let Some(m) = &s.server_metrics else { return };
    o.push_str("<section id=\"server-metrics\"><h2>Server metrics</h2>");
    let _ = write!(
        o,
        "<p>Scraped from <code>{}</code> ({} names) every {} s: {} scrapes, {} failed.</p>",
        esc(&m.url),
        esc(&m.server),
        n(m.interval_s),
        m.scrapes,
        m.failures
    );
    if let Some(e) = &m.error {
        let _ = write!(
            o,
            "<div class=\"banner warn\">First failure: {}</div>",
            esc(e)
        );
    }
    if m.series.is_empty() {
        o.push_str("<p class=\"muted\">No series were kept.</p></section>\n");
        return;
    }
    o.push_str(
        "<table class=\"server\"><thead><tr><th>series</th><th>name</th><th>kind</th>\
         <th class=\"num\">mean</th><th class=\"num\">max</th></tr></thead><tbody>",
    );
    for se in &m.series {
        let _ = write!(
            o,
            "<tr data-series-key=\"{k}\"><td>{k}</td><td><code>{}</code></td><td>{}</td>{}{}</tr>",
            esc(&se.name),
            esc(&se.kind),
            super::value_cell("data-q", "mean", se.mean, &opt(se.mean, "")),
            super::value_cell("data-q", "max", se.max, &opt(se.max, "")),
            k = esc(&se.key),
        );
    }
    o.push_str("</tbody></table><div class=\"charts small\">");
    let bands = s.timeline.as_ref().map(stage_bands).unwrap_or_default();
    let last = m
        .series
        .iter()
        .filter_map(|se| se.points.last().map(|p| p[0]))
        .fold(0.0, f64::max);
    let end = run_length_s(s).max(last);
    for (i, se) in m.series.iter().enumerate() {
        let share = (se.key.ends_with("usage") || se.key.ends_with("rate"))
            && se.points.iter().all(|p| p[1] <= 1.0);
        let unit = if share { Unit::Fraction } else { Unit::Count };
        let y = if se.kind == "counter" { "per s" } else { "" };
        let mut c = Chart::new(
            &format!("server-{}", se.key),
            &format!("{} ({})", se.key, se.name),
            Axis::new("time since start", Unit::Time).fixed(0.0, end.max(1.0)),
            Axis::new(y, unit),
        );
        c.height = 110.0;
        c.width = 480.0;
        c.bands = bands.clone();
        c.series = vec![Series::line(
            &se.key,
            i % 8,
            se.points.iter().map(|p| (p[0], p[1])).collect(),
        )];
        o.push_str(&c.render());
    }
    o.push_str("</div></section>\n");
}
