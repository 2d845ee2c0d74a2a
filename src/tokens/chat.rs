//! A model's chat template (the Jinja `chat_template` of its
//! `tokenizer_config.json`, or `chat_template.jinja` beside it), rendered as
//! `transformers`' `apply_chat_template` renders it: trim_blocks and
//! lstrip_blocks, loop controls, `raise_exception`, `strftime_now`, a
//! Python-style `tojson`, Python string and dict methods, the config's
//! special tokens (`bos_token`, `eos_token`, …) in the context, and
//! `add_generation_prompt` true. MLPerf counts the input length of a message
//! prompt as the tokens of that rendering; so do we, before the run.
//!
//! The engine is minijinja; its Jinja is close to Python's but not
//! identical, and a template that fails here is reported, not guessed at.
//!
//! A template comes from a model directory or a downloaded repository, so a
//! render runs under a budget: minijinja's fuel (instructions, and the data
//! the template creates at about one unit per 64 bytes) and a cap on the
//! output, both scaled to the prompt. A template that passes either is
//! refused for every later prompt too, so a hostile one costs one budget.

use std::path::Path;
use std::sync::OnceLock;

use minijinja::value::{Kwargs, Value};
use minijinja::{Environment, Error, ErrorKind};

/// Special tokens `transformers` passes to every chat template.
const SPECIAL_TOKENS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "pad_token",
    "sep_token",
    "cls_token",
    "mask_token",
];

/// Fuel every render may use whatever the prompt: real templates use a few
/// hundred units per message.
const BASE_FUEL: u64 = 4_000_000;
/// Fuel per byte of the prompt: room for 16 passes over the messages' text
/// at minijinja's one unit per 64 bytes.
const FUEL_PER_4_BYTES: u64 = 1;
/// Output every render may write whatever the prompt.
const BASE_OUTPUT: usize = 4 << 20;
/// Output per byte of the prompt (the messages and special tokens).
const OUTPUT_PER_BYTE: usize = 4;

/// A compiled chat template and the special tokens it is rendered with.
pub struct ChatTemplate {
    env: Environment<'static>,
    special: Vec<(&'static str, String)>,
    /// Where the template came from, for errors.
    origin: String,
    /// Why it is refused, once a render passed its budget.
    refused: OnceLock<String>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("special", &self.special)
            .finish()
    }
}

impl ChatTemplate {
    /// The template of `config` (a `tokenizer_config.json`) or of `jinja`
    /// (a `chat_template.jinja`, which wins, as in `transformers`); `None`
    /// when neither has one.
    pub fn load(
        config: Option<&Path>,
        jinja: Option<&Path>,
    ) -> Result<Option<ChatTemplate>, String> {
        let cfg: serde_json::Value = match config {
            Some(p) => {
                let text = crate::capped_read::text(p, crate::capped_read::TOKENIZER_CONFIG)
                    .map_err(|e| format!("--tokenizer {}: {e}", p.display()))?;
                serde_json::from_str(&text)
                    .map_err(|e| format!("--tokenizer {}: not JSON: {e}", p.display()))?
            }
            None => serde_json::Value::Null,
        };
        let (source, origin) = match jinja {
            Some(p) => (
                crate::capped_read::text(p, crate::capped_read::CONFIG)
                    .map_err(|e| format!("--tokenizer {}: {e}", p.display()))?,
                p,
            ),
            None => match (config, template_of(&cfg)) {
                (Some(p), Some(t)) => (t?, p),
                _ => return Ok(None),
            },
        };
        let special = SPECIAL_TOKENS
            .iter()
            .filter_map(|&k| token_text(cfg.get(k)?).map(|t| (k, t)))
            .collect();
        let mut t = Self::compile(source, special)
            .map_err(|e| format!("--tokenizer {}: chat template: {e}", origin.display()))?;
        t.origin = format!("the chat template of {}", origin.display());
        Ok(Some(t))
    }

    /// A template from its source and special tokens.
    pub fn compile(
        source: String,
        special: Vec<(&'static str, String)>,
    ) -> Result<ChatTemplate, String> {
        let mut env = Environment::new();
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| e.to_string())?;
        env.set_syntax(syntax);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_filter("tojson", tojson);
        env.add_template_owned("chat_template", source)
            .map_err(|e| e.to_string())?;
        Ok(ChatTemplate {
            env,
            special,
            origin: "the chat template".to_string(),
            refused: OnceLock::new(),
        })
    }

    /// Why the template is refused for every prompt, once a render went
    /// past its budget.
    pub fn refused(&self) -> Option<&str> {
        self.refused.get().map(String::as_str)
    }

    /// The prompt text for `messages` (role, content), oldest first, with
    /// the generation prompt appended.
    pub fn render(&self, messages: &[(&str, &str)]) -> Result<String, String> {
        if let Some(why) = self.refused.get() {
            return Err(why.clone());
        }
        let prompt_bytes = messages
            .iter()
            .map(|(role, content)| role.len() + content.len())
            .chain(self.special.iter().map(|(_, v)| v.len()))
            .sum::<usize>();
        let fuel = BASE_FUEL.saturating_add(prompt_bytes as u64 / 4 * FUEL_PER_4_BYTES);
        let cap = BASE_OUTPUT.saturating_add(prompt_bytes.saturating_mul(OUTPUT_PER_BYTE));
        let messages: Vec<Value> = messages
            .iter()
            .map(|(role, content)| {
                Value::from_pairs([
                    ("role", Value::from(*role)),
                    ("content", Value::from(*content)),
                ])
            })
            .collect();
        let mut ctx: Vec<(&str, Value)> = vec![
            ("messages", Value::from(messages)),
            ("add_generation_prompt", Value::from(true)),
            ("tools", Value::from(())),
            ("documents", Value::from(())),
        ];
        ctx.extend(
            self.special
                .iter()
                .map(|(k, v)| (*k, Value::from(v.as_str()))),
        );
        let mut env = self.env.clone();
        env.set_fuel(Some(fuel));
        let t = env
            .get_template("chat_template")
            .map_err(|e| e.to_string())?;
        let mut out = CappedOutput {
            bytes: Vec::new(),
            cap,
            over: false,
        };
        let rendered = t.render_captured_to(Value::from_pairs(ctx), &mut out);
        let refuse = |why: String| {
            let why = format!("{} {why} on a prompt of {prompt_bytes} bytes", self.origin);
            Err(self.refused.get_or_init(|| why).clone())
        };
        match rendered {
            Ok(_) => String::from_utf8(out.bytes).map_err(|e| e.to_string()),
            Err(e) if e.kind() == ErrorKind::OutOfFuel => refuse(format!(
                "used up its budget of {fuel} units of work (minijinja fuel: instructions, and \
                 data at one unit per 64 bytes)"
            )),
            Err(_) if out.over => {
                refuse(format!("wrote more than its cap of {cap} bytes of output"))
            }
            Err(e) => Err(match e.detail() {
                Some(d) if e.kind() == ErrorKind::InvalidOperation => d.to_string(),
                _ => e.to_string(),
            }),
        }
    }
}

/// A render's output, refusing to grow past `cap` bytes: the render stops
/// with a write error at the first write that would.
struct CappedOutput {
    bytes: Vec<u8>,
    cap: usize,
    over: bool,
}

impl std::io::Write for CappedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.cap - self.bytes.len() {
            self.over = true;
            return Err(std::io::Error::other("output cap"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The config's `chat_template`: a string, or a list of named templates
/// of which `default` is the one `apply_chat_template` uses.
fn template_of(cfg: &serde_json::Value) -> Option<Result<String, String>> {
    match cfg.get("chat_template")? {
        serde_json::Value::String(s) => Some(Ok(s.clone())),
        serde_json::Value::Array(named) => Some(
            named
                .iter()
                .find(|t| t.get("name").and_then(|n| n.as_str()) == Some("default"))
                .and_then(|t| t.get("template")?.as_str().map(str::to_string))
                .ok_or_else(|| "chat_template is a list without a 'default' template".into()),
        ),
        serde_json::Value::Null => None,
        _ => Some(Err("chat_template is neither a string nor a list".into())),
    }
}

/// A special token's text: a string, or an added-token object's `content`.
fn token_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Object(o) => o.get("content")?.as_str().map(str::to_string),
        _ => None,
    }
}

fn raise_exception(msg: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, msg))
}

/// `strftime_now(fmt)`: the current UTC time, with the directives chat
/// templates use (`%d %b %B %m %Y %y %H %M %S %A %a %j %%`).
fn strftime_now(fmt: String) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    strftime(&fmt, secs)
}

fn strftime(fmt: &str, unix_secs: u64) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    // 1970-01-01 was a Thursday.
    const DAYS: [&str; 7] = [
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
    ];
    let days = unix_secs / 86_400;
    let (y, m, d) = crate::clock::civil_from_days(days as i64);
    let rem = unix_secs % 86_400;
    let jan1 = days as i64 - day_of_year_offset(y, m, d);
    let mut out = String::new();
    let mut it = fmt.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let month = MONTHS[(m - 1) as usize];
        let day = DAYS[(days % 7) as usize];
        match it.next() {
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('m') => out.push_str(&format!("{m:02}")),
            Some('Y') => out.push_str(&y.to_string()),
            Some('y') => out.push_str(&format!("{:02}", y.rem_euclid(100))),
            Some('b') => out.push_str(&month[..3]),
            Some('B') => out.push_str(month),
            Some('a') => out.push_str(&day[..3]),
            Some('A') => out.push_str(day),
            Some('H') => out.push_str(&format!("{:02}", rem / 3600)),
            Some('M') => out.push_str(&format!("{:02}", rem / 60 % 60)),
            Some('S') => out.push_str(&format!("{:02}", rem % 60)),
            Some('j') => out.push_str(&format!("{:03}", days as i64 - jan1 + 1)),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Days from January 1 of `y` to `y-m-d`.
fn day_of_year_offset(y: i64, m: u32, d: u32) -> i64 {
    const BEFORE: [i64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    BEFORE[(m - 1) as usize] + i64::from(leap && m > 2) + i64::from(d) - 1
}

/// `tojson` as `transformers` defines it: Python's `json.dumps` with
/// `ensure_ascii=False` (`", "` and `": "` between items, or `indent`).
fn tojson(value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let json = serde_json::to_value(&value)
        .map_err(|e| Error::new(ErrorKind::BadSerialization, e.to_string()))?;
    let mut out = String::new();
    py_dumps(&json, indent, 0, &mut out);
    Ok(Value::from_safe_string(out))
}

fn py_dumps(v: &serde_json::Value, indent: Option<usize>, level: usize, out: &mut String) {
    use serde_json::Value as J;
    let (open, close, items): (char, char, Vec<(Option<&str>, &J)>) = match v {
        J::Array(a) => ('[', ']', a.iter().map(|x| (None, x)).collect()),
        J::Object(o) => (
            '{',
            '}',
            o.iter().map(|(k, x)| (Some(k.as_str()), x)).collect(),
        ),
        scalar => {
            out.push_str(&scalar.to_string());
            return;
        }
    };
    out.push(open);
    if items.is_empty() {
        out.push(close);
        return;
    }
    let newline = |out: &mut String, level: usize| {
        if let Some(n) = indent {
            out.push('\n');
            out.push_str(&" ".repeat(n * level));
        }
    };
    for (i, (key, x)) in items.into_iter().enumerate() {
        if i > 0 {
            out.push_str(if indent.is_some() { "," } else { ", " });
        }
        newline(out, level + 1);
        if let Some(k) = key {
            out.push_str(&J::from(k).to_string());
            out.push_str(": ");
        }
        py_dumps(x, indent, level + 1, out);
    }
    newline(out, level);
    out.push(close);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ChatML-like template with the constructs HF templates use.
    const CHATML: &str = "{{ bos_token }}{% for m in messages %}\
        {% if m['role'] == 'system' and not loop.first %}{{ raise_exception('system must be first') }}{% endif %}\
        <|im_start|>{{ m['role'] }}\n{{ m['content'].strip() }}<|im_end|>\n\
        {% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

    fn chatml() -> ChatTemplate {
        ChatTemplate::compile(CHATML.into(), vec![("bos_token", "<s>".into())]).unwrap()
    }

    /// Three nested loops of a thousand (10^9 steps) and a string doubled
    /// forty times stop at the fuel budget, with an error naming the
    /// template; the template is then refused without running.
    #[test]
    fn a_template_past_its_fuel_is_refused() {
        for src in [
            "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}\
             {% endfor %}{% endfor %}{% endfor %}x",
            "{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(40) %}\
             {% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
        ] {
            let mut t = ChatTemplate::compile(src.into(), Vec::new()).unwrap();
            t.origin = "the chat template of m/tokenizer_config.json".into();
            let start = std::time::Instant::now();
            let e = t.render(&[("user", "hi")]).unwrap_err();
            assert!(
                e.starts_with("the chat template of m/tokenizer_config.json used up its budget of 4000001 units"),
                "{e}"
            );
            let first = start.elapsed();
            assert_eq!(t.render(&[("user", "hi")]).unwrap_err(), e);
            assert!(start.elapsed() < first * 2, "the second render ran again");
        }
    }

    /// Output past the cap (4 MiB and four times the prompt) stops the
    /// render at the cap: 100 MB in one value and 100 MB from a loop.
    #[test]
    fn a_template_past_its_output_cap_is_refused() {
        for src in [
            "{{ 'x' * 100000000 }}",
            "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
        ] {
            let t = ChatTemplate::compile(src.into(), Vec::new()).unwrap();
            let e = t.render(&[("user", "hi")]).unwrap_err();
            let cap = (4 << 20) + 4 * "userhi".len();
            assert!(
                e.starts_with(&format!(
                    "the chat template wrote more than its cap of {cap} bytes of output on a prompt of 6 bytes"
                )),
                "{e}"
            );
        }
        // Just under the cap renders.
        let t = ChatTemplate::compile("{{ 'x' * 4194304 }}".into(), Vec::new()).unwrap();
        assert_eq!(t.render(&[("user", "hi")]).map(|s| s.len()), Ok(4 << 20));
    }

    #[test]
    fn renders_messages_with_the_generation_prompt() {
        let got = chatml()
            .render(&[("system", "Be brief."), ("user", " Hi there ")])
            .unwrap();
        assert_eq!(
            got,
            "<s><|im_start|>system\nBe brief.<|im_end|>\n\
             <|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn raise_exception_is_an_error_with_its_message() {
        let e = chatml()
            .render(&[("user", "a"), ("system", "late")])
            .unwrap_err();
        assert!(e.contains("system must be first"), "{e}");
    }

    #[test]
    fn whitespace_follows_trim_and_lstrip_blocks() {
        let src = "{% for m in messages %}\n    {% if loop.last %}\n[{{ m.content }}]\n    {% endif %}\n{% endfor %}";
        let t = ChatTemplate::compile(src.into(), Vec::new()).unwrap();
        assert_eq!(t.render(&[("user", "a"), ("user", "b")]).unwrap(), "[b]\n");
    }

    #[test]
    fn loop_controls_namespace_and_tojson_work_as_in_python() {
        let src = "{% set ns = namespace(n=0) %}{% for m in messages %}\
            {% if m.role == 'skip' %}{% continue %}{% endif %}{% set ns.n = ns.n + 1 %}\
            {% endfor %}{{ ns.n }} {{ {'a': [1, 'é'], 'b': none} | tojson }} \
            {{ [1] | tojson(indent=2) }}";
        let t = ChatTemplate::compile(src.into(), Vec::new()).unwrap();
        let got = t
            .render(&[("user", "a"), ("skip", "b"), ("user", "c")])
            .unwrap();
        assert_eq!(got, "2 {\"a\": [1, \"é\"], \"b\": null} [\n  1\n]");
    }

    #[test]
    fn the_config_gives_the_template_and_its_special_tokens() {
        let dir = std::env::temp_dir().join(format!("llmload-chat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("tokenizer_config.json");
        let cfg = serde_json::json!({
            "bos_token": {"content": "<s>", "lstrip": false},
            "eos_token": "</s>",
            "chat_template": [{"name": "tool_use", "template": "x"},
                              {"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"}]
        });
        std::fs::write(&p, cfg.to_string()).unwrap();
        let t = ChatTemplate::load(Some(&p), None).unwrap().unwrap();
        assert_eq!(t.render(&[("user", "q")]).unwrap(), "<s>q</s>");
        // A chat_template.jinja beside it wins.
        let j = dir.join("chat_template.jinja");
        std::fs::write(&j, "J{{ messages | length }}").unwrap();
        let t = ChatTemplate::load(Some(&p), Some(&j)).unwrap().unwrap();
        assert_eq!(t.render(&[("user", "q")]).unwrap(), "J1");
        std::fs::write(&p, r#"{"bos_token": "<s>"}"#).unwrap();
        assert!(ChatTemplate::load(Some(&p), None).unwrap().is_none());
        std::fs::write(&p, r#"{"chat_template": "{% for %}"}"#).unwrap();
        let e = ChatTemplate::load(Some(&p), None).unwrap_err();
        assert!(e.contains("tokenizer_config.json: chat template"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Real models' templates (Llama 3.1, Qwen 2.5, Mistral, Gemma,
    /// DeepSeek R1; abridged where they handle tools) render here exactly
    /// as Python's jinja2 renders them in `transformers`' environment
    /// (`tests/fixtures/chat-templates.py` made the oracle).
    #[test]
    fn real_templates_render_as_python_jinja2_does() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chat-templates.json");
        let golden: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let chats: Vec<Vec<(String, String)>> = golden["chats"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                c.as_array()
                    .unwrap()
                    .iter()
                    .map(|m| {
                        let s = |k: &str| m[k].as_str().unwrap().to_string();
                        (s("role"), s("content"))
                    })
                    .collect()
            })
            .collect();
        let cases = golden["cases"].as_object().unwrap();
        assert_eq!(cases.len(), 5);
        for (name, case) in cases {
            let special = vec![("bos_token", "<s>".into()), ("eos_token", "</s>".into())];
            let source = case["template"].as_str().unwrap().to_string();
            let t =
                ChatTemplate::compile(source, special).unwrap_or_else(|e| panic!("{name}: {e}"));
            for (chat, want) in chats.iter().zip(case["renders"].as_array().unwrap()) {
                let chat: Vec<(&str, &str)> =
                    chat.iter().map(|(r, c)| (r.as_str(), c.as_str())).collect();
                let want = want.as_str().unwrap();
                match (t.render(&chat), want.strip_prefix("ERROR: ")) {
                    (Ok(got), None) => assert_eq!(got, want, "{name}"),
                    (Err(got), Some(why)) => assert!(got.contains(why), "{name}: {got}"),
                    (got, _) => panic!("{name}: {got:?}, jinja2 gave {want:?}"),
                }
            }
        }
    }

    #[test]
    fn strftime_formats_known_dates() {
        // 2024-07-26 13:25:09 UTC, a Friday, day 208.
        let t = 1_722_000_309;
        assert_eq!(strftime("%d %b %Y", t), "26 Jul 2024");
        assert_eq!(
            strftime("%A %a %B %m/%d/%y %H:%M:%S %j %% %q", t),
            "Friday Fri July 07/26/24 13:25:09 208 % %q"
        );
        assert_eq!(strftime("%Y-%m-%d %a", 0), "1970-01-01 Thu");
    }
}
