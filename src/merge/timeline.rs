//! The shards' timelines as one: each shard's buckets moved by the whole
//! seconds between its start and the earliest (0 when they started
//! together), counts of the same interval and stage added, and each merged
//! bucket's percentiles read from the sum of its shards' histograms — the
//! same numbers one histogram of every request would give.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::run::Part;
use crate::metrics::hdr;
use crate::metrics::timeline::{BOUNDS, Bucket, RunTimeline, TimelineSlice};

/// Adds `text`'s histogram into `into` (made on first use). A histogram
/// that does not decode is left out: the counts stay exact, the bucket's
/// percentiles come from the others.
fn add(into: &mut Option<Histogram<u32>>, text: Option<&str>) {
    let Some(h) = text.and_then(|t| hdr::from_text::<u32>(t, BOUNDS).ok()) else {
        return;
    };
    let sum = into.get_or_insert_with(|| BOUNDS.histogram());
    // Same bounds, never resized: only a u32 count overflowing can fail,
    // which no second of requests reaches.
    let _ = sum.add(&h);
}

/// Merged buckets by (interval, warm-up 0 or 1 + stage): bucket order.
type Cells = BTreeMap<(u32, u32), Cell>;

fn key(interval: u32, stage: Option<u16>) -> (u32, u32) {
    (interval, stage.map_or(0, |s| u32::from(s) + 1))
}

/// One merged bucket under way.
struct Cell {
    b: Bucket,
    ttft: Option<Histogram<u32>>,
    e2e: Option<Histogram<u32>>,
}

pub(crate) fn merge(parts: &[Part<'_>]) -> RunTimeline {
    let Some(first) = parts.iter().find(|p| !p.run.timeline.slices.is_empty()) else {
        return RunTimeline::default();
    };
    let t0 = &first.run.timeline;
    let mut out = RunTimeline {
        interval_ns: t0.interval_ns,
        stage_names: t0.stage_names.clone(),
        slo: t0.slo,
        scenarios_left_out: t0.scenarios_left_out,
        ..RunTimeline::default()
    };
    // Slices by scenario (the whole run first), as the first shard has them.
    let mut slices: Vec<(Option<String>, Cells)> = Vec::new();
    for p in parts {
        let t = &p.run.timeline;
        out.stragglers += t.stragglers;
        out.scenarios_left_out = out.scenarios_left_out.max(t.scenarios_left_out);
        for (k, &n) in t.in_flight.iter().enumerate() {
            let at = k + p.shift as usize;
            if out.in_flight.len() <= at {
                out.in_flight.resize(at + 1, 0);
            }
            out.in_flight[at] += n;
        }
        for slice in &t.slices {
            let cells = match slices.iter().position(|(s, _)| *s == slice.scenario) {
                Some(i) => &mut slices[i].1,
                None => {
                    slices.push((slice.scenario.clone(), Cells::new()));
                    &mut slices.last_mut().expect("just pushed").1
                }
            };
            for b in &slice.buckets {
                let interval = b.interval + p.shift;
                let cell = cells.entry(key(interval, b.stage)).or_insert_with(|| Cell {
                    b: Bucket {
                        interval,
                        stage: b.stage,
                        ..Bucket::default()
                    },
                    ttft: None,
                    e2e: None,
                });
                cell.b.add_counts(b);
                add(&mut cell.ttft, b.ttft_hist.as_deref());
                add(&mut cell.e2e, b.e2e_hist.as_deref());
            }
        }
    }
    let intervals = slices
        .iter()
        .flat_map(|(_, c)| c.keys().map(|k| k.0 + 1))
        .max()
        .unwrap_or(0)
        .max(out.in_flight.len() as u32);
    out.in_flight.resize(intervals as usize, 0);
    out.slices = slices
        .into_iter()
        .map(|(scenario, cells)| TimelineSlice {
            scenario,
            buckets: close(cells, intervals),
        })
        .collect();
    out
}

/// The merged cells as buckets in interval, then stage, order: an empty
/// bucket only for an interval that has nothing else (under the stage
/// before it when no shard said), percentiles from the summed histograms.
fn close(cells: Cells, intervals: u32) -> Vec<Bucket> {
    let mut out: Vec<Bucket> = Vec::with_capacity(cells.len());
    let mut cells = cells.into_values().peekable();
    for k in 0..intervals {
        let mut here: Vec<Bucket> = Vec::new();
        while let Some(c) = cells.next_if(|c| c.b.interval == k) {
            here.push(finish(c));
        }
        if here.iter().any(|b| !b.is_empty()) {
            here.retain(|b| !b.is_empty());
        } else {
            let stage = here
                .first()
                .map(|b| b.stage)
                .unwrap_or_else(|| out.last().and_then(|b| b.stage));
            here = vec![Bucket {
                interval: k,
                stage,
                ..Bucket::default()
            }];
        }
        out.extend(here);
    }
    out
}

fn finish(c: Cell) -> Bucket {
    let mut b = c.b;
    let q = |h: &Option<Histogram<u32>>, q: f64| {
        h.as_ref()
            .filter(|h| !h.is_empty())
            .map(|h| h.value_at_quantile(q))
    };
    (b.ttft_p50_ns, b.ttft_p99_ns) = (q(&c.ttft, 0.5), q(&c.ttft, 0.99));
    (b.e2e_p50_ns, b.e2e_p99_ns) = (q(&c.e2e, 0.5), q(&c.e2e, 0.99));
    let text = |h: &Option<Histogram<u32>>| h.as_ref().filter(|h| !h.is_empty()).map(hdr::to_text);
    (b.ttft_hist, b.e2e_hist) = (text(&c.ttft), text(&c.e2e));
    b
}
