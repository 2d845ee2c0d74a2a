//! Each wire format's bytes: event sequences, bodies, usage, reasoning
//! tokens, and streams answered as one body.

use serde_json::Value;

use llmload::server::ServerConfig;
use llmload::server::formats::Format;
use llmload::server::formats::text::token;

use super::{
    Fixture, body_text, body_usage, cfg, chat, chat_body, event_text, expected_content, gen_req,
    get, post, text_of,
};

#[test]
fn stream_sends_the_exact_event_sequence() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let body = r#"{"model":"m-test","stream":true,"max_tokens":5,
        "stream_options":{"include_usage":true},
        "messages":[{"role":"system","content":"be brief"},
                    {"role":"user","content":[{"type":"text","text":"count to five please"}]}]}"#;
    let r = c.roundtrip(&chat(body));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("x-llmload-messages"), Some("2"));
    let events = r.events();
    assert_eq!(events.len(), 1 + 5 + 1 + 1 + 1, "{events:#?}");
    assert_eq!(events.last().unwrap(), "[DONE]");
    let json: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).expect("event JSON"))
        .collect();
    let id = json[0]["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("chatcmpl-"));
    for e in &json {
        assert_eq!(e["id"], id.as_str());
        assert_eq!(e["object"], "chat.completion.chunk");
        assert_eq!(e["model"], "m-test");
        assert!(e["created"].as_u64().unwrap() > 1_600_000_000);
    }
    let choice = |i: usize| &json[i]["choices"][0];
    assert_eq!(
        choice(0)["delta"],
        serde_json::json!({"role": "assistant", "content": ""})
    );
    assert_eq!(choice(0)["finish_reason"], Value::Null);
    for k in 0..5 {
        assert_eq!(
            choice(1 + k)["delta"],
            serde_json::json!({"content": token(k as u32)})
        );
        assert_eq!(choice(1 + k)["finish_reason"], Value::Null);
    }
    assert_eq!(choice(6)["delta"], serde_json::json!({}));
    assert_eq!(choice(6)["finish_reason"], "length");
    assert_eq!(json[7]["choices"], serde_json::json!([]));
    assert_eq!(
        json[7]["usage"],
        serde_json::json!({"prompt_tokens": 6, "completion_tokens": 5, "total_tokens": 11})
    );
    // The connection is still good for another request.
    assert_eq!(c.roundtrip(&get("/v1/models")).status, 200);
    let s = f.stop();
    assert_eq!((s.requests, s.completed, s.streams), (1, 1, 1));
    assert_eq!((s.output_tokens, s.prompt_tokens), (5, 6));
}

#[test]
fn stream_without_usage_and_with_no_tokens() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let r = c.roundtrip(&chat(&chat_body(true, 3, false)));
    let events = r.events();
    assert_eq!(events.len(), 1 + 3 + 1 + 1);
    assert!(!events.iter().any(|e| e.contains("usage")));

    let r = c.roundtrip(&chat(&chat_body(true, 0, true)));
    let events = r.events();
    assert_eq!(events.len(), 4, "role, finish, usage, done: {events:#?}");
    let finish: Value = serde_json::from_str(&events[1]).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "length");
    let usage: Value = serde_json::from_str(&events[2]).unwrap();
    assert_eq!(usage["usage"]["completion_tokens"], 0);
    assert_eq!(events[3], "[DONE]");
}

#[test]
fn non_stream_body_and_usage() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let body = r#"{"model":"any/model-name","max_tokens":7,"messages":[
        {"role":"system","content":"a b"},
        {"role":"user","content":"c\td\ne"},
        {"role":"assistant","content":null},
        {"role":"user","content":[{"type":"text","text":"f"},{"type":"image_url","image_url":{"url":"u"}}]}]}"#;
    let r = c.roundtrip(&chat(body));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("x-llmload-messages"), Some("4"));
    assert_eq!(
        r.header("content-length")
            .unwrap()
            .parse::<usize>()
            .unwrap(),
        r.body.len()
    );
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "any/model-name");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(
        v["choices"][0]["message"]["content"],
        expected_content(7).as_str()
    );
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(
        v["usage"],
        serde_json::json!({"prompt_tokens": 6, "completion_tokens": 7, "total_tokens": 13})
    );

    // No limit in the request: 128 tokens; max_completion_tokens beats max_tokens.
    let r = c.roundtrip(&chat(r#"{"messages":[]}"#));
    assert_eq!(r.json()["usage"]["completion_tokens"], 128);
    assert_eq!(r.json()["model"], "llmload-mock");
    let r = c.roundtrip(&chat(
        r#"{"messages":[],"max_tokens":9,"max_completion_tokens":2}"#,
    ));
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        expected_content(2).as_str()
    );
    f.stop();

    // --output-tokens overrides the request.
    let f = Fixture::new(ServerConfig {
        output_tokens: Some(3),
        ..cfg()
    });
    let r = f.client().roundtrip(&chat(&chat_body(false, 50, false)));
    assert_eq!(r.json()["usage"]["completion_tokens"], 3);
}

#[test]
fn completions_stream_and_body() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let r = c.roundtrip(&gen_req(Format::Completions, true, 5, true));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("x-llmload-messages"), Some("1"));
    let events = r.json_events();
    assert_eq!(events.len(), 5 + 1 + 1 + 1, "{events:#?}");
    assert!(events.iter().all(|(name, _)| name.is_none()));
    let id = events[0].1["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("cmpl-"), "{id}");
    for (k, (_, e)) in events[..5].iter().enumerate() {
        assert_eq!(e["id"], id.as_str());
        assert_eq!(e["object"], "text_completion");
        assert_eq!(e["model"], "m-test");
        assert!(e["created"].as_u64().unwrap() > 1_600_000_000);
        assert_eq!(
            e["choices"],
            serde_json::json!([{"index": 0, "text": token(k as u32),
                                "logprobs": null, "finish_reason": null}])
        );
    }
    assert_eq!(events[5].1["choices"][0]["text"], "");
    assert_eq!(events[5].1["choices"][0]["finish_reason"], "length");
    assert_eq!(events[6].1["choices"], serde_json::json!([]));
    assert_eq!(
        events[6].1["usage"],
        serde_json::json!({"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8})
    );
    assert_eq!(events[7].1, "[DONE]");

    // Without include_usage there is no usage chunk.
    let r = c.roundtrip(&gen_req(Format::Completions, true, 2, false));
    assert_eq!(r.events().len(), 2 + 1 + 1);
    assert!(!r.events().iter().any(|e| e.contains("usage")));

    let r = c.roundtrip(&gen_req(Format::Completions, false, 7, false));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["model"], "m-test");
    assert!(v["id"].as_str().unwrap().starts_with("cmpl-"));
    assert_eq!(
        v["choices"],
        serde_json::json!([{"index": 0, "text": expected_content(7),
                            "logprobs": null, "finish_reason": "length"}])
    );
    assert_eq!(
        v["usage"],
        serde_json::json!({"prompt_tokens": 3, "completion_tokens": 7, "total_tokens": 10})
    );

    // Prompts as a batch of strings (the first counts) and as token ids;
    // no max_tokens means 128.
    let r = c.roundtrip(&post(
        "/v1/completions",
        r#"{"prompt":["a b c d e","f"],"max_tokens":1}"#,
        "",
    ));
    assert_eq!(r.json()["usage"]["prompt_tokens"], 5);
    assert_eq!(r.json()["model"], "llmload-mock");
    let r = c.roundtrip(&post(
        "/v1/completions",
        r#"{"prompt":[101,102,103,104]}"#,
        "",
    ));
    assert_eq!(r.json()["usage"]["prompt_tokens"], 4);
    assert_eq!(r.json()["usage"]["completion_tokens"], 128);

    let r = c.roundtrip(&post("/v1/completions", r#"{"model":"m"}"#, ""));
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        serde_json::json!({"error": {"message": "'prompt' is required",
                                     "type": "invalid_request_error", "code": 400}})
    );
    let s = f.stop();
    assert_eq!((s.requests, s.requests_completions, s.completed), (6, 6, 5));
    assert_eq!(s.streams, 2);
    assert_eq!(s.output_tokens, 5 + 2 + 7 + 1 + 128);
    assert_eq!(s.prompt_tokens, 3 + 3 + 3 + 5 + 4);
}

#[test]
fn sglang_stream_is_cumulative_and_body_is_one_object() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let r = c.roundtrip(&gen_req(Format::Generate, true, 6, false));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("x-llmload-messages"), Some("1"));
    let events = r.json_events();
    assert_eq!(events.len(), 6 + 1, "{events:#?}");
    let id = events[0].1["meta_info"]["id"].as_str().unwrap().to_string();
    for (k, (name, e)) in events[..6].iter().enumerate() {
        assert!(name.is_none());
        let k = k as u32;
        let finish = if k == 5 {
            serde_json::json!({"type": "length", "length": 6})
        } else {
            Value::Null
        };
        assert_eq!(
            *e,
            serde_json::json!({"text": text_of(0, k + 1),
                               "meta_info": {"id": id, "prompt_tokens": 3,
                                             "completion_tokens": k + 1,
                                             "finish_reason": finish, "cached_tokens": 0},
                               "index": 0})
        );
    }
    assert_eq!(events[6].1, "[DONE]");

    let r = c.roundtrip(&gen_req(Format::Generate, false, 9, false));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["text"], expected_content(9).as_str());
    assert_eq!(v["meta_info"]["prompt_tokens"], 3);
    assert_eq!(v["meta_info"]["completion_tokens"], 9);
    assert_eq!(
        v["meta_info"]["finish_reason"],
        serde_json::json!({"type": "length", "length": 9})
    );

    // Token ids as the prompt; no sampling_params means 128 tokens.
    let r = c.roundtrip(&post("/generate", r#"{"input_ids":[1,2,3,4,5]}"#, ""));
    assert_eq!(r.json()["meta_info"]["prompt_tokens"], 5);
    assert_eq!(r.json()["meta_info"]["completion_tokens"], 128);

    // No output tokens: one finishing event with empty text.
    let r = c.roundtrip(&gen_req(Format::Generate, true, 0, false));
    let events = r.json_events();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].1["text"], "");
    assert_eq!(events[0].1["meta_info"]["finish_reason"]["length"], 0);

    let r = c.roundtrip(&post("/generate", r#"{"sampling_params":{}}"#, ""));
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        serde_json::json!({"error": {"message": "'text' or 'input_ids' is required"}})
    );
    let s = f.stop();
    assert_eq!((s.requests, s.requests_generate, s.completed), (5, 5, 4));
    assert_eq!(s.output_tokens, 6 + 9 + 128);
}

#[test]
fn anthropic_stream_event_sequence_and_body() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let body = r#"{"model":"claude-test","max_tokens":4,"stream":true,
        "system":[{"type":"text","text":"be very brief"}],
        "messages":[{"role":"user","content":"count to four"},
                    {"role":"assistant","content":[{"type":"text","text":"one"}]},
                    {"role":"user","content":"go on"}]}"#;
    let r = c.roundtrip(&post(
        "/v1/messages",
        body,
        "anthropic-version: 2023-06-01\r\n",
    ));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("x-llmload-messages"), Some("3"));
    let events = r.json_events();
    let names: Vec<&str> = events
        .iter()
        .map(|(n, _)| n.as_deref().expect("every event is named"))
        .collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    for (name, e) in &events {
        assert_eq!(e["type"], name.as_deref().unwrap());
    }
    let start = &events[0].1["message"];
    assert!(start["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(start["model"], "claude-test");
    assert_eq!(start["role"], "assistant");
    // 3 system words + 3 + 1 + 2.
    assert_eq!(
        start["usage"],
        serde_json::json!({"input_tokens": 9, "output_tokens": 1})
    );
    assert_eq!(
        events[1].1,
        serde_json::json!({"type": "content_block_start", "index": 0,
                           "content_block": {"type": "text", "text": ""}})
    );
    for k in 0..4 {
        assert_eq!(
            events[3 + k].1,
            serde_json::json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "text_delta", "text": token(k as u32)}})
        );
    }
    assert_eq!(
        events[7].1,
        serde_json::json!({"type": "content_block_stop", "index": 0})
    );
    assert_eq!(
        events[8].1,
        serde_json::json!({"type": "message_delta",
                           "delta": {"stop_reason": "max_tokens", "stop_sequence": null},
                           "usage": {"output_tokens": 4}})
    );

    let r = c.roundtrip(&gen_req(Format::Messages, false, 6, false));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert!(v["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["model"], "m-test");
    assert_eq!(
        v["content"],
        serde_json::json!([{"type": "text", "text": expected_content(6)}])
    );
    assert_eq!(v["stop_reason"], "max_tokens");
    assert_eq!(v["stop_sequence"], Value::Null);
    assert_eq!(
        v["usage"],
        serde_json::json!({"input_tokens": 3, "output_tokens": 6})
    );

    let r = c.roundtrip(&post("/v1/messages", r#"{"model":"x","max_tokens":1}"#, ""));
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        serde_json::json!({"type": "error", "error": {"type": "invalid_request_error",
                                                      "message": "'messages' is required"}})
    );
    let r = c.roundtrip(&get("/v1/messages"));
    assert_eq!(r.status, 405);
    assert_eq!(r.json()["type"], "error");
    let s = f.stop();
    assert_eq!((s.requests, s.requests_messages, s.completed), (3, 3, 2));
    assert_eq!((s.output_tokens, s.prompt_tokens), (10, 12));
}

#[test]
fn reasoning_tokens_in_chat_and_anthropic() {
    let f = Fixture::new(ServerConfig {
        reasoning_tokens: 3,
        ..cfg()
    });
    let mut c = f.client();

    // Chat: reasoning_content deltas first, then content; usage counts all.
    let r = c.roundtrip(&chat(&chat_body(true, 5, true)));
    let events = r.json_events();
    assert_eq!(events.len(), 1 + 5 + 1 + 1 + 1);
    for k in 0..5u32 {
        let delta = &events[1 + k as usize].1["choices"][0]["delta"];
        if k < 3 {
            assert_eq!(*delta, serde_json::json!({"reasoning_content": token(k)}));
        } else {
            assert_eq!(*delta, serde_json::json!({"content": token(k)}));
        }
    }
    let usage = &events[7].1["usage"];
    assert_eq!(usage["completion_tokens"], 5);
    assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 3);

    let v = c.roundtrip(&chat(&chat_body(false, 5, false))).json();
    let message = &v["choices"][0]["message"];
    assert_eq!(message["reasoning_content"], text_of(0, 3).as_str());
    assert_eq!(message["content"], text_of(3, 5).as_str());
    assert_eq!(v["usage"]["completion_tokens"], 5);

    // Anthropic: a thinking block at index 0, the text block at index 1.
    let r = c.roundtrip(&gen_req(Format::Messages, true, 5, false));
    let events = r.json_events();
    let shape: Vec<String> = events
        .iter()
        .map(|(n, e)| {
            let n = n.as_deref().unwrap();
            match n {
                "content_block_start" => {
                    format!("{n} {} {}", e["index"], e["content_block"]["type"])
                }
                "content_block_delta" => format!("{n} {} {}", e["index"], e["delta"]["type"]),
                "content_block_stop" => format!("{n} {}", e["index"]),
                _ => n.to_string(),
            }
        })
        .collect();
    assert_eq!(
        shape,
        [
            "message_start",
            "content_block_start 0 \"thinking\"",
            "ping",
            "content_block_delta 0 \"thinking_delta\"",
            "content_block_delta 0 \"thinking_delta\"",
            "content_block_delta 0 \"thinking_delta\"",
            "content_block_stop 0",
            "content_block_start 1 \"text\"",
            "content_block_delta 1 \"text_delta\"",
            "content_block_delta 1 \"text_delta\"",
            "content_block_stop 1",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(events[3].1["delta"]["thinking"], token(0));
    assert_eq!(events[8].1["delta"]["text"], token(3));
    assert_eq!(events[11].1["usage"]["output_tokens"], 5);

    let v = c
        .roundtrip(&gen_req(Format::Messages, false, 5, false))
        .json();
    assert_eq!(v["content"][0]["type"], "thinking");
    assert_eq!(v["content"][0]["thinking"], text_of(0, 3).as_str());
    assert_eq!(
        v["content"][1],
        serde_json::json!({"type": "text", "text": text_of(3, 5)})
    );
    assert_eq!(v["usage"]["output_tokens"], 5);

    // Fewer tokens than the reasoning budget: all of them are reasoning.
    let v = c.roundtrip(&chat(&chat_body(false, 2, false))).json();
    assert_eq!(v["choices"][0]["message"]["content"], "");
    assert_eq!(
        v["choices"][0]["message"]["reasoning_content"],
        text_of(0, 2).as_str()
    );

    // Completions and SGLang have no reasoning: every token is text.
    for format in [Format::Completions, Format::Generate] {
        let v = c.roundtrip(&gen_req(format, false, 5, false)).json();
        assert_eq!(body_text(format, &v), expected_content(5), "{format:?}");
        let r = c.roundtrip(&gen_req(format, true, 5, false));
        let events = r.json_events();
        let last = &events[4].1;
        assert_eq!(event_text(format, &events[0].1), token(0));
        assert!(event_text(format, last).ends_with(token(4)));
    }
    let s = f.stop();
    assert_eq!(s.output_tokens, 5 * 4 + 2 + 5 * 4);
}

#[test]
fn ignore_stream_answers_with_one_body() {
    let f = Fixture::new(ServerConfig {
        ignore_stream: true,
        ..cfg()
    });
    let mut c = f.client();
    for format in Format::ALL {
        let r = c.roundtrip(&gen_req(format, true, 3, true));
        assert_eq!(r.status, 200);
        assert_eq!(
            r.header("content-type"),
            Some("application/json"),
            "{format:?}"
        );
        assert!(r.chunks.is_empty());
        let v = r.json();
        assert_eq!(body_text(format, &v), expected_content(3), "{format:?}");
        assert_eq!(body_usage(format, &v), 3);
    }
    let s = f.stop();
    assert_eq!((s.requests, s.completed, s.streams), (4, 4, 4));
}
