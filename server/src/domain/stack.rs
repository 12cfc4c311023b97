//! A stack: the live or the sandbox instance, each with its own database,
//! writer, keys, rate limiter and request log.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use sika_api::ErrorCode;
use sika_engine::{Command, Engine};

use crate::config::NodeConfig;
use crate::domain::catalog::Catalog;
use crate::domain::credentials::ApiKeyRecord;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::Identity;
use crate::domain::ratelimit::RateLimiter;
use crate::domain::rates::{self, Manual, RateBook, StoredTable};
use crate::domain::settings::{Receiving, StackSettings};
use crate::domain::webhooks::dispatcher::{self, DispatcherHandle};
use crate::store::request_log::RequestLog;

pub(crate) use crate::domain::stack_kind::StackKind;

/// The collection API keys are stored in.
pub(crate) const KEYS: &str = "api_keys";

/// Keys an organization may hold on one stack at once, revoked ones not
/// counted: every key is checked on every request from memory, so their
/// number is bounded.
pub(crate) const ACTIVE_KEYS_MAX: usize = 100;

pub(crate) struct Stack {
    pub kind: StackKind,
    pub engine: Engine,
    pub identity: Arc<Identity>,
    pub config: Arc<NodeConfig>,
    pub rate_limiter: RateLimiter,
    /// Manual webhook retries, per delivery: `RETRIES_PER_SECOND_MAX`.
    pub retry_limiter: RateLimiter,
    /// Payment attempts per payer address on one page or link, per hour.
    pub checkout_attempts: crate::domain::ratelimit::WindowedCounter,
    pub request_log: RequestLog,
    /// The shipped catalog with the operator's method overrides.
    pub catalog: Catalog,
    /// What live payers are told to pay into (empty on the sandbox).
    pub receiving: Receiving,
    /// The one source of this stack's rates (the engine reads it too).
    pub rates: Arc<RateBook>,
    /// Counters for `/metrics`.
    pub metrics: crate::domain::metrics::Metrics,
    /// Provider connectors (live only), their breaker and open movements.
    pub rails: crate::domain::rails::Rails,
    /// What waits for the operator: counted now and then, and the recent
    /// failed requests.
    pub attention: crate::domain::attention::Watch,
    /// The sandbox's: below it the stack refuses writes (its engine asks
    /// it before each command) and readiness names it. `None` on live.
    pub disk_reserve: Option<Arc<crate::store::disk_reserve::DiskReserve>>,
    keys: RwLock<HashMap<[u8; 32], ApiKeyRecord>>,
    /// Held from counting an organization's active keys to storing a new
    /// one, so concurrent creations cannot pass the cap together.
    key_creation: tokio::sync::Mutex<()>,
    /// Held by a file upload or delete from reading the organization's
    /// usage to storing the new one (`domain::files`), so they queue
    /// rather than conflict.
    pub file_writes: tokio::sync::Mutex<()>,
    webhooks: OnceLock<DispatcherHandle>,
    last_verify: Mutex<Option<sika_api::admin::VerifyResult>>,
}

impl Stack {
    pub(crate) fn new(
        kind: StackKind,
        engine: Engine,
        identity: Arc<Identity>,
        config: Arc<NodeConfig>,
        request_log: RequestLog,
        settings: &StackSettings,
        rates: Arc<RateBook>,
    ) -> Result<Stack, String> {
        let connector = match (&settings.flutterwave, kind) {
            (Some(flutterwave), StackKind::Live) => {
                let connector =
                    crate::adapters::flutterwave::Flutterwave::new(flutterwave).map_err(|e| e.to_string())?;
                Some(Box::new(connector) as Box<dyn crate::domain::rails::AsyncRail>)
            }
            _ => None,
        };
        let stack = Stack {
            kind,
            engine,
            identity,
            rate_limiter: RateLimiter::new(config.rate_limit),
            retry_limiter: RateLimiter::new(crate::domain::webhooks::RETRIES_PER_SECOND_MAX),
            checkout_attempts: crate::domain::ratelimit::WindowedCounter::new(
                config.checkout_attempts_per_address,
                std::time::Duration::from_secs(3_600),
            ),
            config,
            request_log,
            catalog: settings.catalog.clone().unwrap_or_else(|| crate::domain::catalog::shipped().clone()),
            receiving: settings.receiving.clone(),
            rates,
            metrics: crate::domain::metrics::Metrics::default(),
            rails: crate::domain::rails::Rails::new(connector),
            attention: crate::domain::attention::Watch::default(),
            disk_reserve: None,
            keys: RwLock::new(HashMap::new()),
            key_creation: tokio::sync::Mutex::new(()),
            file_writes: tokio::sync::Mutex::new(()),
            webhooks: OnceLock::new(),
            last_verify: Mutex::new(None),
        };
        stack.load_keys().map_err(|e| format!("cannot load the {} keys: {}", kind.name(), e.message))?;
        stack.load_rates().map_err(|e| format!("cannot load the {} rates: {}", kind.name(), e.message))?;
        Ok(stack)
    }

    fn load_keys(&self) -> ApiResult<()> {
        let snapshot = self.engine.read()?;
        let mut keys = HashMap::new();
        for (_, body) in snapshot.documents(KEYS)? {
            let record: ApiKeyRecord = crate::store::documents::decode(&body)?;
            keys.insert(record.hash, record);
        }
        *self.keys.write().map_err(|e| ApiError::internal_from(e.to_string()))? = keys;
        Ok(())
    }

    /// The manual table an operator set through the admin API, which
    /// replaces the configuration file's.
    fn load_rates(&self) -> ApiResult<()> {
        let (collection, id) = rates::STORED;
        let stored: Option<StoredTable> =
            crate::store::documents::load(&self.engine.read()?, collection, id)?;
        if let Some(stored) = stored {
            self.rates.set_manual(Manual::from_stored(&stored)?);
        }
        Ok(())
    }

    /// The key whose SHA-256 is `hash`.
    pub(crate) fn key_by_hash(&self, hash: &[u8; 32]) -> Option<ApiKeyRecord> {
        self.keys.read().ok()?.get(hash).cloned()
    }

    pub(crate) fn keys_of(&self, organization: &str) -> Vec<ApiKeyRecord> {
        let mut keys: Vec<_> = self
            .keys
            .read()
            .map(|k| k.values().filter(|k| k.organization == organization).cloned().collect())
            .unwrap_or_default();
        keys.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        keys
    }

    /// Stores a new key, refusing it when the organization already has
    /// `ACTIVE_KEYS_MAX` keys that are not revoked.
    pub(crate) async fn create_key(&self, record: ApiKeyRecord) -> ApiResult<()> {
        let _one_at_a_time = self.key_creation.lock().await;
        let active = self.keys_of(&record.organization).iter().filter(|k| k.revoked_at.is_none()).count();
        if active >= ACTIVE_KEYS_MAX {
            return Err(ApiError::new(
                ErrorCode::InvalidState,
                format!("this organization already has {ACTIVE_KEYS_MAX} active keys; revoke one first"),
            )
            .with_detail("limit", ACTIVE_KEYS_MAX));
        }
        self.save_key(record).await
    }

    /// Stores a key durably, then makes it usable.
    pub(crate) async fn save_key(&self, record: ApiKeyRecord) -> ApiResult<()> {
        let body = crate::store::documents::encode(&record);
        self.engine
            .execute(Command::PutDocument {
                collection: KEYS.to_string(),
                id: record.id.clone(),
                body,
                list: Some((record.organization.clone(), "api_keys".to_string())),
            })
            .await?;
        self.keys.write().map_err(|e| ApiError::internal_from(e.to_string()))?.insert(record.hash, record);
        Ok(())
    }

    /// Starts this stack's webhook dispatcher (inside a Tokio runtime).
    pub(crate) fn start_webhooks(self: &Arc<Self>) -> Result<(), String> {
        let guard = crate::domain::webhooks::address::Guard::of(self);
        let sender = crate::adapters::webhook_sender::WebhookSender::new(guard).map_err(|e| e.to_string())?;
        let handle = dispatcher::spawn(self.clone(), Arc::new(sender)).map_err(|e| e.to_string())?;
        let _ = self.webhooks.set(handle);
        Ok(())
    }

    pub(crate) fn webhooks(&self) -> ApiResult<&DispatcherHandle> {
        self.webhooks.get().ok_or_else(ApiError::unavailable)
    }

    /// The result of the last `verify` the operator ran on this stack.
    pub(crate) fn last_verify(&self) -> Option<sika_api::admin::VerifyResult> {
        self.last_verify.lock().ok()?.clone()
    }

    pub(crate) fn set_last_verify(&self, result: sika_api::admin::VerifyResult) {
        if let Ok(mut last) = self.last_verify.lock() {
            *last = Some(result);
        }
    }

    /// A method's status now: the configured one, or the breaker's while
    /// the provider it is routed through keeps failing.
    pub(crate) fn method_status(
        &self,
        method: &crate::domain::catalog::Method,
    ) -> sika_api::capabilities::MethodStatus {
        self.rails.status(&method.code, method.status)
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.engine.now_ms()
    }
}

/// What the webhook dispatcher reads of its stack while it runs.
impl dispatcher::Host for Stack {
    fn engine(&self) -> &Engine {
        &self.engine
    }

    fn metrics(&self) -> &crate::domain::metrics::Metrics {
        &self.metrics
    }

    fn time_scale(&self) -> f64 {
        self.config.time_scale
    }

    fn event_body(
        &self,
        event: &sika_engine::records::EventRecord,
    ) -> ApiResult<sika_api::webhooks::WebhookEvent> {
        crate::domain::webhooks::event_body(self, event)
    }
}

/// The stack's stored lists, for `pagination::page_of_views`.
impl crate::domain::pagination::Listed for Stack {
    fn lists(&self) -> crate::domain::pagination::Lists<'_> {
        crate::domain::pagination::Lists { engine: &self.engine, stack: self.kind, identity: &self.identity }
    }
}
