//! The fuzz targets' runner, shared by `engine/tests/fuzz.rs` and the
//! server's `http/fuzz.rs` (which include this file by path: there is no
//! test-support crate for one function).

use std::cell::Cell;
use std::time::{Duration, Instant};

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Runs `test` on inputs from `strategy`: `SIKA_FUZZ_CASES` of them, in
/// rounds until `SIKA_FUZZ_SECONDS` have passed when that is set. A failure
/// (a panic included) is shrunk by proptest and reported with its input.
pub(crate) fn fuzz<S>(name: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    let cases = env_number("SIKA_FUZZ_CASES").unwrap_or(256).clamp(1, u64::from(u32::MAX)) as u32;
    let budget = env_number("SIKA_FUZZ_SECONDS").map(Duration::from_secs);
    let started = Instant::now();
    let executions = Cell::new(0u64);
    loop {
        let config = Config { cases, failure_persistence: None, ..Config::default() };
        let mut runner = TestRunner::new(config);
        let result = runner.run(&strategy, |input| {
            executions.set(executions.get() + 1);
            test(input)
        });
        if let Err(failure) = result {
            panic!("fuzz target {name} failed after {} executions: {failure}", executions.get());
        }
        if budget.is_none_or(|budget| started.elapsed() >= budget) {
            break;
        }
    }
    eprintln!(
        "fuzz target {name}: {} executions in {:.1} s, no failure",
        executions.get(),
        started.elapsed().as_secs_f64()
    );
}
