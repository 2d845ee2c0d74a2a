//! MLPerf's token contract through the real binary against `llmload serve`
//! (which reports usage): with `--token-source tokenizer` and the committed
//! tiny chat model, a message dataset's input length is the chat template's
//! token count, and `tpot_mlperf` is MLPerf's formula recomputed from
//! events.jsonl: (end − first token) / tokens of the output after the
//! first event's text.

use std::path::Path;
use std::time::Duration;

use llmload::tokens::Tokenizer;

use crate::util::*;

#[test]
fn tokenizer_counts_follow_mlperf_isl_and_tpot() {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-chat");
    let dir = temp_dir("mlperf-tokens");
    let data = dir.join("chat.jsonl");
    std::fs::write(
        &data,
        concat!(
            r#"{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello world"}]}"#,
            "\n",
            r#"{"messages": [{"role": "user", "content": "what is the world"}]}"#,
            "\n",
        ),
    )
    .unwrap();
    // Paced tokens make the decode window long beside the events' µs stamps.
    let server = Server::start(&["--tpot", "1ms"]);
    let run = bench_at(
        &server,
        &[
            "--dataset",
            data.to_str().unwrap(),
            "--token-source",
            "tokenizer",
            "--tokenizer",
            model.to_str().unwrap(),
            "--max-tokens",
            "8",
            "--requests",
            "50",
            "--concurrency",
            "4",
            "--record-output",
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let s = run.summary();
    assert_eq!(u(&s["requests"]["completed"]), 50);

    // ISL: the rendered template, counted by hand from the fixture:
    // <s> <|im_start|> system Be brief . <|im_end|> <|im_start|> user hello
    // world <|im_end|> <|im_start|> assistant = 14, and
    // <s> <|im_start|> user what is the world <|im_end|> <|im_start|>
    // assistant = 10. Plain text would be 5 and 4.
    let t = &s["tokens"];
    assert_eq!(t["input_source"], "chat_template", "{t}");
    assert_eq!(f(&t["isl"]["min"]), 10.0, "{t}");
    assert_eq!(f(&t["isl"]["max"]), 14.0, "{t}");
    assert_eq!(t["output_source"], "tokenizer", "{t}");

    // TPOT as MLPerf computes it, from the events log.
    let tok = Tokenizer::load(&model).unwrap();
    let first = llmload::server::formats::text::token(0);
    let events = std::fs::read_to_string(run.out.join("events.jsonl")).unwrap();
    let mut recomputed = Vec::new();
    for line in events.lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        if e["warmup"] == true || !e["error"].is_null() {
            continue;
        }
        assert_eq!(e["stream"], true);
        let out = e["output"]
            .as_str()
            .expect("--record-output keeps the text");
        let rest = out.strip_prefix(first).expect("serve's first event");
        let n = tok.count(rest) as f64;
        assert_eq!(n, 7.0, "8 words, the first apart: {out:?}");
        recomputed.push((f(&e["end_ms"]) - f(&e["first_token_ms"])) / n);
    }
    assert_eq!(recomputed.len(), 50);
    let want = recomputed.iter().sum::<f64>() / recomputed.len() as f64;
    let l = &s["latency_ms"];
    let got = f(&l["tpot_mlperf"]["mean"]);
    assert_eq!(u(&l["tpot_mlperf"]["count"]), 50, "{l}");
    assert!(
        (got - want).abs() <= want * 0.01,
        "tpot_mlperf mean {got} ms, recomputed {want} ms"
    );
    assert!(got >= 0.9, "7 tokens paced 1 ms apart: {got} ms");
    // Ours stays beside it.
    assert_eq!(u(&l["tpot"]["count"]), 50, "{l}");
}
