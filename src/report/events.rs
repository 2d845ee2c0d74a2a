//! The run's events: every finished request becomes one line of
//! `events.jsonl`, and every live interval the live view on stderr (a plain
//! line, or the block redrawn in place on a terminal: `live`). Both
//! are written by a sink thread, so the collector only hands over a small
//! owned record through a channel bounded in lines and in bytes, and never
//! waits on a disk or a terminal: if the sink ever falls behind, lines are
//! dropped and counted — never silently. Lines go over in batches (at most
//! 64, or 10 ms' worth), so the channel costs the collector little per
//! request. The file is flushed at least every second and synced at
//! the end, so a crash loses at most the last second of lines.
//!
//! `--events` picks which requests get a line: all of them, only the failed
//! ones (`errors`), or none (no file at all; the sink then only draws the
//! live view). A request left out is dropped by the collector before it is
//! copied for the sink, so a smaller log also costs less. Lines are written
//! by hand with a byte writer into one large buffer that goes out in big
//! blocks: no `fmt` machinery and no JSON tree per line.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{
    Receiver, Sender, SyncSender, TryRecvError, TrySendError, channel, sync_channel,
};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[cfg(test)]
use serde_json::Value;

use crate::ascii::{self, push_u64};
use crate::metrics::block::RequestSample;
use crate::metrics::errors::ErrorClass;
use crate::metrics::observe::{Finished, Interval, Observer};
use crate::plan::EventsMode;
use crate::protocol::Finish;
use crate::protocol::json::unescape;
use crate::report::live::{self, LiveView};
use crate::uuid::{sample_uuid, write_hex};

/// Lines the sink may be behind before new ones are dropped: a few seconds
/// of a fast run, so a slow disk has to stall for that long to lose one.
const QUEUE: usize = 1 << 16;
/// Bytes the lines waiting for the sink may hold (with `--record-output`
/// a line carries up to a record's text, about 1 MiB).
const QUEUE_BYTES: usize = 64 << 20;
/// Bytes of lines gathered before they are written out.
const BATCH: usize = 256 * 1024;
/// Lines the collector hands the sink at once: the channel's cost is paid
/// per batch, not per line.
const BATCH_LINES: usize = 64;
/// How long (by the requests' end times, or the parent's clock when it
/// idles) a line waits in a batch before the batch is handed over anyway.
const BATCH_NS: u64 = 10_000_000;
/// How long the sink sleeps when it has caught up.
const POLL: Duration = Duration::from_millis(20);

/// One finished request, owned, on its way to the sink.
struct Line {
    sample: RequestSample,
    seq: u64,
    conv_id: [u8; 16],
    scenario: u16,
    stage: Option<u16>,
    turn: u16,
    row: Option<u32>,
    text: Option<Vec<u8>>,
    message: Option<String>,
    /// An accuracy request's verdict.
    verdict: Option<Box<Verdict>>,
}

/// What an accuracy phase made of one reply, for its events line.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Verdict {
    /// The answer the extractor found (`None`: none, as MLPerf's `None`).
    pub extracted: Option<String>,
    /// Whether it matched the reference (`None` under ROUGE, which scores
    /// the whole phase at once).
    pub correct: Option<bool>,
}

impl Line {
    /// Bytes it holds while queued.
    fn weight(&self) -> usize {
        size_of::<Line>()
            + self.text.as_ref().map_or(0, Vec::len)
            + self.message.as_ref().map_or(0, String::len)
            + self
                .verdict
                .as_ref()
                .and_then(|v| v.extracted.as_ref())
                .map_or(0, String::len)
    }
}

enum Msg {
    /// Lines whose bytes the gate admitted one by one.
    Lines(Vec<Line>),
    Live(String),
    /// The live block's lines, drawn over the last block.
    Block(Vec<String>),
}

impl Msg {
    /// Bytes it holds while queued (a batch's lines were admitted one by
    /// one: this is their sum).
    fn weight(&self) -> usize {
        match self {
            Msg::Lines(lines) => lines.iter().map(Line::weight).sum(),
            Msg::Live(s) => size_of::<Msg>() + s.len(),
            Msg::Block(lines) => size_of::<Msg>() + lines.iter().map(String::len).sum::<usize>(),
        }
    }
}

/// The bytes queued for the sink, against a limit: the sender adds a
/// message's weight before sending (or drops it), the sink takes it off
/// once the message is written.
struct Gate {
    limit: usize,
    queued: AtomicUsize,
}

impl Gate {
    fn admit(&self, n: usize) -> bool {
        // The one sender checks and adds; the sink only subtracts, so the
        // total can only be lower than read here.
        if self.queued.load(Ordering::Relaxed) + n > self.limit {
            return false;
        }
        self.queued.fetch_add(n, Ordering::Relaxed);
        true
    }

    fn release(&self, n: usize) {
        self.queued.fetch_sub(n, Ordering::Relaxed);
    }
}

/// What the events log ended up holding: the summary's `events`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct EventsStats {
    /// Which requests got a line (`--events`): `all`, `errors` or `none`
    /// (then `path` is empty: no file was written).
    #[cfg_attr(test, schemars(extend("enum" = ["all", "errors", "none"])))]
    pub mode: String,
    pub path: String,
    pub written: u64,
    pub dropped: u64,
    /// Why the file could not be written, if it could not.
    pub error: Option<String>,
}

impl Default for EventsStats {
    /// A summary written before `--events` existed logged every request.
    fn default() -> Self {
        EventsStats {
            mode: EventsMode::All.name().to_string(),
            path: String::new(),
            written: 0,
            dropped: 0,
            error: None,
        }
    }
}

impl EventsStats {
    /// Stats of a log that `mode` leaves as it is in `dir` (no request ran).
    pub(crate) fn untouched(dir: &Path, mode: EventsMode) -> EventsStats {
        EventsStats {
            mode: mode.name().to_string(),
            path: log_path(dir, mode),
            ..EventsStats::default()
        }
    }
}

/// The log's path as the summary names it: empty when none is written.
fn log_path(dir: &Path, mode: EventsMode) -> String {
    match mode {
        EventsMode::None => String::new(),
        _ => dir.join("events.jsonl").display().to_string(),
    }
}

/// The observer `bench` hands to the engine.
pub(crate) struct RunObserver {
    tx: Option<SyncSender<Msg>>,
    /// Lines admitted and not yet handed over, and the end time of the
    /// first of them.
    batch: Vec<Line>,
    batch_from: u64,
    /// Emptied batches the sink hands back, for the next ones.
    spares: Receiver<Vec<Line>>,
    thread: Option<JoinHandle<EventsStats>>,
    dropped: Arc<AtomicU64>,
    gate: Arc<Gate>,
    record_output: bool,
    mode: EventsMode,
    live: LiveView,
    /// Every measured request's id and dataset row (MLPerf mode's
    /// `sample_idx_map.json`), kept here rather than by the sink, which may
    /// drop lines.
    sample_rows: Option<Vec<SampleRow>>,
}

/// A measured request's `sample_uuid` and the dataset row it sent.
pub(crate) type SampleRow = ([u8; 16], Option<u32>);

/// Which phase of a run an events log's lines belong to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum EventsPhase {
    /// The performance phase: `events.jsonl` is created anew.
    #[default]
    Performance,
    /// An accuracy dataset's phase (its name): lines are appended.
    Accuracy(String),
}

/// Names and clocks the sink needs to write lines, the names written out
/// once as the members every line repeats, each with the constant text
/// around it.
struct Context {
    /// `,"phase":…` (in an accuracy phase `,"dataset":…` too), then
    /// `,"conversation_id":"`.
    head: Vec<u8>,
    /// `,"scenario":"NAME"` by index.
    scenarios: Vec<Vec<u8>>,
    /// `,"stage":"NAME","warmup":false,"turn":` by index.
    stages: Vec<Vec<u8>>,
    /// The same for warm-up, and for a stage with no name.
    warmup: Vec<u8>,
    unnamed: Vec<u8>,
    /// Add to a CLOCK_MONOTONIC ns value for Unix ns.
    mono_to_unix: i64,
}

impl Context {
    fn new(
        scenarios: &[String],
        stages: &[String],
        phase: &EventsPhase,
        mono_to_unix: i64,
    ) -> Context {
        let member = |key: &str, value: &str| {
            let mut out = key.as_bytes().to_vec();
            JsonLine(&mut out).str(value);
            out
        };
        let phase = match phase {
            EventsPhase::Performance => member(",\"phase\":", "performance"),
            EventsPhase::Accuracy(name) => [
                member(",\"phase\":", "accuracy"),
                member(",\"dataset\":", name),
            ]
            .concat(),
        };
        let turn = |stage: &[u8], warmup: &str| {
            [stage, b",\"warmup\":", warmup.as_bytes(), b",\"turn\":"].concat()
        };
        Context {
            head: [&phase[..], b",\"conversation_id\":\""].concat(),
            scenarios: scenarios
                .iter()
                .map(|n| member(",\"scenario\":", n))
                .collect(),
            stages: stages
                .iter()
                .map(|n| turn(&member(",\"stage\":", n), "false"))
                .collect(),
            warmup: turn(b",\"stage\":null", "true"),
            unnamed: turn(b",\"stage\":null", "false"),
            mono_to_unix,
        }
    }
}

impl RunObserver {
    /// Creates `events.jsonl` in `dir` (unless `mode` is `None`) and starts
    /// the sink thread.
    pub(crate) fn start(
        dir: &Path,
        (scenarios, stages): (&[String], &[String]),
        record_output: bool,
        mode: EventsMode,
        wall_ns: u64,
        mono_ns: u64,
    ) -> Result<RunObserver, String> {
        let names = (scenarios, stages);
        let clocks = (wall_ns, mono_ns);
        Self::start_with(
            dir,
            names,
            (record_output, mode),
            clocks,
            EventsPhase::Performance,
            QUEUE_BYTES,
        )
    }

    /// `start` for an accuracy phase: its lines, named by `phase`, go after
    /// those already in `dir`'s `events.jsonl` (or start it), each with its
    /// output text.
    pub(crate) fn start_phase(
        dir: &Path,
        (scenarios, stages): (&[String], &[String]),
        phase: EventsPhase,
        wall_ns: u64,
        mono_ns: u64,
    ) -> Result<RunObserver, String> {
        let names = (scenarios, stages);
        let keep = (true, EventsMode::All);
        Self::start_with(dir, names, keep, (wall_ns, mono_ns), phase, QUEUE_BYTES)
    }

    /// `start`, with the queue bounded at `queue_bytes`.
    fn start_with(
        dir: &Path,
        (scenarios, stages): (&[String], &[String]),
        (record_output, mode): (bool, EventsMode),
        (wall_ns, mono_ns): (u64, u64),
        phase: EventsPhase,
        queue_bytes: usize,
    ) -> Result<RunObserver, String> {
        let path = dir.join("events.jsonl");
        let file = match (mode, &phase) {
            (EventsMode::None, _) => None,
            (_, EventsPhase::Performance) => Some(File::create(&path)),
            (_, EventsPhase::Accuracy(_)) => {
                Some(File::options().create(true).append(true).open(&path))
            }
        }
        .transpose()
        .map_err(|e| format!("{}: {e}", path.display()))?;
        let stats = EventsStats {
            mode: mode.name().to_string(),
            path: log_path(dir, mode),
            ..EventsStats::default()
        };
        let (tx, rx) = sync_channel(QUEUE);
        let (give_back, spares) = channel();
        let dropped = Arc::new(AtomicU64::new(0));
        let gate = Arc::new(Gate {
            limit: queue_bytes,
            queued: AtomicUsize::new(0),
        });
        let sink_gate = Arc::clone(&gate);
        let ctx = Context::new(scenarios, stages, &phase, wall_ns as i64 - mono_ns as i64);
        let thread = std::thread::Builder::new()
            .name("llmload-sink".into())
            .spawn(move || sink((rx, give_back), file, stats, ctx, &sink_gate))
            .map_err(|e| format!("starting the events writer: {e}"))?;
        Ok(RunObserver {
            tx: Some(tx),
            batch: Vec::with_capacity(BATCH_LINES),
            batch_from: 0,
            spares,
            thread: Some(thread),
            dropped,
            gate,
            record_output,
            mode,
            live: LiveView::Lines,
            sample_rows: None,
        })
    }

    /// Draws each live interval as `view` says (plain lines unless told).
    pub(crate) fn set_live(&mut self, view: LiveView) {
        self.live = view;
    }

    /// Keeps every measured request's id and row from now on.
    pub(crate) fn keep_sample_rows(&mut self) {
        self.sample_rows = Some(Vec::new());
    }

    /// The ids and rows kept (empty unless `keep_sample_rows` was called).
    pub(crate) fn take_sample_rows(&mut self) -> Vec<SampleRow> {
        self.sample_rows.take().unwrap_or_default()
    }

    fn send(&self, msg: Msg) {
        if let Some(tx) = &self.tx {
            let w = msg.weight();
            if !self.gate.admit(w) {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            self.try_send(tx, msg, w, 1);
        }
    }

    /// Sends `msg`, whose `w` bytes the gate admitted, or drops it and
    /// counts its `n` messages (lines).
    fn try_send(&self, tx: &SyncSender<Msg>, msg: Msg, w: usize, n: u64) {
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = tx.try_send(msg) {
            self.gate.release(w);
            self.dropped.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Admits `line` into the batch (or drops it, when the queue has no
    /// room for its bytes), and hands the batch over when it is full or
    /// its first line ended `BATCH_NS` before this one.
    fn push(&mut self, line: Line, t_end: u64) {
        if self.tx.is_none() {
            return;
        }
        if !self.gate.admit(line.weight()) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if self.batch.is_empty() {
            self.batch_from = t_end;
        }
        self.batch.push(line);
        if self.batch.len() >= BATCH_LINES || t_end.saturating_sub(self.batch_from) >= BATCH_NS {
            self.hand_over();
        }
    }

    /// Sends the lines batched so far.
    fn hand_over(&mut self) {
        let Some(tx) = &self.tx else { return };
        if self.batch.is_empty() {
            return;
        }
        let next = self
            .spares
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH_LINES));
        let lines = std::mem::replace(&mut self.batch, next);
        let n = lines.len() as u64;
        let msg = Msg::Lines(lines);
        let w = msg.weight();
        self.try_send(tx, msg, w, n);
    }

    /// Flushes and syncs the log; returns what it holds.
    pub(crate) fn finish(mut self) -> EventsStats {
        self.hand_over();
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

impl RunObserver {
    /// An accuracy request's line, with what was made of its reply.
    pub(crate) fn request_judged(&mut self, e: &Finished<'_>, verdict: Verdict) {
        self.request_with(e, Some(Box::new(verdict)));
    }

    fn request_with(&mut self, e: &Finished<'_>, verdict: Option<Box<Verdict>>) {
        if let Some(rows) = &mut self.sample_rows
            && e.stage.is_some()
        {
            rows.push((sample_uuid(&e.conv_id, e.turn), e.row));
        }
        let logged = match self.mode {
            EventsMode::All => true,
            EventsMode::Errors => e.sample.error.is_some(),
            EventsMode::None => false,
        };
        if !logged {
            return;
        }
        let line = Line {
            sample: e.sample,
            seq: e.seq,
            conv_id: e.conv_id,
            scenario: e.scenario,
            stage: e.stage,
            turn: e.turn,
            row: e.row,
            text: (self.record_output).then(|| e.text.to_vec()),
            message: e.message.clone(),
            verdict,
        };
        self.push(line, e.sample.t_end);
    }
}

impl Observer for RunObserver {
    fn request(&mut self, e: &Finished<'_>) {
        self.request_with(e, None);
    }

    fn idle(&mut self, now: u64) {
        if !self.batch.is_empty() && now.saturating_sub(self.batch_from) >= BATCH_NS {
            self.hand_over();
        }
    }

    fn interval(&mut self, i: &Interval<'_>) {
        self.hand_over();
        match self.live {
            LiveView::Off => {}
            LiveView::Lines => self.send(Msg::Live(live::line(i))),
            LiveView::Block => self.send(Msg::Block(live::block(i))),
        }
    }
}

fn sink(
    (rx, give_back): (Receiver<Msg>, Sender<Vec<Line>>),
    mut file: Option<File>,
    mut stats: EventsStats,
    ctx: Context,
    gate: &Gate,
) -> EventsStats {
    // Lines are formatted straight into one buffer that is written out when
    // it fills or a second has passed: no per-line copy, one write per batch.
    let mut buf: Vec<u8> = Vec::with_capacity(BATCH + 4096);
    let mut pending = 0u64;
    let mut last_flush = Instant::now();
    let mut write_out = |buf: &mut Vec<u8>, pending: &mut u64, stats: &mut EventsStats| {
        let Some(file) = file.as_mut() else { return };
        match file.write_all(buf) {
            Ok(()) => stats.written += *pending,
            Err(e) => {
                stats.dropped += *pending;
                stats.error.get_or_insert_with(|| e.to_string());
            }
        }
        buf.clear();
        *pending = 0;
    };
    // The sink polls instead of blocking in `recv`: a sender only pays for a
    // wake-up (a futex call, a context switch) when the receiver is parked,
    // and at benchmark rates that would be once per request.
    // Lines of the live block on screen: the sink, not the observer, keeps
    // the count, so a block dropped on the way is never moved back over.
    let mut drawn = 0usize;
    let mut open = true;
    while open {
        loop {
            let msg = rx.try_recv();
            if let Ok(m) = &msg {
                // Formatted into `buf` below: its queued bytes are free.
                gate.release(m.weight());
            }
            match msg {
                Ok(Msg::Lines(mut lines)) => {
                    for l in &lines {
                        write_event(&mut buf, l, &ctx);
                        buf.push(b'\n');
                        pending += 1;
                        if buf.len() >= BATCH {
                            write_out(&mut buf, &mut pending, &mut stats);
                        }
                    }
                    lines.clear();
                    // The collector may be gone (the run is ending).
                    let _ = give_back.send(lines);
                }
                // A closed stderr (`2>&1 | head`) drops the line; it must
                // not panic the sink (`eprintln!` would).
                Ok(Msg::Live(text)) => {
                    let _ = writeln!(std::io::stderr(), "{text}");
                }
                Ok(Msg::Block(lines)) => {
                    let _ = std::io::stderr().write_all(live::redraw(drawn, &lines).as_bytes());
                    drawn = lines.len();
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        if last_flush.elapsed() >= Duration::from_secs(1) {
            write_out(&mut buf, &mut pending, &mut stats);
            last_flush = Instant::now();
        }
        if open {
            std::thread::sleep(POLL);
        }
    }
    // The block goes before the final report is printed.
    let _ = std::io::stderr().write_all(live::erase(drawn).as_bytes());
    write_out(&mut buf, &mut pending, &mut stats);
    if let Some(Err(e)) = file.as_ref().map(File::sync_all) {
        stats.error.get_or_insert_with(|| e.to_string());
    }
    stats
}

/// Bytes a line usually takes, reserved up front.
const LINE: usize = 1024;

/// Writes one events line (without its newline). Written member by member
/// rather than through a `serde_json::Value`: the sink formats one line per
/// request, and a JSON tree per line would cost more than the request did.
/// The constant text between values goes in as one copy, names were
/// escaped once (`Context`), and numbers are written eight digits at a time
/// (`ascii`).
fn write_event(out: &mut Vec<u8>, l: &Line, ctx: &Context) {
    let s = &l.sample;
    out.reserve(LINE);
    let mut w = JsonLine(out);
    w.raw(b"{\"seq\":");
    w.num(l.seq);
    w.raw(&ctx.head);
    let mut hex = [0u8; 32];
    write_hex(&l.conv_id, &mut hex);
    w.raw(&dashed(&hex));
    // A first turn's id is its conversation's.
    if l.turn > 1 {
        write_hex(&sample_uuid(&l.conv_id, l.turn), &mut hex);
    }
    w.raw(b"\",\"sample_uuid\":\"");
    w.raw(&hex);
    w.raw(b"\",\"row\":");
    w.opt_num(l.row.map(u64::from));
    match ctx.scenarios.get(l.scenario as usize) {
        Some(member) => w.raw(member),
        None => w.raw(b",\"scenario\":null"),
    }
    w.raw(match l.stage {
        None => &ctx.warmup,
        Some(i) => ctx.stages.get(i as usize).unwrap_or(&ctx.unnamed),
    });
    w.num(l.turn as u64);
    w.raw(if s.streamed {
        b",\"stream\":true,\"scheduled_ms\":"
    } else {
        b",\"stream\":false,\"scheduled_ms\":"
    });
    // Unix ns fit an i64 until 2262: no 128-bit division per field.
    let unix_us = |t: u64| (t != 0).then(|| (t as i64 + ctx.mono_to_unix) as u64 / 1000);
    let gap_us = |a: u64, b: u64| (a != 0 && b >= a).then(|| (b - a) / 1000);
    w.millis(unix_us(s.t_sched));
    w.raw(b",\"sent_ms\":");
    w.millis(unix_us(s.t_send));
    w.raw(b",\"first_token_ms\":");
    w.millis(unix_us(s.t_first_token));
    w.raw(b",\"end_ms\":");
    w.millis(unix_us(s.t_end));
    w.raw(b",\"latency_ms\":");
    w.millis(gap_us(s.t_sched, s.t_end));
    w.raw(b",\"service_latency_ms\":");
    w.millis(if s.t_send != 0 {
        gap_us(s.t_send, s.t_end)
    } else {
        None
    });
    w.raw(b",\"ttft_ms\":");
    w.millis(if s.t_first_token != 0 {
        gap_us(s.t_send, s.t_first_token)
    } else {
        None
    });
    // The same differences in whole ns, as `Block` records them: the
    // `_ms` fields' µs cross the histograms' bucket edges, these do not.
    w.raw(b",\"latency_ns\":");
    w.opt_num((s.t_sched != 0).then(|| s.t_end.saturating_sub(s.t_sched)));
    w.raw(b",\"service_latency_ns\":");
    w.opt_num((s.t_send != 0).then(|| s.t_end.saturating_sub(s.t_send)));
    w.raw(b",\"ttft_ns\":");
    w.opt_num((s.t_first_token != 0).then(|| s.t_first_token.saturating_sub(s.t_send)));
    w.raw(b",\"status\":");
    w.opt_num((s.status != 0).then_some(s.status as u64));
    match s.error {
        // `ErrorClass::key`, written without a `String`.
        Some(ErrorClass::HttpStatus) => {
            w.raw(b",\"error\":\"http_");
            w.num(u64::from(s.status).min(999));
            w.raw(b"\",\"message\":");
        }
        Some(c) => {
            w.raw(b",\"error\":\"");
            w.raw(c.name().as_bytes());
            w.raw(b"\",\"message\":");
        }
        None => w.raw(b",\"error\":null,\"message\":"),
    }
    match l.message.as_deref() {
        Some(m) => w.str(m),
        None => w.raw(b"null"),
    }
    w.raw(b",\"prompt_tokens\":");
    w.opt_num(s.input_tokens.map(u64::from));
    w.raw(b",\"completion_tokens\":");
    w.opt_num(s.error.is_none().then(|| s.output_tokens().0));
    w.raw(b",\"content_length\":");
    w.num(s.text_bytes as u64);
    w.raw(if s.output_truncated {
        b",\"output_truncated\":true,\"finish_reason\":"
    } else {
        b",\"output_truncated\":false,\"finish_reason\":"
    });
    match s.finish {
        0 => w.raw(b"null"),
        f => {
            w.raw(b"\"");
            w.raw(Finish::from_u8(f).name().as_bytes());
            w.raw(b"\"");
        }
    }
    if let Some(text) = &l.text {
        w.raw(b",\"output\":");
        w.str(&unescape(text));
    }
    if let Some(v) = &l.verdict {
        w.raw(b",\"extracted\":");
        match v.extracted.as_deref() {
            Some(e) => w.str(e),
            None => w.raw(b"null"),
        }
        if let Some(c) = v.correct {
            w.raw(if c {
                b",\"correct\":true"
            } else {
                b",\"correct\":false"
            });
        }
    }
    w.raw(b"}");
}

/// A uuid's canonical form from its 32 hex digits.
fn dashed(hex: &[u8; 32]) -> [u8; 36] {
    let mut out = [b'-'; 36];
    out[..8].copy_from_slice(&hex[..8]);
    out[9..13].copy_from_slice(&hex[8..12]);
    out[14..18].copy_from_slice(&hex[12..16]);
    out[19..23].copy_from_slice(&hex[16..20]);
    out[24..].copy_from_slice(&hex[20..]);
    out
}

/// A JSON object written piece by piece into a byte buffer: the constant
/// text between two values (a comma, a key, its quotes and colon, often a
/// value known in advance too) goes in as one copy.
struct JsonLine<'a>(&'a mut Vec<u8>);

impl JsonLine<'_> {
    fn raw(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }

    fn num(&mut self, v: u64) {
        push_u64(self.0, v);
    }

    fn opt_num(&mut self, v: Option<u64>) {
        match v {
            Some(v) => self.num(v),
            None => self.raw(b"null"),
        }
    }

    /// A string, escaped as JSON needs: copied as it is when it needs no
    /// escaping, else through serde.
    fn str(&mut self, v: &str) {
        if v.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
            self.raw(b"\"");
            self.raw(v.as_bytes());
            self.raw(b"\"");
        } else {
            serde_json::to_writer(&mut *self.0, v).expect("a string serializes");
        }
    }

    /// Microseconds written as milliseconds with three decimals.
    fn millis(&mut self, us: Option<u64>) {
        let Some(us) = us else {
            return self.raw(b"null");
        };
        if us < 1000 {
            let d = |v: u64| b'0' + (v % 10) as u8;
            return self.raw(&[b'0', b'.', d(us / 100), d(us / 10), d(us)]);
        }
        let mut buf = [0u8; 24];
        let digits = ascii::digits_u64(us, &mut buf);
        let (whole, frac) = digits.split_at(digits.len() - 3);
        self.raw(whole);
        self.raw(&[b'.', frac[0], frac[1], frac[2]]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::errors::ErrorClass;

    #[test]
    fn event_lines_are_json_with_every_field() {
        let ctx = Context::new(
            &["chat".into()],
            &["ramp".into()],
            &EventsPhase::Performance,
            1_700_000_000_000_000_000,
        );
        let line = Line {
            sample: RequestSample {
                t_sched: 1_000_000,
                t_send: 1_500_000,
                t_first_token: 21_500_000,
                t_end: 51_234_567,
                status: 503,
                error: Some(ErrorClass::HttpStatus),
                input_tokens: Some(12),
                streamed: true,
                ..RequestSample::default()
            },
            seq: 42,
            conv_id: [0xab; 16],
            scenario: 0,
            stage: Some(0),
            turn: 2,
            row: Some(9),
            text: Some(br#"he said \"hi\""#.to_vec()),
            message: Some("over\nloaded \"now\"".into()),
            verdict: None,
        };
        let mut out = Vec::new();
        write_event(&mut out, &line, &ctx);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["seq"], 42);
        assert_eq!(v["phase"], "performance");
        assert_eq!(v["dataset"], Value::Null);
        assert_eq!(v["extracted"], Value::Null);
        assert_eq!(v["conversation_id"], "abababab-abab-abab-abab-abababababab");
        // Turn 2: the conversation's id with 1 folded into its last byte.
        assert_eq!(v["sample_uuid"], format!("{}aa", "ab".repeat(15)));
        assert_eq!(v["row"], 9);
        assert_eq!(v["scenario"], "chat");
        assert_eq!(v["stage"], "ramp");
        assert_eq!(v["warmup"], false);
        assert_eq!(v["turn"], 2);
        assert_eq!(v["latency_ms"], 50.234);
        assert_eq!(v["service_latency_ms"], 49.734);
        assert_eq!(v["ttft_ms"], 20.0);
        assert_eq!(v["latency_ns"], 50_234_567);
        assert_eq!(v["service_latency_ns"], 49_734_567);
        assert_eq!(v["ttft_ns"], 20_000_000);
        assert_eq!(v["scheduled_ms"], 1_700_000_000_001.0);
        assert_eq!(v["status"], 503);
        assert_eq!(v["error"], "http_503");
        assert_eq!(v["message"], "over\nloaded \"now\"");
        assert_eq!(v["prompt_tokens"], 12);
        assert_eq!(v["completion_tokens"], Value::Null);
        assert_eq!(v["finish_reason"], Value::Null);
        assert_eq!(v["output"], "he said \"hi\"");
        assert_eq!(v["output_truncated"], false);
    }

    /// Every member, in order, byte for byte: a warm-up turn 2 that failed
    /// in an accuracy phase.
    #[test]
    fn an_event_line_is_written_byte_for_byte() {
        let ctx = Context::new(
            &["a \"b\"".into()],
            &["s".into()],
            &EventsPhase::Accuracy("gsm8k".into()),
            1_000_000_000_000_000,
        );
        let line = Line {
            sample: RequestSample {
                t_sched: 5_000_000,
                t_send: 5_000_900,
                t_end: 7_000_000,
                status: 200,
                error: Some(ErrorClass::Reset),
                finish: 1,
                text_bytes: 12,
                output_truncated: true,
                ..RequestSample::default()
            },
            seq: 7,
            conv_id: [0x0f; 16],
            scenario: 0,
            stage: None,
            turn: 2,
            row: None,
            text: None,
            message: Some("cut\tshort".into()),
            verdict: Some(Box::new(Verdict {
                extracted: None,
                correct: Some(false),
            })),
        };
        let mut out = Vec::new();
        write_event(&mut out, &line, &ctx);
        let want = concat!(
            r#"{"seq":7,"phase":"accuracy","dataset":"gsm8k","#,
            r#""conversation_id":"0f0f0f0f-0f0f-0f0f-0f0f-0f0f0f0f0f0f","#,
            r#""sample_uuid":"0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0e","row":null,"#,
            r#""scenario":"a \"b\"","stage":null,"warmup":true,"turn":2,"stream":false,"#,
            r#""scheduled_ms":1000000005.000,"sent_ms":1000000005.000,"#,
            r#""first_token_ms":null,"end_ms":1000000007.000,"latency_ms":2.000,"#,
            r#""service_latency_ms":1.999,"ttft_ms":null,"latency_ns":2000000,"#,
            r#""service_latency_ns":1999100,"ttft_ns":null,"status":200,"#,
            r#""error":"reset","message":"cut\tshort","prompt_tokens":null,"#,
            r#""completion_tokens":null,"content_length":12,"output_truncated":true,"#,
            r#""finish_reason":"stop","extracted":null,"correct":false}"#,
        );
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn milliseconds_have_three_decimals_at_every_size() {
        for (us, text) in [
            (0, "0.000"),
            (5, "0.005"),
            (42, "0.042"),
            (999, "0.999"),
            (1000, "1.000"),
            (1_234_567, "1234.567"),
            (1_733_472_000_123_456, "1733472000123.456"),
        ] {
            let mut out = Vec::new();
            JsonLine(&mut out).millis(Some(us));
            assert_eq!(String::from_utf8(out).unwrap(), text);
        }
    }

    fn line(text: usize) -> Finished<'static> {
        Finished {
            sample: RequestSample {
                output_truncated: true,
                ..RequestSample::default()
            },
            seq: 1,
            conv_id: [1; 16],
            scenario: 0,
            endpoint: 0,
            stage: Some(0),
            turn: 1,
            row: Some(7),
            gaps: crate::metrics::observe::Gaps::Owned(Vec::new()),
            text: std::borrow::Cow::Owned(vec![b'a'; text]),
            message: None,
        }
    }

    #[test]
    fn the_queue_is_bounded_in_bytes() {
        let dir = std::env::temp_dir().join(format!("llmload-events-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let names = (&["s".to_string()][..], &["m".to_string()][..]);
        let limit = 64 << 10;
        let mut obs = RunObserver::start_with(
            &dir,
            names,
            (true, EventsMode::All),
            (0, 0),
            EventsPhase::Performance,
            limit,
        )
        .unwrap();
        // A line over the bound is dropped and counted; lines under it go.
        obs.request(&line(limit));
        obs.request(&line(100));
        obs.request(&line(200));
        // Held bytes never pass the bound, however fast lines come.
        for _ in 0..1000 {
            obs.request(&line(1000));
            assert!(obs.gate.queued.load(Ordering::Relaxed) <= limit);
        }
        let stats = obs.finish();
        assert_eq!(stats.written + stats.dropped, 1003);
        assert!(stats.dropped >= 1, "{stats:?}");
        let text = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["output"].as_str().unwrap().len(), 100);
        assert_eq!(first["output_truncated"], true);
        assert_eq!(text.lines().count() as u64, stats.written);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
