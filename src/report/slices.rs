//! The slices of a run, in report order, for the renderings that key rows
//! or series by stage and scenario (`report.csv`, `metrics.prom`): each
//! stage's aggregate followed by its scenarios, then the whole run followed
//! by its run-wide scenarios. Labels are made unique here because both key
//! by them; the price is that a label can differ from the name in the
//! summary (`chat#2`).

use std::collections::BTreeSet;

use super::summary::{Latency, Load, Numbers, Summary};
use crate::metrics::series::Rollup;

/// One statistic of a histogram (`p50`, `max`, …).
pub(crate) type Stat = fn(&Rollup) -> Option<f64>;

/// One histogram of a slice's latencies.
pub(crate) type LatencyOf = fn(&Latency) -> &Rollup;

/// The latency histograms csv and prom write, in column order.
pub(crate) const LATENCIES: [(&str, LatencyOf); 5] = [
    ("e2e", |l| &l.e2e),
    ("service", |l| &l.service),
    ("ttft", |l| &l.ttft),
    ("tpot", |l| &l.tpot),
    ("itl", |l| &l.itl),
];

/// One measured slice of a run: the whole run, a stage, or one scenario of
/// either.
pub(crate) struct Slice<'a> {
    /// The stage's label; `None` for run-wide slices.
    pub stage: Option<String>,
    /// The scenario's label; `None` for the aggregate over all scenarios.
    pub scenario: Option<String>,
    pub numbers: &'a Numbers,
    /// The stage's load, for slices within a stage.
    pub load: Option<&'a Load>,
    /// Send lateness in µs: the slice's own, or the generator's for the run.
    pub lateness: &'a Rollup,
}

/// Every slice of `summary` in report order.
///
/// A missing name, a repeated one, or one equal to `reserved` (the marker
/// the caller uses for "all") gets `#<position>` appended, 1-based.
pub(crate) fn slices<'a>(summary: &'a Summary, reserved: &str) -> Vec<Slice<'a>> {
    let stage_labels = labels(summary.stages.iter().map(|s| s.name.as_str()), reserved);
    let mut out = Vec::new();
    for (stage, label) in summary.stages.iter().zip(stage_labels) {
        out.push(Slice {
            stage: Some(label.clone()),
            scenario: None,
            numbers: &stage.numbers,
            load: stage.load.as_ref(),
            lateness: &stage.send_lateness_us,
        });
        let names = stage.scenarios.iter().map(|s| s.name.as_str());
        for (sc, sc_label) in stage.scenarios.iter().zip(labels(names, reserved)) {
            out.push(Slice {
                stage: Some(label.clone()),
                scenario: Some(sc_label),
                numbers: &sc.numbers,
                load: stage.load.as_ref(),
                lateness: &sc.send_lateness_us,
            });
        }
    }
    out.push(Slice {
        stage: None,
        scenario: None,
        numbers: &summary.run,
        load: None,
        lateness: &summary.generator.send_lateness_us,
    });
    let names = summary.scenarios.iter().map(|s| s.name.as_str());
    for (sc, sc_label) in summary.scenarios.iter().zip(labels(names, reserved)) {
        out.push(Slice {
            stage: None,
            scenario: Some(sc_label),
            numbers: &sc.numbers,
            load: None,
            lateness: &sc.send_lateness_us,
        });
    }
    out
}

fn labels<'a>(names: impl Iterator<Item = &'a str>, reserved: &str) -> Vec<String> {
    let mut used = BTreeSet::new();
    names
        .enumerate()
        .map(|(i, name)| {
            let mut label = name.to_string();
            let mut n = i + 1;
            while label.is_empty() || label == reserved || used.contains(&label) {
                label = format!("{name}#{n}");
                n += 1;
            }
            used.insert(label.clone());
            label
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_unique_and_avoid_the_marker() {
        let got = labels(["a", "", "a", "*", "a#3", "a"].into_iter(), "*");
        assert_eq!(got, ["a", "#2", "a#3", "*#4", "a#3#5", "a#6"]);
    }
}
