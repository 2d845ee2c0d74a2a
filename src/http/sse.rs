//! Server-sent events (WHATWG HTML §9.2): splits a byte stream into events and
//! hands each one's `event` and `data` fields to a callback. An event wholly
//! inside one input slice with a single `data:` line is passed as a sub-slice
//! of the input (the common case: one chunk per event); anything split across
//! inputs, or with several `data:` lines, is assembled in buffers reused from
//! event to event.

/// One dispatched event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, empty when absent.
    pub event: &'a [u8],
    /// `data:` lines joined with `\n`, one leading space after the colon removed.
    pub data: &'a [u8],
}

/// Why the stream was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SseError {
    /// One event grew past the splitter's byte limit without ending.
    EventTooLarge,
}

/// Incremental SSE splitter.
#[derive(Debug)]
pub struct SseSplitter {
    _private: (),
}

impl SseSplitter {
    /// A splitter whose buffers are allocated up front for events up to
    /// `max_event` bytes; larger events are `EventTooLarge`.
    pub fn with_capacity(max_event: usize) -> Self {
        let _ = max_event;
        todo!("http helper")
    }

    /// Forgets any partial event, for the next response on the connection.
    pub fn reset(&mut self) {
        todo!("http helper")
    }

    /// Consumes all of `input`, calling `on_event` for each event that
    /// completes (a blank line after at least one `data` field). Lines may end
    /// in LF, CRLF or CR; comment lines (leading `:`) and unknown fields are
    /// ignored; an event with no `data` field is not dispatched.
    pub fn feed(
        &mut self,
        input: &[u8],
        on_event: impl FnMut(SseEvent<'_>),
    ) -> Result<(), SseError> {
        let _ = (input, on_event);
        todo!("http helper")
    }
}
