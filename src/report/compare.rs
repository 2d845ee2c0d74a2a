//! Regression compare: two `summary.json` documents side by side, for a
//! person (a table per matched slice) or a CI gate (a verdict, and JSON).
//! Each document is read as a `Summary`, so any two runs on disk can be
//! compared by any later version of the tool: a field a document lacks
//! reads as zero or empty, and a field of the wrong type makes it not a
//! summary. The trade-off is in matching: stages pair by name, and a
//! stage whose name has no partner pairs with the unpaired stage at the same
//! position in the other run (a renamed stage in an otherwise unchanged
//! profile); scenarios pair by name only; the whole run always pairs.
//! Anything unpaired is listed, never an error.
//!
//! # What counts as a regression
//!
//! With `p` = `--regress-pct` (default 10), a metric of a paired slice has
//! regressed when
//!
//! * requests/s or output tokens/s: `old > 0` and `new < old × (1 − p/100)`;
//! * e2e latency or TTFT at p50, p95 or p99: `new > old × (1 + p/100)` and
//!   `new − old ≥ 1 ms` — the absolute floor keeps a 0.3 → 0.4 ms wobble on
//!   a fast endpoint from failing a build;
//! * error rate (failed / issued): `new − old > p/100`, i.e. up by more than
//!   `p` percentage points (a relative change means nothing near zero).
//!
//! A metric with no value on either side — an empty histogram, TTFT of a
//! non-streaming run, an error rate with nothing issued — is shown as `-`
//! and never a regression. Throughput always has a value: a document
//! without it (none that llmload wrote) reads as 0.

use std::fmt::Write;

use serde_json::{Value, json};

use super::fmt::{Whole, num};
use super::summary::{Numbers, Scenario, Stage, Summary};
use crate::protocol::errors::one_line;

/// Latency changes smaller than this (ms) are never regressions.
pub(crate) const LATENCY_FLOOR_MS: f64 = 1.0;

/// Which of the two documents.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Side {
    Old,
    New,
}

impl Side {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Side::Old => "old",
            Side::New => "new",
        }
    }
}

/// Why two documents could not be compared.
#[derive(Debug, PartialEq)]
pub(crate) enum Error {
    /// The document on `side` is not an llmload summary.
    NotASummary { side: Side, reason: String },
    /// No stage of one run pairs with a stage of the other.
    NoStageInCommon,
    /// The threshold is negative or not a number.
    BadRegressPct(f64),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NotASummary { side, reason } => {
                write!(
                    f,
                    "{} document: not an llmload summary.json: {reason}",
                    side.name()
                )
            }
            Error::NoStageInCommon => write!(f, "the two runs have no stage in common"),
            Error::BadRegressPct(p) => {
                write!(f, "--regress-pct {p}: must be a number ≥ 0")
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Throughput,
    Latency,
    ErrorRate,
}

/// One compared metric.
#[derive(Debug)]
pub(crate) struct Metric {
    /// The JSON key, e.g. `ttft_p99_ms`.
    pub key: &'static str,
    /// The table label, e.g. `ttft p99 ms`.
    pub label: &'static str,
    kind: Kind,
    /// Its value in a slice's numbers.
    get: fn(&Numbers) -> Option<f64>,
}

/// The compared metrics, in table order.
pub(crate) const METRICS: [Metric; 9] = [
    Metric {
        key: "requests_per_s",
        label: "requests/s",
        kind: Kind::Throughput,
        get: |n| Some(n.throughput.requests_per_s),
    },
    Metric {
        key: "output_tokens_per_s",
        label: "output tok/s",
        kind: Kind::Throughput,
        get: |n| Some(n.throughput.output_tokens_per_s),
    },
    Metric {
        key: "e2e_p50_ms",
        label: "e2e p50 ms",
        kind: Kind::Latency,
        get: |n| n.latency_ms.e2e.p50,
    },
    Metric {
        key: "e2e_p95_ms",
        label: "e2e p95 ms",
        kind: Kind::Latency,
        get: |n| n.latency_ms.e2e.p95,
    },
    Metric {
        key: "e2e_p99_ms",
        label: "e2e p99 ms",
        kind: Kind::Latency,
        get: |n| n.latency_ms.e2e.p99,
    },
    Metric {
        key: "ttft_p50_ms",
        label: "ttft p50 ms",
        kind: Kind::Latency,
        get: |n| n.latency_ms.ttft.p50,
    },
    Metric {
        key: "ttft_p95_ms",
        label: "ttft p95 ms",
        kind: Kind::Latency,
        get: |n| n.latency_ms.ttft.p95,
    },
    Metric {
        key: "ttft_p99_ms",
        label: "ttft p99 ms",
        kind: Kind::Latency,
        get: |n| n.latency_ms.ttft.p99,
    },
    Metric {
        key: "error_rate",
        label: "error rate",
        kind: Kind::ErrorRate,
        get: |n| n.requests.error_rate(),
    },
];

impl Metric {
    fn regressed(&self, old: Option<f64>, new: Option<f64>, pct: f64) -> bool {
        let (Some(o), Some(n)) = (old, new) else {
            return false;
        };
        match self.kind {
            Kind::Throughput => o > 0.0 && n < o * (1.0 - pct / 100.0),
            Kind::Latency => n - o >= LATENCY_FLOOR_MS && n > o * (1.0 + pct / 100.0),
            Kind::ErrorRate => n - o > pct / 100.0,
        }
    }
}

/// One metric of one paired slice.
#[derive(Debug)]
pub(crate) struct Row {
    pub metric: &'static Metric,
    pub old: Option<f64>,
    pub new: Option<f64>,
    pub regression: bool,
}

impl Row {
    pub(crate) fn delta(&self) -> Option<f64> {
        Some(self.new? - self.old?)
    }

    /// The change relative to the old value, in percent.
    pub(crate) fn delta_pct(&self) -> Option<f64> {
        let (old, new) = (self.old?, self.new?);
        (old != 0.0).then(|| (new - old) / old * 100.0)
    }
}

/// How two stages were paired.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum PairedBy {
    Name,
    Position,
}

/// A stage of the old run and its partner in the new one.
#[derive(Clone, Debug)]
pub(crate) struct StagePair {
    pub old: String,
    pub new: String,
    pub by: PairedBy,
}

/// One paired slice: the whole run or a stage, optionally one scenario of it.
#[derive(Debug)]
pub(crate) struct Match {
    /// `None` for run-wide slices.
    pub stage: Option<StagePair>,
    pub scenario: Option<String>,
    pub rows: Vec<Row>,
}

impl Match {
    /// How the slice is named in the text output.
    pub(crate) fn title(&self) -> String {
        let mut t = match &self.stage {
            None => "run".to_string(),
            Some(p) if p.old == p.new => format!("stage {}", p.old),
            Some(p) => format!(
                "stage {} → {} (paired by {})",
                p.old,
                p.new,
                match p.by {
                    PairedBy::Name => "name",
                    PairedBy::Position => "position",
                }
            ),
        };
        if let Some(s) = &self.scenario {
            let _ = write!(t, ", scenario {s}");
        }
        t
    }
}

/// A stage or scenario present in only one run.
#[derive(Debug, PartialEq)]
pub(crate) struct Unmatched {
    pub only_in: Side,
    /// `None` for a run-wide scenario.
    pub stage: Option<String>,
    pub scenario: Option<String>,
}

/// The result of comparing two summaries.
#[derive(Debug)]
pub(crate) struct Comparison {
    pub regress_pct: f64,
    pub matches: Vec<Match>,
    pub unmatched: Vec<Unmatched>,
    /// What a reader should know before trusting the deltas: incomplete or
    /// generator-limited runs, different loads or models.
    pub notes: Vec<String>,
    /// One line describing each run: version, start time, target.
    pub old_run: String,
    pub new_run: String,
}

/// Compares two summary documents, each read as a `Summary`.
pub(crate) fn compare(old: &Value, new: &Value, regress_pct: f64) -> Result<Comparison, Error> {
    if !(regress_pct.is_finite() && regress_pct >= 0.0) {
        return Err(Error::BadRegressPct(regress_pct));
    }
    let read = |doc: &Value, side| {
        Summary::from_value(doc.clone()).map_err(|reason| Error::NotASummary { side, reason })
    };
    let (old, new) = (read(old, Side::Old)?, read(new, Side::New)?);
    compare_summaries(&old, &new, regress_pct)
}

fn compare_summaries(old: &Summary, new: &Summary, regress_pct: f64) -> Result<Comparison, Error> {
    let mut c = Comparison {
        regress_pct,
        matches: Vec::new(),
        unmatched: Vec::new(),
        notes: notes(old, new),
        old_run: describe(old),
        new_run: describe(new),
    };
    let rows = |o: &Numbers, n: &Numbers| -> Vec<Row> {
        METRICS
            .iter()
            .map(|m| {
                let (old, new) = ((m.get)(o), (m.get)(n));
                Row {
                    metric: m,
                    old,
                    new,
                    regression: m.regressed(old, new, regress_pct),
                }
            })
            .collect()
    };

    c.matches.push(Match {
        stage: None,
        scenario: None,
        rows: rows(&old.run, &new.run),
    });
    scenarios(&mut c, None, &old.scenarios, &new.scenarios, &rows);

    let (os, ns) = (&old.stages, &new.stages);
    let pairs = pair_stages(os, ns);
    if pairs.iter().all(|p| p.is_none()) {
        return Err(Error::NoStageInCommon);
    }
    let mut new_paired = vec![false; ns.len()];
    for (i, pair) in pairs.iter().enumerate() {
        let old_label = label(&os[i].name, i);
        let Some((j, by)) = *pair else {
            c.unmatched.push(Unmatched {
                only_in: Side::Old,
                stage: Some(old_label),
                scenario: None,
            });
            continue;
        };
        new_paired[j] = true;
        let new_label = label(&ns[j].name, j);
        if os[i].load != ns[j].load {
            c.notes.push(format!(
                "stage {old_label}: the load differs: old {}, new {}",
                json!(os[i].load),
                json!(ns[j].load)
            ));
        }
        let stage = StagePair {
            old: old_label,
            new: new_label,
            by,
        };
        c.matches.push(Match {
            stage: Some(stage.clone()),
            scenario: None,
            rows: rows(&os[i].numbers, &ns[j].numbers),
        });
        scenarios(
            &mut c,
            Some(stage),
            &os[i].scenarios,
            &ns[j].scenarios,
            &rows,
        );
    }
    for (j, s) in ns.iter().enumerate() {
        if !new_paired[j] {
            c.unmatched.push(Unmatched {
                only_in: Side::New,
                stage: Some(label(&s.name, j)),
                scenario: None,
            });
        }
    }
    Ok(c)
}

/// A stage's or scenario's name, or `#<position>` when it has none.
fn label(name: &str, i: usize) -> String {
    if name.is_empty() {
        format!("#{}", i + 1)
    } else {
        name.to_string()
    }
}

/// For each old stage, its partner in `new` and how it was found. A stage
/// without a name pairs by position only.
fn pair_stages(old: &[Stage], new: &[Stage]) -> Vec<Option<(usize, PairedBy)>> {
    let mut taken = vec![false; new.len()];
    let mut pairs = vec![None; old.len()];
    for (i, o) in old.iter().enumerate() {
        if o.name.is_empty() {
            continue;
        }
        if let Some(j) = (0..new.len()).find(|&j| !taken[j] && new[j].name == o.name) {
            taken[j] = true;
            pairs[i] = Some((j, PairedBy::Name));
        }
    }
    for (i, pair) in pairs.iter_mut().enumerate() {
        if pair.is_none() && i < new.len() && !taken[i] {
            taken[i] = true;
            *pair = Some((i, PairedBy::Position));
        }
    }
    pairs
}

/// Pairs the scenarios of two paired slices by name.
fn scenarios(
    c: &mut Comparison,
    stage: Option<StagePair>,
    old: &[Scenario],
    new: &[Scenario],
    rows: &dyn Fn(&Numbers, &Numbers) -> Vec<Row>,
) {
    fn list(v: &[Scenario]) -> Vec<(String, &Numbers)> {
        v.iter()
            .enumerate()
            .map(|(i, s)| (label(&s.name, i), &s.numbers))
            .collect()
    }
    let (os, ns) = (list(old), list(new));
    let mut taken = vec![false; ns.len()];
    let stage_label = stage.as_ref().map(|p| p.old.clone());
    for (name, o) in &os {
        match (0..ns.len()).find(|&j| !taken[j] && ns[j].0 == *name) {
            Some(j) => {
                taken[j] = true;
                c.matches.push(Match {
                    stage: stage.clone(),
                    scenario: Some(name.clone()),
                    rows: rows(o, ns[j].1),
                });
            }
            None => c.unmatched.push(Unmatched {
                only_in: Side::Old,
                stage: stage_label.clone(),
                scenario: Some(name.clone()),
            }),
        }
    }
    for (j, (name, _)) in ns.iter().enumerate() {
        if !taken[j] {
            c.unmatched.push(Unmatched {
                only_in: Side::New,
                stage: stage.as_ref().map(|p| p.new.clone()),
                scenario: Some(name.clone()),
            });
        }
    }
}

fn describe(doc: &Summary) -> String {
    // A summary's strings may be a server's (a listed model id): one line,
    // no control characters.
    let s = |v: &str| if v.is_empty() { "?" } else { v }.to_string();
    let s = |v: &str| one_line(&s(v), 500);
    format!(
        "llmload {}, started {}, {}",
        s(&doc.version),
        s(&doc.started_at),
        s(&doc.target)
    )
}

fn notes(old: &Summary, new: &Summary) -> Vec<String> {
    let mut notes = Vec::new();
    for (side, doc) in [(Side::Old, old), (Side::New, new)] {
        if !doc.complete {
            notes.push(format!(
                "the {} run is incomplete: {}",
                side.name(),
                doc.incomplete_reasons.join("; ")
            ));
        }
        if doc.generator.limited_by_generator {
            notes.push(format!(
                "the load generator limited the {} run ({}): its numbers may describe the generator, not the endpoint",
                side.name(),
                doc.generator.limits.join("; ")
            ));
        }
        if !doc.thresholds_passed {
            notes.push(format!(
                "the {} run did not pass its thresholds",
                side.name()
            ));
        }
    }
    for key in ["api", "model", "stream", "max_tokens"] {
        let (o, n) = (&old.config[key], &new.config[key]);
        if o != n {
            notes.push(format!("config {key} differs: old {o}, new {n}"));
        }
    }
    notes
}

impl Comparison {
    /// The number of regressed metrics over all paired slices.
    pub(crate) fn regressions(&self) -> usize {
        self.matches
            .iter()
            .flat_map(|m| &m.rows)
            .filter(|r| r.regression)
            .count()
    }

    /// The side-by-side tables and the verdict, for a person.
    pub(crate) fn render_text(&self, old_name: &str, new_name: &str) -> String {
        let mut o = String::new();
        let p = self.regress_pct;
        let _ = writeln!(o, "llmload compare");
        let _ = writeln!(o, "  old  {old_name}  ({})", self.old_run);
        let _ = writeln!(o, "  new  {new_name}  ({})", self.new_run);
        let _ = writeln!(
            o,
            "  regression: requests/s or output tok/s down more than {p}%; e2e or ttft percentile\n  \
             up more than {p}% and by at least {LATENCY_FLOOR_MS} ms; error rate up more than {p} points"
        );
        for m in &self.matches {
            let _ = writeln!(o, "\n== {} ==", m.title());
            let _ = writeln!(
                o,
                "{:<14}{:>12}{:>12}{:>12}{:>10}",
                "", "old", "new", "delta", "delta %"
            );
            for r in &m.rows {
                let show = |v: Option<f64>| v.map_or("-".to_string(), |v| value(r.metric, v));
                let delta = match (r.delta(), r.metric.kind) {
                    (None, _) => "-".to_string(),
                    (Some(d), Kind::ErrorRate) => format!("{:+.2} pt", d * 100.0),
                    (Some(d), _) => signed(d),
                };
                let pct = match (r.delta_pct(), r.metric.kind) {
                    (Some(d), k) if k != Kind::ErrorRate => format!("{d:+.1}%"),
                    _ => String::new(),
                };
                let line = format!(
                    "{:<14}{:>12}{:>12}{:>12}{:>10}{}",
                    r.metric.label,
                    show(r.old),
                    show(r.new),
                    delta,
                    pct,
                    if r.regression { "  REGRESSION" } else { "" }
                );
                let _ = writeln!(o, "{}", line.trim_end());
            }
        }
        if !self.unmatched.is_empty() {
            let _ = writeln!(o, "\nnot compared (in one run only)");
            for u in &self.unmatched {
                let what = match (&u.stage, &u.scenario) {
                    (Some(st), Some(sc)) => format!("stage {st}, scenario {sc}"),
                    (Some(st), None) => format!("stage {st}"),
                    (None, Some(sc)) => format!("run-wide scenario {sc}"),
                    (None, None) => "run".to_string(),
                };
                let _ = writeln!(o, "  {what}: only in {}", u.only_in.name());
            }
        }
        if !self.notes.is_empty() {
            let _ = writeln!(o, "\nnotes");
            for n in &self.notes {
                let _ = writeln!(o, "  {n}");
            }
        }
        let n = self.regressions();
        if n == 0 {
            let _ = writeln!(o, "\nno regression (threshold {p}%)");
        } else {
            let _ = writeln!(
                o,
                "\nREGRESSION: {n} metric{} regressed (threshold {p}%)",
                if n == 1 { "" } else { "s" }
            );
            for m in &self.matches {
                for r in m.rows.iter().filter(|r| r.regression) {
                    let (Some(old), Some(new)) = (r.old, r.new) else {
                        continue;
                    };
                    let change = match (r.metric.kind, r.delta_pct()) {
                        (Kind::ErrorRate, _) => format!("{:+.2} pt", (new - old) * 100.0),
                        (_, Some(pct)) => format!("{pct:+.1}%"),
                        (_, None) => signed(new - old),
                    };
                    let _ = writeln!(
                        o,
                        "  {}: {} {} → {} ({change})",
                        m.title(),
                        r.metric.label,
                        value(r.metric, old),
                        value(r.metric, new)
                    );
                }
            }
        }
        o
    }

    /// The comparison as JSON: every paired slice's metrics with old, new,
    /// delta, delta_pct and regression; the unpaired; notes; the verdict.
    pub(crate) fn to_json(&self, old_name: &str, new_name: &str) -> Value {
        let matches: Vec<Value> = self
            .matches
            .iter()
            .map(|m| {
                let stage = m.stage.as_ref().map(|p| {
                    json!({
                        "old": p.old,
                        "new": p.new,
                        "paired_by": match p.by { PairedBy::Name => "name", PairedBy::Position => "position" },
                    })
                });
                let metrics: serde_json::Map<String, Value> = m
                    .rows
                    .iter()
                    .map(|r| {
                        (
                            r.metric.key.to_string(),
                            json!({
                                "old": r.old,
                                "new": r.new,
                                "delta": r.delta(),
                                "delta_pct": r.delta_pct(),
                                "regression": r.regression,
                            }),
                        )
                    })
                    .collect();
                json!({"stage": stage, "scenario": m.scenario, "metrics": metrics})
            })
            .collect();
        let unmatched: Vec<Value> = self
            .unmatched
            .iter()
            .map(|u| json!({"only_in": u.only_in.name(), "stage": u.stage, "scenario": u.scenario}))
            .collect();
        json!({
            "old": old_name,
            "new": new_name,
            "regress_pct": self.regress_pct,
            "latency_floor_ms": LATENCY_FLOOR_MS,
            "regression": self.regressions() > 0,
            "regressions": self.regressions(),
            "matches": matches,
            "unmatched": unmatched,
            "notes": self.notes,
        })
    }
}

fn value(m: &Metric, v: f64) -> String {
    if m.kind == Kind::ErrorRate {
        format!("{:.2}%", v * 100.0)
    } else {
        num(v, 4, Whole::Decimals)
    }
}

fn signed(v: f64) -> String {
    let s = num(v.abs(), 4, Whole::Decimals);
    if v < 0.0 {
        format!("-{s}")
    } else {
        format!("+{s}")
    }
}

#[cfg(test)]
mod tests;
