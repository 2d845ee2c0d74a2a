//! The worker's machine driven through the fake backend: real rings in
//! anonymous shared memory, real prebuilt requests, the built-in server's
//! own response bytes, and a script of what each connection sees in place
//! of sockets. Each test turns the loop as `Worker::run` does (`turn`) and
//! reads what the parent would: the completion records and the counters.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;

use super::backend::{Connect, Event, Fake, Io};
use super::pool::ConnState;
use super::*;
use crate::dataset::Sample;
use crate::engine::io::IoPlan;
use crate::engine::ports::LocalPorts;
use crate::engine::record::{CONV_END, Completion};
use crate::engine::requests::{RequestSet, RequestTemplate, Target};
use crate::engine::{EndpointPlan, ScenarioPlan};
use crate::http::endpoint::Endpoint;
use crate::plan::Limits;
use crate::protocol::Sampling;
use crate::server::conn::MALFORMED;
use crate::server::formats::{self, Format, Identity, Reply};
use crate::server::head::{self, Framing, ResponseHead};
use crate::shm::ring::{ByteConsumer, SlotProducer};
use crate::shm::run::{IssueSlot, Shared};
use crate::tls::{TlsClient, TlsSettings};

const MS: u64 = 1_000_000;
const TIMEOUT_NS: u64 = 60_000 * MS;
const CONNECT_NS: u64 = 10_000 * MS;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::from([127, 0, 0, 1]), port)
}

/// What a worker's setup borrows: the shared mapping, one scenario spread
/// over `ports.len()` endpoints, and its prebuilt request.
struct World {
    shared: Shared,
    endpoints: Vec<EndpointPlan>,
    scenarios: Vec<ScenarioPlan<'static>>,
    io: IoPlan,
}

fn world(workers: usize, ports: &[u16]) -> World {
    let proto = crate::protocol::find("openai-chat").unwrap();
    let urls: Vec<String> = ports
        .iter()
        .map(|p| format!("http://127.0.0.1:{p}/v1/chat/completions"))
        .collect();
    let parsed: Vec<Endpoint> = urls
        .iter()
        .map(|u| Endpoint::parse(u, "/v1/chat/completions").unwrap())
        .collect();
    let mut requests = RequestSet::default();
    requests.push(
        &Sample::prompt("hi"),
        &RequestTemplate {
            protocol: proto,
            endpoint: &parsed[0],
            model: "m",
            system: None,
            max_tokens: Some(4),
            stream: false,
            headers: &[],
            sampling: &Sampling::default(),
            extra_body: None,
            correlation_header: None,
            bust: false,
            prompt_only_isl: false,
        },
        None,
        &mut Vec::new(),
    );
    let further: Vec<Target> = parsed[1..].iter().map(Target::of).collect();
    requests.add_targets(&further);
    World {
        shared: Shared::new(workers, 1).unwrap(),
        endpoints: urls
            .iter()
            .zip(ports)
            .map(|(url, &p)| EndpointPlan {
                url: url.clone(),
                addr: Some(addr(p)),
                tls: None,
                keep_alive: true,
            })
            .collect(),
        scenarios: vec![ScenarioPlan::plain(
            "s",
            proto,
            (0..ports.len()).collect(),
            requests,
        )],
        io: IoPlan::default(),
    }
}

fn limits(connect_ns: u64) -> Limits {
    Limits {
        timeout_ns: TIMEOUT_NS,
        ttft_ns: None,
        connect_ns,
        drain_ns: 1_000 * MS,
        max_gaps: 16,
        max_output_text: 1 << 20,
    }
}

/// Worker `index` of `world` on the fake backend, with the parent's ends of
/// its rings.
struct Rig<'a> {
    w: Worker<'a>,
    issue: SlotProducer<IssueSlot>,
    done: ByteConsumer,
}

fn rig(world: &World, index: usize, max_conns: usize, warm: usize, limits: Limits) -> Rig<'_> {
    let setup = WorkerSetup {
        index,
        shared: &world.shared,
        scenarios: &world.scenarios,
        endpoints: &world.endpoints,
        max_conns,
        most_conns: max_conns,
        limits,
        warm_conns: warm,
        warm_endpoints: (0..world.endpoints.len()).collect(),
        keep_text: false,
        seed: 1,
        io: &world.io,
        ports: LocalPorts::default(),
    };
    let w = Worker::with_io(setup, Io::Fake(Box::default())).unwrap();
    let (issue, done) = world.shared.take_parent_ends(index).unwrap();
    Rig { w, issue, done }
}

impl Rig<'_> {
    fn fake(&mut self) -> &mut Fake {
        self.w.fake()
    }

    /// The parent issues request `seq`.
    fn issue(&mut self, seq: u64) {
        let slot = IssueSlot {
            seq,
            t_sched: now_ns(),
            ..IssueSlot::default()
        };
        self.issue.push(slot).unwrap();
    }

    /// One turn of the loop, in `Worker::run`'s order (timeouts are swept
    /// by the tests themselves, at a time they choose).
    fn turn(&mut self) {
        self.w.take_issues(now_ns());
        self.w.io_wait(Duration::ZERO).unwrap();
        self.w.io_dispatch();
        self.w.drain_pending();
        self.w.out.flush();
    }

    /// Turns until nothing is left to deliver.
    fn settle(&mut self) {
        for _ in 0..100 {
            self.turn();
            if self.fake().events.is_empty() && self.issue_empty() {
                return;
            }
        }
        panic!("the worker did not settle: {:?}", self.fake().events);
    }

    fn issue_empty(&mut self) -> bool {
        self.w.issue.is_empty()
    }

    /// The completion records pushed since the last call.
    fn records(&mut self) -> Vec<Completion> {
        let mut out = Vec::new();
        while let Some(c) = self
            .done
            .pop_with(|b| Completion::decode(b).unwrap().c)
            .unwrap()
        {
            out.push(c);
        }
        out
    }

    /// The slot the last send went out on.
    fn last_sent(&mut self) -> usize {
        self.fake().sent.last().unwrap().0
    }

    /// Connection `i` gets `bytes` on the next turn.
    fn bytes(&mut self, i: usize, bytes: Vec<u8>) {
        self.fake().events.push_back(Event::Bytes(i, bytes));
    }

    /// Request `seq` goes out on a connection and is answered with
    /// `answer`; returns the connection.
    fn serve(&mut self, seq: u64) -> usize {
        self.issue(seq);
        self.settle();
        let i = self.last_sent();
        self.bytes(i, answer(true));
        self.settle();
        i
    }

    fn counters(&self) -> &WorkerCounters {
        self.w.counters
    }
}

/// A non-streamed chat completion of 4 tokens, as the built-in server sends
/// it (11 prompt tokens, usage in the body).
fn answer(keep_alive: bool) -> Vec<u8> {
    let reply = Reply::new(Format::Chat, 4, 0, 11, false);
    let id = Identity {
        worker: 0,
        seq: 0,
        created: 1_700_000_000,
        model: "m",
    };
    let mut body = Vec::new();
    formats::body(&reply, &id, &mut Vec::new(), &mut body);
    let mut out = Vec::new();
    head::write(
        &mut out,
        &ResponseHead {
            status: head::Status::Ok,
            content_type: head::JSON,
            framing: Framing::Length(body.len()),
            messages: 0,
            keep_alive,
            http10: false,
            extra: b"",
        },
    );
    out.extend_from_slice(&body);
    out
}

/// A success of `answer`, on endpoint `ep`.
fn assert_success(c: &Completion, seq: u64, ep: u16) {
    assert_eq!(
        (c.seq, c.error, c.status, c.endpoint),
        (seq, ErrorClass::None as u8, 200, ep),
        "{c:?}"
    );
    assert_eq!((c.prompt_tokens, c.completion_tokens), (11, 4));
    assert_eq!(c.flags, CONV_END);
}

#[test]
fn a_request_on_a_stale_keep_alive_connection_is_resent_once_on_a_new_one() {
    let world = world(1, &[9001]);
    let mut r = rig(&world, 0, 4, 0, limits(CONNECT_NS));
    let a = r.serve(0);
    assert_success(&r.records()[0], 0, 0);
    assert_eq!(r.w.conns[a].state, ConnState::Idle);

    // The next request goes out on the idle connection, which the server
    // had closed: the close arrives before any response byte.
    r.issue(1);
    r.w.take_issues(now_ns());
    assert_eq!(r.last_sent(), a);
    r.fake().events.push_front(Event::Eof(a));
    r.settle();
    let b = r.last_sent();
    let sent = &r.fake().sent;
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[2].1, sent[1].1, "the same request, whole, again");
    assert_eq!(r.fake().opened.len(), 2);
    assert_eq!(r.fake().released, [a]);
    assert!(r.records().is_empty(), "no record for the stale attempt");
    r.bytes(b, answer(true));
    r.settle();
    let recs = r.records();
    assert_eq!(recs.len(), 1);
    assert_success(&recs[0], 1, 0);
    assert_eq!(r.counters().stale_retries.load(Ordering::Relaxed), 1);
    assert_eq!(r.counters().connections_opened.load(Ordering::Relaxed), 2);
}

#[test]
fn a_resent_request_that_meets_a_stale_connection_again_fails() {
    let world = world(1, &[9001]);
    let mut r = rig(&world, 0, 4, 0, limits(CONNECT_NS));
    // Two keep-alive connections, each reused once.
    r.issue(0);
    r.issue(1);
    r.settle();
    let (a, b) = (r.fake().sent[0].0, r.fake().sent[1].0);
    assert_ne!(a, b);
    r.bytes(a, answer(true));
    r.bytes(b, answer(true));
    r.settle();
    assert_eq!(r.records().len(), 2);

    r.issue(2);
    r.w.take_issues(now_ns());
    let first = r.last_sent();
    r.fake().events.push_front(Event::Eof(first));
    r.turn();
    // Re-sent at once on the other idle connection, closed as well.
    let second = r.last_sent();
    assert_eq!([first, second].map(|i| i == a || i == b), [true, true]);
    assert_ne!(first, second);
    r.fake().events.push_front(Event::Eof(second));
    r.settle();
    let recs = r.records();
    assert_eq!(recs.len(), 1);
    assert_eq!(
        (
            recs[0].seq,
            recs[0].error,
            recs[0].status,
            recs[0].t_first_byte
        ),
        (2, ErrorClass::Reset as u8, 0, 0)
    );
    assert_eq!(r.counters().stale_retries.load(Ordering::Relaxed), 1);
    assert_eq!(r.fake().opened.len(), 2, "no third connection");
}

#[test]
fn a_close_after_the_stale_window_or_after_a_response_byte_is_charged() {
    let world = world(1, &[9001]);
    let mut r = rig(&world, 0, 4, 0, limits(CONNECT_NS));
    let a = r.serve(0);
    r.records();

    // Sent a second ago (past any window), then closed.
    r.issue(1);
    r.settle();
    assert_eq!(
        (r.last_sent(), r.w.conns[a].state),
        (a, ConnState::Receiving)
    );
    r.w.conns[a].rx.t_send -= 1_000 * MS;
    r.fake().events.push_back(Event::Eof(a));
    r.settle();
    let recs = r.records();
    assert_eq!((recs[0].seq, recs[0].error), (1, ErrorClass::Reset as u8));

    // A response begun, then reset: the server had the request.
    let b = r.serve(2);
    r.records();
    r.issue(3);
    r.settle();
    assert_eq!(r.last_sent(), b);
    let whole = answer(true);
    r.bytes(b, whole[..whole.len() / 2].to_vec());
    r.fake().events.push_back(Event::Error(b, libc::ECONNRESET));
    r.settle();
    let recs = r.records();
    assert_eq!(
        (recs[0].seq, recs[0].error, recs[0].status),
        (3, ErrorClass::Reset as u8, 200)
    );
    assert_ne!(recs[0].t_first_byte, 0);
    assert_eq!(r.counters().stale_retries.load(Ordering::Relaxed), 0);
}

#[test]
fn an_idle_connection_the_server_closes_is_dropped_and_not_reused() {
    let world = world(1, &[9001]);
    let mut r = rig(&world, 0, 4, 0, limits(CONNECT_NS));
    let a = r.serve(0);
    let b = {
        r.issue(1);
        r.issue(2);
        r.settle();
        let b = r.last_sent();
        r.bytes(a, answer(true));
        r.bytes(b, answer(true));
        r.settle();
        b
    };
    assert_eq!(r.records().len(), 3);
    assert_eq!(r.w.idle[0].len(), 2);

    // The server's idle timeout closes one; stray bytes spoil the other.
    r.fake().events.push_back(Event::Eof(a));
    r.bytes(b, b"HTTP/1.1 408 Request Timeout\r\n\r\n".to_vec());
    r.settle();
    assert!(r.w.idle[0].is_empty());
    assert_eq!(r.fake().released, [a, b]);
    assert_eq!(r.w.conns[a].state, ConnState::Empty);
    assert_eq!(r.w.conns[b].state, ConnState::Empty);
    assert!(r.records().is_empty(), "no request rode on them");

    // The next request opens a new connection: nothing stale is tried.
    let opened = r.fake().opened.len();
    r.serve(3);
    assert_eq!(r.fake().opened.len(), opened + 1);
    assert_success(&r.records()[0], 3, 0);
    assert_eq!(r.counters().stale_retries.load(Ordering::Relaxed), 0);
}

#[test]
fn a_connection_without_keep_alive_is_closed_after_its_response() {
    let world = world(1, &[9001]);
    let mut r = rig(&world, 0, 4, 0, limits(CONNECT_NS));
    r.issue(0);
    r.settle();
    let a = r.last_sent();
    r.bytes(a, answer(false));
    r.settle();
    assert_success(&r.records()[0], 0, 0);
    assert_eq!(r.fake().released, [a]);
    assert!(r.w.idle[0].is_empty());
}

#[test]
fn warm_up_spreads_its_connections_over_the_endpoints_and_counts_them() {
    // Worker 1 of 2, 5 connections over 2 endpoints: 2 and 3, the odd one
    // to the endpoint this worker starts at (its index).
    let world = world(2, &[9001, 9002]);
    let mut r = rig(&world, 1, 8, 5, limits(CONNECT_NS));
    r.w.warm_up();
    let to = |r: &mut Rig<'_>, p| r.fake().opened.iter().filter(|o| o.1 == addr(p)).count();
    assert_eq!((to(&mut r, 9001), to(&mut r, 9002)), (2, 3));
    assert_eq!(r.w.idle[0].len() + r.w.idle[1].len(), 5);
    assert!(r.w.conns.iter().all(|c| !c.warm));
    let c = r.counters();
    assert_eq!(c.warm_started.load(Ordering::Relaxed), 5);
    assert_eq!(c.connections_opened.load(Ordering::Relaxed), 5);
    // Per endpoint: one batch started, one look at the events that
    // connected all of it.
    assert_eq!(c.warming.load(Ordering::Relaxed), 4);
    assert!(r.records().is_empty());
    assert_eq!(r.w.busy, 0);
}

#[test]
fn warm_up_starts_connections_in_batches_and_takes_each_batch_in_between() {
    let world = world(1, &[9001]);
    let n = 2 * super::pool::WARM_UP_BATCH + 88;
    let mut r = rig(&world, 0, n, n, limits(CONNECT_NS));
    r.w.warm_up();
    assert_eq!(r.fake().opened.len(), n);
    assert_eq!(r.w.idle[0].len(), n);
    let c = r.counters();
    assert_eq!(c.warm_started.load(Ordering::Relaxed), n as u64);
    // Three batches, each followed by one look at the events.
    assert_eq!(c.warming.load(Ordering::Relaxed), 6);
}

#[test]
fn warm_up_to_an_https_endpoint_without_tickets_opens_one_connection_first() {
    let mut world = world(1, &[9443]);
    let settings = TlsSettings {
        insecure: true,
        ..TlsSettings::default()
    };
    world.endpoints[0].tls = Some(TlsClient::new(&settings, "localhost").unwrap());
    // The first wave's handshake never finishes here: the warm-up gives up
    // on it after the connect timeout, and opens no more.
    let mut r = rig(&world, 0, 4, 4, limits(30 * MS));
    r.w.warm_up();
    assert_eq!(r.fake().opened.len(), 1);
    assert_eq!(r.counters().warm_started.load(Ordering::Relaxed), 1);
    let i = r.fake().opened[0].0;
    assert_eq!(r.w.conns[i].state, ConnState::Handshaking);
    assert!(r.w.conns[i].warm);
}

#[test]
fn warm_connections_that_fail_count_as_failed_and_mark_the_endpoint_down() {
    let world = world(1, &[9001]);
    let mut r = rig(&world, 0, 4, 2, limits(CONNECT_NS));
    r.fake()
        .connects
        .insert(addr(9001), Connect::Refuse(libc::ECONNREFUSED));
    r.w.warm_up();
    assert_eq!(r.fake().opened.len(), 2);
    assert_eq!(r.w.free.len(), 4, "the slots are free again");
    assert_eq!(r.w.conn_stats.failed.load(Ordering::Relaxed), 2);
    assert!(r.w.down_until[0] > now_ns());
    assert!(r.records().is_empty(), "no request rode on them");
    assert_eq!(r.w.busy, 0);
}

#[test]
fn each_failure_lands_in_its_error_class_and_counts() {
    let world = world(1, &[9001]);
    let mut r = rig(&world, 0, 4, 0, limits(CONNECT_NS));
    let stats = r.w.conn_stats;
    let ends = |r: &mut Rig<'_>| {
        let recs = r.records();
        assert_eq!(recs.len(), 1, "{recs:?}");
        let c = recs[0];
        // A single request's record always ends its conversation.
        assert_eq!((c.flags, c.endpoint), (CONV_END, 0));
        c
    };

    // Refused: a failed connection, nothing sent.
    r.fake()
        .connects
        .insert(addr(9001), Connect::Refuse(libc::ECONNREFUSED));
    r.issue(0);
    r.settle();
    let c = ends(&mut r);
    assert_eq!(
        (c.error, c.status, c.t_send),
        (ErrorClass::ConnectRefused as u8, 0, 0)
    );
    assert_eq!(stats.failed.load(Ordering::Relaxed), 1);
    assert!(r.fake().sent.is_empty());

    // Reset halfway through the response.
    r.fake().connects.insert(addr(9001), Connect::Accept);
    r.issue(1);
    r.settle();
    let i = r.last_sent();
    let whole = answer(true);
    r.bytes(i, whole[..whole.len() - 10].to_vec());
    r.fake().events.push_back(Event::Error(i, libc::ECONNRESET));
    r.settle();
    let c = ends(&mut r);
    assert_eq!((c.error, c.status), (ErrorClass::Reset as u8, 200));
    assert!(c.t_send > 0 && c.t_first_byte >= c.t_send);

    // Not HTTP.
    r.issue(2);
    r.settle();
    let i = r.last_sent();
    r.bytes(i, MALFORMED.to_vec());
    r.settle();
    let c = ends(&mut r);
    assert_eq!(c.error, ErrorClass::MalformedResponse as u8);

    // No response within the timeout.
    r.issue(3);
    r.settle();
    let i = r.last_sent();
    assert_eq!(r.w.conns[i].state, ConnState::Receiving);
    r.w.sweep(now_ns() + TIMEOUT_NS / 2);
    assert!(r.records().is_empty(), "not yet");
    r.w.sweep(now_ns() + TIMEOUT_NS + MS);
    r.w.out.flush();
    let c = ends(&mut r);
    assert_eq!((c.error, c.status), (ErrorClass::RequestTimeout as u8, 0));

    // No connection within the connect timeout.
    r.fake().connects.insert(addr(9001), Connect::Hang);
    r.issue(4);
    r.settle();
    let i = r.fake().opened.last().unwrap().0;
    assert_eq!(r.w.conns[i].state, ConnState::Connecting);
    r.w.sweep(now_ns() + CONNECT_NS + MS);
    r.w.out.flush();
    let c = ends(&mut r);
    assert_eq!(c.error, ErrorClass::ConnectTimeout as u8);

    assert_eq!(stats.failed.load(Ordering::Relaxed), 2);
    assert_eq!(r.counters().connections_opened.load(Ordering::Relaxed), 3);
    assert_eq!(r.w.busy, 0);
    assert_eq!(r.w.free.len(), 4, "every failed connection was closed");
}

#[test]
fn an_endpoint_that_refuses_is_passed_over_until_its_down_time_ends() {
    let world = world(1, &[9001, 9002]);
    let mut r = rig(&world, 0, 8, 0, limits(CONNECT_NS));
    r.fake()
        .connects
        .insert(addr(9001), Connect::Refuse(libc::ECONNREFUSED));
    // Worker 0 opens its first connection to the first endpoint.
    r.issue(0);
    r.settle();
    let recs = r.records();
    assert_eq!(
        (recs[0].error, recs[0].endpoint),
        (ErrorClass::ConnectRefused as u8, 0)
    );
    assert!(r.w.down_until[0] > now_ns());

    // In turn, the next would go to the first endpoint again; it is down.
    r.issue(1);
    r.settle();
    let i = r.last_sent();
    r.bytes(i, answer(true));
    r.settle();
    // One takes the idle connection, the other opens one.
    r.issue(2);
    r.issue(3);
    r.settle();
    for k in [1, 2] {
        let j = r.fake().sent[k].0;
        r.bytes(j, answer(true));
    }
    r.settle();
    let opened: Vec<SocketAddr> = r.fake().opened.iter().map(|o| o.1).collect();
    assert_eq!(opened, [addr(9001), addr(9002), addr(9002)]);
    for c in r.records() {
        assert_success(&c, c.seq, 1);
    }
    // Each request names the endpoint it went to.
    for (_, bytes) in &r.fake().sent {
        let text = String::from_utf8_lossy(bytes);
        assert!(text.contains("Host: 127.0.0.1:9002\r\n"), "{text}");
    }

    // Once its down time is over it takes its turn again (two requests
    // take the idle connections, the third opens one); a connect that
    // succeeds marks it up.
    r.fake().connects.insert(addr(9001), Connect::Accept);
    r.w.down_until[0] = now_ns() - 1;
    r.issue(4);
    r.issue(5);
    r.issue(6);
    r.settle();
    let opened: Vec<SocketAddr> = r.fake().opened[3..].iter().map(|o| o.1).collect();
    assert_eq!(opened, [addr(9001)]);
    assert_eq!(r.w.down_until[0], 0);
}

#[test]
fn when_every_endpoint_is_down_requests_go_in_turn_and_fail_there() {
    let world = world(1, &[9001, 9002]);
    let mut r = rig(&world, 0, 8, 0, limits(CONNECT_NS));
    for p in [9001, 9002] {
        r.fake()
            .connects
            .insert(addr(p), Connect::Refuse(libc::ECONNREFUSED));
    }
    for seq in 0..4 {
        r.issue(seq);
        r.settle();
    }
    let charged: Vec<(u8, u16)> = r.records().iter().map(|c| (c.error, c.endpoint)).collect();
    let refused = ErrorClass::ConnectRefused as u8;
    assert_eq!(
        charged,
        [(refused, 0), (refused, 1), (refused, 0), (refused, 1)]
    );
    assert_eq!(r.w.conn_stats.failed.load(Ordering::Relaxed), 4);
}

#[test]
fn a_raised_connection_share_opens_more_connections_within_the_budget() {
    let world = world(1, &[9001]);
    let mut r = rig(&world, 0, 2, 0, limits(CONNECT_NS));
    r.w.s.most_conns = 4;
    for seq in 0..5 {
        r.issue(seq);
    }
    r.settle();
    // Its own share: two out, three waiting.
    assert_eq!(r.fake().opened.len(), 2);
    assert_eq!(r.w.pending.len(), 3);

    // Another worker was lost: the parent raises the share past the
    // budget, and the worker grows to its budget only.
    world.shared.publish_conn_share(6);
    r.settle();
    assert_eq!(r.fake().opened.len(), 4);
    assert_eq!(r.w.conns.len(), 4);
    assert_eq!(r.w.pending.len(), 1);
    let slots: Vec<usize> = r.fake().sent.iter().map(|s| s.0).collect();
    assert_eq!(slots.len(), 4);
    for &i in &slots {
        r.bytes(i, answer(true));
    }
    r.settle();
    // The last one went out on a connection the others freed.
    assert!(r.w.pending.is_empty());
    assert_eq!(r.fake().opened.len(), 4);
    let i = r.last_sent();
    r.bytes(i, answer(true));
    r.settle();
    let recs = r.records();
    assert_eq!(recs.len(), 5);
    for (seq, c) in recs.iter().enumerate() {
        assert_success(c, c.seq, 0);
        assert!(c.seq < 5, "{seq}: {c:?}");
    }
}
