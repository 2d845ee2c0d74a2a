//! `--slo`'s text: which latency bounds make a request *good*.

use super::duration::parse_duration;
use crate::plan::Slo;

/// Parses `ttft=200ms,tpot=40ms,e2e=10s` (any subset, each once).
pub(crate) fn parse_slo(text: &str) -> Result<Slo, String> {
    let mut slo = Slo::default();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("'{part}': expected KEY=DURATION (ttft, tpot or e2e)"))?;
        let key = key.trim();
        let ns = parse_duration(value.trim())
            .map_err(|e| format!("{key}: {e}"))?
            .as_nanos()
            .min(u128::from(u64::MAX)) as u64;
        let slot = match key {
            "ttft" => &mut slo.ttft_ns,
            "tpot" => &mut slo.tpot_ns,
            "e2e" => &mut slo.e2e_ns,
            k => return Err(format!("'{k}': expected ttft, tpot or e2e")),
        };
        if slot.replace(ns).is_some() {
            return Err(format!("'{key}' given twice"));
        }
    }
    if slo.is_empty() {
        return Err(format!(
            "'{text}': no bound given (e.g. ttft=200ms,e2e=10s)"
        ));
    }
    Ok(slo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_subset_parses_and_mistakes_are_named() {
        let s = parse_slo("ttft=200ms, e2e=10s").unwrap();
        assert_eq!(s.ttft_ns, Some(200_000_000));
        assert_eq!(s.tpot_ns, None);
        assert_eq!(s.e2e_ns, Some(10_000_000_000));
        assert!(parse_slo("tpot=40ms").unwrap().tpot_ns == Some(40_000_000));
        assert!(parse_slo("itl=1ms").unwrap_err().contains("'itl'"));
        assert!(
            parse_slo("ttft=1ms,ttft=2ms")
                .unwrap_err()
                .contains("twice")
        );
        assert!(parse_slo("ttft").unwrap_err().contains("KEY=DURATION"));
        assert!(parse_slo("").unwrap_err().contains("no bound"));
        assert!(parse_slo("e2e=fast").unwrap_err().starts_with("e2e:"));
    }
}
