//! Requests the mock refuses, and why: the error to answer (status, kind,
//! message) and the checks on what a request asks for that can fail before
//! any token is produced. Kept apart from the connection's state machine so
//! that every refusal reads the same in every wire format.

use super::Settings;
use crate::server::formats::{
    DEFAULT_OUTPUT_TOKENS, Format, MAX_BODY_TOKENS, MAX_OUTPUT_TOKENS, Problem,
};
use crate::server::head::Status;

/// What a 401 says, in every format.
pub(super) const NO_KEY: &str =
    "invalid or missing API key; send 'Authorization: Bearer <key>' or 'x-api-key: <key>'";

/// An error to answer: its status, its kind, its message.
#[derive(Clone, Copy, Debug)]
pub(super) struct Failure<'m> {
    pub(super) status: Status,
    pub(super) problem: Problem,
    pub(super) message: &'m str,
}

impl<'m> Failure<'m> {
    /// The kind follows from the status for every error but the unknown
    /// model, which is built apart.
    pub(super) fn of(status: Status, message: &'m str) -> Self {
        let problem = match status {
            Status::Unauthorized => Problem::Unauthorized,
            Status::NotFound => Problem::NotFound,
            Status::TooManyRequests => Problem::RateLimited,
            Status::InternalError
            | Status::BadGateway
            | Status::Unavailable
            | Status::GatewayTimeout => Problem::Unavailable,
            _ => Problem::Invalid,
        };
        Failure {
            status,
            problem,
            message,
        }
    }
}

/// A request refused after parsing, with a message naming the cause.
#[derive(Debug)]
pub(super) struct Rejection {
    pub(super) status: Status,
    pub(super) problem: Problem,
    pub(super) message: String,
}

impl Rejection {
    pub(super) fn new(status: Status, problem: Problem, message: String) -> Self {
        Rejection {
            status,
            problem,
            message,
        }
    }
}

/// Output tokens of a response: the server's fixed number, else the
/// request's, else the default. A response that is not streamed is built
/// whole before it is sent, so it may hold at most `MAX_BODY_TOKENS`.
pub(super) fn output_tokens(
    s: &Settings,
    format: Format,
    asked: Option<u64>,
    stream: bool,
) -> Result<u32, Rejection> {
    let n = match (s.output_tokens, asked) {
        (Some(n), _) => n,
        (None, Some(m)) if m > u64::from(MAX_OUTPUT_TOKENS) => {
            return Err(Rejection::new(
                Status::BadRequest,
                Problem::Invalid,
                format!(
                    "{} is {m}, over this mock's limit of {MAX_OUTPUT_TOKENS}",
                    format.max_tokens_field()
                ),
            ));
        }
        (None, Some(m)) => m as u32,
        (None, None) => DEFAULT_OUTPUT_TOKENS,
    };
    if !stream && n > MAX_BODY_TOKENS {
        let asked_by = if s.output_tokens.is_some() {
            "--output-tokens"
        } else {
            format.max_tokens_field()
        };
        return Err(Rejection::new(
            Status::BadRequest,
            Problem::Invalid,
            format!(
                "{asked_by} is {n}, over this mock's limit of {MAX_BODY_TOKENS} \
                 for a response that is not streamed; ask for a stream"
            ),
        ));
    }
    Ok(n)
}
