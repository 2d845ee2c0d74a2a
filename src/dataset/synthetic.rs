//! `--synthetic isl=N,osl=M[,isl_std=S,osl_std=T,dist=fixed|normal|uniform|lognormal,count=K]`:
//! prompts of about N input tokens and requested output lengths drawn from a
//! distribution, reproducible by seed. With a tokenizer the input length is
//! exact; without one it follows a documented characters-per-token ratio.

use crate::tokens::Tokenizer;

use super::Sample;

/// Length distributions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    Fixed,
    Normal,
    Uniform,
    LogNormal,
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
        let _ = arg;
        todo!("dataset helper")
    }
}

/// Generates `spec.count` samples (each with `max_tokens` set to its drawn
/// output length).
pub fn generate(spec: &SyntheticSpec, seed: u64, tokenizer: Option<&Tokenizer>) -> Vec<Sample> {
    let _ = (spec, seed, tokenizer);
    todo!("dataset helper")
}
