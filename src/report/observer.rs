//! The run's observer: every finished request becomes one line of
//! `events.jsonl`, and every live interval one progress line on stderr. Both
//! are written by a sink thread, so the collector only hands over a small
//! owned record through a bounded channel and never waits on a disk or a
//! terminal: if the sink ever falls behind, lines are dropped and counted —
//! never silently. The file is flushed at least every second and synced at
//! the end, so a crash loses at most the last second of lines.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::engine::conversation::uuid_text;
use crate::engine::tokenize::unescape;
use crate::metrics::block::RequestSample;
use crate::metrics::observe::{Interval, Observer, RequestEvent};
use crate::protocol::Finish;

/// Lines the sink may be behind before new ones are dropped.
const QUEUE: usize = 1 << 16;

/// One finished request, owned, on its way to the sink.
struct Line {
    sample: RequestSample,
    seq: u64,
    conv_id: [u8; 16],
    scenario: u16,
    stage: Option<u16>,
    turn: u16,
    text: Option<Vec<u8>>,
    message: Option<String>,
}

enum Msg {
    Line(Box<Line>),
    Live(String),
}

/// What the events log ended up holding.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct EventsStats {
    pub path: String,
    pub written: u64,
    pub dropped: u64,
    /// Why the file could not be written, if it could not.
    pub error: Option<String>,
}

/// The observer `bench` hands to the engine.
pub struct RunObserver {
    tx: Option<SyncSender<Msg>>,
    thread: Option<JoinHandle<EventsStats>>,
    dropped: Arc<AtomicU64>,
    record_output: bool,
}

/// Names and clocks the sink needs to write lines.
struct Context {
    scenarios: Vec<String>,
    stages: Vec<String>,
    /// Add to a CLOCK_MONOTONIC ns value for Unix ns.
    mono_to_unix: i128,
}

impl RunObserver {
    /// Creates `events.jsonl` in `dir` and starts the sink thread.
    pub fn start(
        dir: &Path,
        scenarios: &[String],
        stages: &[String],
        record_output: bool,
        wall_ns: u64,
        mono_ns: u64,
    ) -> Result<RunObserver, String> {
        let path = dir.join("events.jsonl");
        let file = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (tx, rx) = sync_channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let ctx = Context {
            scenarios: scenarios.to_vec(),
            stages: stages.to_vec(),
            mono_to_unix: wall_ns as i128 - mono_ns as i128,
        };
        let thread = std::thread::Builder::new()
            .name("llmload-sink".into())
            .spawn(move || sink(rx, file, path, ctx))
            .map_err(|e| format!("starting the events writer: {e}"))?;
        Ok(RunObserver {
            tx: Some(tx),
            thread: Some(thread),
            dropped,
            record_output,
        })
    }

    fn send(&self, msg: Msg) {
        if let Some(tx) = &self.tx {
            match tx.try_send(msg) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Flushes and syncs the log; returns what it holds.
    pub fn finish(mut self) -> EventsStats {
        self.tx = None;
        let mut stats = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        stats.dropped += self.dropped.load(Ordering::Relaxed);
        stats
    }
}

impl Observer for RunObserver {
    fn request(&mut self, e: &RequestEvent<'_>) {
        let line = Line {
            sample: *e.sample,
            seq: e.seq,
            conv_id: e.conv_id,
            scenario: e.scenario,
            stage: e.stage,
            turn: e.turn,
            text: (self.record_output).then(|| e.text.to_vec()),
            message: e.message.map(str::to_string),
        };
        self.send(Msg::Line(Box::new(line)));
    }

    fn interval(&mut self, i: &Interval<'_>) {
        let secs = i.interval_ns as f64 / 1e9;
        let ms = |s: &crate::metrics::series::Series, q: f64| {
            s.quantile_ns(q)
                .map_or("-".to_string(), |v| format!("{:.1}", v as f64 / 1e6))
        };
        let line = format!(
            "[{:>7.1}s] stage {:<10} {:>8.1} req/s  in-flight {:>5}  p50 {:>7} ms  p99 {:>7} ms  ttft p50 {:>7} ms  p99 {:>7} ms  errors {}",
            i.elapsed_ns as f64 / 1e9,
            i.stage,
            if secs > 0.0 {
                i.completed as f64 / secs
            } else {
                0.0
            },
            i.inflight,
            ms(i.e2e, 0.5),
            ms(i.e2e, 0.99),
            ms(i.ttft, 0.5),
            ms(i.ttft, 0.99),
            i.failed,
        );
        self.send(Msg::Live(line));
    }
}

fn sink(rx: Receiver<Msg>, file: File, path: PathBuf, ctx: Context) -> EventsStats {
    let mut stats = EventsStats {
        path: path.display().to_string(),
        ..EventsStats::default()
    };
    let mut out = BufWriter::with_capacity(256 * 1024, file);
    let mut last_flush = Instant::now();
    let mut line = Vec::with_capacity(1024);
    loop {
        match rx.recv_timeout(Duration::from_millis(250)) {
            Ok(Msg::Line(l)) => {
                line.clear();
                serde_json::to_writer(&mut line, &event_json(&l, &ctx))
                    .expect("a Value serializes");
                line.push(b'\n');
                match out.write_all(&line) {
                    Ok(()) => stats.written += 1,
                    Err(e) => {
                        stats.dropped += 1;
                        stats.error.get_or_insert_with(|| e.to_string());
                    }
                }
            }
            Ok(Msg::Live(text)) => {
                eprintln!("{text}");
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if last_flush.elapsed() >= Duration::from_secs(1) {
            let _ = out.flush();
            last_flush = Instant::now();
        }
    }
    if let Err(e) = out.flush().and_then(|()| out.get_ref().sync_all()) {
        stats.error.get_or_insert_with(|| e.to_string());
    }
    stats
}

fn event_json(l: &Line, ctx: &Context) -> Value {
    let s = &l.sample;
    let unix_ms = |t: u64| (t != 0).then(|| (t as i128 + ctx.mono_to_unix) as f64 / 1e6);
    let gap_ms = |a: u64, b: u64| (a != 0 && b >= a).then(|| (b - a) as f64 / 1e6);
    let mut v = json!({
        "seq": l.seq,
        "conversation_id": uuid_text(&l.conv_id),
        "scenario": ctx.scenarios.get(l.scenario as usize),
        "stage": l.stage.and_then(|i| ctx.stages.get(i as usize)),
        "warmup": l.stage.is_none(),
        "turn": l.turn,
        "stream": s.streamed,
        "scheduled_ms": unix_ms(s.t_sched),
        "sent_ms": unix_ms(s.t_send),
        "first_token_ms": unix_ms(s.t_first_token),
        "end_ms": unix_ms(s.t_end),
        "latency_ms": gap_ms(s.t_sched, s.t_end),
        "service_latency_ms": if s.t_send != 0 { gap_ms(s.t_send, s.t_end) } else { None },
        "ttft_ms": if s.t_first_token != 0 { gap_ms(s.t_send, s.t_first_token) } else { None },
        "status": (s.status != 0).then_some(s.status),
        "error": s.error.map(|c| c.key(s.status)),
        "message": l.message,
        "prompt_tokens": s.input_tokens,
        "completion_tokens": s.error.is_none().then(|| s.output_tokens().0),
        "content_length": s.text_bytes,
        "finish_reason": (s.finish != 0).then(|| Finish::from_u8(s.finish).name()),
    });
    if let Some(text) = &l.text {
        v["output"] = unescape(text).into();
    }
    v
}
