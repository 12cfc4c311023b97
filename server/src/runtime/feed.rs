//! Polls the operator's rate feed (`[rates.feed]`) every `interval` and
//! hands each document to the stacks' rate books. A failed poll keeps the
//! last good rates, which the books refuse once they are older than
//! `max_age`; the admin API shows the failure and the feed's age.

use std::sync::Arc;
use std::time::Duration;

use crate::domain::rates::{self, RateBook};
use crate::domain::settings::FeedSettings;

/// The most a feed document may weigh.
const MAX_BODY: usize = 1024 * 1024;

pub(crate) fn spawn(feed: FeedSettings, books: Vec<Arc<RateBook>>) {
    tokio::spawn(async move {
        let client = match reqwest::Client::builder().timeout(Duration::from_secs(10)).build() {
            Ok(client) => client,
            Err(e) => {
                tracing::error!(error = %e, "cannot build the rate feed's HTTP client");
                return;
            }
        };
        let mut ticks = tokio::time::interval(feed.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let result = fetch(&client, &feed.url).await;
            if let Err(e) = &result {
                tracing::warn!(url = %feed.url, error = %e, "the rate feed failed");
            }
            for book in &books {
                book.record_fetch(result.clone());
            }
        }
    });
}

async fn fetch(
    client: &reqwest::Client,
    url: &str,
) -> Result<(std::collections::BTreeMap<String, rust_decimal::Decimal>, i64), String> {
    let mut response = client.get(url).send().await.map_err(|e| format!("cannot reach the feed: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("the feed answered {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("the feed's body broke off: {e}"))? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err("the feed's document is larger than 1 MiB".into());
        }
        body.extend_from_slice(&chunk);
    }
    rates::parse_feed(&body)
}
