//! The per-key rate limit, measured from outside: a key offered a steady
//! 300 requests per second is held to the configured 100, while a second
//! key sending 20 per second at the same time is never refused.

use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use tokio::time::Instant;

const LIMIT: f64 = 100.0;
const SECONDS: u64 = 3;

/// Sends `rate` requests per second for `SECONDS`, each on its own task so a
/// slow answer never delays the next send. Returns (offset of the send from
/// `start` in seconds, status) per request.
async fn offer(api: Api, url: String, key: String, rate: u64, start: Instant) -> Vec<(f64, u16)> {
    let count = rate * SECONDS;
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let url = Arc::new(url);
    let key = Arc::new(key);
    let mut tasks = Vec::with_capacity(count as usize);
    for i in 0..count {
        tokio::time::sleep_until(start + interval * i as u32).await;
        let (api, url, key) = (api.clone(), url.clone(), key.clone());
        tasks.push(tokio::spawn(async move {
            let sent = start.elapsed().as_secs_f64();
            let r = api.get(&url, &key).await;
            if r.status == 429 {
                r.expect_error(429, "rate_limited");
                let retry = r.body["details"]["retryAfter"].as_u64().expect("details.retryAfter");
                assert!(retry >= 1, "{}", r.text);
                assert_eq!(r.header("retry-after"), Some(retry.to_string().as_str()));
            } else {
                r.expect(200);
            }
            (sent, r.status)
        }));
    }
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await.expect("request task"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_is_held_to_the_limit_and_others_are_unaffected() {
    let node = Node::start(Options::default());
    let api = Api::new();
    // Fresh keys, so each one's window starts with this measurement.
    let hot = scoped_key(&api, &node, "hot", &["rates:read"]).await;
    let calm = scoped_key(&api, &node, "calm", &["rates:read"]).await;
    let url = node.sandbox_url("/v1/rates/USD/GHS");
    // Open a few connections before the clock starts.
    for _ in 0..4 {
        api.get(&url, &node.creds.sandbox_key).await.expect(200);
    }
    let start = Instant::now() + Duration::from_millis(200);
    let hot_run = tokio::spawn(offer(api.clone(), url.clone(), hot, 300, start));
    let calm_run = tokio::spawn(offer(Api::new(), url.clone(), calm, 20, start));
    let hot = hot_run.await.unwrap();
    let calm = calm_run.await.unwrap();

    let last_send = hot.iter().map(|(t, _)| *t).fold(0.0, f64::max);
    let offered = hot.len() as f64 / last_send;
    assert!(offered > 270.0, "the client offered only {offered:.0}/s; the measurement means nothing");
    let accepted_in =
        |from: f64, to: f64| hot.iter().filter(|(t, s)| *s == 200 && *t >= from && *t < to).count();
    // The first window admits a burst of the limit; from the second window
    // on the sliding estimate holds the steady state. Measure both.
    let total = accepted_in(0.0, SECONDS as f64 + 1.0) as f64 / SECONDS as f64;
    let steady = accepted_in(1.0, SECONDS as f64) as f64 / (SECONDS as f64 - 1.0);
    let refused = hot.iter().filter(|(_, s)| *s == 429).count();
    eprintln!(
        "offered {offered:.0}/s; accepted {steady:.1}/s steady, {total:.1}/s overall; {refused} refused"
    );
    assert!(
        (LIMIT * 0.95..=LIMIT * 1.05).contains(&steady),
        "steady state: {steady:.1} accepted/s (limit {LIMIT}); over the whole run {total:.1}/s"
    );
    assert!(
        (LIMIT * 0.95..=LIMIT * 1.05).contains(&total),
        "whole run: {total:.1} accepted/s (limit {LIMIT}); steady state {steady:.1}/s"
    );
    assert!(refused as f64 > hot.len() as f64 * 0.5, "only {refused} of {} refused", hot.len());
    let calm_refused: Vec<_> = calm.iter().filter(|(_, s)| *s != 200).collect();
    assert!(
        calm_refused.is_empty(),
        "the calm key was refused {} times: {calm_refused:?}",
        calm_refused.len()
    );
    assert_eq!(calm.len(), 20 * SECONDS as usize);
}

/// The spec's rule is 100 requests per key per rolling second: a key that
/// used its 100 and then waited 1.1 s has all of its next 100 accepted, and
/// the 101st within that second is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_that_waited_a_second_has_its_whole_limit_again() {
    let node = Node::start(Options::default());
    let api = Api::new();
    let key = scoped_key(&api, &node, "rolling", &["rates:read"]).await;
    let url = node.sandbox_url("/v1/rates/USD/GHS");
    let burst = |api: Api, url: String, key: String| async move {
        let sends = (0..100).map(|_| {
            let (api, url, key) = (api.clone(), url.clone(), key.clone());
            tokio::spawn(async move { api.get(&url, &key).await.status })
        });
        let mut statuses = Vec::new();
        for send in sends.collect::<Vec<_>>() {
            statuses.push(send.await.unwrap());
        }
        statuses
    };
    let first = burst(api.clone(), url.clone(), key.clone()).await;
    assert!(first.iter().all(|s| *s == 200), "the first 100: {first:?}");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let started = std::time::Instant::now();
    let second = burst(api.clone(), url.clone(), key.clone()).await;
    let refused = second.iter().filter(|s| **s == 429).count();
    assert_eq!(refused, 0, "{refused} of the next 100 refused after waiting 1.1 s");
    // The 101st is refused while those 100 are within the last second (on a
    // machine so loaded that the burst took longer, some already left it).
    if started.elapsed() < Duration::from_millis(900) {
        api.get(&url, &key).await.expect_error(429, "rate_limited");
    }
}
