//! The server against its own clients: heads and bodies over the caps (431,
//! 413), connections that idle or dribble (closed at the idle timeout),
//! more connections than the cap (503), large bodies beyond the worker's
//! input budget (503), non-streamed replies too large to build (400), and
//! connections queued while the worker is out of descriptors (accepted as
//! soon as one frees).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use llmload::clock::now_ns;
use llmload::server::ServerConfig;

use super::client::Client;
use super::{Fixture, cfg, chat, chat_body, ms, post};
use crate::util::{ServeProcess, have, raise_nofile, read_to_close};

#[test]
fn a_70_kib_head_gets_431_then_a_clean_close() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let filler = "a".repeat(70 * 1024);
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nX-Filler: {filler}\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    c.send(req.as_bytes());
    let r = c.response();
    assert_eq!(r.status, 431);
    assert_eq!(r.header("connection"), Some("close"));
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("64 KiB"), "{msg}");
    // The unread rest of the head does not turn the close into a reset.
    assert!(c.closed_cleanly(), "expected FIN after the 431");
    let s = f.stop();
    assert_eq!((s.too_large, s.requests), (1, 0));
}

#[test]
fn a_65_mib_content_length_gets_413_naming_the_cap() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let n = 65u64 << 20;
    c.send(
        format!("POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Length: {n}\r\n\r\n{{")
            .as_bytes(),
    );
    let r = c.response();
    assert_eq!(r.status, 413);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert_eq!(
        msg,
        format!("request body of {n} bytes is over this server's limit of 67108864 bytes")
    );
    // The client goes on sending its body for a while: the server drains
    // it and closes cleanly rather than resetting.
    let chunk = vec![b' '; 256 * 1024];
    for _ in 0..8 {
        if c.s.write_all(&chunk).is_err() {
            break;
        }
    }
    c.s.shutdown(Shutdown::Write).unwrap();
    assert!(c.closed_cleanly(), "expected FIN after the 413");
    assert_eq!(f.stop().too_large, 1);
}

#[test]
fn idle_and_dribbling_connections_close_at_the_idle_timeout() {
    let timeout = Duration::from_millis(400);
    let f = Fixture::new(ServerConfig {
        idle_timeout: timeout,
        ..cfg()
    });
    let start = Instant::now();
    // Silent from the start.
    let mut idle = TcpStream::connect(f.addr()).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // One byte of a head every 50 ms: never a whole request.
    let mut drip = TcpStream::connect(f.addr()).unwrap();
    drip.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    // A keep-alive client busy for four timeouts is left alone.
    let mut busy = f.client();
    let head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\n";
    let mut sent = 0;
    let mut drip_closed = None;
    while start.elapsed() < timeout * 4 {
        assert_eq!(
            busy.roundtrip(&chat(&chat_body(false, 1, false))).status,
            200
        );
        if drip_closed.is_none() {
            if drip.write_all(&head[sent % head.len()..][..1]).is_err() {
                drip_closed = Some(start.elapsed());
            }
            sent += 1;
            let mut b = [0u8; 16];
            match drip.read(&mut b) {
                Ok(0) => drip_closed = Some(start.elapsed()),
                Ok(n) => panic!("the dribbler got an answer: {:?}", &b[..n]),
                Err(_) => {}
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let drip_closed = drip_closed.expect("the dribbling client was closed");
    assert!(
        drip_closed >= timeout && drip_closed < timeout * 3,
        "dribbler closed after {drip_closed:?}"
    );
    let (clean, got) = read_to_close(&mut idle);
    assert!(clean && got.is_empty(), "{clean} {got:?}");
    assert!(start.elapsed() >= timeout);
    let s = f.stop();
    assert_eq!(s.timed_out, 2, "{s:?}");
    assert!(s.completed >= 10, "{s:?}");
}

#[test]
fn a_stream_outlasting_the_idle_timeout_is_not_cut() {
    let f = Fixture::new(ServerConfig {
        idle_timeout: Duration::from_millis(100),
        tpot: Duration::from_millis(10),
        ..cfg()
    });
    let mut c = f.client();
    let r = c.roundtrip(&chat(&chat_body(true, 40, false)));
    assert_eq!(r.status, 200);
    assert_eq!(r.events().last().map(String::as_str), Some("[DONE]"));
    assert_eq!(f.stop().timed_out, 0);
}

#[test]
fn a_slow_reader_is_kept_and_a_stopped_one_is_closed() {
    let timeout = Duration::from_millis(400);
    let f = Fixture::new(ServerConfig {
        idle_timeout: timeout,
        ..cfg()
    });
    // Streams far larger than the sockets' buffers, sent as fast as read.
    // The server sees a reader's progress only as its socket drains by a
    // good part of its buffer (a few MB on loopback), so the reader keeps
    // up a few MB/s.
    let req = chat(&chat_body(true, 200_000, false));
    let mut slow = f.client();
    slow.send(&req);
    let mut stopped = f.client();
    stopped.send(&req);
    let start = Instant::now();
    let mut tmp = vec![0u8; 64 * 1024];
    let mut got = 0;
    while start.elapsed() < timeout * 4 {
        let n = slow.s.read(&mut tmp).unwrap();
        assert!(n > 0, "the slow reader was closed after {got} bytes");
        got += n;
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(slow);
    // The reader that stopped has been closed (the end of what the
    // sockets held, then FIN).
    stopped
        .s
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let (_, held) = read_to_close(&mut stopped.s);
    assert!(!held.is_empty());
    let s = f.stop();
    assert_eq!(s.timed_out, 1, "{s:?}");
}

#[test]
fn idle_sockets_and_a_slowloris_do_not_delay_a_stream() {
    let limit = raise_nofile();
    let idle_n = 2000.min(limit.saturating_sub(200) as usize);
    let ttft = Duration::from_millis(50);
    let f = Fixture::new(ServerConfig { ttft, ..cfg() });
    let idle: Vec<TcpStream> = (0..idle_n)
        .map(|_| TcpStream::connect(f.addr()).unwrap())
        .collect();
    let mut slow = TcpStream::connect(f.addr()).unwrap();
    let head = chat(&chat_body(true, 4, false));
    // Half a request, a byte at a time, while another client is served.
    for b in &head[..20] {
        slow.write_all(&[*b]).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut c = f.client();
    let sent = c.send(&chat(&chat_body(true, 4, false)));
    let r = c.response();
    for b in &head[20..40] {
        slow.write_all(&[*b]).unwrap();
    }
    assert_eq!(r.status, 200);
    let first = r.chunks[1].1;
    let took = first - sent;
    eprintln!(
        "first token after {:.1} ms with {idle_n} idle sockets",
        ms(took)
    );
    assert!(took >= ttft.as_nanos() as u64, "{:.1} ms", ms(took));
    assert!(
        took < (ttft + Duration::from_millis(250)).as_nanos() as u64,
        "first token after {:.1} ms",
        ms(took)
    );
    drop(idle);
    let s = f.stop();
    assert_eq!((s.completed, s.timed_out), (1, 0));
}

#[test]
fn connections_over_the_cap_get_503_and_the_cap_frees() {
    let f = Fixture::new(ServerConfig {
        max_connections: 3,
        ..cfg()
    });
    let mut held: Vec<Client> = (0..3).map(|_| f.client()).collect();
    for c in &mut held {
        assert_eq!(c.roundtrip(&chat(&chat_body(false, 1, false))).status, 200);
    }
    let mut over = f.client();
    over.send(&chat(&chat_body(false, 1, false)));
    let r = over.response();
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.header("connection"), Some("close"));
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("limit of 3 connections"), "{msg}");
    assert!(over.closed_cleanly());
    // One leaves; the next is served.
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut c = f.client();
        let r = c.roundtrip(&chat(&chat_body(false, 1, false)));
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 503);
        assert!(Instant::now() < deadline, "the cap never freed");
        std::thread::sleep(Duration::from_millis(10));
    }
    let s = f.stop();
    assert!(s.over_capacity >= 1, "{s:?}");
}

/// A chat request whose body is `len` bytes (a long prompt).
fn big_chat(len: usize) -> Vec<u8> {
    let frame = r#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":""}]}"#;
    let prompt = "w ".repeat((len - frame.len()) / 2);
    let body = format!(
        r#"{{"model":"m","max_tokens":1,"messages":[{{"role":"user","content":"{prompt}"}}]}}"#
    );
    post("/v1/chat/completions", &body, "")
}

#[test]
fn large_bodies_share_the_input_budget() {
    let budget = 1u64 << 20;
    let f = Fixture::new(ServerConfig {
        input_budget: budget,
        ..cfg()
    });
    let a_req = big_chat(700 * 1024);
    // A holds most of the budget with a body still arriving.
    let mut a = f.client();
    a.send(&a_req[..a_req.len() / 2]);
    std::thread::sleep(Duration::from_millis(50));
    // B's body would take the budget past its limit: refused at once.
    let mut b = f.client();
    let b_req = big_chat(700 * 1024);
    let head_end = b_req.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    b.send(&b_req[..head_end]);
    let r = b.response();
    assert_eq!(r.status, 503);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("input budget of 1048576 bytes"), "{msg}");
    // A finishes and is answered; its buffer, and the budget, are given
    // back, so the next large body is taken.
    a.send(&a_req[a_req.len() / 2..]);
    assert_eq!(a.response().status, 200);
    let mut c = f.client();
    assert_eq!(c.roundtrip(&big_chat(700 * 1024)).status, 200);
    // A body over the whole budget is 413, naming the budget as the cap.
    let mut d = f.client();
    d.send(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n");
    let r = d.response();
    assert_eq!(r.status, 413);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("limit of 1048576 bytes"), "{msg}");
    let s = f.stop();
    assert_eq!((s.over_budget, s.too_large, s.completed), (1, 1, 2));
}

#[test]
fn non_streamed_replies_are_capped_streams_are_not() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let r = c.roundtrip(&chat(&chat_body(false, 200_000, false)));
    assert_eq!(r.status, 400);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        msg.contains("200000") && msg.contains("131072") && msg.contains("stream"),
        "{msg}"
    );
    // The same length streamed starts at once; its client leaves early.
    c.send(&chat(&chat_body(true, 200_000, false)));
    let (status, _) = c.head();
    assert_eq!(status, 200);
    drop(c);
    let s = f.stop();
    assert_eq!(s.completed, 0);
}

#[test]
fn queued_connections_are_accepted_once_descriptors_free() {
    if !have("prlimit") {
        eprintln!("skipped: the prlimit binary (util-linux) is not available");
        return;
    }
    // 64 descriptors: a few for the worker itself, the rest for clients.
    let server = ServeProcess::start(&["prlimit", "--nofile=64:64"], &["--workers", "1"]);
    let hogs: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(server.addr).unwrap())
        .collect();
    // Queued behind the hogs, while the worker is out of descriptors.
    let mut late = Client::connect(server.addr);
    late.s
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let sent = late.send(&chat(&chat_body(false, 1, false)));
    std::thread::sleep(Duration::from_millis(100));
    drop(hogs);
    let r = late.response();
    assert_eq!(r.status, 200);
    eprintln!("answered {:.1} ms after the send", ms(now_ns() - sent));
    let s = server.stop();
    assert!(s["accept_failures"].as_u64().unwrap() >= 1, "{s}");
    assert_eq!(s["completed"], 1);
}
