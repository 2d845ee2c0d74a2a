//! The exit statuses of MLPerf mode (`benchmark`, `validate-yaml`, `eval`,
//! `probe` with MLPerf's flags, `init` with an MLPerf template name), which
//! are `inference-endpoint`'s: its `main` maps each error class to one.
//! `bench` and the other commands keep their own (each command's `--help`
//! lists them); `docs/guide/mlperf.md` sets the two side by side.

/// Finished: the run, the check or the file is done.
pub(crate) const OK: i32 = 0;
/// A command line the parser refused (an unknown flag, a missing or
/// malformed value), an audit that failed, a command MLPerf does not
/// implement (`eval`): MLPerf's `CLIError` and argument errors.
pub(crate) const FAILED: i32 = 1;
/// Bad input: a config that does not validate, a `--dataset` string that
/// does not parse, a dataset file that is not there, a template name that
/// is not one (`InputValidationError`).
pub(crate) const INPUT: i32 = 2;
/// Setup failed: the dataset could not be loaded, the endpoint or
/// tokenizer could not be set up, a file could not be created
/// (`SetupError`).
pub(crate) const SETUP: i32 = 3;
/// Execution failed: the run started and did not produce its result
/// (`ExecutionError`): llmload's incomplete run, unwritten results, no
/// request succeeded, fewer than half of a probe's requests succeeded.
pub(crate) const EXECUTION: i32 = 4;
/// Stopped by a signal (MLPerf's KeyboardInterrupt).
pub(crate) const INTERRUPTED: i32 = 130;

/// What `--help` of an MLPerf-mode command says of its statuses.
pub(crate) const HELP: &str = "\
Exit status (MLPerf's):
  0    finished
  1    a refused command line, a failed audit, eval (not implemented)
  2    bad input: the config, a --dataset string, a missing dataset file
  3    setup failed: the dataset could not be loaded, the endpoint or
       tokenizer could not be set up, a file could not be written
  4    execution failed: the run is incomplete, results unwritten, no
       request succeeded
  130  stopped by SIGINT, SIGTERM or SIGHUP
";
