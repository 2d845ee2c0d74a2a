//! Each extractor against MLPerf's Python on the same texts: the fixture
//! holds what `extract(text)` returned there (scripts/accuracy-cases.py).

use super::Extractor;

static CASES: &str = include_str!("../../../tests/fixtures/accuracy/extractors.json");

#[test]
fn every_case_matches_mlperf() {
    let fixture: serde_json::Value = serde_json::from_str(CASES).expect("fixture is JSON");
    let cases = fixture["cases"].as_object().expect("cases by extractor");
    let mut failures = Vec::new();
    let mut total = 0;
    for (name, rows) in cases {
        let extractor = Extractor::parse(name).expect("fixture names our extractors");
        for row in rows.as_array().expect("rows") {
            let text = row[0].as_str().expect("text");
            let expected = row[1].as_str();
            total += 1;
            let got = extractor.extract(text);
            if got.as_deref() != expected {
                failures.push(format!(
                    "{name} {text:?}\n   want {expected:?}\n   got  {got:?}"
                ));
            }
        }
    }
    assert!(total > 1000, "the fixture holds {total} cases");
    assert!(
        failures.is_empty(),
        "{} of {total} cases differ from MLPerf:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn names_and_ids() {
    for (short, id, class) in [
        ("identity", "identity_extractor", "IdentityExtractor"),
        ("abcd", "abcd_extractor", "ABCDExtractor"),
        ("boxed_math", "boxed_math_extractor", "BoxedMathExtractor"),
        (
            "python_code",
            "python_code_extractor",
            "PythonCodeExtractor",
        ),
        (
            "function_call",
            "function_call_extractor",
            "FunctionCallExtractor",
        ),
    ] {
        let e = Extractor::parse(short).unwrap();
        assert_eq!(Extractor::parse(id), Ok(e));
        assert_eq!(
            (e.name(), e.mlperf_id(), e.mlperf_class()),
            (short, id, class)
        );
    }
    let err = Extractor::parse("regex").unwrap_err();
    assert!(
        err.contains("\"regex\"") && err.contains("boxed_math (boxed_math_extractor)"),
        "{err}"
    );
}

#[test]
fn identity_returns_the_text() {
    assert_eq!(
        Extractor::Identity.extract(" a\n"),
        Some(" a\n".to_string())
    );
    assert_eq!(Extractor::Identity.extract(""), Some(String::new()));
}

#[test]
fn abcd_by_priority() {
    let x = |t: &str| Extractor::Abcd.extract(t).unwrap();
    // MLPerf's docstring says "choice2", but no pattern accepts the "is"
    // between "answer" and the letter, and its code answers "".
    assert_eq!(x("The answer is B"), "");
    assert_eq!(x("The answer: B"), "choice2");
    assert_eq!(x("**Answer:** C"), "choice3");
    assert_eq!(x("\\boxed{D}"), "choice4");
    // "Answer: D" outranks the earlier bare "(B)".
    assert_eq!(x("Maybe (B).\nAnswer: D"), "choice4");
    // Python's case-insensitive `s` also matches `ſ`.
    assert_eq!(x("An\u{17f}wer: c"), "choice3");
    // The last resort: the first character after a leading "**".
    assert_eq!(x("**d is right"), "choice4");
    assert_eq!(x("nothing here"), "");
}

#[test]
fn boxed_math_takes_the_last_box() {
    let x = |t: &str| Extractor::BoxedMath.extract(t);
    assert_eq!(x("\\boxed{1} then \\boxed{ 2, 3 }"), Some("3".into()));
    assert_eq!(x("\\boxed{7}\\boxed{}"), Some("7".into()));
    assert_eq!(x("\\framebox{9}"), Some("9".into()));
    // No box: the last run of digits, Unicode digits included.
    assert_eq!(x("12 then \u{663}\u{664}"), Some("\u{663}\u{664}".into()));
    assert_eq!(x("none"), None);
}

#[test]
fn python_code_prefers_python_blocks() {
    let x = |t: &str| Extractor::PythonCode.extract(t);
    assert_eq!(
        x("```python\ndef f():\n    pass\n```"),
        Some("def f():\n    pass".into())
    );
    assert_eq!(x("```python\na\n```\n```\nb\n```"), Some("a".into()));
    assert_eq!(x("```py\nx = 1\n```"), Some("x = 1".into()));
    assert_eq!(x("no code"), None);
    assert_eq!(x("  \n"), None);
    // Found by fuzzing: MLPerf strips a plain block, then drops its tag up
    // to the first line break, so what follows keeps its leading blank.
    assert_eq!(x("1```py\n 1.1```py\n|"), Some(" 1.1".into()));
}

#[test]
fn function_calls_as_bfcl_json() {
    let x = |t: &str| Extractor::FunctionCall.extract(t);
    let tool_calls = r#"[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"London\"}"}}]"#;
    let want = r#"[{"name": "get_weather", "arguments": {"city": "London"}}]"#;
    assert_eq!(x(tool_calls).as_deref(), Some(want));
    assert_eq!(x("get_weather(city='London')").as_deref(), Some(want));
    // Non-literal values are kept as Python prints them back.
    assert_eq!(
        x("f(unit=celsius, n=2 ** 3, t=(1,), s='caf\u{e9}', v=1e-05)").as_deref(),
        Some(
            r#"[{"name": "f", "arguments": {"unit": "celsius", "n": "2 ** 3", "t": [1], "s": "caf\u00e9", "v": 1e-05}}]"#
        )
    );
    // Arguments Python cannot parse are kept raw; bare names are a signature.
    assert_eq!(
        x("f(a=1, 2)").as_deref(),
        Some(r#"[{"name": "f", "arguments": {"_raw": "a=1, 2"}}]"#)
    );
    assert_eq!(x("f(city, unit: str)"), None);
    // Found by fuzzing: an integer past f64's range is copied whole, as
    // json.dumps writes Python's unbounded int.
    let big = format!("1{}", "0".repeat(400));
    assert_eq!(
        x(&format!("f(n={big})")),
        Some(format!(r#"[{{"name": "f", "arguments": {{"n": {big}}}}}]"#))
    );
    // A float past f64's range is inf, which json.dumps writes `Infinity`.
    assert_eq!(
        x("b(f=5555555555555000000E000500)").as_deref(),
        Some(r#"[{"name": "b", "arguments": {"f": Infinity}}]"#)
    );
    // json.dumps refuses a set: MLPerf raises, we extract nothing.
    assert_eq!(x("f(a={1, 2})"), None);
}

/// A long reply (50 kB) gives what MLPerf's gives on it, in reasonable time.
#[test]
fn long_reply() {
    let unit = "Some reasoning about (x) and the options, *maybe* answer__ is near; \
                f(x) = y(z) \\boxed{ } ```code``` ";
    let text = unit.repeat(500);
    let start = std::time::Instant::now();
    assert_eq!(Extractor::Abcd.extract(&text).as_deref(), Some(""));
    // The last box holds a space: stripped, the answer is empty.
    assert_eq!(Extractor::BoxedMath.extract(&text).as_deref(), Some(""));
    assert_eq!(
        Extractor::PythonCode.extract(&text).as_deref(),
        Some("code")
    );
    assert_eq!(Extractor::FunctionCall.extract(&text), None);
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

/// Python's `\b` and MLPerf's look-arounds, spelled as consumed
/// characters, keep the first match where a reply starts, ends or puts
/// two candidates side by side.
#[test]
fn boundaries_without_look_around() {
    let x = |t: &str| Extractor::Abcd.extract(t).unwrap();
    assert_eq!(x("answer B"), "choice2");
    assert_eq!(x("xanswer B"), "");
    assert_eq!(x("é answer: C!"), "choice3");
    assert_eq!(x("the answerB"), "");
    assert_eq!(x("answers-D"), "choice4");
    assert_eq!(x("so answer Bx, option: C"), "choice3");
    assert_eq!(x("x(B) y"), "");
    assert_eq!(x("*(B)*"), "choice2");
    assert_eq!(x("***A**"), "choice1");
    assert_eq!(x("a**B**c then **C**"), "choice2");
    assert_eq!(x("a**B**c then (C)"), "choice3");
    let f = |t: &str| Extractor::FunctionCall.extract(t);
    // A call right after another's `(` is found though the search for it
    // starts on that `(`.
    assert_eq!(
        f("f(g(x=1) h(y=2)").as_deref(),
        Some(r#"[{"name": "g", "arguments": {"x": 1}}, {"name": "h", "arguments": {"y": 2}}]"#)
    );
    assert_eq!(
        f("xf(a=1) _g(b=2)").as_deref(),
        Some(r#"[{"name": "xf", "arguments": {"a": 1}}, {"name": "_g", "arguments": {"b": 2}}]"#)
    );
}

/// Replies that made a backtracking engine or a restarting scan quadratic:
/// runs of whitespace after "Answer" with no letter to end them, unclosed
/// calls, unclosed boxes and fences. Every extractor runs on each at 4 KiB,
/// 64 KiB and 1 MiB; each size may take at most 40 times as long as the one
/// before (16 times the text: linear is 16, quadratic 256), and a run is
/// abandoned, failing the test, as soon as it passes that bound.
#[test]
fn degenerate_replies_take_linear_time() {
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    let cases: [(&str, &str, &str, &str); 16] = [
        ("answer + spaces + x", "answer", " ", "x"),
        ("Answer + space-newline + ?", "Answer", " \n", "?"),
        ("answer: + newlines", "The answer:", "\n", ""),
        ("**answer + tabs", "**answer", "\t", "**"),
        ("option + spaces", "option", " ", "("),
        ("( + spaces", "(", " ", ""),
        ("** repeated", "", "**", ""),
        ("**A) repeated", "", "**A)", ""),
        ("\\boxed{ repeated", "", "\\boxed{", ""),
        ("f( repeated", "", "f(", ""),
        ("f(' repeated", "", "f('", ""),
        ("f(\"\\ repeated", "", "f(\"\\", ""),
        ("f() repeated", "", "f() ", ""),
        ("[ repeated", "", "[", ""),
        ("```python newline repeated", "", "```python\n", ""),
        ("words", "", "the answer is not here (maybe) ", ""),
    ];
    let text = |(_, head, unit, tail): (&str, &str, &str, &str), len: usize| {
        let mut t = head.to_string();
        t.push_str(&unit.repeat((len - head.len() - tail.len()) / unit.len()));
        t.push_str(tail);
        t
    };
    for case in cases {
        let small = text(case, 4 << 10);
        let mut base = Duration::ZERO;
        for _ in 0..3 {
            let start = Instant::now();
            std::hint::black_box(super::ALL.map(|e| e.extract(&small)));
            base = base.max(start.elapsed());
        }
        let mut report = format!("{}: 4 KiB {base:?}", case.0);
        for (len, size) in [(64 << 10, "64 KiB"), (1 << 20, "1 MiB")] {
            let reply = text(case, len);
            let (done, wait) = mpsc::channel();
            std::thread::spawn(move || {
                let start = Instant::now();
                std::hint::black_box(super::ALL.map(|e| e.extract(&reply)));
                let _ = done.send(start.elapsed());
            });
            // The slack covers timer and cache noise on a small base; a
            // quadratic extractor takes hours on 1 MiB.
            let bound = base * 40 + Duration::from_millis(200);
            base = wait
                .recv_timeout(bound)
                .unwrap_or_else(|_| panic!("{report}, {size} took longer than {bound:?}"));
            report.push_str(&format!(", {size} {base:?}"));
        }
        eprintln!("{report}");
    }
}
