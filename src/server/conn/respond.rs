//! What a generation request is answered with: its fault decided by the
//! worker's schedule, then an error at once, a paced response in its wire
//! format, or the malformed bytes `--malformed-kind` names. The response's
//! tokens are the vocabulary's, or, with `--echo` or `--answers`, the chunks
//! of a reply taken from the prompt (`Said`).

use super::*;
use crate::server::answers::Choice;
use crate::server::formats::{Finish, prompt};

/// What a response's tokens say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Said {
    /// The vocabulary, as many tokens as asked.
    Vocab,
    /// A reply of this many chunks, in the connection's `text`.
    Text(u32),
    /// The vocabulary, for a prompt `--answers` has no reply to.
    Missed,
}

/// The reply to the prompt of `body`, its text put in `text`.
fn take_reply(
    replies: &Replies,
    format: Format,
    body: &[u8],
    text: &mut Option<Box<ReplyText>>,
) -> Result<Said, Rejection> {
    let prompt = prompt::extract(format, body)
        .map_err(|m| Rejection::new(Status::BadRequest, Problem::Invalid, m))?;
    Ok(match replies.choose(&prompt) {
        Choice::Text(reply) => {
            let t = text.get_or_insert_with(Box::default);
            t.set(reply);
            Said::Text(t.chunks())
        }
        Choice::Missed => Said::Missed,
    })
}

impl Conn {
    /// A generation request in any format: decides its fault, then answers
    /// at once (errors) or starts a paced response.
    pub(super) fn generate(
        &mut self,
        ctx: &mut Ctx<'_>,
        now: u64,
        head: &Head,
        body: &[u8],
        format: Format,
    ) -> Next {
        let c = ctx.counters;
        WorkerCounters::bump(&c.requests, 1);
        WorkerCounters::bump(c.format_requests(format), 1);
        // A missing key is refused before anything else, and outside the
        // fault schedule: the request never reaches the "model".
        if !head.authorized {
            WorkerCounters::bump(&c.unauthorized, 1);
            let fail = Failure::of(Status::Unauthorized, NO_KEY);
            self.error(head, Some(format), fail, 0, b"");
            return Next::Handled;
        }
        if head.body == Body::None {
            let fail = Failure::of(Status::LengthRequired, "Content-Length required");
            self.error(head, Some(format), fail, 0, b"");
            return Next::Handled;
        }
        let parsed = format
            .parse(body)
            .map_err(|m| Rejection::new(Status::BadRequest, Problem::Invalid, m))
            .and_then(|req| {
                if let Some(m) = req.model.as_deref()
                    && !ctx.access.serves(m)
                {
                    return Err(Rejection::new(
                        Status::NotFound,
                        Problem::UnknownModel,
                        format!("The model `{m}` does not exist."),
                    ));
                }
                let stream = req.stream && !ctx.settings.ignore_stream;
                let said = match ctx.replies.as_deref() {
                    Some(replies) => take_reply(replies, format, body, &mut self.text)?,
                    None => Said::Vocab,
                };
                // A reply has its own length; the request's cap cuts it.
                let n = match said {
                    Said::Text(chunks) => req
                        .max_tokens
                        .map_or(chunks, |m| m.min(u64::from(chunks)) as u32),
                    Said::Vocab | Said::Missed => {
                        output_tokens(&ctx.settings, format, req.max_tokens, stream)?
                    }
                };
                Ok((req, n, said))
            });
        if parsed.as_ref().is_ok_and(|(req, _, _)| req.stream) {
            WorkerCounters::bump(&c.streams, 1);
        }
        if parsed.as_ref().is_ok_and(|p| p.2 == Said::Missed) {
            WorkerCounters::bump(&c.answers_missed, 1);
        }
        // Every generation request with a body takes its turn in the fault
        // schedule, valid or not, so the counts stay exact; a fault replaces
        // whatever the answer would have been.
        let fault = ctx.faults.next();
        let messages = parsed.as_ref().map_or(0, |(req, _, _)| req.messages);
        match fault {
            Fault::Error(status) => {
                WorkerCounters::bump(&c.errors_injected, 1);
                let fail = Failure::of(status, "injected error");
                let extra: &[u8] = if status == Status::TooManyRequests {
                    b"retry-after: 1\r\n"
                } else {
                    b""
                };
                self.error(head, Some(format), fail, messages, extra);
                return Next::Handled;
            }
            Fault::Malformed => {
                WorkerCounters::bump(&c.malformed_injected, 1);
                return self.malformed(ctx, now, head, format);
            }
            Fault::Stall => WorkerCounters::bump(&c.stalls_injected, 1),
            Fault::Endless => WorkerCounters::bump(&c.endless_injected, 1),
            Fault::Reset | Fault::Inband | Fault::None => {}
        }
        let (req, n, said) = match parsed {
            Ok(p) => p,
            // The fault replaces the refusal: a request of the format's
            // defaults stands in for the one that could not be read.
            Err(_) if matches!(fault, Fault::Stall | Fault::Endless) => (
                Request {
                    model: None,
                    messages: 0,
                    prompt_tokens: 0,
                    stream: fault == Fault::Endless,
                    include_usage: false,
                    max_tokens: None,
                },
                0,
                Said::Vocab,
            ),
            Err(_) if fault == Fault::Reset => {
                WorkerCounters::bump(&c.resets_injected, 1);
                return Next::End(Outcome::Reset);
            }
            Err(_) if fault == Fault::Inband => {
                // Whether it wanted a stream is unknown: the error comes as
                // the body.
                WorkerCounters::bump(&c.inband_errors_injected, 1);
                self.scratch.clear();
                self.scratch.extend_from_slice(formats::inband_body(format));
                self.simple(head, Status::Ok, 0, b"");
                return Next::Handled;
            }
            Err(r) => {
                if r.problem == Problem::UnknownModel {
                    WorkerCounters::bump(&c.unknown_model, 1);
                }
                let fail = Failure {
                    status: r.status,
                    problem: r.problem,
                    message: &r.message,
                };
                self.error(head, Some(format), fail, 0, b"");
                return Next::Handled;
            }
        };
        let settings = ctx.settings;
        ctx.seq += 1;
        let id = Identity {
            worker: settings.worker,
            seq: ctx.seq,
            created: crate::clock::wall_ns() / 1_000_000_000,
            model: req
                .model
                .as_deref()
                .unwrap_or_else(|| ctx.access.default_model()),
        };
        // A response that never ends is a stream of as many tokens as a
        // count can say, whatever was asked.
        let endless = fault == Fault::Endless;
        let n = if endless { u32::MAX } else { n };
        let said = if endless { Said::Vocab } else { said };
        // A repeat is answered at once; an endless stream stays paced.
        let cached = !endless
            && ctx
                .cache
                .as_mut()
                .is_some_and(|cache| cache.repeat(format as u8, body));
        if cached {
            WorkerCounters::bump(&c.cache_hits, 1);
        }
        // A reply taken from the prompt is all answer, no reasoning.
        let reasoning = match said {
            Said::Text(_) => 0,
            Said::Vocab | Said::Missed => settings.reasoning,
        };
        let mut reply = Reply::new(
            format,
            n,
            reasoning,
            req.prompt_tokens,
            req.include_usage && !settings.no_usage,
        );
        reply.body_usage = !settings.no_usage;
        if said == Said::Text(n) {
            reply.finish = Finish::Stop;
        }
        let output = match (said, self.text.as_deref()) {
            (Said::Text(_), Some(t)) => Output::Text(t),
            _ => Output::Vocab,
        };
        let stream = endless || (req.stream && !settings.ignore_stream);
        // Chunked framing does not exist in HTTP/1.0: a stream to such a
        // client ends by closing the connection.
        let keep_alive = head.keep_alive && !(stream && head.http10);
        if !keep_alive {
            self.close_after = true;
        }
        let kind = if stream {
            let chunked = !head.http10;
            head::write(
                &mut self.out,
                &ResponseHead::stream(req.messages, keep_alive, head.http10),
            );
            let mut ev = Events::new(&mut self.out, &mut self.scratch, chunked);
            formats::start(&reply, &id, &mut self.prefix, &mut ev);
            Kind::Stream { chunked }
        } else {
            self.scratch.clear();
            if fault == Fault::Inband {
                self.scratch.extend_from_slice(formats::inband_body(format));
            } else {
                formats::output_body(&reply, &id, output, &mut self.prefix, &mut self.scratch);
            }
            self.deferred.clear();
            head::write(
                &mut self.deferred,
                &ResponseHead {
                    status: Status::Ok,
                    content_type: head::JSON,
                    framing: Framing::Length(self.scratch.len()),
                    messages: req.messages,
                    keep_alive,
                    http10: head.http10,
                    extra: b"",
                },
            );
            self.deferred.extend_from_slice(&self.scratch);
            Kind::Full
        };
        // Mid-stream faults strike after `--fault-after` tokens (half of
        // them by default); a reset or a stall replaces a whole body, while
        // an in-band error body simply comes when the stream's error event
        // would have.
        let at = settings.fault_after.map_or(n / 2, |k| k.min(n));
        let mid = |f: Fault| match (fault == f, kind) {
            (true, Kind::Stream { .. }) => Some(at),
            (true, _) => Some(0),
            (false, _) => None,
        };
        let reset_at = mid(Fault::Reset);
        let stall_at = mid(Fault::Stall);
        let inband_at = (fault == Fault::Inband).then_some(at);
        self.start_response(
            ctx.counters,
            Response {
                kind,
                reply,
                arrival: now,
                next: 0,
                reset_at,
                inband_at,
                stall_at,
                endless,
                cached,
                text: matches!(said, Said::Text(_)),
            },
        );
        match self.step(ctx, now) {
            Step::End(o) => Next::End(o),
            Step::Waiting | Step::Finished => Next::Handled,
        }
    }

    /// Answers with what `--malformed-kind` says a malformed response is.
    pub(super) fn malformed(
        &mut self,
        ctx: &mut Ctx<'_>,
        now: u64,
        head: &Head,
        format: Format,
    ) -> Next {
        self.close_after = true;
        let filler = match ctx.settings.malformed {
            MalformedKind::StatusLine => {
                self.out.extend_from_slice(MALFORMED);
                return Next::Handled;
            }
            MalformedKind::Garbage => {
                self.out.extend_from_slice(&GARBAGE);
                return Next::Handled;
            }
            MalformedKind::ChunkSize => {
                // One good event, then a size no 64-bit count can hold.
                head::write(&mut self.out, &ResponseHead::stream(0, false, false));
                write_chunk(&mut self.out, b"data: {\"choices\":[]}\n\n");
                self.out
                    .extend_from_slice(b"fffffffffffffffff\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
                return Next::Handled;
            }
            MalformedKind::HugeHead => {
                self.out
                    .extend_from_slice(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n");
                // 35 headers of 2 KiB: under any header-count limit, so only
                // the head's size is at fault.
                let line = HUGE_HEAD / 35;
                for i in 0..35u8 {
                    self.out.extend_from_slice(b"x-filler-");
                    self.out.push(b'a' + i % 26);
                    self.out.push(b'a' + i / 26);
                    self.out.extend_from_slice(b": ");
                    let pad = line - b"x-filler-aa: \r\n".len();
                    self.out.extend_from_slice(&FILL[..pad]);
                    self.out.extend_from_slice(b"\r\n");
                }
                self.out.extend_from_slice(b"\r\n");
                return Next::Handled;
            }
            MalformedKind::Html => {
                self.close_after = !head.keep_alive;
                head::write(
                    &mut self.out,
                    &ResponseHead {
                        status: Status::Ok,
                        content_type: b"text/html; charset=utf-8",
                        framing: Framing::Length(HTML_PAGE.len()),
                        messages: 0,
                        keep_alive: head.keep_alive,
                        http10: head.http10,
                        extra: b"",
                    },
                );
                self.out.extend_from_slice(HTML_PAGE);
                return Next::Handled;
            }
            MalformedKind::EndlessLine => {
                head::write(&mut self.out, &ResponseHead::stream(0, false, false));
                write_chunk(&mut self.out, ENDLESS_LINE);
                Kind::Filler { chunked: true }
            }
            MalformedKind::HugeLength => {
                self.out.extend_from_slice(HUGE_LENGTH_HEAD);
                Kind::Filler { chunked: false }
            }
        };
        self.start_response(
            ctx.counters,
            Response {
                kind: filler,
                reply: Reply::new(format, 0, 0, 0, false),
                arrival: now,
                next: 0,
                reset_at: None,
                inband_at: None,
                stall_at: None,
                endless: false,
                cached: false,
                text: false,
            },
        );
        match self.step(ctx, now) {
            Step::End(o) => Next::End(o),
            Step::Waiting | Step::Finished => Next::Handled,
        }
    }
}
