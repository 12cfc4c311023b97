//! The webhook dispatcher of one stack: a task that turns outbox events into
//! deliveries (one per subscribed endpoint), sends due deliveries with
//! bounded concurrency, records every attempt durably, follows the retry
//! ladder and disables endpoints after consecutive failures.
//!
//! Durability: a delivery and the outbox cursor that produced it are written
//! in one command; open deliveries are indexed so a restarted node reloads
//! and resumes them where they stood. A delivery whose attempt succeeded but
//! was not yet recorded when the node died is sent again (at-least-once).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sika_engine::{Command, Document, EventPayload};
use tokio::sync::{mpsc, oneshot};

use super::*;
use crate::error::{ApiError, ApiResult};
use crate::stack::Stack;

/// Attempts in flight at once, over all endpoints.
const IN_FLIGHT_MAX: usize = 256;
/// Attempts in flight at once to one endpoint.
const IN_FLIGHT_PER_ENDPOINT_MAX: usize = 32;
/// A receiver has this long to answer.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(15);
/// How often the outbox is checked for new events.
const POLL_INTERVAL: Duration = Duration::from_millis(20);
/// Events turned into deliveries per step.
const EVENTS_PER_STEP_MAX: usize = 512;
/// Attempt results recorded per commit.
const RESULTS_PER_COMMIT_MAX: usize = 4096;

pub enum Request {
    /// Send one delivery now, outside the ladder; answers with the delivery
    /// after the attempt.
    RetryNow {
        organization: String,
        delivery_id: String,
        reply: oneshot::Sender<ApiResult<Delivery>>,
    },
    /// Re-enable (resetting the failure count) or disable an endpoint.
    SetEnabled {
        endpoint_id: String,
        enabled: bool,
        reply: oneshot::Sender<ApiResult<Health>>,
    },
    /// Look at the outbox now.
    Wake,
    Stop(oneshot::Sender<()>),
}

#[derive(Clone)]
pub struct DispatcherHandle {
    sender: mpsc::UnboundedSender<Request>,
}

impl DispatcherHandle {
    pub fn wake(&self) {
        let _ = self.sender.send(Request::Wake);
    }

    pub async fn retry_now(&self, organization: &str, delivery_id: &str) -> ApiResult<Delivery> {
        let (reply, answer) = oneshot::channel();
        let request =
            Request::RetryNow { organization: organization.into(), delivery_id: delivery_id.into(), reply };
        self.sender.send(request).map_err(|_| ApiError::unavailable())?;
        answer.await.map_err(|_| ApiError::unavailable())?
    }

    pub async fn set_enabled(&self, endpoint_id: &str, enabled: bool) -> ApiResult<Health> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Request::SetEnabled { endpoint_id: endpoint_id.into(), enabled, reply })
            .map_err(|_| ApiError::unavailable())?;
        answer.await.map_err(|_| ApiError::unavailable())?
    }

    pub async fn stop(&self) {
        let (reply, answer) = oneshot::channel();
        if self.sender.send(Request::Stop(reply)).is_ok() {
            let _ = answer.await;
        }
    }
}

struct AttemptResult {
    delivery_id: String,
    attempt: Attempt,
}

struct Dispatcher {
    stack: Arc<Stack>,
    client: reqwest::Client,
    cursor: u64,
    health: HashMap<String, Health>,
    open: HashMap<String, Delivery>,
    schedule: BinaryHeap<Reverse<(i64, String)>>,
    parked: HashMap<String, Vec<String>>,
    in_flight: HashSet<String>,
    in_flight_per_endpoint: HashMap<String, usize>,
    manual: HashMap<String, Vec<oneshot::Sender<ApiResult<Delivery>>>>,
    results_sender: mpsc::UnboundedSender<AttemptResult>,
}

/// Starts the dispatcher of `stack`.
pub fn spawn(stack: Arc<Stack>) -> Result<DispatcherHandle, String> {
    let (sender, requests) = mpsc::unbounded_channel();
    let (results_sender, results) = mpsc::unbounded_channel();
    let client = reqwest::Client::builder()
        .timeout(ATTEMPT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(IN_FLIGHT_PER_ENDPOINT_MAX)
        .build()
        .map_err(|e| e.to_string())?;
    let mut dispatcher = Dispatcher {
        stack,
        client,
        cursor: 0,
        health: HashMap::new(),
        open: HashMap::new(),
        schedule: BinaryHeap::new(),
        parked: HashMap::new(),
        in_flight: HashSet::new(),
        in_flight_per_endpoint: HashMap::new(),
        manual: HashMap::new(),
        results_sender,
    };
    dispatcher.load().map_err(|e| format!("cannot load webhook deliveries: {}", e.message))?;
    tokio::spawn(dispatcher.run(requests, results));
    Ok(DispatcherHandle { sender })
}

impl Dispatcher {
    fn scale(&self, ms: i64) -> i64 {
        ((ms as f64) * self.stack.config.time_scale).round().max(0.0) as i64
    }

    /// Reloads the outbox cursor and every open delivery.
    fn load(&mut self) -> ApiResult<()> {
        let snapshot = self.stack.engine.read()?;
        if let Some(bytes) = snapshot.document(STATE, "cursor")? {
            self.cursor = decode(&bytes)?;
        }
        for (id, _) in snapshot.documents(OPEN_DELIVERIES)? {
            if let Some(delivery) = load_delivery(&snapshot, &id)?
                && delivery.status == DeliveryStatus::Pending
            {
                let due = delivery.next_attempt_at.unwrap_or(0);
                self.schedule.push(Reverse((due, id.clone())));
                self.open.insert(id, delivery);
            }
        }
        Ok(())
    }

    async fn run(
        mut self,
        mut requests: mpsc::UnboundedReceiver<Request>,
        mut results: mpsc::UnboundedReceiver<AttemptResult>,
    ) {
        loop {
            let wait = self.next_wait();
            tokio::select! {
                request = requests.recv() => match request {
                    Some(Request::Stop(done)) => {
                        let _ = self.record_pending_results(&mut results).await;
                        let _ = done.send(());
                        return;
                    }
                    None => return,
                    Some(request) => self.handle(request).await,
                },
                Some(first) = results.recv() => {
                    let mut batch = vec![first];
                    while batch.len() < RESULTS_PER_COMMIT_MAX {
                        match results.try_recv() {
                            Ok(r) => batch.push(r),
                            Err(_) => break,
                        }
                    }
                    if let Err(e) = self.record(batch).await {
                        tracing::error!(error = %e.message, "cannot record webhook attempts");
                    }
                }
                _ = tokio::time::sleep(wait) => {}
            }
            if let Err(e) = self.ingest().await {
                tracing::error!(error = %e.message, "cannot turn events into deliveries");
            }
            self.dispatch_due();
        }
    }

    fn next_wait(&self) -> Duration {
        let now = self.stack.now_ms();
        match self.schedule.peek() {
            Some(Reverse((due, _))) if *due <= now => Duration::ZERO,
            Some(Reverse((due, _))) => Duration::from_millis((*due - now) as u64).min(POLL_INTERVAL),
            None => POLL_INTERVAL,
        }
    }

    async fn record_pending_results(
        &mut self,
        results: &mut mpsc::UnboundedReceiver<AttemptResult>,
    ) -> ApiResult<()> {
        let mut batch = Vec::new();
        while let Ok(r) = results.try_recv() {
            batch.push(r);
        }
        if !batch.is_empty() {
            self.record(batch).await?;
        }
        Ok(())
    }

    async fn handle(&mut self, request: Request) {
        match request {
            Request::Wake | Request::Stop(_) => {}
            Request::RetryNow { organization, delivery_id, reply } => {
                let result = self.retry_now(&organization, &delivery_id);
                match result {
                    Ok(()) => self.manual.entry(delivery_id).or_default().push(reply),
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            Request::SetEnabled { endpoint_id, enabled, reply } => {
                let _ = reply.send(self.set_enabled(&endpoint_id, enabled).await);
            }
        }
    }

    fn health_of(&mut self, endpoint_id: &str) -> ApiResult<&mut Health> {
        if !self.health.contains_key(endpoint_id) {
            let snapshot = self.stack.engine.read()?;
            let health = match snapshot.document(HEALTH, endpoint_id)? {
                Some(bytes) => decode(&bytes)?,
                None => Health::default(),
            };
            self.health.insert(endpoint_id.to_string(), health);
        }
        Ok(self.health.get_mut(endpoint_id).expect("inserted above"))
    }

    async fn set_enabled(&mut self, endpoint_id: &str, enabled: bool) -> ApiResult<Health> {
        let health = self.health_of(endpoint_id)?;
        if enabled {
            health.disabled = false;
            health.disabled_reason = None;
            health.consecutive_failures = 0;
        } else {
            // Turned off by the merchant: disabled, with no failure reason.
            health.disabled = true;
            health.disabled_reason = None;
        }
        let health = health.clone();
        let document = document(HEALTH, endpoint_id, &health, None);
        self.stack.engine.execute(Command::PutDocuments { documents: vec![document] }).await?;
        if enabled {
            let now = self.stack.now_ms();
            for id in self.parked.remove(endpoint_id).unwrap_or_default() {
                self.schedule.push(Reverse((now, id)));
            }
        }
        Ok(health)
    }

    fn retry_now(&mut self, organization: &str, delivery_id: &str) -> ApiResult<()> {
        let not_found = || ApiError::not_found(format!("delivery '{delivery_id}' not found"));
        if !self.open.contains_key(delivery_id) {
            let snapshot = self.stack.engine.read()?;
            let delivery = load_delivery(&snapshot, delivery_id)?.ok_or_else(not_found)?;
            self.open.insert(delivery_id.to_string(), delivery);
        }
        let delivery = self.open.get(delivery_id).ok_or_else(not_found)?;
        if delivery.organization != organization {
            if delivery.status != DeliveryStatus::Pending {
                self.open.remove(delivery_id);
            }
            return Err(not_found());
        }
        if self.in_flight.contains(delivery_id) {
            return Ok(());
        }
        let delivery = delivery.clone();
        let snapshot = self.stack.engine.read()?;
        let (endpoint, _) = load_endpoint(&snapshot, &delivery.endpoint_id)?
            .ok_or_else(|| ApiError::bad_request("the delivery's endpoint was deleted"))?;
        self.send(delivery, endpoint, true);
        Ok(())
    }

    /// Creates one delivery per subscribed endpoint for each new event.
    async fn ingest(&mut self) -> ApiResult<()> {
        let snapshot = self.stack.engine.read()?;
        let events = snapshot.events_after(self.cursor, EVENTS_PER_STEP_MAX)?;
        let Some(last) = events.last().map(|e| e.seq) else { return Ok(()) };
        let now = self.stack.now_ms();
        let mut endpoints_of: HashMap<String, Vec<Endpoint>> = HashMap::new();
        let mut documents: Vec<Document> = Vec::new();
        let mut created = Vec::new();
        for event in &events {
            if !endpoints_of.contains_key(&event.organization) {
                let mut endpoints = Vec::new();
                for (_, id) in snapshot.list(&event.organization, "webhook_endpoints", None, 1000)? {
                    if let Some((endpoint, _)) = load_endpoint(&snapshot, &id)? {
                        endpoints.push(endpoint);
                    }
                }
                endpoints_of.insert(event.organization.clone(), endpoints);
            }
            let body = serde_json::to_string(&event_body(&self.stack, event)).unwrap_or_default();
            for endpoint in &endpoints_of[&event.organization] {
                let targeted = match &event.payload {
                    EventPayload::WebhookTest { endpoint_id } => endpoint_id == &endpoint.id,
                    _ => endpoint.subscribes_to(&event.kind),
                };
                if !targeted || self.health_of(&endpoint.id)?.disabled {
                    continue;
                }
                let delivery = Delivery {
                    id: sika_engine::ids::new_id("whd"),
                    organization: event.organization.clone(),
                    endpoint_id: endpoint.id.clone(),
                    event_id: event.id.clone(),
                    event_kind: event.kind.clone(),
                    resource_id: event_resource_id(event),
                    body: body.clone(),
                    status: DeliveryStatus::Pending,
                    attempts: Vec::new(),
                    next_attempt_at: Some(now),
                    created_at: now,
                    updated_at: now,
                };
                documents.push(document(
                    DELIVERIES,
                    &delivery.id,
                    &delivery,
                    Some((&delivery.organization, "webhook_deliveries")),
                ));
                documents.push(document(OPEN_DELIVERIES, &delivery.id, &true, None));
                if let Some(resource) = &delivery.resource_id {
                    let list = resource_list(resource);
                    let key = format!("{resource}/{}", delivery.id);
                    documents.push(document(BY_RESOURCE, &key, &true, Some((&delivery.organization, &list))));
                }
                created.push(delivery);
            }
        }
        documents.push(document(STATE, "cursor", &last, None));
        self.stack.engine.execute(Command::PutDocuments { documents }).await?;
        self.cursor = last;
        for delivery in created {
            self.schedule.push(Reverse((now, delivery.id.clone())));
            self.open.insert(delivery.id.clone(), delivery);
        }
        Ok(())
    }

    /// Starts every due attempt the concurrency bounds allow.
    fn dispatch_due(&mut self) {
        let now = self.stack.now_ms();
        let mut deferred = Vec::new();
        let snapshot = match self.stack.engine.read() {
            Ok(s) => s,
            Err(_) => return,
        };
        while self.in_flight.len() < IN_FLIGHT_MAX {
            let Some(Reverse((due, id))) = self.schedule.peek().cloned() else { break };
            if due > now {
                break;
            }
            self.schedule.pop();
            let Some(delivery) = self.open.get(&id).cloned() else { continue };
            if delivery.status != DeliveryStatus::Pending || self.in_flight.contains(&id) {
                continue;
            }
            let endpoint = match load_endpoint(&snapshot, &delivery.endpoint_id) {
                Ok(Some((endpoint, _))) => endpoint,
                Ok(None) => {
                    self.abandon(delivery);
                    continue;
                }
                Err(_) => {
                    deferred.push((now + 1000, id));
                    continue;
                }
            };
            if self.health_of(&endpoint.id).map(|h| h.disabled).unwrap_or(false) {
                self.parked.entry(endpoint.id.clone()).or_default().push(id);
                continue;
            }
            if self.in_flight_per_endpoint.get(&endpoint.id).copied().unwrap_or(0)
                >= IN_FLIGHT_PER_ENDPOINT_MAX
            {
                deferred.push((now + 10, id));
                continue;
            }
            self.send(delivery, endpoint, false);
        }
        for (due, id) in deferred {
            self.schedule.push(Reverse((due, id)));
        }
    }

    /// The endpoint is gone: the delivery fails without an attempt.
    fn abandon(&mut self, mut delivery: Delivery) {
        delivery.status = DeliveryStatus::Failed;
        delivery.next_attempt_at = None;
        self.open.remove(&delivery.id);
        let documents = vec![
            document(DELIVERIES, &delivery.id, &delivery, None),
            Document {
                collection: OPEN_DELIVERIES.into(),
                id: delivery.id.clone(),
                body: Vec::new(),
                list: None,
            },
        ];
        let engine = self.stack.engine.clone();
        tokio::spawn(async move {
            let _ = engine.execute(Command::PutDocuments { documents }).await;
        });
    }

    fn send(&mut self, delivery: Delivery, endpoint: Endpoint, manual: bool) {
        self.in_flight.insert(delivery.id.clone());
        *self.in_flight_per_endpoint.entry(endpoint.id.clone()).or_default() += 1;
        let client = self.client.clone();
        let results = self.results_sender.clone();
        let clock = self.stack.engine.clone();
        tokio::spawn(async move {
            let at = clock.now_ms();
            let started = Instant::now();
            let timestamp = at / 1000;
            let outcome =
                match signing::sign(&endpoint.secret, &delivery.id, timestamp, delivery.body.as_bytes()) {
                    Ok(signature) => client
                        .post(&endpoint.url)
                        .header("content-type", "application/json")
                        .header("user-agent", "Sika-Webhooks/1")
                        .header("webhook-id", &delivery.id)
                        .header("webhook-timestamp", timestamp.to_string())
                        .header("webhook-signature", signature)
                        .body(delivery.body.clone())
                        .send()
                        .await
                        .map(|r| r.status().as_u16())
                        .map_err(describe_send_error),
                    Err(e) => Err(e),
                };
            let duration_ms = started.elapsed().as_millis() as u64;
            let attempt = match outcome {
                Ok(code) => Attempt {
                    at,
                    status_code: Some(code),
                    duration_ms,
                    error: (!(200..300).contains(&code)).then(|| format!("the receiver answered {code}")),
                    succeeded: (200..300).contains(&code),
                    manual,
                },
                Err(error) => Attempt {
                    at,
                    status_code: None,
                    duration_ms,
                    error: Some(error),
                    succeeded: false,
                    manual,
                },
            };
            let _ = results.send(AttemptResult { delivery_id: delivery.id, attempt });
        });
    }

    /// Records a batch of attempt results in one commit, then schedules
    /// what comes next.
    async fn record(&mut self, batch: Vec<AttemptResult>) -> ApiResult<()> {
        let now = self.stack.now_ms();
        let mut documents = Vec::with_capacity(batch.len() * 3);
        let mut touched_endpoints = HashSet::new();
        let mut finished = Vec::new();
        for AttemptResult { delivery_id, attempt } in batch {
            self.in_flight.remove(&delivery_id);
            let Some(mut delivery) = self.open.remove(&delivery_id) else { continue };
            if let Some(count) = self.in_flight_per_endpoint.get_mut(&delivery.endpoint_id) {
                *count = count.saturating_sub(1);
            }
            let succeeded = attempt.succeeded;
            let manual = attempt.manual;
            delivery.attempts.push(attempt);
            delivery.updated_at = now;
            let health = self.health_of(&delivery.endpoint_id)?;
            health.attempts += 1;
            health.last_attempt_at = Some(now);
            if succeeded {
                health.consecutive_failures = 0;
                health.successes += 1;
                health.last_success_at = Some(now);
            } else {
                health.consecutive_failures += 1;
                if health.consecutive_failures >= CONSECUTIVE_FAILURES_MAX && !health.disabled {
                    health.disabled = true;
                    health.disabled_reason = Some("consecutive_failures".into());
                }
            }
            touched_endpoints.insert(delivery.endpoint_id.clone());
            if succeeded {
                delivery.status = DeliveryStatus::Succeeded;
                delivery.next_attempt_at = None;
            } else if !manual && delivery.status == DeliveryStatus::Pending {
                let made = delivery.scheduled_attempts();
                match RETRY_LADDER_MS.get(made - 1) {
                    Some(wait) => delivery.next_attempt_at = Some(now + self.scale(*wait)),
                    None => {
                        delivery.status = DeliveryStatus::Failed;
                        delivery.next_attempt_at = None;
                    }
                }
            }
            documents.push(document(DELIVERIES, &delivery.id, &delivery, None));
            if delivery.status != DeliveryStatus::Pending {
                documents.push(Document {
                    collection: OPEN_DELIVERIES.into(),
                    id: delivery.id.clone(),
                    body: Vec::new(),
                    list: None,
                });
            }
            finished.push(delivery);
        }
        for endpoint_id in touched_endpoints {
            if let Some(health) = self.health.get(&endpoint_id) {
                documents.push(document(HEALTH, &endpoint_id, health, None));
            }
        }
        if !documents.is_empty() {
            self.stack.engine.execute(Command::PutDocuments { documents }).await?;
        }
        for delivery in finished {
            if let Some(waiters) = self.manual.remove(&delivery.id) {
                for waiter in waiters {
                    let _ = waiter.send(Ok(delivery.clone()));
                }
            }
            if delivery.status == DeliveryStatus::Pending {
                let due = delivery.next_attempt_at.unwrap_or(now);
                let was_manual = delivery.attempts.last().is_some_and(|a| a.manual);
                if !was_manual || !self.schedule.iter().any(|Reverse((_, id))| id == &delivery.id) {
                    self.schedule.push(Reverse((due, delivery.id.clone())));
                }
                self.open.insert(delivery.id.clone(), delivery);
            }
        }
        Ok(())
    }
}

fn describe_send_error(error: reqwest::Error) -> String {
    if error.is_timeout() {
        "the receiver did not answer within 15 seconds".to_string()
    } else if error.is_connect() {
        "could not connect to the receiver".to_string()
    } else {
        format!("the request failed: {error}")
    }
}
