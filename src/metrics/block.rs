//! A block of results: everything measured for one slice of a run (a stage,
//! a scenario, the whole run), built by recording one `RequestSample` per
//! finished request and rolled up by merging. The definitions are those of
//! DESIGN.md; this is the one place they are computed.

use serde::{Deserialize, Serialize};

use super::dec128;
use super::errors::{ErrorClass, ErrorCounts};
use super::goodput::Judged;
use super::series::Series;

/// Finish reasons counted apart (`protocol::Finish` has this many values).
pub(crate) const FINISH_KINDS: usize = 6;

/// Where a successful request's output token count came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenSource {
    /// The endpoint's `usage.completion_tokens`.
    Usage = 0,
    /// `--tokenizer` on the output text.
    Tokenizer = 1,
    /// The number of text-bearing SSE events.
    Events = 2,
    /// None of these (a non-streamed body without usage, no tokenizer).
    Unknown = 3,
}

/// Where a request's input token count came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum InputCount {
    /// Token ids given by the dataset.
    Ids = 0,
    /// `--tokenizer` on the prompt, before the run.
    Tokenizer = 1,
    /// The endpoint's `usage.prompt_tokens`.
    Usage = 2,
    /// Not known.
    #[default]
    Unknown = 3,
    /// `--tokenizer` on the prompt rendered through the model's chat
    /// template (a message prompt, MLPerf's rule), before the run.
    ChatTemplate = 4,
}

impl InputCount {
    /// The count was made from the prompt before sending, so a failed
    /// request has it too.
    pub(crate) fn before_sending(self) -> bool {
        matches!(
            self,
            InputCount::Ids | InputCount::Tokenizer | InputCount::ChatTemplate
        )
    }
}

/// Names of `TokenSource` values, by index.
pub(crate) const OUTPUT_SOURCES: [&str; 4] = ["usage", "tokenizer", "events", "unknown"];
/// Names of `InputCount` values, by index.
pub(crate) const INPUT_SOURCES: [&str; 5] = [
    "input_ids",
    "tokenizer",
    "usage",
    "unknown",
    "chat_template",
];

/// One finished request, as the collector hands it over (times in CLOCK_MONOTONIC ns).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RequestSample {
    pub t_sched: u64,
    pub t_send: u64,
    /// 0 when no text-bearing event arrived.
    pub t_first_token: u64,
    pub t_last_token: u64,
    pub t_end: u64,
    pub error: Option<ErrorClass>,
    pub status: u16,
    pub prompt_tokens: Option<u32>,
    pub completion_tokens: Option<u32>,
    /// Text-bearing SSE events (0 for a non-streamed response).
    pub text_events: u32,
    pub text_bytes: u32,
    pub streamed: bool,
    /// Why generation stopped (`protocol::Finish` as a byte).
    pub finish: u8,
    /// Input tokens, resolved by the collector (ids, tokenizer or usage).
    pub input_tokens: Option<u32>,
    pub input_source: InputCount,
    /// Output tokens counted by the tokenizer when usage was absent.
    pub tokenized_output: Option<u32>,
    /// Bytes of the kept output text that came with the first output event.
    pub first_text_len: u32,
    /// Tokens the tokenizer counted in the output after the first event's
    /// text (a stream's), the denominator of MLPerf's TPOT.
    pub tokens_after_first: Option<u32>,
    /// The kept output text was cut short (the text cap, the worker's
    /// budget, or the record's room).
    pub output_truncated: bool,
    /// The tokenizer should have counted the output but did not (its queue
    /// was full, its drain ran out, or the text was cut): the count falls
    /// back to the events, or is unknown.
    pub untokenized: bool,
}

impl RequestSample {
    /// Output tokens and where the count came from.
    pub(crate) fn output_tokens(&self) -> (u64, TokenSource) {
        match (self.completion_tokens, self.tokenized_output) {
            (Some(n), _) => (n as u64, TokenSource::Usage),
            (None, Some(n)) => (n as u64, TokenSource::Tokenizer),
            (None, None) if self.streamed => (self.text_events as u64, TokenSource::Events),
            (None, None) => (0, TokenSource::Unknown),
        }
    }

    /// MLPerf's TPOT (`TpotTrigger`): (t_end − t_first_token) over the
    /// tokenizer's count of the output after the first event's text; a
    /// stream's only, `None` when that count is missing or zero.
    pub(crate) fn tpot_mlperf_ns(&self) -> Option<u64> {
        let n = u64::from(self.tokens_after_first.filter(|&n| n > 0)?);
        if !self.streamed || self.t_first_token == 0 {
            return None;
        }
        let window = self.t_end.saturating_sub(self.t_first_token);
        Some((window + n / 2) / n)
    }
}

/// Results for one slice of a run. Times are CLOCK_MONOTONIC ns (0: none
/// seen).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct Block {
    pub issued: u64,
    pub completed: u64,
    pub failed: u64,
    pub errors: ErrorCounts,
    /// t_end − t_sched.
    pub e2e: Series,
    /// t_end − t_send.
    pub service: Series,
    /// t_end − t_sched of every finished request, failures included (MLPerf's
    /// `latency`); requests written off with a lost worker have no end and
    /// are left out.
    pub latency_all: Series,
    /// t_first_token − t_send.
    pub ttft: Series,
    /// t_first_token − t_sched.
    pub ttft_sched: Series,
    /// Per request with ≥ 2 output tokens: (t_last − t_first) / (tokens − 1).
    pub tpot: Series,
    /// MLPerf's TPOT, per streamed request whose output the tokenizer
    /// counted: (t_end − t_first_token) / tokens after the first event's
    /// text, in ns (rounded to the nearest). Beside `tpot`, never instead.
    pub tpot_mlperf: Series,
    /// Gaps between consecutive text-bearing events.
    pub itl: Series,
    /// Send to the last text-bearing event (to the end for a response
    /// without one), successes: vLLM's E2EL and aiperf's request latency.
    pub to_last_token: Series,
    /// guidellm's TPOT, (last token − send) / output tokens, recorded once
    /// per output token so its percentiles are token-weighted as guidellm's.
    pub tpot_incl_ttft_weighted: Series,
    /// Our per-request TPOT recorded once per decode token (tokens − 1):
    /// guidellm's token-weighted inter-token latency.
    pub tpot_weighted: Series,
    /// t_send − t_sched: how late the generator sent (generator health).
    pub send_lateness: Series,
    pub output_tokens: u64,
    pub input_tokens: u64,
    /// Input length per successful request (ISL), in tokens.
    pub isl: Series,
    /// Input length of every finished request whose length was known
    /// before sending (tokenizer or token ids), failures included: MLPerf
    /// counts ISL over every issued sample.
    #[serde(default)]
    pub isl_issued: Series,
    /// Output length per successful request (OSL), in tokens.
    pub osl: Series,
    /// Successful requests per output token source (`TokenSource` index).
    pub output_sources: [u64; 4],
    /// Successful requests per input token source (`InputCount` index).
    pub input_sources: [u64; 5],
    /// Sum over requests with ≥ 2 output tokens of (last − first token) ns
    /// and of (tokens − 1): token-weighted TPOT is their ratio.
    #[serde(with = "dec128")]
    #[cfg_attr(test, schemars(schema_with = "dec128::schema"))]
    pub decode_ns: u128,
    pub decode_tokens: u64,
    pub text_bytes: u64,
    /// Requests (successful or not) whose kept output text was cut short.
    pub output_truncated: u64,
    /// Successful requests whose output the tokenizer should have counted
    /// and did not.
    pub output_untokenized: u64,
    /// Successful requests by finish reason (`protocol::Finish` as index).
    pub finish: [u64; FINISH_KINDS],
    /// The first few distinct messages per failure key (`http_503`,
    /// `inband_error`, …): what the endpoint said when it failed.
    pub error_messages: std::collections::BTreeMap<String, Vec<String>>,
    /// Earliest t_sched and latest t_end seen (0 when empty).
    pub first_sched: u64,
    pub last_end: u64,
    /// The latest t_sched seen and the t_end of that request: LoadGen's
    /// window ends when the last-issued query completes.
    pub last_sched: u64,
    pub last_sched_end: u64,
    /// Earliest t_send seen (0 when none): aiperf's and guidellm's windows
    /// start at the first request sent.
    pub first_send: u64,
    /// Requests judged against `--slo` (none without it).
    pub goodput: GoodputCounts,
}

/// Counts of requests judged against `--slo` by `goodput::judge`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct GoodputCounts {
    /// Requests judged: every finished one, failures included.
    pub judged: u64,
    /// Requests that succeeded and met every bound, and their output tokens.
    pub good: u64,
    pub good_output_tokens: u64,
    /// Successful requests that missed each bound.
    pub missed_ttft: u64,
    pub missed_tpot: u64,
    pub missed_e2e: u64,
}

impl GoodputCounts {
    fn merge(&mut self, o: &GoodputCounts) {
        self.judged += o.judged;
        self.good += o.good;
        self.good_output_tokens += o.good_output_tokens;
        self.missed_ttft += o.missed_ttft;
        self.missed_tpot += o.missed_tpot;
        self.missed_e2e += o.missed_e2e;
    }
}

impl Block {
    /// Records a finished request (success or failure) and its ITL gaps.
    pub(crate) fn record(&mut self, s: &RequestSample, gaps: impl IntoIterator<Item = u64>) {
        self.issued += 1;
        if self.first_sched == 0 || s.t_sched < self.first_sched {
            self.first_sched = s.t_sched;
        }
        self.last_end = self.last_end.max(s.t_end);
        if s.error != Some(ErrorClass::WorkerLost) && s.t_sched != 0 {
            self.latency_all.record(s.t_end.saturating_sub(s.t_sched));
            if s.t_sched >= self.last_sched {
                self.last_sched = s.t_sched;
                self.last_sched_end = s.t_end;
            }
        }
        if s.t_send >= s.t_sched && s.t_send != 0 {
            self.send_lateness.record(s.t_send - s.t_sched);
        }
        if s.t_send != 0 && (self.first_send == 0 || s.t_send < self.first_send) {
            self.first_send = s.t_send;
        }
        self.output_truncated += s.output_truncated as u64;
        if let Some(p) = s.input_tokens.filter(|_| s.input_source.before_sending()) {
            self.isl_issued.record(p as u64);
        }
        if let Some(class) = s.error {
            self.failed += 1;
            self.errors.record(class, s.status);
            return;
        }
        self.completed += 1;
        self.e2e.record(s.t_end.saturating_sub(s.t_sched));
        self.service.record(s.t_end.saturating_sub(s.t_send));
        let (out, source) = s.output_tokens();
        self.output_tokens += out;
        self.output_sources[source as usize] += 1;
        self.osl.record(out);
        if let Some(p) = s.input_tokens {
            self.input_tokens += p as u64;
            self.isl.record(p as u64);
        }
        self.input_sources[s.input_source as usize] += 1;
        self.output_untokenized += s.untokenized as u64;
        self.text_bytes += s.text_bytes as u64;
        self.finish[(s.finish as usize).min(FINISH_KINDS - 1)] += 1;
        // A response without a streamed token ends with its last token.
        let last = if s.t_first_token != 0 {
            s.t_last_token.max(s.t_first_token)
        } else {
            s.t_end
        };
        self.to_last_token.record(last.saturating_sub(s.t_send));
        if let Some(per) = last.saturating_sub(s.t_send).checked_div(out) {
            self.tpot_incl_ttft_weighted.record_n(per, out);
        }
        if s.t_first_token != 0 {
            self.ttft.record(s.t_first_token.saturating_sub(s.t_send));
            self.ttft_sched
                .record(s.t_first_token.saturating_sub(s.t_sched));
            if out >= 2 {
                let decode = s.t_last_token.saturating_sub(s.t_first_token);
                self.tpot.record(decode / (out - 1));
                self.tpot_weighted.record_n(decode / (out - 1), out - 1);
                self.decode_ns += decode as u128;
                self.decode_tokens += out - 1;
            }
            if let Some(ns) = s.tpot_mlperf_ns() {
                self.tpot_mlperf.record(ns);
            }
        }
        for g in gaps {
            self.itl.record(g);
        }
    }

    /// Counts a finished request's goodput verdict (`goodput::judge`, the
    /// one rule); `output_tokens` are its output tokens.
    pub(crate) fn record_judged(&mut self, j: &Judged, output_tokens: u64) {
        let g = &mut self.goodput;
        g.judged += 1;
        if j.good {
            g.good += 1;
            g.good_output_tokens += output_tokens;
        }
        g.missed_ttft += j.missed_ttft as u64;
        g.missed_tpot += j.missed_tpot as u64;
        g.missed_e2e += j.missed_e2e as u64;
    }

    /// Keeps `message` as an example for `key`, unless three are kept
    /// already or it is one of them.
    pub(crate) fn record_message(&mut self, key: &str, message: &str) {
        const KEEP: usize = 3;
        if let Some(v) = self.error_messages.get(key)
            && (v.len() >= KEEP || v.iter().any(|m| m == message))
        {
            return;
        }
        self.error_messages
            .entry(key.to_string())
            .or_default()
            .push(message.to_string());
    }

    /// Adds `other` into this block.
    pub(crate) fn merge(&mut self, other: &Block) {
        self.issued += other.issued;
        self.completed += other.completed;
        self.failed += other.failed;
        self.errors.merge(&other.errors);
        for (a, b) in [
            (&mut self.e2e, &other.e2e),
            (&mut self.service, &other.service),
            (&mut self.latency_all, &other.latency_all),
            (&mut self.ttft, &other.ttft),
            (&mut self.ttft_sched, &other.ttft_sched),
            (&mut self.tpot, &other.tpot),
            (&mut self.tpot_mlperf, &other.tpot_mlperf),
            (&mut self.itl, &other.itl),
            (&mut self.to_last_token, &other.to_last_token),
            (
                &mut self.tpot_incl_ttft_weighted,
                &other.tpot_incl_ttft_weighted,
            ),
            (&mut self.tpot_weighted, &other.tpot_weighted),
            (&mut self.send_lateness, &other.send_lateness),
            (&mut self.isl, &other.isl),
            (&mut self.isl_issued, &other.isl_issued),
            (&mut self.osl, &other.osl),
        ] {
            a.merge(b);
        }
        self.output_tokens += other.output_tokens;
        self.input_tokens += other.input_tokens;
        for (a, b) in self.output_sources.iter_mut().zip(other.output_sources) {
            *a += b;
        }
        for (a, b) in self.input_sources.iter_mut().zip(other.input_sources) {
            *a += b;
        }
        self.decode_ns += other.decode_ns;
        self.decode_tokens += other.decode_tokens;
        for (k, msgs) in &other.error_messages {
            for m in msgs {
                self.record_message(k, m);
            }
        }
        self.text_bytes += other.text_bytes;
        self.output_truncated += other.output_truncated;
        self.output_untokenized += other.output_untokenized;
        for (a, b) in self.finish.iter_mut().zip(other.finish) {
            *a += b;
        }
        if other.first_sched != 0 && (self.first_sched == 0 || other.first_sched < self.first_sched)
        {
            self.first_sched = other.first_sched;
        }
        self.last_end = self.last_end.max(other.last_end);
        if other.last_sched != 0 && other.last_sched >= self.last_sched {
            self.last_sched = other.last_sched;
            self.last_sched_end = other.last_sched_end;
        }
        if other.first_send != 0 && (self.first_send == 0 || other.first_send < self.first_send) {
            self.first_send = other.first_send;
        }
        self.goodput.merge(&other.goodput);
    }

    /// LoadGen's Server window: the first issue to the completion of the
    /// last-issued request, ns; `None` when nothing with both was recorded.
    pub(crate) fn loadgen_window_ns(&self) -> Option<u64> {
        (self.first_sched != 0 && self.last_sched_end > self.first_sched)
            .then(|| self.last_sched_end - self.first_sched)
    }

    /// How the output token total was counted: `usage`, `tokenizer`,
    /// `events`, `unknown`, `mixed` when requests differed, `none` when
    /// nothing succeeded.
    pub(crate) fn output_source(&self) -> &'static str {
        source_name(&self.output_sources, &OUTPUT_SOURCES)
    }

    /// How the input token total was counted, as `output_source`.
    pub(crate) fn input_source(&self) -> &'static str {
        source_name(&self.input_sources, &INPUT_SOURCES)
    }

    /// Token-weighted TPOT (total decode time over total decode tokens, as
    /// guidellm reports it), in ns; `None` without multi-token responses.
    pub(crate) fn tpot_token_weighted_ns(&self) -> Option<f64> {
        (self.decode_tokens > 0).then(|| self.decode_ns as f64 / self.decode_tokens as f64)
    }
}

fn source_name(counts: &[u64], names: &[&'static str]) -> &'static str {
    let mut used = counts.iter().enumerate().filter(|(_, n)| **n > 0);
    match (used.next(), used.next()) {
        (None, _) => "none",
        (Some((i, _)), None) => names[i],
        _ => "mixed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(
        t_sched: u64,
        first: u64,
        last: u64,
        end: u64,
        usage: Option<u32>,
        events: u32,
    ) -> RequestSample {
        RequestSample {
            t_sched,
            t_send: t_sched + 10,
            t_first_token: first,
            t_last_token: last,
            t_end: end,
            completion_tokens: usage,
            prompt_tokens: Some(7),
            input_tokens: Some(7),
            input_source: InputCount::Usage,
            text_events: events,
            streamed: true,
            status: 200,
            ..Default::default()
        }
    }

    #[test]
    fn isl_issued_counts_failures_whose_length_was_known() {
        let mut b = Block::default();
        let mut known = ok(1000, 2010, 5010, 6000, Some(4), 4);
        known.input_source = InputCount::Tokenizer;
        known.input_tokens = Some(9);
        b.record(&known, []);
        let failed = RequestSample {
            error: Some(ErrorClass::HttpStatus),
            status: 503,
            ..known
        };
        b.record(&failed, []);
        // The usage of a success counts for our ISL, not for MLPerf's.
        b.record(&ok(1000, 2010, 5010, 6000, Some(4), 4), []);
        assert_eq!(b.isl.count(), 2);
        assert_eq!(b.isl_issued.count(), 2);
        assert_eq!(b.isl_issued.sum_ns(), 18);
    }

    #[test]
    fn records_definitions() {
        let mut b = Block::default();
        b.record(&ok(1000, 2010, 5010, 6000, Some(4), 4), [1000, 1000, 1000]);
        assert_eq!(b.completed, 1);
        assert_eq!(b.e2e.quantile_ns(0.5), Some(5000));
        assert_eq!(b.service.quantile_ns(0.5), Some(4990));
        assert_eq!(b.ttft.quantile_ns(0.5), Some(1000));
        assert_eq!(b.ttft_sched.quantile_ns(0.5), Some(1010));
        assert_eq!(b.tpot.quantile_ns(0.5), Some(1000));
        assert_eq!(b.itl.count(), 3);
        assert_eq!(b.output_tokens, 4);
        assert_eq!(b.input_tokens, 7);
        assert_eq!(b.output_source(), "usage");
        assert_eq!(b.input_source(), "usage");
        assert_eq!(b.isl.quantile_ns(0.5), Some(7));
        assert_eq!(b.osl.quantile_ns(0.5), Some(4));
        assert_eq!(b.tpot_token_weighted_ns(), Some(1000.0));
    }

    #[test]
    fn other_tools_series_and_goodput_counts_roll_up() {
        // Sent at 1010: first token 2010, last 5010, end 6000, 4 tokens.
        let s = ok(1000, 2010, 5010, 6000, Some(4), 4);
        let mut b = Block::default();
        b.record(&s, []);
        assert_eq!(b.first_send, 1010);
        assert_eq!(b.to_last_token.quantile_ns(0.5), Some(4000));
        // guidellm: (5010 − 1010) / 4 per token, four times.
        assert_eq!(b.tpot_incl_ttft_weighted.count(), 4);
        assert_eq!(b.tpot_incl_ttft_weighted.mean_ns(), Some(1000.0));
        assert_eq!(b.tpot_weighted.count(), 3);
        b.record_judged(
            &Judged {
                good: true,
                ..Judged::default()
            },
            4,
        );
        b.record_judged(
            &Judged {
                missed_e2e: true,
                ..Judged::default()
            },
            9,
        );
        let mut rolled = Block::default();
        rolled.merge(&b);
        rolled.merge(&b);
        let g = rolled.goodput;
        assert_eq!(
            (g.judged, g.good, g.good_output_tokens, g.missed_e2e),
            (4, 2, 8, 2)
        );
        assert_eq!(rolled.first_send, 1010);
        assert_eq!(rolled.to_last_token.count(), 2);
    }

    #[test]
    fn mlperf_tpot_is_the_stream_end_over_tokens_after_the_first_event() {
        let mut s = ok(1000, 2000, 5000, 8000, Some(4), 4);
        assert_eq!(s.tpot_mlperf_ns(), None, "no tokenizer count, no value");
        s.tokens_after_first = Some(3);
        // (t_end − t_first) / 3, not (t_last − t_first) / (usage − 1).
        assert_eq!(s.tpot_mlperf_ns(), Some(2000));
        s.tokens_after_first = Some(7);
        assert_eq!(s.tpot_mlperf_ns(), Some(857), "6000 / 7 rounded");
        let mut b = Block::default();
        b.record(&s, []);
        assert_eq!(b.tpot_mlperf.quantile_ns(0.5), Some(857));
        assert_eq!(b.tpot.quantile_ns(0.5), Some(1000));
        s.tokens_after_first = Some(0);
        assert_eq!(s.tpot_mlperf_ns(), None, "nothing after the first event");
        s.tokens_after_first = Some(3);
        s.streamed = false;
        assert_eq!(s.tpot_mlperf_ns(), None, "streams only");
        let mut rolled = Block::default();
        rolled.merge(&b);
        assert_eq!(rolled.tpot_mlperf.count(), 1);
    }

    #[test]
    fn failures_and_sources_roll_up() {
        let mut a = Block::default();
        a.record(&ok(100, 200, 300, 400, None, 2), [100]);
        let mut b = Block::default();
        b.record(
            &RequestSample {
                t_sched: 50,
                t_end: 900,
                error: Some(ErrorClass::HttpStatus),
                status: 503,
                ..Default::default()
            },
            [],
        );
        a.merge(&b);
        assert_eq!((a.completed, a.failed), (1, 1));
        assert_eq!(a.errors.status(503), 1);
        assert_eq!(a.output_tokens, 2);
        assert_eq!(a.output_source(), "events");
        assert_eq!((a.first_sched, a.last_end), (50, 900));
        assert_eq!(a.e2e.count(), 1);
        // MLPerf's latency counts the failure too.
        assert_eq!(a.latency_all.count(), 2);
        assert_eq!(a.latency_all.max_ns(), Some(850));
        // The last-issued request (t_sched 100) ended at 400.
        assert_eq!(a.loadgen_window_ns(), Some(350));
    }

    #[test]
    fn a_lost_worker_s_requests_have_no_latency() {
        let mut b = Block::default();
        let lost = RequestSample {
            t_sched: 5,
            t_end: 5,
            error: Some(ErrorClass::WorkerLost),
            ..Default::default()
        };
        b.record(&lost, []);
        assert_eq!((b.failed, b.latency_all.count()), (1, 0));
        assert_eq!(b.loadgen_window_ns(), None);
    }
}
