//! Flags over a profile: every field a flag sets replaces the profile's,
//! except where replacing would surprise (the load shape is one setting;
//! headers and extra body fields merge by name). The field list is written
//! out so that a new profile field that is not listed fails to compile.

use std::collections::BTreeMap;

use serde_json::Map;

use super::Profile;

impl Profile {
    /// Applies `flags` (the command line, as a profile) over `self`: every
    /// field set in `flags` replaces the profile's, with two exceptions.
    /// The load shape (`mode`, `rate`, `concurrency`, `stages`) is one
    /// setting: a flag setting any of them clears all four from the profile
    /// first, so `--rate 100` over a staged profile runs one stage at 100/s
    /// instead of an ambiguous mix; `endpoint` and `endpoints` are one
    /// setting in the same way. `headers` and `extra_body` merge by name
    /// (the flag's value wins; header names compare case-insensitively), as a
    /// repeatable `--header` adds to a profile's headers rather than erasing
    /// its credentials.
    pub(crate) fn overlay(&mut self, flags: &Profile) {
        if flags.mode.is_some()
            || flags.rate.is_some()
            || flags.concurrency.is_some()
            || flags.stages.is_some()
        {
            self.mode = None;
            self.rate = None;
            self.concurrency = None;
            self.stages = None;
        }
        // The key and its file are one setting, as the load shape is: a
        // flag giving either replaces both.
        if flags.api_key.is_some() || flags.api_key_file.is_some() {
            self.api_key = None;
            self.api_key_file = None;
        }
        // One endpoint or a list is one setting too.
        if flags.endpoint.is_some() || flags.endpoints.is_some() {
            self.endpoint = None;
            self.endpoints = None;
        }
        if let Some(fh) = &flags.headers {
            let h = self.headers.get_or_insert_with(BTreeMap::new);
            for (k, v) in fh {
                h.retain(|old, _| !old.eq_ignore_ascii_case(k));
                h.insert(k.clone(), v.clone());
            }
        }
        if let Some(fe) = &flags.extra_body {
            let e = self.extra_body.get_or_insert_with(Map::new);
            for (k, v) in fe {
                e.insert(k.clone(), v.clone());
            }
        }
        macro_rules! replace {
            ($($f:ident),* $(,)?) => {
                // Destructuring makes a field added to `Profile` but not
                // listed here a compile error.
                let Profile { $($f: _,)* headers: _, extra_body: _ } = flags;
                $(if flags.$f.is_some() {
                    self.$f = flags.$f.clone();
                })*
            };
        }
        replace!(
            endpoint,
            endpoints,
            preset,
            api,
            model,
            mode,
            rate,
            concurrency,
            duration,
            requests,
            warmup,
            warmup_requests,
            min_duration,
            min_requests,
            max_duration,
            arrival,
            connections,
            openloop_max_inflight,
            max_tokens,
            stream,
            system,
            dataset,
            synthetic,
            order,
            tokenizer,
            token_source,
            temperature,
            top_p,
            stop,
            ignore_eos,
            min_tokens,
            api_key,
            api_key_file,
            ca_cert,
            insecure,
            tls_server_name,
            client_cert,
            client_key,
            keep_alive,
            cache_mode,
            correlation,
            timeout,
            ttft_timeout,
            connect_timeout,
            drain_timeout,
            seed,
            scheduler_seed,
            dataloader_seed,
            early_stopping,
            workers,
            pin,
            out,
            quiet,
            live_interval,
            record_output,
            max_output_text,
            phase,
            accuracy_datasets,
            prompt_template,
            slo,
            metrics_preset,
            server_metrics,
            server_metrics_interval,
            io,
            uring_sqpoll,
            events,
            source_addrs,
            shard,
            shards,
            start_at,
            stages,
            scenarios,
            thresholds,
        );
    }
}
