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

/// Adds `text`'s histogram into `into` (made on first use); an error says
/// why it does not decode or add.
fn add(into: &mut Option<Histogram<u32>>, text: Option<&str>) -> Result<(), String> {
    let Some(text) = text else {
        return Ok(());
    };
    let h = hdr::from_text::<u32>(text, BOUNDS)?;
    let sum = into.get_or_insert_with(|| BOUNDS.histogram());
    // Same bounds, never resized; u32 counts saturate rather than fail.
    sum.add(&h).map_err(|e| format!("{e:?}"))
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

/// The merged timeline under way, shard by shard.
pub(crate) struct Merger {
    out: RunTimeline,
    /// Slices by scenario (the whole run first), as the first shard with
    /// a timeline has them.
    slices: Vec<(Option<String>, Cells)>,
    started: bool,
    /// Intervals the merged timeline may have (`check::merged_span`).
    span: u64,
}

impl Merger {
    pub(crate) fn new(span_s: u64) -> Merger {
        Merger {
            out: RunTimeline::default(),
            slices: Vec::new(),
            started: false,
            span: span_s,
        }
    }

    /// Adds a shard's timeline, moved by its `shift`; an error names the
    /// field at fault (a bucket past the span, a histogram that does not
    /// decode), never leaving part of it out.
    pub(crate) fn add(&mut self, p: &Part<'_>) -> Result<(), String> {
        let t = &p.run.timeline;
        if !self.started && !t.slices.is_empty() {
            self.out.interval_ns = t.interval_ns;
            self.out.stage_names = t.stage_names.clone();
            self.out.slo = t.slo;
            self.started = true;
        }
        let out = &mut self.out;
        out.stragglers += t.stragglers;
        out.scenarios_left_out = out.scenarios_left_out.max(t.scenarios_left_out);
        let span = self.span;
        // Messages are made only on the error path: `at` runs per bucket.
        let at = |k: u64| Some(k + p.shift).filter(|&at| at < span);
        let past = |field: &dyn std::fmt::Display, k: u64| {
            format!("timeline.{field} {k}: past the merged timeline's {span} intervals")
        };
        if let Some(last) = t.in_flight.len().checked_sub(1) {
            let last = last as u64;
            let end = at(last).ok_or_else(|| past(&"in_flight", last))? as usize;
            if out.in_flight.len() <= end {
                out.in_flight.resize(end + 1, 0);
            }
            for (k, &n) in t.in_flight.iter().enumerate() {
                out.in_flight[k + p.shift as usize] += n;
            }
        }
        for (i, slice) in t.slices.iter().enumerate() {
            let cells = match self.slices.iter().position(|(s, _)| *s == slice.scenario) {
                Some(i) => &mut self.slices[i].1,
                None => {
                    self.slices.push((slice.scenario.clone(), Cells::new()));
                    &mut self.slices.last_mut().expect("just pushed").1
                }
            };
            for (j, b) in slice.buckets.iter().enumerate() {
                let k = u64::from(b.interval);
                let interval = at(k)
                    .ok_or_else(|| past(&format_args!("slices[{i}].buckets[{j}].interval"), k))?
                    as u32;
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
                add(&mut cell.ttft, b.ttft_hist.as_deref())
                    .map_err(|e| format!("timeline.slices[{i}].buckets[{j}].ttft_hist: {e}"))?;
                add(&mut cell.e2e, b.e2e_hist.as_deref())
                    .map_err(|e| format!("timeline.slices[{i}].buckets[{j}].e2e_hist: {e}"))?;
            }
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> RunTimeline {
        let mut out = self.out;
        if !self.started {
            return RunTimeline::default();
        }
        let intervals = self
            .slices
            .iter()
            .flat_map(|(_, c)| c.keys().map(|k| k.0 + 1))
            .max()
            .unwrap_or(0)
            .max(out.in_flight.len() as u32);
        out.in_flight.resize(intervals as usize, 0);
        out.slices = self
            .slices
            .into_iter()
            .map(|(scenario, cells)| TimelineSlice {
                scenario,
                buckets: close(cells, intervals),
            })
            .collect();
        out
    }
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
