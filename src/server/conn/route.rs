//! What a request is answered with, by its route: generation goes to
//! `respond`; the model list, the metrics page and the errors (unknown
//! path, wrong method, a request out of step) are written here.

use super::*;

impl Conn {
    pub(super) fn dispatch(
        &mut self,
        ctx: &mut Ctx<'_>,
        now: u64,
        head: &Head,
        body: &[u8],
    ) -> Next {
        match (head.route, head.method) {
            (Route::Generate(format), Method::Post) => self.generate(ctx, now, head, body, format),
            (Route::Models, Method::Get) => {
                if !head.authorized {
                    WorkerCounters::bump(&ctx.counters.unauthorized, 1);
                    self.error(
                        head,
                        None,
                        Failure::of(Status::Unauthorized, NO_KEY),
                        0,
                        b"",
                    );
                    return Next::Handled;
                }
                self.scratch.clear();
                openai::models_body(
                    &mut self.scratch,
                    &ctx.access.listed(),
                    ctx.settings.started_unix,
                );
                self.simple(head, Status::Ok, 0, b"");
                Next::Handled
            }
            (Route::Generate(format), _) => {
                let fail = Failure::of(Status::MethodNotAllowed, "method not allowed; use POST");
                self.error(head, Some(format), fail, 0, b"allow: POST\r\n");
                Next::Handled
            }
            // Like vLLM's, the metrics need no key: a monitoring scraper
            // rarely has one.
            (Route::Metrics, Method::Get) => {
                self.scratch.clear();
                let v = metrics::Values::of(&ctx.all.total(), ctx.settings.capacity);
                metrics::render(&mut self.scratch, ctx.settings.metrics_names, &v);
                self.reply(head, Status::Ok, metrics::CONTENT_TYPE, 0, b"");
                Next::Handled
            }
            (Route::Models | Route::Metrics, _) => {
                let fail = Failure::of(Status::MethodNotAllowed, "method not allowed; use GET");
                self.error(head, None, fail, 0, b"allow: GET\r\n");
                Next::Handled
            }
            (Route::Unknown, _) => {
                let msg = "unknown path; this server has POST /v1/chat/completions, \
                           POST /v1/completions, POST /generate, POST /v1/messages, \
                           GET /v1/models and GET /metrics";
                self.error(head, None, Failure::of(Status::NotFound, msg), 0, b"");
                Next::Handled
            }
        }
    }

    /// A JSON response whose body is in `scratch`.
    pub(super) fn simple(&mut self, head: &Head, status: Status, messages: u32, extra: &[u8]) {
        self.reply(head, status, head::JSON, messages, extra);
    }

    /// A response of `content_type` whose body is in `scratch`.
    pub(super) fn reply(
        &mut self,
        head: &Head,
        status: Status,
        content_type: &[u8],
        messages: u32,
        extra: &[u8],
    ) {
        head::write(
            &mut self.out,
            &ResponseHead {
                status,
                content_type,
                framing: Framing::Length(self.scratch.len()),
                messages,
                keep_alive: head.keep_alive,
                http10: head.http10,
                extra,
            },
        );
        self.out.extend_from_slice(&self.scratch);
        if !head.keep_alive {
            self.close_after = true;
        }
    }

    /// An error response in `format`'s error shape (OpenAI's when `None`).
    pub(super) fn error(
        &mut self,
        head: &Head,
        format: Option<Format>,
        fail: Failure<'_>,
        messages: u32,
        extra: &[u8],
    ) {
        self.scratch.clear();
        formats::error_body(
            format,
            &mut self.scratch,
            fail.problem,
            fail.status.code(),
            fail.message,
        );
        self.simple(head, fail.status, messages, extra);
    }

    /// An error after which the input cannot be trusted to be in step with
    /// request boundaries: answer, discard what is buffered, close.
    pub(super) fn reject_stream(&mut self, status: Status, message: &str) {
        let head = Head {
            len: 0,
            method: Method::Other,
            route: Route::Unknown,
            http10: false,
            keep_alive: false,
            body: Body::None,
            expect_continue: false,
            authorized: true,
        };
        self.error(&head, None, Failure::of(status, message), 0, b"");
        self.head = None;
        self.in_start = self.in_end;
        self.close_after = true;
    }
}
