//! Answer extractors (MLPerf's `evaluation/extractor.py`).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Extractor {
    Identity,
    Abcd,
    BoxedMath,
    PythonCode,
    FunctionCall,
}

impl Extractor {
    pub(crate) fn parse(name: &str) -> Result<Extractor, String> {
        match name {
            "identity" | "identity_extractor" => Ok(Extractor::Identity),
            "abcd" | "abcd_extractor" => Ok(Extractor::Abcd),
            "boxed_math" | "boxed_math_extractor" => Ok(Extractor::BoxedMath),
            "python_code" | "python_code_extractor" => Ok(Extractor::PythonCode),
            "function_call" | "function_call_extractor" => Ok(Extractor::FunctionCall),
            _ => Err(format!(
                "extractor '{name}': expected identity, abcd, boxed_math, python_code or function_call"
            )),
        }
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            Extractor::Identity => "identity",
            Extractor::Abcd => "abcd",
            Extractor::BoxedMath => "boxed_math",
            Extractor::PythonCode => "python_code",
            Extractor::FunctionCall => "function_call",
        }
    }
    pub(crate) fn mlperf_id(self) -> &'static str {
        match self {
            Extractor::Identity => "identity_extractor",
            Extractor::Abcd => "abcd_extractor",
            Extractor::BoxedMath => "boxed_math_extractor",
            Extractor::PythonCode => "python_code_extractor",
            Extractor::FunctionCall => "function_call_extractor",
        }
    }
    pub(crate) fn mlperf_class(self) -> &'static str {
        match self {
            Extractor::Identity => "IdentityExtractor",
            Extractor::Abcd => "ABCDExtractor",
            Extractor::BoxedMath => "BoxedMathExtractor",
            Extractor::PythonCode => "PythonCodeExtractor",
            Extractor::FunctionCall => "FunctionCallExtractor",
        }
    }
    pub(crate) fn extract(self, text: &str) -> Option<String> {
        Some(text.to_string())
    }
}
