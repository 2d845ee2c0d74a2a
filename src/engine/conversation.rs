//! Multi-turn conversations, run by the worker that owns them: each turn's
//! request is built from the whole history with the previous assistant reply
//! fed back, so it cannot be serialized before the run. This is the one
//! place a worker builds request bytes; it reuses the conversation's buffers
//! and the connection's write buffer, but serializing a growing JSON body
//! allocates inside serde_json — a cost paid once per turn, at LLM rates.
//! Also here: the per-conversation UUID that busts prompt caches and joins
//! client records to server logs.

use serde_json::{Map, Value};

use crate::http::request::write_request;
use crate::protocol::{BodySpec, Message, Protocol, Sampling};
use crate::rng::Rng;

/// Where a conversation's user turns come from.
#[derive(Clone, Debug)]
pub enum TurnSource {
    /// Turn k says `script[k]` (cycling past its end).
    Scripted(Vec<String>),
    /// The first turn is prompt `sample`; later turns are drawn at random.
    Pool(Vec<String>),
    /// Conversation `sample` of a dataset: its user turns, in order.
    Conversations(Vec<Vec<String>>),
}

impl TurnSource {
    /// The user message of turn `turn` (from 0) of a conversation started
    /// from `sample`; `None` when a dataset conversation has no more turns.
    pub fn user_turn<'s>(&'s self, sample: u32, turn: u16, rng: &mut Rng) -> Option<&'s str> {
        match self {
            TurnSource::Scripted(script) => {
                Some(&script[(sample as usize + turn as usize) % script.len()])
            }
            TurnSource::Pool(pool) => {
                let i = if turn == 0 {
                    sample as usize % pool.len()
                } else {
                    rng.below(pool.len() as u64) as usize
                };
                Some(&pool[i])
            }
            TurnSource::Conversations(convs) => convs
                .get(sample as usize % convs.len())
                .and_then(|c| c.get(turn as usize))
                .map(String::as_str),
        }
    }

    /// Samples the parent may pick from.
    pub fn len(&self) -> usize {
        match self {
            TurnSource::Scripted(_) => 1,
            TurnSource::Pool(p) => p.len(),
            TurnSource::Conversations(c) => c.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Turns available from `sample` (dataset conversations end early).
    pub fn max_turns(&self, sample: u32) -> Option<u16> {
        match self {
            TurnSource::Conversations(c) => c
                .get(sample as usize % c.len().max(1))
                .map(|t| t.len().min(u16::MAX as usize) as u16),
            _ => None,
        }
    }
}

/// What every turn of a scenario's conversations shares.
#[derive(Clone, Debug)]
pub struct ConversationTemplate {
    pub host: String,
    pub path: String,
    pub model: String,
    pub system: Option<String>,
    pub max_tokens: Option<u32>,
    pub stream: bool,
    pub sampling: Sampling,
    pub extra_body: Option<Map<String, Value>>,
    /// Every header but the correlation one (auth, protocol, user headers).
    pub headers: Vec<(String, String)>,
    /// Header carrying the conversation id, if any.
    pub correlation_header: Option<String>,
    /// Put the conversation id in front of the first user message.
    pub bust: bool,
    pub turns: TurnSource,
}

/// A conversation in progress on a worker.
#[derive(Debug, Default)]
pub struct Conv {
    pub scenario: u16,
    pub stage: u16,
    pub sample: u32,
    pub seq: u64,
    pub id: [u8; 16],
    /// Turns sent so far.
    pub turn: u16,
    pub turns: u16,
    pub history: Vec<Message>,
}

impl ConversationTemplate {
    /// Appends turn `conv.turn`'s user message to the history and writes the
    /// whole request into `out`; false when the source has no such turn.
    pub fn next_request(
        &self,
        protocol: &dyn Protocol,
        conv: &mut Conv,
        rng: &mut Rng,
        body: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> bool {
        let Some(text) = self.turns.user_turn(conv.sample, conv.turn, rng) else {
            return false;
        };
        let content = if conv.turn == 0 && self.bust {
            format!("{} {text}", uuid_text(&conv.id))
        } else {
            text.to_string()
        };
        conv.history.push(Message::user(content));
        body.clear();
        protocol.build_body(
            &BodySpec {
                model: &self.model,
                system: self.system.as_deref(),
                messages: &conv.history,
                input_tokens: None,
                max_tokens: self.max_tokens,
                stream: self.stream,
                sampling: &self.sampling,
                extra_body: self.extra_body.as_ref(),
            },
            body,
        );
        let id = uuid_text(&conv.id);
        let mut headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if let Some(h) = &self.correlation_header {
            headers.push((h.as_str(), id.as_str()));
        }
        out.clear();
        write_request(out, "POST", &self.host, &self.path, &headers, body);
        true
    }
}

/// A random UUID v4.
pub fn new_uuid(rng: &mut Rng) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&rng.next_u64().to_be_bytes());
    b[8..].copy_from_slice(&rng.next_u64().to_be_bytes());
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    b
}

/// The canonical 36-character form, written into `out` without allocating.
pub fn write_uuid(id: &[u8; 16], out: &mut [u8; 36]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut j = 0;
    for (i, byte) in id.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out[j] = b'-';
            j += 1;
        }
        out[j] = HEX[(byte >> 4) as usize];
        out[j + 1] = HEX[(byte & 0xf) as usize];
        j += 2;
    }
}

/// The canonical form as a `String` (reports and conversation building).
pub fn uuid_text(id: &[u8; 16]) -> String {
    let mut buf = [0u8; 36];
    write_uuid(id, &mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// The placeholder prebuilt requests carry where the id goes.
pub const UUID_PLACEHOLDER: &str = "00000000-0000-4000-8000-000000000000";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::openai_chat::OpenAiChat;

    #[test]
    fn uuids_are_v4_and_distinct() {
        let mut rng = Rng::seeded(1);
        let a = uuid_text(&new_uuid(&mut rng));
        let b = uuid_text(&new_uuid(&mut rng));
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
        assert_eq!(a.matches('-').count(), 4);
    }

    #[test]
    fn history_grows_with_each_turn() {
        let t = ConversationTemplate {
            host: "h".into(),
            path: "/v1/chat/completions".into(),
            model: "m".into(),
            system: None,
            max_tokens: Some(4),
            stream: true,
            sampling: Sampling::default(),
            extra_body: None,
            headers: vec![],
            correlation_header: Some("x-request-id".into()),
            bust: true,
            turns: TurnSource::Scripted(vec!["Hi".into(), "more".into()]),
        };
        let mut rng = Rng::seeded(2);
        let mut conv = Conv {
            id: new_uuid(&mut rng),
            turns: 3,
            ..Conv::default()
        };
        let (mut body, mut out) = (Vec::new(), Vec::new());
        assert!(t.next_request(&OpenAiChat, &mut conv, &mut rng, &mut body, &mut out));
        let id = uuid_text(&conv.id);
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.contains(&format!("x-request-id: {id}\r\n")), "{text}");
        assert!(text.contains(&format!("\"content\":\"{id} Hi\"")), "{text}");
        conv.turn = 1;
        conv.history.push(Message {
            role: "assistant".into(),
            content: "Hello!".into(),
        });
        assert!(t.next_request(&OpenAiChat, &mut conv, &mut rng, &mut body, &mut out));
        let v: Value = serde_json::from_slice(&body).unwrap();
        let msgs = v["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1]["content"], "Hello!");
        assert_eq!(msgs[2]["content"], "more");
    }
}
