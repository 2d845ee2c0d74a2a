//! Whether a finished request was *good*: it succeeded and met every
//! `--slo` bound (DistServe's and vLLM's goodput). The one place the rule
//! is written; blocks, the timeline and the report all ask here.

use super::block::RequestSample;
use crate::plan::Slo;

/// A request judged against the SLO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Judged {
    pub good: bool,
    /// Bounds a successful request missed (all false for a failure).
    pub missed_ttft: bool,
    pub missed_tpot: bool,
    pub missed_e2e: bool,
}

/// Judges `s` against `slo`. TTFT is from the send; a response without a
/// streamed first token got its first token with the whole body, so its
/// TTFT is its service time. TPOT is the request's own (last − first token
/// over tokens − 1); a request with fewer than two output tokens has none
/// and meets a TPOT bound. e2e is t_end − t_sched.
pub(crate) fn judge(slo: &Slo, s: &RequestSample) -> Judged {
    if s.error.is_some() {
        return Judged::default();
    }
    let ttft = if s.t_first_token != 0 {
        s.t_first_token.saturating_sub(s.t_send)
    } else {
        s.t_end.saturating_sub(s.t_send)
    };
    let (tokens, _) = s.output_tokens();
    let tpot = (tokens >= 2 && s.t_first_token != 0)
        .then(|| s.t_last_token.saturating_sub(s.t_first_token) / (tokens - 1));
    let e2e = s.t_end.saturating_sub(s.t_sched);
    let missed_ttft = slo.ttft_ns.is_some_and(|b| ttft > b);
    let missed_tpot = matches!((slo.tpot_ns, tpot), (Some(b), Some(t)) if t > b);
    let missed_e2e = slo.e2e_ns.is_some_and(|b| e2e > b);
    Judged {
        good: !(missed_ttft || missed_tpot || missed_e2e),
        missed_ttft,
        missed_tpot,
        missed_e2e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::errors::ErrorClass;

    const MS: u64 = 1_000_000;

    fn sample(ttft_ms: u64, last_ms: u64, end_ms: u64, tokens: u32) -> RequestSample {
        RequestSample {
            t_sched: MS,
            t_send: 2 * MS,
            t_first_token: (2 + ttft_ms) * MS,
            t_last_token: (2 + last_ms) * MS,
            t_end: (2 + end_ms) * MS,
            completion_tokens: Some(tokens),
            streamed: true,
            status: 200,
            ..RequestSample::default()
        }
    }

    #[test]
    fn every_given_bound_must_hold() {
        let slo = Slo {
            ttft_ns: Some(100 * MS),
            tpot_ns: Some(10 * MS),
            e2e_ns: Some(1000 * MS),
        };
        // TTFT 50, TPOT (950 − 50) / 99 ≈ 9.09, e2e 951: good.
        assert!(judge(&slo, &sample(50, 950, 950, 100)).good);
        let slow_first = judge(&slo, &sample(150, 950, 950, 100));
        assert!(!slow_first.good && slow_first.missed_ttft && !slow_first.missed_tpot);
        let slow_decode = judge(&slo, &sample(50, 990, 990, 50));
        assert!(!slow_decode.good && slow_decode.missed_tpot);
        // e2e counts from the schedule: 1 ms of queueing tips it over.
        let late = judge(&slo, &sample(50, 1000, 1000, 1000));
        assert!(!late.good && late.missed_e2e && !late.missed_tpot);
        let mut failed = sample(1, 2, 3, 3);
        failed.error = Some(ErrorClass::Reset);
        assert_eq!(judge(&slo, &failed), Judged::default());
    }

    #[test]
    fn one_token_meets_tpot_and_a_body_is_its_own_first_token() {
        let slo = Slo {
            tpot_ns: Some(MS),
            ttft_ns: Some(20 * MS),
            ..Slo::default()
        };
        assert!(judge(&slo, &sample(5, 5, 30, 1)).good);
        let mut body = sample(0, 0, 30, 10);
        body.t_first_token = 0;
        body.streamed = false;
        let j = judge(&slo, &body);
        assert!(!j.good && j.missed_ttft, "{j:?}");
    }
}
