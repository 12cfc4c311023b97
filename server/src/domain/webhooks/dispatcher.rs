//! The webhook dispatcher of one stack: a task that turns outbox events into
//! deliveries (one per subscribed endpoint), sends due deliveries with
//! bounded concurrency, records every attempt durably, follows the retry
//! ladder and disables endpoints after consecutive failures.
//!
//! Durability: a delivery and the outbox cursor that produced it are written
//! in one command, and the delivery is first sent after that command
//! committed; open deliveries are indexed so a restarted node reloads and
//! resumes them where they stood. A delivery whose attempt succeeded but was
//! not yet recorded when the node died is sent again (at-least-once).
//!
//! Shape: due deliveries wait in a queue per endpoint (a *lane*); a pass
//! takes only from lanes that have room under the per-endpoint bound, so a
//! backlog held back by that bound costs nothing per pass. Deliveries not
//! yet due wait on a timer heap. Attempt records (and new deliveries, and
//! health) are staged and written as one command per commit; exactly one
//! such commit is in flight at a time, so records reach the writer in the
//! order they were made, and sending never waits for a commit.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::ser::{SerializeStruct, Serializer};
use sika_engine::records::EventRecord;
use sika_engine::{Command, Document, Engine, EventPayload, Snapshot};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::order::FirstAttempts;
use super::*;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::metrics::Metrics;

/// Attempts in flight at once, over all endpoints.
const IN_FLIGHT_MAX: usize = 256;
/// Attempts in flight at once to one endpoint.
pub(crate) const IN_FLIGHT_PER_ENDPOINT_MAX: usize = 32;
/// A receiver has this long to answer.
pub(crate) const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(15);
/// The longest the dispatcher goes without reading the outbox. The
/// after-commit follower (`runtime::effects`) wakes it for each batch that
/// recorded events, and it reads again after each of its own commits while
/// events are left, so this only catches events it was not told of (written
/// by the node that held the PostgreSQL writer's lease before this one).
const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Events turned into deliveries per step.
const EVENTS_PER_STEP_MAX: usize = 512;
/// Attempt results taken per pass of the loop.
const RESULTS_PER_PASS_MAX: usize = 4096;
/// Requests taken per pass of the loop (wakes come one per event).
const REQUESTS_PER_PASS_MAX: usize = 1024;
/// How long an endpoint that could not be read holds its due deliveries.
const LOOKUP_RETRY_MS: i64 = 1000;

/// What the dispatcher needs of its stack, for as long as it runs: the
/// ledger, the counters, the clock's scale and the event bodies. The stack
/// implements it; the dispatcher never sees the rest of the stack.
pub(crate) trait Host: Send + Sync + 'static {
    fn engine(&self) -> &Engine;
    fn metrics(&self) -> &Metrics;
    /// `--time-scale`: the retry ladder's delays are multiplied by it.
    fn time_scale(&self) -> f64;
    /// The body a delivery of `event` carries.
    fn event_body(&self, event: &EventRecord) -> ApiResult<sika_api::webhooks::WebhookEvent>;
}

/// One signed attempt, ready to leave the node.
pub(crate) struct Outgoing {
    /// The endpoint's URL as the merchant gave it.
    pub url: String,
    pub delivery_id: String,
    /// Seconds, as the `webhook-timestamp` header carries them.
    pub timestamp: i64,
    /// The `webhook-signature` header.
    pub signature: String,
    pub body: Bytes,
}

/// Why an attempt got no status from the receiver; its text is the
/// attempt's `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum SendError {
    /// The address rules refused the receiver's address.
    #[error("{0}")]
    Refused(String),
    #[error("the receiver did not answer within 15 seconds")]
    Timeout,
    #[error("could not connect to the receiver")]
    Connect,
    #[error("the request failed: {0}")]
    Failed(String),
    /// The endpoint's secret cannot sign.
    #[error("{0}")]
    Signing(String),
}

/// An attempt's answer: the receiver's status code.
pub(crate) type Sending<'a> = Pin<Box<dyn Future<Output = Result<u16, SendError>> + Send + 'a>>;

/// What carries attempts to receivers: the HTTP client
/// (`crate::adapters::webhook_sender`), which also applies the address rules
/// at connect time. The dispatcher decides what is sent and when.
pub(crate) trait Transport: Send + Sync + 'static {
    fn post(&self, outgoing: Outgoing) -> Sending<'_>;
}

/// Why a dispatcher did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum StartError {
    #[error("cannot load webhook deliveries: {}", .0.message)]
    Load(ApiError),
}

pub(crate) enum Request {
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
pub(crate) struct DispatcherHandle {
    sender: mpsc::UnboundedSender<Request>,
}

impl DispatcherHandle {
    pub(crate) fn wake(&self) {
        let _ = self.sender.send(Request::Wake);
    }

    pub(crate) async fn retry_now(&self, organization: &str, delivery_id: &str) -> ApiResult<Delivery> {
        let (reply, answer) = oneshot::channel();
        let request =
            Request::RetryNow { organization: organization.into(), delivery_id: delivery_id.into(), reply };
        self.sender.send(request).map_err(|_| ApiError::unavailable())?;
        answer.await.map_err(|_| ApiError::unavailable())?
    }

    pub(crate) async fn set_enabled(&self, endpoint_id: &str, enabled: bool) -> ApiResult<Health> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Request::SetEnabled { endpoint_id: endpoint_id.into(), enabled, reply })
            .map_err(|_| ApiError::unavailable())?;
        answer.await.map_err(|_| ApiError::unavailable())?
    }

    pub(crate) async fn stop(&self) {
        let (reply, answer) = oneshot::channel();
        if self.sender.send(Request::Stop(reply)).is_ok() {
            let _ = answer.await;
        }
    }
}

/// Adds an attempt to a delivery's history, keeping it bounded.
fn keep_attempt(attempts: &mut Vec<Attempt>, attempt: Attempt) {
    attempts.push(attempt);
    forget_old_manual_attempts(attempts);
}

/// Drops the oldest manual attempts past `MANUAL_ATTEMPTS_KEPT`. The
/// ladder's attempts are kept: their count decides the next retry.
/// One warn line per failed attempt, so the operator sees a receiver
/// failing without opening the console: the endpoint, the delivery, the
/// status the receiver answered (none when it could not be reached), which
/// attempt it was, and why.
fn log_failure(delivery: &Delivery, attempt: &Attempt) {
    let number = if attempt.manual { delivery.attempts.len() + 1 } else { delivery.scheduled_attempts() + 1 };
    tracing::warn!(
        endpointId = %delivery.endpoint_id,
        deliveryId = %delivery.id,
        event = %delivery.event_kind,
        status = attempt.status_code,
        attempt = number,
        manual = attempt.manual,
        error = attempt.error.as_deref().unwrap_or_default(),
        "webhook delivery failed"
    );
}

fn forget_old_manual_attempts(attempts: &mut Vec<Attempt>) {
    let manual = attempts.iter().filter(|a| a.manual).count();
    let mut excess = manual.saturating_sub(super::MANUAL_ATTEMPTS_KEPT);
    attempts.retain(|a| {
        let drop = a.manual && excess > 0;
        if drop {
            excess -= 1;
        }
        !drop
    });
}

struct AttemptResult {
    delivery_id: String,
    endpoint_id: String,
    attempt: Attempt,
}

/// A delivery the dispatcher holds. Its body lives in `body`, shared by
/// every attempt and by the encoder; `delivery.body` is left empty.
struct Open {
    delivery: Delivery,
    body: Bytes,
    slot: Slot,
}

impl Open {
    fn new(mut delivery: Delivery) -> Open {
        let body = Bytes::from(std::mem::take(&mut delivery.body));
        Open { delivery, body, slot: Slot::Ready }
    }

    fn body_text(&self) -> &str {
        // Built from a `String`, so always UTF-8.
        std::str::from_utf8(&self.body).unwrap_or_default()
    }

    /// The delivery as the API shows it, body included.
    fn full(&self) -> Delivery {
        Delivery { body: self.body_text().to_string(), ..self.delivery.clone() }
    }

    fn stored(&self) -> Vec<u8> {
        encode(&Stored(&self.delivery, self.body_text()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Not yet due: on the timer heap at this time.
    Waiting(i64),
    /// Due: in its endpoint's lane.
    Ready,
    /// Not yet attempted, behind an earlier delivery of the same resource
    /// to the same endpoint whose first attempt has not finished (`order`).
    Queued,
    /// An attempt is in flight.
    Sending,
    /// Succeeded or failed; kept until the batch with its last record
    /// commits, so a manual retry never starts from an older stored copy.
    Settled(u64),
}

/// The due deliveries of one endpoint.
#[derive(Default)]
struct Lane {
    ready: VecDeque<String>,
    in_flight: usize,
    /// In `runnable`.
    listed: bool,
}

/// What to do once a staged batch is committed.
enum Done {
    /// Deliveries made from the events up to `cursor`: send them.
    Ingested { cursor: u64, created: Vec<Open> },
    /// Answer manual retries with the recorded delivery.
    Answer { delivery: Delivery, waiters: Vec<oneshot::Sender<ApiResult<Delivery>>> },
    /// A finished delivery's last record is durable: forget it.
    Settled { id: String, batch: u64 },
    /// An enable or disable is durable.
    Health { health: Health, reply: oneshot::Sender<ApiResult<Health>> },
}

/// Records waiting for the next commit.
#[derive(Default)]
struct Staged {
    documents: Vec<Document>,
    /// Endpoints whose health is written (as it is at submission).
    health: HashSet<String>,
    done: Vec<Done>,
}

type Commit = JoinHandle<(ApiResult<()>, Vec<Done>)>;

struct Dispatcher {
    host: Arc<dyn Host>,
    transport: Arc<dyn Transport>,
    /// Every event up to here has its deliveries committed.
    cursor: u64,
    /// An ingest step is staged or committing; the next starts after it.
    ingesting: bool,
    health: HashMap<String, Health>,
    open: HashMap<String, Open>,
    timers: BinaryHeap<Reverse<(i64, String)>>,
    lanes: HashMap<String, Lane>,
    /// Endpoints whose lane may be able to send.
    runnable: VecDeque<String>,
    /// Endpoint configuration by id, with the stored bytes it was decoded
    /// from: each pass compares them with the stored record, so a changed
    /// URL or secret applies to the next attempt.
    targets: HashMap<String, (Vec<u8>, Arc<Target>)>,
    in_flight: usize,
    manual: HashMap<String, Vec<oneshot::Sender<ApiResult<Delivery>>>>,
    results_sender: mpsc::UnboundedSender<AttemptResult>,
    staged: Staged,
    /// The one commit in flight.
    commit: Option<Commit>,
    /// The number of the batch being staged.
    batch: u64,
    /// The order of first attempts per endpoint and resource.
    first: FirstAttempts,
}

/// Starts the dispatcher of the stack `host`, sending through `transport`.
pub(crate) fn spawn(
    host: Arc<dyn Host>,
    transport: Arc<dyn Transport>,
) -> Result<DispatcherHandle, StartError> {
    let (sender, requests) = mpsc::unbounded_channel();
    let (results_sender, results) = mpsc::unbounded_channel();
    let mut dispatcher = Dispatcher {
        host,
        transport,
        cursor: 0,
        ingesting: false,
        health: HashMap::new(),
        open: HashMap::new(),
        timers: BinaryHeap::new(),
        lanes: HashMap::new(),
        first: FirstAttempts::default(),
        runnable: VecDeque::new(),
        targets: HashMap::new(),
        in_flight: 0,
        manual: HashMap::new(),
        results_sender,
        staged: Staged::default(),
        commit: None,
        batch: 0,
    };
    dispatcher.load().map_err(StartError::Load)?;
    tokio::spawn(dispatcher.run(requests, results));
    Ok(DispatcherHandle { sender })
}

async fn joined(commit: &mut Option<Commit>) -> Result<(ApiResult<()>, Vec<Done>), tokio::task::JoinError> {
    match commit {
        Some(handle) => handle.await,
        None => std::future::pending().await,
    }
}

impl Dispatcher {
    /// Reloads the outbox cursor and every open delivery.
    fn load(&mut self) -> ApiResult<()> {
        let snapshot = self.host.engine().read()?;
        if let Some(bytes) = snapshot.document(STATE, "cursor")? {
            self.cursor = decode(&bytes)?;
        }
        let now = self.host.engine().now_ms();
        let mut unattempted = Vec::new();
        for (id, _) in snapshot.documents(OPEN_DELIVERIES)? {
            if let Some(delivery) = load_delivery(&snapshot, &id)?
                && delivery.status == DeliveryStatus::Pending
            {
                if delivery.attempts.is_empty() && delivery.resource_id.is_some() {
                    // Admitted below in the order their events were committed.
                    let seq = snapshot.event(&delivery.event_id)?.map_or(u64::MAX, |e| e.seq);
                    unattempted.push((seq, id.clone()));
                    self.open.insert(id, Open::new(delivery));
                    continue;
                }
                let due = delivery.next_attempt_at.unwrap_or(0);
                self.open.insert(id.clone(), Open::new(delivery));
                self.schedule(id, due, now);
            }
        }
        unattempted.sort();
        for (_, id) in unattempted {
            self.admit(id, now);
        }
        Ok(())
    }

    /// Schedules a delivery that has not been attempted, unless an earlier
    /// one of the same resource to the same endpoint is still on its first
    /// attempt: then it waits (`Slot::Queued`) until `release`.
    fn admit(&mut self, id: String, now: i64) {
        let Some(open) = self.open.get_mut(&id) else { return };
        let delivery = &open.delivery;
        let first = match &delivery.resource_id {
            Some(resource) => self.first.admit(&delivery.endpoint_id, resource, &id),
            None => true,
        };
        if first {
            let due = open.delivery.next_attempt_at.unwrap_or(now);
            self.schedule(id, due, now);
        } else {
            open.slot = Slot::Queued;
        }
    }

    /// `id`'s first attempt finished, or it will never have one: the next
    /// delivery of its resource to its endpoint may go.
    fn release(&mut self, id: &str, now: i64) {
        if let Some(next) = self.first.finished(id)
            && self.open.get(&next).is_some_and(|o| o.slot == Slot::Queued)
        {
            self.schedule(next, now, now);
        }
    }

    async fn run(
        mut self,
        mut requests: mpsc::UnboundedReceiver<Request>,
        mut results: mpsc::UnboundedReceiver<AttemptResult>,
    ) {
        self.step();
        loop {
            let wait = self.next_wait();
            tokio::select! {
                request = requests.recv() => {
                    let mut request = request;
                    let mut taken = 0;
                    loop {
                        match request {
                            Some(Request::Stop(done)) => {
                                let mut batch = Vec::new();
                                while let Ok(r) = results.try_recv() {
                                    batch.push(r);
                                }
                                self.on_results(batch);
                                self.finish().await;
                                let _ = done.send(());
                                return;
                            }
                            None => return,
                            Some(request) => self.handle(request),
                        }
                        taken += 1;
                        if taken >= REQUESTS_PER_PASS_MAX {
                            break;
                        }
                        match requests.try_recv() {
                            Ok(next) => request = Some(next),
                            Err(_) => break,
                        }
                    }
                }
                Some(first) = results.recv() => {
                    let mut batch = vec![first];
                    while batch.len() < RESULTS_PER_PASS_MAX {
                        match results.try_recv() {
                            Ok(r) => batch.push(r),
                            Err(_) => break,
                        }
                    }
                    self.on_results(batch);
                }
                outcome = joined(&mut self.commit), if self.commit.is_some() => {
                    self.commit = None;
                    match outcome {
                        Ok((result, done)) => self.on_committed(result, done),
                        Err(e) => {
                            tracing::error!(error = %e, "the webhook record commit failed");
                            self.ingesting = false;
                        }
                    }
                }
                _ = tokio::time::sleep(wait) => {}
            }
            self.step();
        }
    }

    /// Turns new events into deliveries, sends what is due and stages the
    /// records: after each wake, and once at start for the events written
    /// while the node was down.
    fn step(&mut self) {
        if let Err(e) = self.ingest()
            && e.code != sika_api::ErrorCode::StorageUnavailable
        {
            // A ledger that cannot write is reported by the storage watch.
            tracing::error!(error = %e.message, "cannot turn events into deliveries");
        }
        self.dispatch_due();
        self.flush();
    }

    fn next_wait(&self) -> Duration {
        let now = self.host.engine().now_ms();
        match self.timers.peek() {
            Some(Reverse((due, _))) if *due <= now => Duration::ZERO,
            Some(Reverse((due, _))) => Duration::from_millis((*due - now) as u64).min(POLL_INTERVAL),
            None => POLL_INTERVAL,
        }
    }

    /// Writes everything staged and waits until it is durable.
    async fn finish(&mut self) {
        loop {
            if let Some(commit) = self.commit.take()
                && let Ok((result, done)) = commit.await
            {
                self.on_committed(result, done);
            }
            self.flush();
            if self.commit.is_none() {
                return;
            }
        }
    }

    fn handle(&mut self, request: Request) {
        match request {
            Request::Wake | Request::Stop(_) => {}
            Request::RetryNow { organization, delivery_id, reply } => {
                match self.retry_now(&organization, &delivery_id) {
                    Ok(()) => self.manual.entry(delivery_id).or_default().push(reply),
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            Request::SetEnabled { endpoint_id, enabled, reply } => {
                self.set_enabled(endpoint_id, enabled, reply)
            }
        }
    }

    fn health_of(&mut self, endpoint_id: &str) -> ApiResult<&mut Health> {
        if !self.health.contains_key(endpoint_id) {
            let snapshot = self.host.engine().read()?;
            let health = match snapshot.document(HEALTH, endpoint_id)? {
                Some(bytes) => decode(&bytes)?,
                None => Health::default(),
            };
            self.health.insert(endpoint_id.to_string(), health);
        }
        Ok(self.health.get_mut(endpoint_id).expect("inserted above"))
    }

    fn disabled(&mut self, endpoint_id: &str) -> bool {
        self.health_of(endpoint_id).map(|h| h.disabled).unwrap_or(false)
    }

    /// The endpoint's status changed without the merchant (disabled after
    /// too many failures): its `updatedAt` moves with the health record, in
    /// the same commit.
    fn stage_status_change(&mut self, endpoint_id: &str, now: i64) {
        let endpoint = self.host.engine().read().map_err(ApiError::from).and_then(|snapshot| {
            load_endpoint(&snapshot, endpoint_id).map(|found| found.map(|(endpoint, _)| endpoint))
        });
        if let Ok(Some(mut endpoint)) = endpoint {
            endpoint.updated_at = now;
            self.staged.documents.push(document(ENDPOINTS, endpoint_id, &endpoint, None));
            let notice = DisabledNotice {
                organization: endpoint.organization.clone(),
                endpoint_id: endpoint_id.to_string(),
                url: endpoint.url.clone(),
            };
            let key = format!("{endpoint_id}/{now}");
            self.staged.documents.push(document(DISABLED_NOTICES, &key, &notice, None));
        }
    }

    /// Changes the endpoint's health now and answers once it is durable.
    fn set_enabled(&mut self, endpoint_id: String, enabled: bool, reply: oneshot::Sender<ApiResult<Health>>) {
        let health = match self.health_of(&endpoint_id) {
            Ok(health) => health,
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
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
        if enabled {
            // Deliveries that came due while it was disabled go out now.
            self.list(&endpoint_id);
        }
        self.staged.health.insert(endpoint_id);
        self.staged.done.push(Done::Health { health, reply });
    }

    /// Starts a manual attempt, unless one is already in flight.
    fn retry_now(&mut self, organization: &str, delivery_id: &str) -> ApiResult<()> {
        let not_found = || ApiError::not_found(format!("delivery '{delivery_id}' not found"));
        let snapshot = self.host.engine().read()?;
        let loaded = match self.open.get(delivery_id) {
            Some(open) if open.delivery.organization != organization => return Err(not_found()),
            Some(open) if open.slot == Slot::Sending => return Ok(()),
            Some(_) => None,
            None => {
                let delivery = load_delivery(&snapshot, delivery_id)?
                    .filter(|d| d.organization == organization)
                    .ok_or_else(not_found)?;
                Some(Open::new(delivery))
            }
        };
        let endpoint_id = match &loaded {
            Some(open) => open.delivery.endpoint_id.clone(),
            None => self.open[delivery_id].delivery.endpoint_id.clone(),
        };
        let endpoint = read_endpoint(&snapshot, &endpoint_id)?
            .ok_or_else(|| ApiError::bad_request("the delivery's endpoint was deleted"))?;
        if let Some(open) = loaded {
            self.open.insert(delivery_id.to_string(), open);
        }
        self.send(delivery_id, &Arc::new(Target::new(endpoint)), true);
        Ok(())
    }

    /// Creates one delivery per subscribed endpoint for each new event, to
    /// be sent once they are committed.
    #[expect(clippy::too_many_lines)]
    fn ingest(&mut self) -> ApiResult<()> {
        if self.ingesting {
            return Ok(());
        }
        let snapshot = self.host.engine().read()?;
        // Heads first: an event of an organization with no endpoint (most
        // of them, on most nodes) is passed over without decoding it, or
        // reading back the payout a payout's event names.
        let heads = snapshot.event_heads_after(self.cursor, EVENTS_PER_STEP_MAX)?;
        let Some(last) = heads.last().map(|e| e.seq) else { return Ok(()) };
        let now = self.host.engine().now_ms();
        let mut endpoints_of: HashMap<String, Vec<Endpoint>> = HashMap::new();
        let mut documents: Vec<Document> = Vec::new();
        let mut created = Vec::new();
        for head in &heads {
            if !endpoints_of.contains_key(&head.organization) {
                let endpoints = endpoints_of_organization(&snapshot, &head.organization)?;
                endpoints_of.insert(head.organization.clone(), endpoints);
            }
            if endpoints_of[&head.organization].is_empty() {
                continue;
            }
            let event = snapshot.event_at(head.seq)?.ok_or_else(|| {
                ApiError::internal_from(format!("event {} went missing while it was read", head.seq))
            })?;
            let event = &event;
            // Rendered only for an event some endpoint receives.
            let mut body: Option<Bytes> = None;
            for endpoint in &endpoints_of[&event.organization] {
                let targeted = match &event.payload {
                    EventPayload::WebhookTest { endpoint_id } => endpoint_id == &endpoint.id,
                    _ => endpoint.subscribes_to(&event.kind),
                };
                if !targeted || self.health_of(&endpoint.id)?.disabled {
                    continue;
                }
                let body = body
                    .get_or_insert_with(|| {
                        // An event that cannot be rendered is sent empty,
                        // as one that cannot be serialized always was.
                        let text = match self.host.event_body(event) {
                            Ok(body) => serde_json::to_string(&body).unwrap_or_default(),
                            Err(e) => {
                                tracing::error!(event = %event.id, error = %e.message, "cannot render an event");
                                String::new()
                            }
                        };
                        Bytes::from(text)
                    })
                    .clone();
                let delivery = Delivery {
                    id: sika_engine::ids::new_id("whd"),
                    organization: event.organization.clone(),
                    endpoint_id: endpoint.id.clone(),
                    event_id: event.id.clone(),
                    event_kind: event.kind.clone(),
                    resource_id: event_resource_id(event),
                    body: String::new(),
                    status: DeliveryStatus::Pending,
                    attempts: Vec::new(),
                    next_attempt_at: Some(now),
                    created_at: now,
                    updated_at: now,
                };
                let open = Open { delivery, body, slot: Slot::Ready };
                let delivery = &open.delivery;
                documents.push(Document {
                    collection: DELIVERIES.into(),
                    id: delivery.id.clone(),
                    body: open.stored(),
                    list: Some((delivery.organization.clone(), DELIVERIES.into())),
                });
                documents.push(document(OPEN_DELIVERIES, &delivery.id, &true, None));
                if let Some(resource) = &delivery.resource_id {
                    let list = resource_list(resource);
                    let key = format!("{resource}/{}", delivery.id);
                    documents.push(document(BY_RESOURCE, &key, &true, Some((&delivery.organization, &list))));
                }
                created.push(open);
            }
        }
        documents.push(document(STATE, "cursor", &last, None));
        self.staged.documents.extend(documents);
        self.host.metrics().set_webhook_backlog(self.open.len() + created.len());
        self.staged.done.push(Done::Ingested { cursor: last, created });
        self.ingesting = true;
        Ok(())
    }

    /// Puts an open delivery on the timer heap, or in its lane when due.
    fn schedule(&mut self, id: String, due: i64, now: i64) {
        let Some(open) = self.open.get_mut(&id) else { return };
        if due <= now {
            open.slot = Slot::Ready;
            let endpoint_id = open.delivery.endpoint_id.clone();
            self.enqueue(&endpoint_id, id);
        } else {
            open.slot = Slot::Waiting(due);
            self.timers.push(Reverse((due, id)));
        }
    }

    fn enqueue(&mut self, endpoint_id: &str, id: String) {
        match self.lanes.get_mut(endpoint_id) {
            Some(lane) => lane.ready.push_back(id),
            None => {
                let lane = Lane { ready: VecDeque::from([id]), ..Lane::default() };
                self.lanes.insert(endpoint_id.to_string(), lane);
            }
        }
        self.list(endpoint_id);
    }

    /// Marks a lane as worth a look in the next pass.
    fn list(&mut self, endpoint_id: &str) {
        if let Some(lane) = self.lanes.get_mut(endpoint_id)
            && !lane.listed
            && !lane.ready.is_empty()
            && lane.in_flight < IN_FLIGHT_PER_ENDPOINT_MAX
        {
            lane.listed = true;
            self.runnable.push_back(endpoint_id.to_string());
        }
    }

    /// Starts every due attempt the concurrency bounds allow.
    fn dispatch_due(&mut self) {
        let now = self.host.engine().now_ms();
        while let Some(Reverse((due, _))) = self.timers.peek() {
            if *due > now {
                break;
            }
            let Some(Reverse((due, id))) = self.timers.pop() else { break };
            let endpoint_id = match self.open.get_mut(&id) {
                Some(open) if open.slot == Slot::Waiting(due) => {
                    open.slot = Slot::Ready;
                    open.delivery.endpoint_id.clone()
                }
                // Sent by hand meanwhile, or gone.
                _ => continue,
            };
            self.enqueue(&endpoint_id, id);
        }
        if self.in_flight >= IN_FLIGHT_MAX || self.runnable.is_empty() {
            return;
        }
        let Ok(snapshot) = self.host.engine().read() else { return };
        while self.in_flight < IN_FLIGHT_MAX {
            let Some(endpoint_id) = self.runnable.pop_front() else { break };
            let Some(lane) = self.lanes.get_mut(&endpoint_id) else { continue };
            lane.listed = false;
            if lane.ready.is_empty() || lane.in_flight >= IN_FLIGHT_PER_ENDPOINT_MAX {
                continue;
            }
            if self.disabled(&endpoint_id) {
                // Parked until it is re-enabled.
                continue;
            }
            let endpoint = match self.target(&snapshot, &endpoint_id) {
                Ok(Some(target)) => target,
                Ok(None) => {
                    self.abandon_lane(&endpoint_id, now);
                    continue;
                }
                Err(_) => {
                    self.hold_lane(&endpoint_id, now + LOOKUP_RETRY_MS);
                    continue;
                }
            };
            loop {
                let lane = self.lanes.get_mut(&endpoint_id).expect("looked up above");
                if lane.in_flight >= IN_FLIGHT_PER_ENDPOINT_MAX {
                    break;
                }
                if self.in_flight >= IN_FLIGHT_MAX {
                    if !lane.ready.is_empty() {
                        lane.listed = true;
                        self.runnable.push_front(endpoint_id.clone());
                    }
                    break;
                }
                let Some(id) = lane.ready.pop_front() else { break };
                if self.open.get(&id).is_some_and(|o| o.slot == Slot::Ready) {
                    self.send(&id, &endpoint, false);
                }
            }
        }
    }

    /// The endpoint as stored now: one read per pass, decoded again only
    /// when its record changed.
    fn target(&mut self, snapshot: &Snapshot, endpoint_id: &str) -> ApiResult<Option<Arc<Target>>> {
        let Some(bytes) = snapshot.document(ENDPOINTS, endpoint_id)? else {
            self.targets.remove(endpoint_id);
            return Ok(None);
        };
        if let Some((cached, target)) = self.targets.get(endpoint_id)
            && *cached == bytes
        {
            return Ok(Some(target.clone()));
        }
        let target = Arc::new(Target::new(decode(&bytes)?));
        self.targets.insert(endpoint_id.to_string(), (bytes, target.clone()));
        Ok(Some(target))
    }

    /// The endpoint is gone: its due deliveries fail without an attempt.
    fn abandon_lane(&mut self, endpoint_id: &str, now: i64) {
        let ready = self.lanes.get_mut(endpoint_id).map(|l| std::mem::take(&mut l.ready)).unwrap_or_default();
        for id in ready {
            let Some(open) = self.open.get_mut(&id) else { continue };
            if open.slot != Slot::Ready {
                continue;
            }
            open.delivery.status = DeliveryStatus::Failed;
            open.delivery.next_attempt_at = None;
            open.delivery.updated_at = now;
            open.slot = Slot::Settled(self.batch);
            self.staged.documents.push(Document {
                collection: DELIVERIES.into(),
                id: id.clone(),
                body: open.stored(),
                list: None,
            });
            self.staged.documents.push(Document {
                collection: OPEN_DELIVERIES.into(),
                id: id.clone(),
                body: Vec::new(),
                list: None,
            });
            // The next of its resource follows it into the (gone) lane.
            self.release(&id, now);
            self.staged.done.push(Done::Settled { id, batch: self.batch });
        }
    }

    /// The endpoint could not be read: its due deliveries wait until `due`.
    fn hold_lane(&mut self, endpoint_id: &str, due: i64) {
        let ready = self.lanes.get_mut(endpoint_id).map(|l| std::mem::take(&mut l.ready)).unwrap_or_default();
        for id in ready {
            if let Some(open) = self.open.get_mut(&id)
                && open.slot == Slot::Ready
            {
                open.slot = Slot::Waiting(due);
                self.timers.push(Reverse((due, id)));
            }
        }
    }

    fn send(&mut self, id: &str, target: &Arc<Target>, manual: bool) {
        let Some(open) = self.open.get_mut(id) else { return };
        open.slot = Slot::Sending;
        let body = open.body.clone();
        let delivery_id = open.delivery.id.clone();
        self.in_flight += 1;
        let endpoint_id = &target.endpoint.id;
        match self.lanes.get_mut(endpoint_id) {
            Some(lane) => lane.in_flight += 1,
            None => {
                self.lanes.insert(endpoint_id.clone(), Lane { in_flight: 1, ..Lane::default() });
            }
        }
        let target = target.clone();
        let transport = self.transport.clone();
        let results = self.results_sender.clone();
        let clock = self.host.engine().clone();
        tokio::spawn(async move {
            let at = clock.now_ms();
            let started = Instant::now();
            let timestamp = at / 1000;
            let endpoint = &target.endpoint;
            let outcome = attempt(transport.as_ref(), &target, &delivery_id, timestamp, body).await;
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
                    error: Some(error.to_string()),
                    succeeded: false,
                    manual,
                },
            };
            let endpoint_id = endpoint.id.clone();
            let _ = results.send(AttemptResult { delivery_id, endpoint_id, attempt });
        });
    }

    /// Applies attempt results: health, the ladder, the next attempt. Their
    /// records are staged for the next commit; nothing waits for it except
    /// manual retries, which are answered once their attempt is durable.
    fn on_results(&mut self, batch: Vec<AttemptResult>) {
        for result in &batch {
            self.host.metrics().record_webhook_attempt(result.attempt.succeeded);
        }
        self.apply_results(batch);
        self.host.metrics().set_webhook_backlog(self.open.len());
    }

    /// Counts an attempt on its endpoint's health; the tenth failure in a
    /// row disables the endpoint.
    fn record_health(&mut self, endpoint_id: String, succeeded: bool, now: i64) {
        let Ok(health) = self.health_of(&endpoint_id) else { return };
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
                self.stage_status_change(&endpoint_id, now);
            }
        }
        self.staged.health.insert(endpoint_id);
    }

    fn apply_results(&mut self, batch: Vec<AttemptResult>) {
        let now = self.host.engine().now_ms();
        let time_scale = self.host.time_scale();
        for AttemptResult { delivery_id, endpoint_id, attempt } in batch {
            self.in_flight = self.in_flight.saturating_sub(1);
            if let Some(lane) = self.lanes.get_mut(&endpoint_id) {
                lane.in_flight = lane.in_flight.saturating_sub(1);
            }
            self.list(&endpoint_id);
            if !self.open.get(&delivery_id).is_some_and(|o| o.slot == Slot::Sending) {
                continue;
            }
            // Its first attempt (or a manual one out of turn) is over.
            self.release(&delivery_id, now);
            let succeeded = attempt.succeeded;
            let manual = attempt.manual;
            self.record_health(endpoint_id, succeeded, now);
            let open = self.open.get_mut(&delivery_id).expect("checked above");
            let delivery = &mut open.delivery;
            if !succeeded {
                log_failure(delivery, &attempt);
            }
            keep_attempt(&mut delivery.attempts, attempt);
            delivery.updated_at = now;
            if succeeded {
                delivery.status = DeliveryStatus::Succeeded;
                delivery.next_attempt_at = None;
            } else if !manual && delivery.status == DeliveryStatus::Pending {
                let made = delivery.scheduled_attempts();
                match RETRY_LADDER_MS.get(made - 1) {
                    Some(wait) => delivery.next_attempt_at = Some(now + scaled(*wait, time_scale)),
                    None => {
                        delivery.status = DeliveryStatus::Failed;
                        delivery.next_attempt_at = None;
                    }
                }
            }
            let pending = delivery.status == DeliveryStatus::Pending;
            let due = delivery.next_attempt_at.unwrap_or(now);
            self.staged.documents.push(Document {
                collection: DELIVERIES.into(),
                id: delivery_id.clone(),
                body: open.stored(),
                list: None,
            });
            if let Some(waiters) = self.manual.remove(&delivery_id) {
                self.staged.done.push(Done::Answer { delivery: open.full(), waiters });
            }
            if pending {
                self.schedule(delivery_id, due, now);
            } else {
                open.slot = Slot::Settled(self.batch);
                self.staged.documents.push(Document {
                    collection: OPEN_DELIVERIES.into(),
                    id: delivery_id.clone(),
                    body: Vec::new(),
                    list: None,
                });
                self.staged.done.push(Done::Settled { id: delivery_id, batch: self.batch });
            }
        }
    }

    /// Submits what is staged as one command, unless a commit is in flight
    /// (then it goes with the next one).
    fn flush(&mut self) {
        if self.commit.is_some() {
            return;
        }
        let Staged { mut documents, health, done } = std::mem::take(&mut self.staged);
        for endpoint_id in health {
            if let Some(health) = self.health.get(&endpoint_id) {
                documents.push(document(HEALTH, &endpoint_id, health, None));
            }
        }
        if documents.is_empty() && done.is_empty() {
            return;
        }
        self.batch += 1;
        let engine = self.host.engine().clone();
        self.commit = Some(tokio::spawn(async move {
            let result = if documents.is_empty() {
                Ok(())
            } else {
                engine.execute(Command::PutDocuments { documents }).await.map(|_| ()).map_err(ApiError::from)
            };
            (result, done)
        }));
    }

    fn on_committed(&mut self, result: ApiResult<()>, done: Vec<Done>) {
        if let Err(e) = &result
            && e.code != sika_api::ErrorCode::StorageUnavailable
        {
            tracing::error!(error = %e.message, "cannot record webhook attempts");
        }
        let now = self.host.engine().now_ms();
        for item in done {
            match item {
                Done::Ingested { cursor, created } => {
                    self.ingesting = false;
                    if result.is_ok() {
                        self.cursor = cursor;
                        // In event order, so each resource's deliveries
                        // are admitted in the order they were committed.
                        for open in created {
                            let id = open.delivery.id.clone();
                            self.open.insert(id.clone(), open);
                            self.admit(id, now);
                        }
                    }
                }
                Done::Answer { delivery, waiters } => {
                    for waiter in waiters {
                        let _ = waiter.send(result.clone().map(|()| delivery.clone()));
                    }
                }
                Done::Settled { id, batch } => {
                    if self.open.get(&id).is_some_and(|o| o.slot == Slot::Settled(batch)) {
                        self.open.remove(&id);
                    }
                }
                Done::Health { health, reply } => {
                    let _ = reply.send(result.clone().map(|()| health));
                }
            }
        }
    }
}

/// A ladder wait at the node's time scale.
fn scaled(ms: i64, time_scale: f64) -> i64 {
    ((ms as f64) * time_scale).round().max(0.0) as i64
}

/// Where attempts of one pass go: the endpoint as last read.
struct Target {
    endpoint: Endpoint,
}

impl Target {
    fn new(endpoint: Endpoint) -> Target {
        Target { endpoint }
    }
}

/// Every endpoint of an organization, page by page through its whole list
/// (deleted endpoints stay listed, so a fixed page would lose live ones).
fn endpoints_of_organization(snapshot: &Snapshot, organization: &str) -> ApiResult<Vec<Endpoint>> {
    const PAGE: usize = 1000;
    let mut endpoints = Vec::new();
    let mut before = None;
    loop {
        let page = snapshot.list(organization, ENDPOINTS, before, PAGE)?;
        for (_, id) in &page {
            if let Some(endpoint) = read_endpoint(snapshot, id)? {
                endpoints.push(endpoint);
            }
        }
        match page.last() {
            Some((position, _)) if page.len() == PAGE => before = Some(*position),
            _ => return Ok(endpoints),
        }
    }
}

/// An endpoint's configuration, without its health.
fn read_endpoint(snapshot: &Snapshot, id: &str) -> ApiResult<Option<Endpoint>> {
    Ok(snapshot.document(ENDPOINTS, id)?.map(|b| decode(&b)).transpose()?)
}

/// A `Delivery` as stored, its body taken from the shared buffer: the same
/// bytes as `encode(&delivery)` without copying the body into the record.
struct Stored<'a>(&'a Delivery, &'a str);

impl serde::Serialize for Stored<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Every field in declaration order; no `..`, so a new field fails to
        // compile here (and the test below catches a reordering).
        let Delivery {
            id,
            organization,
            endpoint_id,
            event_id,
            event_kind,
            resource_id,
            body: _,
            status,
            attempts,
            next_attempt_at,
            created_at,
            updated_at,
        } = self.0;
        let mut s = serializer.serialize_struct("Delivery", 12)?;
        s.serialize_field("id", id)?;
        s.serialize_field("organization", organization)?;
        s.serialize_field("endpoint_id", endpoint_id)?;
        s.serialize_field("event_id", event_id)?;
        s.serialize_field("event_kind", event_kind)?;
        s.serialize_field("resource_id", resource_id)?;
        s.serialize_field("body", self.1)?;
        s.serialize_field("status", status)?;
        s.serialize_field("attempts", attempts)?;
        s.serialize_field("next_attempt_at", next_attempt_at)?;
        s.serialize_field("created_at", created_at)?;
        s.serialize_field("updated_at", updated_at)?;
        s.end()
    }
}

/// One attempt: signed here, then posted by the transport (which checks
/// the address); the receiver's status, or why there was none.
async fn attempt(
    transport: &dyn Transport,
    target: &Target,
    delivery_id: &str,
    timestamp: i64,
    body: Bytes,
) -> Result<u16, SendError> {
    let endpoint = &target.endpoint;
    let signature = signing::sign(&endpoint.secret, delivery_id, timestamp, &body)
        .map_err(|e| SendError::Signing(e.to_string()))?;
    let outgoing = Outgoing {
        url: endpoint.url.clone(),
        delivery_id: delivery_id.to_string(),
        timestamp,
        signature,
        body,
    };
    transport.post(outgoing).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transport that records what it was handed and answers `status`.
    struct Recording {
        sent: std::sync::Mutex<Vec<Outgoing>>,
        status: Result<u16, SendError>,
    }

    impl Transport for Recording {
        fn post(&self, outgoing: Outgoing) -> Sending<'_> {
            self.sent.lock().unwrap().push(outgoing);
            let status = self.status.clone();
            Box::pin(async move { status })
        }
    }

    fn endpoint(secret: &str) -> Target {
        Target::new(Endpoint {
            id: "we_1".into(),
            organization: "org_1".into(),
            url: "https://example.com/hooks".into(),
            events: vec!["*".into()],
            description: String::new(),
            secret: secret.into(),
            created_at: 0,
            updated_at: 0,
        })
    }

    /// The dispatcher signs each attempt with the endpoint's secret and
    /// hands the transport exactly what the receiver must see; the
    /// transport's refusal is the attempt's error, worded as before the
    /// HTTP client moved to `adapters::webhook_sender`.
    #[tokio::test]
    async fn an_attempt_is_signed_here_and_sent_by_the_transport() {
        let secret = signing::new_secret();
        let transport = Recording { sent: Default::default(), status: Ok(204) };
        let body = Bytes::from_static(b"{\"id\":\"evt_1\"}");
        let status = attempt(&transport, &endpoint(&secret), "whd_1", 1_700_000_000, body.clone()).await;
        assert_eq!(status, Ok(204));
        {
            let sent = transport.sent.lock().unwrap();
            assert_eq!(sent.len(), 1);
            assert_eq!(
                (sent[0].url.as_str(), sent[0].delivery_id.as_str()),
                ("https://example.com/hooks", "whd_1")
            );
            assert_eq!(sent[0].body, body);
            let expected = signing::sign(&secret, "whd_1", 1_700_000_000, &body).unwrap();
            assert_eq!(sent[0].signature, expected);
        }

        let refused = Recording { sent: Default::default(), status: Err(SendError::Timeout) };
        let error = attempt(&refused, &endpoint(&secret), "whd_2", 1, body).await.unwrap_err();
        assert_eq!(error.to_string(), "the receiver did not answer within 15 seconds");
    }

    #[test]
    fn a_delivery_keeps_its_ladder_and_its_latest_manual_attempts() {
        let attempt = |at: i64, manual: bool| Attempt {
            at,
            status_code: Some(500),
            duration_ms: 1,
            error: None,
            succeeded: false,
            manual,
        };
        let mut attempts: Vec<Attempt> = (0..3).map(|at| attempt(at, false)).collect();
        for at in 3..40 {
            attempts.push(attempt(at, true));
            forget_old_manual_attempts(&mut attempts);
        }
        attempts.push(attempt(40, false));
        forget_old_manual_attempts(&mut attempts);
        assert_eq!(attempts.iter().filter(|a| !a.manual).count(), 4, "the ladder's attempts stay");
        let manual: Vec<i64> = attempts.iter().filter(|a| a.manual).map(|a| a.at).collect();
        assert_eq!(manual, (20..40).collect::<Vec<_>>(), "the latest manual ones");
    }

    #[test]
    fn stored_encoding_matches_the_delivery_record() {
        let delivery = Delivery {
            id: "whd_1".into(),
            organization: "org_1".into(),
            endpoint_id: "we_1".into(),
            event_id: "evt_1".into(),
            event_kind: "account.credited".into(),
            resource_id: Some("USD1000000001".into()),
            body: r#"{"id":"evt_1","event":"account.credited"}"#.into(),
            status: DeliveryStatus::Pending,
            attempts: vec![Attempt {
                at: 1_700_000_000_000,
                status_code: Some(500),
                duration_ms: 3,
                error: Some("the receiver answered 500".into()),
                succeeded: false,
                manual: false,
            }],
            next_attempt_at: Some(1_700_000_030_000),
            created_at: 1_699_999_999_000,
            updated_at: 1_700_000_000_000,
        };
        let expected = encode(&delivery);
        let open = Open::new(delivery.clone());
        assert!(open.delivery.body.is_empty());
        assert_eq!(open.stored(), expected);
        assert_eq!(decode::<Delivery>(&open.stored()).unwrap(), delivery);
        assert_eq!(open.full(), delivery);
    }
}
