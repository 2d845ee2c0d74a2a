//! Token pacing: every output token leaves at arrival + TTFT + k·TPOT in
//! every format, measured from the client's side.

use std::time::Duration;

use llmload::clock::now_ns;
use llmload::server::ServerConfig;
use llmload::server::formats::Format;

use super::client::Client;
use super::{Fixture, cfg, chat, chat_body, gen_req, ms, stream_frame};
use crate::util::ServeProcess;

/// One timed exchange: when the response head (and any arrival events)
/// came, per output token its lateness against the schedule
/// `sent + ttft + k*tpot` (`sent`: the client wrote its last byte), whether
/// anything came before its time counted from before the write (which no
/// load can cause), and the non-streamed response's lateness.
struct Timing {
    head: u64,
    late: Vec<i64>,
    gaps: Vec<u64>,
    body_late: i64,
    early: bool,
}

fn timed_attempt(c: &mut Client, format: Format, tokens: u32) -> Timing {
    let schedule = |k: u64| 50_000_000 + 5_000_000 * k;
    let (lead, trail) = stream_frame(format);
    let before = now_ns();
    let sent = c.send(&gen_req(format, true, tokens, false));
    let r = c.response();
    let times: Vec<u64> = r.chunks.iter().map(|(_, t)| *t).collect();
    assert_eq!(times.len(), lead + tokens as usize + trail, "{format:?}");
    let content = &times[lead..lead + tokens as usize];
    let mut early = (0..content.len()).any(|k| content[k] < before + schedule(k as u64));
    let late = (0..content.len())
        .map(|k| content[k] as i64 - (sent + schedule(k as u64)) as i64)
        .collect();
    let gaps = content.windows(2).map(|w| w[1] - w[0]).collect();
    let head = times[..lead].last().copied().unwrap_or(r.head_at) - sent;

    let before_body = now_ns();
    let sent_body = c.send(&gen_req(format, false, tokens, false));
    assert_eq!(c.response().status, 200);
    let due = schedule(u64::from(tokens) - 1);
    early |= c.stamp < before_body + due;
    Timing {
        head,
        late,
        gaps,
        body_late: c.stamp as i64 - (sent_body + due) as i64,
        early,
    }
}

#[test]
fn token_timing_is_exact_in_every_format() {
    // --ttft 50ms --tpot 5ms: token k leaves at arrival + 50 + 5k ms in
    // every format. The client's clock starts when it has written the last
    // request byte, a few microseconds before the server's arrival.
    const TOKENS: u32 = 8;
    const ATTEMPTS: usize = 8;
    let f = Fixture::new(ServerConfig {
        ttft: Duration::from_millis(50),
        tpot: Duration::from_millis(5),
        ..cfg()
    });
    let mut c = f.client();
    c.roundtrip(&chat(&chat_body(true, 1, false)));
    'formats: for format in Format::ALL {
        let mut log = Vec::new();
        for attempt in 1..=ATTEMPTS {
            let t = timed_attempt(&mut c, format, TOKENS);
            let line = format!(
                "{format:?} attempt {attempt}: head after {:.3} ms; token lateness (ms) {:?}; \
                 gaps (ms) {:?}; body lateness {:.3} ms",
                ms(t.head),
                t.late
                    .iter()
                    .map(|&l| format!("{:.3}", l as f64 / 1e6))
                    .collect::<Vec<_>>(),
                t.gaps
                    .iter()
                    .map(|&g| format!("{:.3}", ms(g)))
                    .collect::<Vec<_>>(),
                t.body_late as f64 / 1e6
            );
            eprintln!("{line}");
            assert!(!t.early, "something left before its time: {line}");
            log.push(line);
            // Head and arrival events at once; first token at 50 ms (+2 for
            // the client's side); each gap 5 ± 1 ms; no token or body more
            // than 2 ms late, so nothing drifts.
            let strict = t.head < 2_000_000
                && t.late[0] <= 2_000_000
                && t.gaps.iter().all(|g| (4_000_000..=6_000_000).contains(g))
                && t.late.iter().all(|&l| l <= 2_000_000)
                && t.body_late <= 2_000_000;
            if strict {
                continue 'formats;
            }
            // On a busy machine a descheduled client or worker delays single
            // tokens (the next one is on time again); try again.
        }
        panic!("no attempt met the timing tolerances:\n{}", log.join("\n"));
    }
}

/// `serve --cache-repeats`: a body the worker has seen is answered at once,
/// every token with no TTFT or TPOT, streamed or not; a body not seen
/// before keeps the pacing; the final counters line counts the repeats.
#[test]
fn cache_repeats_answers_a_seen_body_at_once() {
    const TTFT: u64 = 100_000_000;
    const TPOT: u64 = 5_000_000;
    const TOKENS: usize = 8;
    let server = ServeProcess::start(
        &[],
        &["--ttft", "100ms", "--tpot", "5ms", "--cache-repeats"],
    );
    let mut c = Client::connect(server.addr);
    let (lead, trail) = stream_frame(Format::Chat);
    // The first and last content tokens, from the client's send.
    let mut stream = |body: &str| {
        let sent = c.send(&chat(body));
        let r = c.response();
        assert_eq!(r.status, 200);
        assert_eq!(r.chunks.len(), lead + TOKENS + trail);
        let at = |k: usize| r.chunks[lead + k].1 - sent;
        (at(0), at(TOKENS - 1))
    };
    let body = chat_body(true, TOKENS as u32, false);
    let (first, last) = stream(&body);
    assert!(
        first >= TTFT - 1_000_000,
        "first sighting paced: {}",
        ms(first)
    );
    assert!(last >= TTFT + 7 * TPOT - 1_000_000, "{}", ms(last));
    let (first, last) = stream(&body);
    assert!(
        last < TTFT / 4,
        "a repeat comes at once: first token {} ms, last {} ms",
        ms(first),
        ms(last)
    );
    let other = body.replace("one two three", "four five six");
    let (first, _) = stream(&other);
    assert!(
        first >= TTFT - 1_000_000,
        "a new body is paced: {}",
        ms(first)
    );
    let (_, last) = stream(&other);
    assert!(last < TTFT / 4, "{}", ms(last));

    // A non-streamed body comes with its last token: paced, then at once.
    let plain = chat(&chat_body(false, TOKENS as u32, false));
    let mut whole = || {
        let sent = c.send(&plain);
        assert_eq!(c.response().status, 200);
        c.stamp - sent
    };
    let paced = whole();
    assert!(paced >= TTFT + 7 * TPOT - 1_000_000, "{}", ms(paced));
    let cached = whole();
    assert!(cached < TTFT / 4, "{}", ms(cached));

    drop(c);
    let s = server.stop();
    assert_eq!(s["cache_hits"], 3, "{s}");
    assert_eq!(s["completed"], 6, "{s}");
}
