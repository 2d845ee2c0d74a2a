//! The server as processes: workers sharing a port, one worker holding
//! thousands of streams, bad configurations refused, and workers that stop
//! with their handle but not on SIGINT.

use std::io::{self, Read, Write};
use std::time::Duration;

use llmload::clock::now_ns;
use llmload::server::{ServerConfig, spawn};

use super::{Fixture, cfg, chat, chat_body, get, ms};

#[test]
fn two_workers_share_the_port() {
    let f = Fixture::new(ServerConfig {
        workers: 2,
        ..cfg()
    });
    let server = f.server.as_ref().unwrap();
    let pids = server.pids().to_vec();
    assert_eq!(pids.len(), 2);
    assert_ne!(pids[0], pids[1]);
    for _ in 0..64 {
        let mut c = f.client();
        assert_eq!(c.roundtrip(&chat(&chat_body(false, 1, false))).status, 200);
    }
    let per = f.server.as_ref().unwrap().worker_stats();
    assert!(per.iter().all(|w| w.requests > 0), "{per:?}");
    assert_eq!(per.iter().map(|w| w.requests).sum::<u64>(), 64);
    let s = f.stop();
    assert_eq!(s.completed, 64);
    for pid in pids {
        let gone = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None);
        assert_eq!(
            gone,
            Err(nix::errno::Errno::ESRCH),
            "worker {pid} still exists"
        );
    }
}

#[test]
fn one_worker_holds_two_thousand_streams() {
    use mio::net::TcpStream as MioStream;
    use mio::{Events, Interest, Poll, Token};
    const N: usize = 2000;
    const TOKENS: u32 = 16;

    if let Ok((soft, hard)) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        && soft < hard
    {
        let _ =
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, hard, hard);
    }
    let f = Fixture::new(ServerConfig {
        ttft: Duration::from_millis(20),
        tpot: Duration::from_millis(2),
        ..cfg()
    });
    let req = chat(&chat_body(true, TOKENS, true));
    let mut poll = Poll::new().unwrap();
    let mut conns: Vec<(MioStream, Vec<u8>, bool)> = Vec::with_capacity(N);
    for i in 0..N {
        let mut s = MioStream::connect(f.addr()).unwrap();
        poll.registry()
            .register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE)
            .unwrap();
        conns.push((s, Vec::new(), false));
    }
    let start = now_ns();
    let mut done = 0;
    let mut events = Events::with_capacity(4096);
    let mut tmp = vec![0u8; 65536];
    while done < N {
        assert!(
            now_ns() - start < 20_000_000_000,
            "only {done} of {N} streams finished"
        );
        poll.poll(&mut events, Some(Duration::from_millis(100)))
            .unwrap();
        for ev in events.iter() {
            let (s, buf, sent) = &mut conns[ev.token().0];
            if ev.is_writable() && !*sent {
                match s.write(&req) {
                    Ok(n) => {
                        assert_eq!(n, req.len());
                        *sent = true;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => {}
                    Err(e) => panic!("write: {e}"),
                }
            }
            if ev.is_readable() {
                loop {
                    match s.read(&mut tmp) {
                        Ok(0) => panic!("server closed a stream"),
                        Ok(n) => {
                            buf.extend_from_slice(&tmp[..n]);
                            if buf.ends_with(b"data: [DONE]\n\n\r\n0\r\n\r\n") {
                                done += 1;
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) => panic!("read: {e}"),
                    }
                }
            }
        }
    }
    let elapsed = now_ns() - start;
    eprintln!("{N} streams of {TOKENS} tokens in {:.1} ms", ms(elapsed));
    for (_, buf, _) in &conns {
        let text = std::str::from_utf8(buf).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
        assert_eq!(text.matches("data: ").count(), 1 + TOKENS as usize + 3);
    }
    let s = f.stop();
    assert_eq!((s.completed, s.streams), (N as u64, N as u64));
    assert_eq!(s.output_tokens, N as u64 * u64::from(TOKENS));
}

#[test]
fn bad_config_is_an_error_not_a_panic() {
    let bad = [
        ServerConfig {
            workers: 0,
            ..cfg()
        },
        ServerConfig {
            error_rate: 1.5,
            ..cfg()
        },
        ServerConfig {
            reset_rate: f64::NAN,
            ..cfg()
        },
        ServerConfig {
            malformed_rate: -0.1,
            ..cfg()
        },
        ServerConfig {
            pin: Some(100_000),
            ..cfg()
        },
        ServerConfig {
            output_tokens: Some(u32::MAX),
            ..cfg()
        },
        ServerConfig {
            inband_error_rate: 1.01,
            ..cfg()
        },
        ServerConfig {
            output_tokens: Some(4),
            reasoning_tokens: 5,
            ..cfg()
        },
        ServerConfig {
            reasoning_tokens: u32::MAX,
            ..cfg()
        },
        ServerConfig {
            served_models: vec![String::new()],
            ..cfg()
        },
        ServerConfig {
            error_statuses: vec![503, 418],
            ..cfg()
        },
        ServerConfig {
            error_burst: 0,
            ..cfg()
        },
        ServerConfig {
            stall_rate: 2.0,
            ..cfg()
        },
        ServerConfig {
            endless_rate: -1.0,
            ..cfg()
        },
        ServerConfig {
            max_connections: 0,
            ..cfg()
        },
        ServerConfig {
            input_budget: 1000,
            ..cfg()
        },
    ];
    for c in bad {
        let e = spawn(&c).unwrap_err();
        assert!(e.starts_with("--"), "{e}");
    }
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap();
    let e = spawn(&ServerConfig {
        listen: addr,
        ..cfg()
    })
    .unwrap_err();
    assert_eq!(
        e,
        format!("cannot listen on {addr}: address already in use")
    );
}

#[test]
fn dropping_the_handle_stops_the_workers() {
    let f = Fixture::new(ServerConfig {
        workers: 2,
        ..cfg()
    });
    let pids = f.server.as_ref().unwrap().pids().to_vec();
    drop(f);
    for pid in pids {
        let r = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None);
        assert_eq!(r, Err(nix::errno::Errno::ESRCH));
    }
}

#[test]
fn sigint_does_not_stop_a_worker() {
    let f = Fixture::new(cfg());
    let pid = f.server.as_ref().unwrap().pids()[0];
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(f.client().roundtrip(&get("/v1/models")).status, 200);
}
