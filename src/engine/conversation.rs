//! Multi-turn conversations, run by the worker that owns them: each turn's
//! request is built from the whole history with the previous assistant reply
//! fed back, so it cannot be serialized before the run. This is the one
//! place a worker builds request bytes; it reuses the conversation's buffers
//! and the connection's write buffer, but serializing a growing JSON body
//! allocates inside serde_json — a cost paid once per turn, at LLM rates.
//! Also here: the per-conversation UUID that busts prompt caches and joins
//! client records to server logs.

use serde_json::{Map, Value};

use crate::engine::requests::{Target, asks_stream};
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
    /// `draw` seeds a pool's random draw: the same value gives the same
    /// message, so a turn built again (a retry) asks the same question.
    pub(crate) fn user_turn(&self, sample: u32, turn: u16, draw: u64) -> Option<&str> {
        match self {
            TurnSource::Scripted(script) => {
                Some(&script[(sample as usize + turn as usize) % script.len()])
            }
            TurnSource::Pool(pool) => {
                let i = if turn == 0 {
                    sample as usize % pool.len()
                } else {
                    Rng::seeded(draw).below(pool.len() as u64) as usize
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
    /// Where each of the scenario's endpoints is addressed, in the order of
    /// `ScenarioPlan::endpoints`.
    pub targets: Vec<Target>,
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
    /// Seed of turn `self.turn`'s draw from a pool: the conversation's
    /// random id mixed with the turn (`Rng::seeded` scrambles it further).
    fn draw(&self) -> u64 {
        let id = u64::from_le_bytes(self.id[..8].try_into().expect("8 bytes"));
        id ^ u64::from(self.turn).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

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
    /// whole request, addressed to target `target`, into `out`; false when
    /// the source has no such turn.
    /// Building a turn again (a retry) gives the same request: the history
    /// is first cut back to the turns before it (a user message and a reply
    /// each), and a pool's draw depends only on the conversation and turn.
    pub(crate) fn next_request(
        &self,
        protocol: &dyn Protocol,
        conv: &mut Conv,
        target: usize,
        body: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> bool {
        let Some(text) = self.turns.user_turn(conv.sample, conv.turn, conv.draw()) else {
            return false;
        };
        let content = if conv.turn == 0 && self.bust {
            format!("{} {text}", uuid_text(&conv.id))
        } else {
            text.to_string()
        };
        conv.history.truncate(2 * conv.turn as usize);
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
        let t = &self.targets[target];
        write_request(out, "POST", &t.host, &t.path, &headers, body);
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
            targets: vec![Target {
                host: "h".into(),
                path: "/v1/chat/completions".into(),
            }],
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
        assert!(t.next_request(&OpenAiChat, &mut conv, 0, &mut body, &mut out));
        let id = uuid_text(&conv.id);
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.contains(&format!("x-request-id: {id}\r\n")), "{text}");
        assert!(text.contains(&format!("\"content\":\"{id} Hi\"")), "{text}");
        conv.turn = 1;
        conv.history.push(Message {
            role: "assistant".into(),
            content: "Hello!".into(),
        });
        assert!(t.next_request(&OpenAiChat, &mut conv, 0, &mut body, &mut out));
        let v: Value = serde_json::from_slice(&body).unwrap();
        let msgs = v["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1]["content"], "Hello!");
        assert_eq!(msgs[2]["content"], "more");
    }

    #[test]
    fn a_turn_built_again_is_the_same_request() {
        let mut rng = Rng::seeded(7);
        let pool: Vec<String> = (0..50).map(|i| format!("prompt {i}")).collect();
        let t = ConversationTemplate {
            targets: vec![Target {
                host: "h".into(),
                path: "/v1/chat/completions".into(),
            }],
            model: "m".into(),
            system: None,
            max_tokens: Some(4),
            stream: true,
            sampling: Sampling::default(),
            extra_body: None,
            headers: vec![],
            correlation_header: None,
            bust: false,
            turns: TurnSource::Pool(pool),
        };
        let mut conv = Conv {
            id: new_uuid(&mut rng),
            turns: 3,
            ..Conv::default()
        };
        let (mut body, mut out) = (Vec::new(), Vec::new());
        assert!(t.next_request(&OpenAiChat, &mut conv, 0, &mut body, &mut out));
        conv.history.push(Message {
            role: "assistant".into(),
            content: "Hello!".into(),
        });
        conv.turn = 1;
        assert!(t.next_request(&OpenAiChat, &mut conv, 0, &mut body, &mut out));
        let first = out.clone();
        // The turn is sent again (a retry on a new connection): the same
        // user message, once.
        assert!(t.next_request(&OpenAiChat, &mut conv, 0, &mut body, &mut out));
        assert_eq!(out, first);
        assert_eq!(conv.history.len(), 3);
        // Another conversation draws its own pool prompts.
        let drawn = |id: [u8; 16]| {
            let c = Conv {
                id,
                turn: 1,
                ..Conv::default()
            };
            t.turns.user_turn(0, 1, c.draw()).unwrap().to_string()
        };
        let picks: std::collections::HashSet<String> =
            (0..20).map(|_| drawn(new_uuid(&mut rng))).collect();
        assert!(picks.len() > 5, "{picks:?}");
    }
}
