//! Fail fast: the run's first completions judged, once, for a setup that
//! cannot work. When the first `first` completed requests (warm-up
//! included) all failed with the same error, and that error is one load
//! cannot change — nothing listening, no route, no name, a TLS handshake
//! refused, HTTP 401, 403, 404 or 405 — and each of the run's endpoints
//! has failed so at least once, the run stops. One success, or two
//! kinds of failure, among them and the run goes on to its end; after them
//! nothing more is looked at, so the rest of the run pays one branch per
//! completion. The trade-off: a run that issues fewer than `first`
//! requests is never stopped (it ends soon anyway).

use crate::metrics::errors::ErrorClass;
use crate::metrics::observe::Finished;

/// What the first completions came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tripped {
    /// How many completions were judged.
    pub first: u64,
    pub class: ErrorClass,
    pub status: u16,
    /// The plan's endpoint the first of them went to.
    pub endpoint: u16,
    /// The server's (or the connection's) message of the first of them.
    pub message: Option<String>,
}

#[derive(Debug)]
enum State {
    /// Judging: `seen` completions so far, all failed as the first did.
    Watching { seen: u64, first: Option<Tripped> },
    /// The run goes on to its end.
    Off,
    /// Stopped; `told` once the loop has been told.
    Tripped { told: bool },
}

#[derive(Debug)]
pub(super) struct FailFast {
    first: u64,
    state: State,
    tripped: Option<Tripped>,
    /// Which endpoints have failed so far (`Plan::endpoints`): one dead
    /// endpoint of several does not stop a run the others serve.
    failed_at: Vec<bool>,
}

/// Whether a failure of `class` (with `status`) is one that more load, or
/// more time, cannot change.
pub(crate) fn fatal(class: ErrorClass, status: u16) -> bool {
    match class {
        ErrorClass::ConnectRefused
        | ErrorClass::ConnectError
        | ErrorClass::Dns
        | ErrorClass::TlsHandshake => true,
        ErrorClass::HttpStatus => matches!(status, 401 | 403 | 404 | 405),
        _ => false,
    }
}

impl FailFast {
    /// Judges the first `first` completions of a run over `endpoints`
    /// endpoints; `None`: never stops.
    pub(super) fn new(first: Option<u64>, endpoints: usize) -> FailFast {
        FailFast {
            failed_at: vec![false; endpoints],
            first: first.unwrap_or(0),
            state: match first {
                Some(n) if n > 0 => State::Watching {
                    seen: 0,
                    first: None,
                },
                _ => State::Off,
            },
            tripped: None,
        }
    }

    /// Whether completions are still being judged.
    #[inline]
    pub(super) fn watching(&self) -> bool {
        matches!(self.state, State::Watching { .. })
    }

    /// Judges one completion (call only while `watching`).
    pub(super) fn see(&mut self, f: &Finished<'_>) {
        let State::Watching { seen, first } = &mut self.state else {
            return;
        };
        let s = &f.sample;
        let Some(class) = s.error.filter(|&c| fatal(c, s.status)) else {
            self.state = State::Off;
            return;
        };
        match first {
            None => {
                *first = Some(Tripped {
                    first: self.first,
                    class,
                    status: s.status,
                    endpoint: f.endpoint,
                    message: f.message.clone(),
                })
            }
            Some(t) if t.class != class || t.status != s.status => {
                self.state = State::Off;
                return;
            }
            Some(_) => {}
        }
        *seen += 1;
        if let Some(e) = self.failed_at.get_mut(f.endpoint as usize) {
            *e = true;
        }
        if *seen >= self.first && self.failed_at.iter().all(|&e| e) {
            self.tripped = first.take();
            self.state = State::Tripped { told: false };
        }
    }

    /// True once, when the run has just been found to fail fast.
    pub(super) fn take_trip(&mut self) -> bool {
        match &mut self.state {
            State::Tripped { told } if !*told => {
                *told = true;
                true
            }
            _ => false,
        }
    }

    /// Why the run stopped, when it did.
    pub(super) fn tripped(&self) -> Option<&Tripped> {
        self.tripped.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::block::RequestSample;
    use std::borrow::Cow;

    fn done(error: Option<ErrorClass>, status: u16) -> Finished<'static> {
        at(error, status, 0)
    }

    fn at(error: Option<ErrorClass>, status: u16, endpoint: u16) -> Finished<'static> {
        Finished {
            sample: RequestSample {
                error,
                status,
                ..RequestSample::default()
            },
            seq: 0,
            conv_id: [0; 16],
            scenario: 0,
            endpoint,
            stage: Some(0),
            turn: 0,
            row: None,
            gaps: crate::metrics::observe::Gaps::InPlace(&[]),
            text: Cow::Borrowed(&[]),
            message: None,
        }
    }

    fn feed(ff: &mut FailFast, all: &[(Option<ErrorClass>, u16)]) {
        for &(e, s) in all {
            if ff.watching() {
                ff.see(&done(e, s));
            }
        }
    }

    #[test]
    fn the_first_completions_failing_alike_trip_it_once() {
        let mut ff = FailFast::new(Some(3), 1);
        feed(&mut ff, &[(Some(ErrorClass::HttpStatus), 404); 2]);
        assert!(!ff.take_trip());
        feed(&mut ff, &[(Some(ErrorClass::HttpStatus), 404)]);
        assert!(ff.take_trip());
        assert!(!ff.take_trip(), "told once");
        let t = ff.tripped().unwrap();
        assert_eq!(
            (t.class, t.status, t.first),
            (ErrorClass::HttpStatus, 404, 3)
        );
    }

    #[test]
    fn a_success_a_second_kind_or_a_load_error_lets_the_run_go_on() {
        let refused = (Some(ErrorClass::ConnectRefused), 0);
        for mix in [
            vec![refused, (None, 200), refused, refused],
            vec![
                refused,
                (Some(ErrorClass::HttpStatus), 404),
                refused,
                refused,
            ],
            vec![(Some(ErrorClass::HttpStatus), 503); 4],
            vec![(Some(ErrorClass::RequestTimeout), 0); 4],
        ] {
            let mut ff = FailFast::new(Some(3), 1);
            feed(&mut ff, &mix);
            assert!(!ff.take_trip() && ff.tripped().is_none(), "{mix:?}");
            assert!(!ff.watching());
        }
        let mut two = FailFast::new(Some(3), 2);
        for _ in 0..5 {
            two.see(&at(refused.0, 0, 1));
        }
        assert!(!two.take_trip(), "the other endpoint has not failed");
        two.see(&at(refused.0, 0, 0));
        assert!(two.take_trip(), "both have");
        let mut off = FailFast::new(None, 1);
        feed(&mut off, &[refused; 10]);
        assert!(off.tripped().is_none());
    }
}
