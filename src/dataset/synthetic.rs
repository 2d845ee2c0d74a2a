//! `--synthetic isl=N,osl=M[,isl_std=S,osl_std=T,dist=fixed|normal|uniform|lognormal,count=K]`:
//! prompts of about N input tokens and requested output lengths drawn from a
//! distribution, reproducible by seed. With a tokenizer the input length is
//! exact; without one it follows a documented ratio.
//!
//! Prompts are random sequences of common English words (`words.rs`). Each
//! starts with its index written in base-|vocabulary| digits, least
//! significant first, so every prompt differs from every other from its
//! first word and a server's prefix cache cannot turn the benchmark into a
//! cache benchmark. Without a tokenizer one word stands for one token: the
//! words are ones mainstream BPE vocabularies hold whole, about 5.7
//! characters per token with the space (plain English prose averages ~4
//! characters per token because it has rarer, longer words; this text is
//! built to be denser in tokens per word, not per character). With a
//! tokenizer only the words it encodes as exactly one token are used, and
//! each prompt is counted and, if needed, trimmed or extended a word at a
//! time until `tokenizer.count(prompt)` is the drawn length.
//!
//! Lengths: `dist` defaults to `fixed`, or to `normal` when a std is given.
//! `normal` is mean ± std·z; `uniform` spans mean ± std·√3, so its standard
//! deviation is std; `lognormal` has the given mean and std (its log is
//! normal with σ² = ln(1 + std²/mean²), μ = ln(mean) − σ²/2). Every draw is
//! rounded and clamped to at least 1, which raises the mean slightly when
//! std is large next to it. Lengths and text come from separate seeded
//! streams, so the same seed gives the same lengths with or without a
//! tokenizer.

use crate::protocol::Message;
use crate::rng::Rng;
use crate::tokens::Tokenizer;

use super::Sample;
use super::words::WORDS;

/// Length distributions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    Fixed,
    Normal,
    Uniform,
    LogNormal,
}

impl Dist {
    fn parse(s: &str) -> Option<Dist> {
        match s {
            "fixed" => Some(Dist::Fixed),
            "normal" => Some(Dist::Normal),
            "uniform" => Some(Dist::Uniform),
            "lognormal" => Some(Dist::LogNormal),
            _ => None,
        }
    }
}

/// A parsed `--synthetic` argument.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticSpec {
    pub isl: u32,
    pub osl: u32,
    pub isl_std: f64,
    pub osl_std: f64,
    pub dist: Dist,
    /// Distinct prompts to generate (default 1000).
    pub count: usize,
}

impl SyntheticSpec {
    pub fn parse(arg: &str) -> Result<SyntheticSpec, String> {
        let mut isl = None;
        let mut osl = None;
        let mut isl_std = None;
        let mut osl_std = None;
        let mut dist = None;
        let mut count = None;
        for option in arg.split(',') {
            let Some((key, value)) = option.split_once('=') else {
                return Err(format!(
                    "--synthetic '{option}': expected key=value (isl=N,osl=M[,isl_std=S,osl_std=T,dist=...,count=K])"
                ));
            };
            let twice = || format!("--synthetic: {key}= given twice");
            let positive = || {
                value.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    format!("--synthetic {key}={value}: expected a positive integer")
                })
            };
            let std = || {
                value
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| format!("--synthetic {key}={value}: expected a number ≥ 0"))
            };
            let dup = match key {
                "isl" => isl.replace(positive()?).is_some(),
                "osl" => osl.replace(positive()?).is_some(),
                "count" => count.replace(positive()? as usize).is_some(),
                "isl_std" => isl_std.replace(std()?).is_some(),
                "osl_std" => osl_std.replace(std()?).is_some(),
                "dist" => {
                    let d = Dist::parse(value).ok_or_else(|| {
                        format!(
                            "--synthetic dist={value}: expected fixed, normal, uniform or lognormal"
                        )
                    })?;
                    dist.replace(d).is_some()
                }
                _ => {
                    return Err(format!(
                        "--synthetic: unknown key '{key}' (expected isl, osl, isl_std, osl_std, dist or count)"
                    ));
                }
            };
            if dup {
                return Err(twice());
            }
        }
        let isl = isl.ok_or("--synthetic: isl= (input tokens per prompt) is required")?;
        let osl = osl.ok_or("--synthetic: osl= (output tokens per request) is required")?;
        let isl_std = isl_std.unwrap_or(0.0);
        let osl_std = osl_std.unwrap_or(0.0);
        let spread = isl_std > 0.0 || osl_std > 0.0;
        let dist = match dist {
            Some(Dist::Fixed) if spread => {
                return Err(
                    "--synthetic dist=fixed: isl_std/osl_std need dist=normal, uniform or lognormal"
                        .to_string(),
                );
            }
            Some(d) => d,
            None if spread => Dist::Normal,
            None => Dist::Fixed,
        };
        Ok(SyntheticSpec {
            isl,
            osl,
            isl_std,
            osl_std,
            dist,
            count: count.unwrap_or(1000),
        })
    }
}

/// Generates `spec.count` samples (each with `max_tokens` set to its drawn
/// output length).
pub(crate) fn generate(
    spec: &SyntheticSpec,
    seed: u64,
    tokenizer: Option<&Tokenizer>,
) -> Vec<Sample> {
    let mut lengths = Rng::seeded(seed ^ 0x7379_6e74_6c65_6e73);
    let mut text = Rng::seeded(seed ^ 0x7379_6e74_7465_7874);
    let vocab: Vec<String> = match tokenizer.map(single_token_words) {
        Some(v) if !v.is_empty() => v,
        // No single-token word at all: build from the common words anyway
        // and let the adjust loop get as close as it can.
        _ => WORDS.iter().map(|w| w.to_string()).collect(),
    };
    let width = marker_width(vocab.len(), spec.count);
    (0..spec.count)
        .map(|i| {
            let isl = draw(spec.isl, spec.isl_std, spec.dist, &mut lengths);
            let osl = draw(spec.osl, spec.osl_std, spec.dist, &mut lengths);
            let mut prompt = build(i, isl as usize, &vocab, width, &mut text);
            if let Some(tok) = tokenizer {
                make_exact(&mut prompt, isl as usize, tok, &vocab, &mut text);
            }
            Sample {
                messages: vec![Message::user(prompt)],
                max_tokens: Some(osl),
                ..Sample::default()
            }
        })
        .collect()
}

/// One length from `dist` around `mean`, rounded, at least 1.
fn draw(mean: u32, std: f64, dist: Dist, rng: &mut Rng) -> u32 {
    let m = f64::from(mean);
    let x = match dist {
        Dist::Fixed => return mean,
        Dist::Normal => m + std * normal(rng),
        Dist::Uniform => m + std * 3f64.sqrt() * (2.0 * rng.next_f64() - 1.0),
        Dist::LogNormal => {
            let s2 = (1.0 + (std / m).powi(2)).ln();
            (m.ln() - s2 / 2.0 + s2.sqrt() * normal(rng)).exp()
        }
    };
    x.round().clamp(1.0, f64::from(u32::MAX)) as u32
}

/// A standard normal draw (Box–Muller, one of the pair; the first uniform
/// is taken from (0, 1] so its log is finite).
fn normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.next_f64();
    let u2 = rng.next_f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Words needed to write every index below `count` in base `n`.
fn marker_width(n: usize, count: usize) -> usize {
    let mut width = 1;
    let mut reach = n.max(2);
    while reach < count {
        reach = reach.saturating_mul(n.max(2));
        width += 1;
    }
    width
}

/// `words` words: index `i`'s marker, then random words.
fn build(i: usize, words: usize, vocab: &[String], width: usize, rng: &mut Rng) -> String {
    let mut s = String::with_capacity(words * 8);
    let mut rest = i;
    for k in 0..words {
        let w = if k < width {
            let d = rest % vocab.len();
            rest /= vocab.len();
            &vocab[d]
        } else {
            &vocab[rng.below(vocab.len() as u64) as usize]
        };
        if k > 0 {
            s.push(' ');
        }
        s.push_str(w);
    }
    s
}

/// Words `tok` encodes as exactly one known token, alone and after a space (so
/// any space-separated sequence of n of them is n tokens unless the
/// tokenizer merges across words). The common words first; if the
/// vocabulary holds few of them, alphabetic entries of the vocabulary.
fn single_token_words(tok: &Tokenizer) -> Vec<String> {
    const ENOUGH: usize = 64;
    const SCAN_IDS: usize = 200_000;
    // Decoding back to the word rules out an unknown-token id standing in
    // for it.
    let ok = |w: &str| {
        let ids = tok.encode(w);
        ids.len() == 1 && tok.decode(&ids).trim() == w && tok.count(&format!("{w} {w}")) == 2
    };
    let mut words: Vec<String> = WORDS
        .iter()
        .filter(|w| ok(w))
        .map(|w| w.to_string())
        .collect();
    if words.len() < ENOUGH {
        for id in 0..tok.vocab_size().min(SCAN_IDS) as u32 {
            if words.len() >= WORDS.len() {
                break;
            }
            let s = tok.decode(&[id]);
            let w = s.trim();
            if (2..=16).contains(&w.len())
                && w.bytes().all(|b| b.is_ascii_alphabetic())
                && !words.iter().any(|x| x == w)
                && ok(w)
            {
                words.push(w.to_string());
            }
        }
    }
    words
}

/// Trims or extends `prompt` a word at a time until it is `target` tokens.
/// Single-token words make the first count right almost always; the loop
/// covers tokenizers that merge across words, and gives up (leaving the
/// closest it reached last) after a bounded number of tries.
fn make_exact(
    prompt: &mut String,
    target: usize,
    tok: &Tokenizer,
    vocab: &[String],
    rng: &mut Rng,
) {
    let mut n = tok.count(prompt);
    for _ in 0..2 * target + 16 {
        if n == target {
            return;
        }
        if n > target {
            match prompt.rfind(' ') {
                Some(cut) => prompt.truncate(cut),
                // One word, too many tokens: try another word instead.
                None => {
                    prompt.clear();
                    prompt.push_str(&vocab[rng.below(vocab.len() as u64) as usize]);
                }
            }
        } else {
            if !prompt.is_empty() {
                prompt.push(' ');
            }
            prompt.push_str(&vocab[rng.below(vocab.len() as u64) as usize]);
        }
        n = tok.count(prompt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(arg: &str) -> SyntheticSpec {
        SyntheticSpec::parse(arg).unwrap()
    }

    #[test]
    fn parse_defaults_and_errors() {
        assert_eq!(
            spec("isl=128,osl=64"),
            SyntheticSpec {
                isl: 128,
                osl: 64,
                isl_std: 0.0,
                osl_std: 0.0,
                dist: Dist::Fixed,
                count: 1000,
            }
        );
        let s = spec("osl=10,isl=20,isl_std=5,count=7");
        assert_eq!((s.dist, s.isl_std, s.count), (Dist::Normal, 5.0, 7));
        assert_eq!(
            spec("isl=1,osl=1,dist=uniform,osl_std=2").dist,
            Dist::Uniform
        );
        assert_eq!(spec("isl=1,osl=1,dist=lognormal").dist, Dist::LogNormal);
        for (arg, needle) in [
            ("osl=5", "isl= (input tokens per prompt) is required"),
            ("isl=5", "osl= (output tokens per request) is required"),
            ("isl=0,osl=5", "isl=0: expected a positive integer"),
            ("isl=x,osl=5", "isl=x"),
            (
                "isl=5,osl=5,isl_std=-1",
                "isl_std=-1: expected a number ≥ 0",
            ),
            ("isl=5,osl=5,osl_std=nan", "osl_std=nan"),
            ("isl=5,osl=5,dist=zipf", "dist=zipf"),
            ("isl=5,osl=5,dist=fixed,isl_std=2", "dist=fixed"),
            ("isl=5,osl=5,count=0", "count=0"),
            ("isl=5,osl=5,isl=6", "isl= given twice"),
            ("isl=5,osl=5,colour=red", "unknown key 'colour'"),
            ("isl=5,osl=5,", "''"),
            ("isl", "'isl'"),
        ] {
            let e = SyntheticSpec::parse(arg).unwrap_err();
            assert!(e.contains(needle), "{arg}: {e}");
            assert!(e.starts_with("--synthetic"), "{e}");
        }
    }

    #[test]
    fn reproducible_by_seed_and_lengths_as_asked() {
        let s = spec("isl=32,osl=16,count=200");
        let a = generate(&s, 7, None);
        assert_eq!(a, generate(&s, 7, None));
        assert_ne!(a, generate(&s, 8, None));
        assert_eq!(a.len(), 200);
        for x in &a {
            assert_eq!(x.max_tokens, Some(16));
            assert_eq!(x.messages.len(), 1);
            assert_eq!(x.messages[0].role, "user");
            assert_eq!(x.messages[0].content.split(' ').count(), 32);
            assert!(x.system.is_none() && x.input_tokens.is_none());
        }
    }

    #[test]
    fn prompts_are_distinct_from_their_first_words() {
        // 2 000 prompts need a two-word marker over 538 words.
        let a = generate(&spec("isl=2,osl=1,count=2000"), 1, None);
        let set: std::collections::BTreeSet<_> = a.iter().map(|s| &s.messages[0].content).collect();
        assert_eq!(set.len(), 2000);
        // With one-word prompts every index below the vocabulary size is
        // still distinct, and consecutive prompts differ in their first word.
        let a = generate(&spec("isl=1,osl=1,count=500"), 1, None);
        let set: std::collections::BTreeSet<_> = a.iter().map(|s| &s.messages[0].content).collect();
        assert_eq!(set.len(), 500);
        let a = generate(&spec("isl=64,osl=1,count=100"), 1, None);
        for w in a.windows(2) {
            let first = |s: &Sample| s.messages[0].content.split(' ').next().unwrap().to_string();
            assert_ne!(first(&w[0]), first(&w[1]));
        }
        assert_eq!(marker_width(538, 1), 1);
        assert_eq!(marker_width(538, 538), 1);
        assert_eq!(marker_width(538, 539), 2);
        assert_eq!(marker_width(538, 538 * 538 + 1), 3);
        assert_eq!(marker_width(1, 3), 2);
    }

    fn stats(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var.sqrt())
    }

    #[test]
    fn distributions_have_the_asked_mean_and_std() {
        // 100k draws of mean 1000, std 100: the standard error of the mean
        // is 0.32 and of the std about 0.3 (normal); bounds are loose
        // enough for the rounding to integers and the heavier lognormal tail.
        const N: usize = 100_000;
        for dist in [Dist::Normal, Dist::Uniform, Dist::LogNormal] {
            let mut rng = Rng::seeded(11);
            let xs: Vec<f64> = (0..N)
                .map(|_| f64::from(draw(1000, 100.0, dist, &mut rng)))
                .collect();
            let (mean, std) = stats(&xs);
            assert!((mean - 1000.0).abs() < 2.0, "{dist:?} mean {mean}");
            assert!((std - 100.0).abs() < 2.0, "{dist:?} std {std}");
            if dist == Dist::Uniform {
                let lo = xs.iter().cloned().fold(f64::MAX, f64::min);
                let hi = xs.iter().cloned().fold(f64::MIN, f64::max);
                let half = 100.0 * 3f64.sqrt();
                assert!(
                    lo >= (1000.0 - half).floor() && hi <= (1000.0 + half).ceil(),
                    "{lo} {hi}"
                );
                assert!(
                    lo < 1000.0 - half + 2.0 && hi > 1000.0 + half - 2.0,
                    "{lo} {hi}"
                );
            }
            if dist == Dist::LogNormal {
                assert!(xs.iter().all(|x| *x > 0.0));
                // Right-skewed: the median sits below the mean.
                let mut s = xs.clone();
                s.sort_by(f64::total_cmp);
                assert!(s[N / 2] < mean - 2.0, "median {} mean {mean}", s[N / 2]);
            }
        }
        let mut rng = Rng::seeded(1);
        assert!((0..1000).all(|_| draw(77, 0.0, Dist::Normal, &mut rng) == 77));
        assert!((0..1000).all(|_| draw(77, 50.0, Dist::Fixed, &mut rng) == 77));
        // Clamped to at least 1.
        let xs: Vec<u32> = (0..10_000)
            .map(|_| draw(2, 10.0, Dist::Normal, &mut rng))
            .collect();
        assert!(xs.iter().all(|x| *x >= 1));
        assert!(xs.iter().filter(|x| **x == 1).count() > 3000);
    }

    #[test]
    fn generated_output_lengths_follow_the_spec() {
        let a = generate(&spec("isl=4,osl=200,osl_std=20,count=20000"), 3, None);
        let xs: Vec<f64> = a.iter().map(|s| f64::from(s.max_tokens.unwrap())).collect();
        let (mean, std) = stats(&xs);
        assert!((mean - 200.0).abs() < 1.0, "mean {mean}");
        assert!((std - 20.0).abs() < 1.0, "std {std}");
        // isl is fixed here (no isl_std): every prompt is exactly 4 words.
        assert!(
            a.iter()
                .all(|s| s.messages[0].content.split(' ').count() == 4)
        );
    }

    #[cfg(feature = "tokenizer")]
    fn fixture(words: &[&str]) -> (crate::dataset::testutil::TempDir, Tokenizer) {
        let d = crate::dataset::testutil::TempDir::new("synth-tok");
        let p = d.file("tokenizer.json", crate::tokens::word_level_json(words));
        let t = Tokenizer::load(&p).unwrap();
        (d, t)
    }

    #[cfg(feature = "tokenizer")]
    #[test]
    fn exact_input_lengths_with_a_tokenizer() {
        let (_d, tok) = fixture(&WORDS[..300]);
        let s = spec("isl=100,osl=10,isl_std=30,count=300");
        let a = generate(&s, 5, Some(&tok));
        let b = generate(&s, 5, None);
        for (x, y) in a.iter().zip(&b) {
            let words = y.messages[0].content.split(' ').count();
            // Same seed, same drawn length with or without the tokenizer.
            assert_eq!(tok.count(&x.messages[0].content), words);
            assert_eq!(x.max_tokens, y.max_tokens);
        }
        let lens: std::collections::BTreeSet<_> = a
            .iter()
            .map(|x| tok.count(&x.messages[0].content))
            .collect();
        assert!(lens.len() > 20, "lengths vary: {lens:?}");
        // Only words the tokenizer knows (no [UNK]) are used.
        assert!(
            a.iter()
                .all(|x| !tok.encode(&x.messages[0].content).contains(&0))
        );
    }

    #[cfg(feature = "tokenizer")]
    #[test]
    fn adjusting_reaches_the_exact_length_with_multi_token_words() {
        // "aa-bb" is three tokens under a whitespace+punctuation split, so a
        // word count is wrong and only the adjust loop gets it exact.
        let (_d, tok) = fixture(&["aa", "bb", "cc", "-"]);
        let vocab: Vec<String> = ["aa-bb", "cc", "aa-bb-cc"]
            .iter()
            .map(|w| w.to_string())
            .collect();
        let mut rng = Rng::seeded(9);
        for target in [1, 2, 5, 17, 40] {
            let mut p = build(3, target, &vocab, 1, &mut rng);
            make_exact(&mut p, target, &tok, &vocab, &mut rng);
            assert_eq!(tok.count(&p), target, "{p}");
        }
        // The vocabulary scan finds single-token entries when few common
        // words qualify.
        let words = single_token_words(&tok);
        assert_eq!(words, vec!["aa", "bb", "cc"]);
    }

    #[test]
    fn hundred_thousand_prompts_timed() {
        let t = std::time::Instant::now();
        let a = generate(&spec("isl=128,osl=128,count=100000"), 42, None);
        let bytes: usize = a.iter().map(|s| s.messages[0].content.len()).sum();
        eprintln!(
            "synthetic: 100000 prompts of isl=128 in {:?} ({:.1} MB, {:.2} chars/token)",
            t.elapsed(),
            bytes as f64 / 1e6,
            bytes as f64 / (100_000.0 * 128.0)
        );
        assert_eq!(a.len(), 100_000);
    }
}
