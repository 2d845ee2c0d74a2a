//! Access control: the served-model list and the API key, in every
//! format's own error shape.

use llmload::server::formats::Format;
use llmload::server::{ApiKey, ServerConfig};

use super::{Fixture, body_usage, cfg, chat, gen_body, gen_req, get, post};

#[test]
fn served_models_are_listed_and_others_refused() {
    let f = Fixture::new(ServerConfig {
        served_models: vec!["alpha".to_string(), "m-test".to_string()],
        ..cfg()
    });
    let mut c = f.client();
    let v = c.roundtrip(&get("/v1/models")).json();
    let ids: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["alpha", "m-test"]);

    // A served model is answered in every format.
    for format in Format::ALL {
        let r = c.roundtrip(&gen_req(format, false, 2, false));
        assert_eq!(r.status, 200, "{format:?}");
    }
    // A request naming no model gets the first served one.
    let r = c.roundtrip(&chat(r#"{"messages":[],"max_tokens":1}"#));
    assert_eq!(r.json()["model"], "alpha");

    let r = c.roundtrip(&chat(r#"{"model":"gpt-x","messages":[]}"#));
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json(),
        serde_json::json!({"error": {"message": "The model `gpt-x` does not exist.",
                                     "type": "NotFoundError", "code": 404}})
    );
    let r = c.roundtrip(&post(
        "/v1/completions",
        r#"{"model":"gpt-x","prompt":"a"}"#,
        "",
    ));
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["type"], "NotFoundError");
    let r = c.roundtrip(&post(
        "/v1/messages",
        r#"{"model":"claude-x","max_tokens":1,"messages":[]}"#,
        "",
    ));
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json(),
        serde_json::json!({"type": "error", "error": {"type": "not_found_error",
                                     "message": "The model `claude-x` does not exist."}})
    );
    let r = c.roundtrip(&post("/generate", r#"{"model":"nope","text":"a"}"#, ""));
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json()["error"]["message"],
        "The model `nope` does not exist."
    );
    // The connection survives every refusal.
    assert_eq!(
        c.roundtrip(&gen_req(Format::Chat, true, 1, false)).status,
        200
    );
    let s = f.stop();
    assert_eq!((s.requests, s.completed, s.unknown_model), (10, 6, 4));
}

#[test]
fn api_key_is_required_in_either_header() {
    const KEY: &str = "sk-llmload-test-key";
    let f = Fixture::new(ServerConfig {
        api_key: Some(ApiKey::new(KEY.to_string()).unwrap()),
        ..cfg()
    });
    let mut c = f.client();
    let bearer = format!("Authorization: Bearer {KEY}\r\n");
    let x_api_key = format!("x-api-key: {KEY}\r\n");
    for format in Format::ALL {
        let body = gen_body(format, false, 2, false);
        for extra in [
            "",
            "Authorization: Bearer wrong\r\n",
            "x-api-key: sk-llmload-test-ke\r\n",
        ] {
            let r = c.roundtrip(&post(format.path(), &body, extra));
            assert_eq!(r.status, 401, "{format:?} {extra:?}");
            let text = String::from_utf8(r.body.clone()).unwrap();
            assert!(!text.contains(KEY), "the key leaked: {text}");
            let v = r.json();
            match format {
                Format::Messages => {
                    assert_eq!(v["type"], "error");
                    assert_eq!(v["error"]["type"], "authentication_error");
                }
                Format::Generate => assert!(v["error"]["message"].is_string()),
                _ => {
                    assert_eq!(v["error"]["type"], "authentication_error");
                    assert_eq!(v["error"]["code"], 401);
                }
            }
        }
        for extra in [&bearer, &x_api_key] {
            let r = c.roundtrip(&post(format.path(), &body, extra));
            assert_eq!(r.status, 200, "{format:?} {extra:?}");
            assert_eq!(body_usage(format, &r.json()), 2);
        }
    }
    assert_eq!(c.roundtrip(&get("/v1/models")).status, 401);
    let r = c.roundtrip(format!("GET /v1/models HTTP/1.1\r\nHost: t\r\n{bearer}\r\n").as_bytes());
    assert_eq!(r.status, 200);
    let s = f.stop();
    assert_eq!((s.requests, s.completed, s.unauthorized), (20, 8, 13));
}
