//! Multi-turn conversations, run by the worker that owns them: each turn's
//! request is built from the whole history with the previous assistant reply
//! fed back, so it cannot be serialized before the run. This is the one
//! place a worker builds request bytes; it reuses the conversation's buffers
//! and the connection's write buffer, but serializing a growing JSON body
//! allocates inside serde_json — a cost paid once per turn, at LLM rates.
//! Also here: the per-conversation UUID that busts prompt caches and joins
//! client records to server logs.

use serde_json::{Map, Value};

use crate::engine::requests::asks_stream;
use crate::http::request::write_request;
use crate::protocol::{BodySpec, Message, Protocol, Sampling};
use crate::rng::Rng;
use crate::shm::run::IssueSlot;
use crate::uuid::uuid_text;

/// Where a conversation's user turns come from.
#[derive(Clone, Debug)]
pub(crate) enum TurnSource {
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
    pub(crate) fn user_turn<'s>(
        &'s self,
        sample: u32,
        turn: u16,
        rng: &mut Rng,
    ) -> Option<&'s str> {
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
    pub(crate) fn len(&self) -> usize {
        match self {
            TurnSource::Scripted(_) => 1,
            TurnSource::Pool(p) => p.len(),
            TurnSource::Conversations(c) => c.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Turns available from `sample` (dataset conversations end early).
    pub(crate) fn max_turns(&self, sample: u32) -> Option<u16> {
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
pub(crate) struct ConversationTemplate {
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
pub(crate) struct Conv {
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

impl Conv {
    /// The issue a turn of this conversation stands for, due at `t_sched`.
    pub(crate) fn slot(&self, t_sched: u64) -> IssueSlot {
        IssueSlot {
            seq: self.seq,
            t_sched,
            sample: self.sample,
            stage: self.stage,
            scenario: self.scenario,
        }
    }
}

impl ConversationTemplate {
    /// Whether the turns ask for a streamed response.
    pub(crate) fn streamed(&self) -> bool {
        asks_stream(self.stream, self.extra_body.as_ref())
    }

    /// Appends turn `conv.turn`'s user message to the history and writes the
    /// whole request into `out`; false when the source has no such turn.
    pub(crate) fn next_request(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::openai_chat::OpenAiChat;
    use crate::uuid::new_uuid;

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
