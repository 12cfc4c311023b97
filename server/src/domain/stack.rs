//! A stack: the live or the sandbox instance, each with its own database,
//! writer, keys, rate limiter and request log.

use std::sync::{Arc, Mutex, OnceLock};

use sika_engine::Engine;

use crate::config::NodeConfig;
use crate::domain::catalog::Catalog;
use crate::domain::credentials::KeyCache;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::Identity;
use crate::domain::ratelimit::RateLimiter;
use crate::domain::rates::{self, Manual, RateBook, StoredTable};
use crate::domain::settings::{Receiving, StackSettings};
use crate::domain::webhooks::dispatcher::{self, DispatcherHandle};
use crate::store::request_log::RequestLog;

pub(crate) use crate::domain::stack_kind::StackKind;

/// Kept here for the code that stores bootstrap keys.
pub(crate) use crate::domain::credentials::KEYS;

/// Why a stack cannot start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StackError {
    #[error("cannot load the {stack} {what}: {}", .cause.message)]
    Load { stack: &'static str, what: &'static str, cause: ApiError },
    #[error("cannot start the {stack} webhook dispatcher: {reason}")]
    Webhooks { stack: &'static str, reason: String },
}

pub(crate) struct Stack {
    pub kind: StackKind,
    pub engine: Engine,
    pub identity: Arc<Identity>,
    pub config: Arc<NodeConfig>,
    pub rate_limiter: RateLimiter,
    /// Manual webhook retries, per delivery: `RETRIES_PER_SECOND_MAX`.
    retry_limiter: RateLimiter,
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
    pub rails: Arc<crate::domain::rails::Rails>,
    /// What waits for the operator: counted now and then, and the recent
    /// failed requests.
    pub attention: crate::domain::attention::Watch,
    /// The sandbox's: below it the stack refuses writes (its engine asks
    /// it before each command) and readiness names it. `None` on live.
    pub disk_reserve: Option<Arc<crate::store::disk_reserve::DiskReserve>>,
    /// Every key of this stack, checked on each request.
    keys: KeyCache,
    /// Held by a file upload or delete from reading the organization's
    /// usage to storing the new one (`domain::files`), so they queue
    /// rather than conflict.
    pub file_writes: tokio::sync::Mutex<()>,
    webhooks: OnceLock<DispatcherHandle>,
    last_verify: Mutex<Option<sika_api::admin::VerifyResult>>,
}

/// What the runtime opened for a stack: its stores and its adapters.
pub(crate) struct Opened {
    pub engine: Engine,
    pub request_log: RequestLog,
    pub rates: Arc<RateBook>,
    /// The provider's client (`crate::adapters::flutterwave`), live only.
    pub connector: Option<Box<dyn crate::domain::rails::AsyncRail>>,
}

impl Stack {
    /// What a use case needs to queue an email from this stack: `None`
    /// without `[email]`.
    pub(crate) fn mailer(&self) -> Option<crate::domain::emails::Mailer<'_>> {
        crate::domain::emails::Mailer::of(&self.config, self.kind)
    }

    pub(crate) fn new(
        kind: StackKind,
        Opened { engine, request_log, rates, connector }: Opened,
        identity: Arc<Identity>,
        config: Arc<NodeConfig>,
        settings: &StackSettings,
    ) -> Result<Stack, StackError> {
        let keys = KeyCache::load(&engine).map_err(|cause| StackError::Load {
            stack: kind.name(),
            what: "keys",
            cause,
        })?;
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
            rails: Arc::new(crate::domain::rails::Rails::new(connector)),
            attention: crate::domain::attention::Watch::default(),
            disk_reserve: None,
            keys,
            file_writes: tokio::sync::Mutex::new(()),
            webhooks: OnceLock::new(),
            last_verify: Mutex::new(None),
        };
        stack.load_rates().map_err(|cause| StackError::Load { stack: kind.name(), what: "rates", cause })?;
        Ok(stack)
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

    /// This stack's API keys in memory (`domain::credentials` stores them).
    pub(crate) fn keys(&self) -> &KeyCache {
        &self.keys
    }

    /// Starts this stack's webhook dispatcher (inside a Tokio runtime),
    /// delivering through `transport` (`crate::adapters::webhook_sender`).
    pub(crate) fn start_webhooks(
        self: &Arc<Self>,
        transport: Arc<dyn dispatcher::Transport>,
    ) -> Result<(), StackError> {
        let handle = dispatcher::spawn(self.clone(), transport)
            .map_err(|e| StackError::Webhooks { stack: self.kind.name(), reason: e.to_string() })?;
        let _ = self.webhooks.set(handle);
        Ok(())
    }

    /// Where this stack's webhooks may be delivered.
    pub(crate) fn webhook_guard(&self) -> crate::domain::webhooks::address::Guard {
        crate::domain::webhooks::address::Guard::new(self.kind, &self.config)
    }

    /// What managing this stack's webhook endpoints and deliveries needs.
    pub(crate) fn webhook_deps(&self) -> crate::domain::webhooks::endpoints::Deps<'_> {
        crate::domain::webhooks::endpoints::Deps {
            engine: &self.engine,
            guard: self.webhook_guard(),
            dispatcher: self.webhooks.get(),
            retries: &self.retry_limiter,
        }
    }

    /// What opening a virtual account on this stack needs.
    pub(crate) fn virtual_account_deps(&self) -> crate::domain::virtual_accounts::Deps<'_> {
        crate::domain::virtual_accounts::Deps {
            engine: &self.engine,
            stack: self.kind,
            identity: &self.identity,
            catalog: &self.catalog,
            receiving: &self.receiving,
        }
    }

    /// This stack's databases, for an online backup.
    pub(crate) fn backup_source(&self) -> crate::domain::backup::Source<'_> {
        crate::domain::backup::Source { stack: self.kind, engine: &self.engine, requests: &self.request_log }
    }

    /// What answering for this stack's payment methods needs.
    pub(crate) fn capability_deps(&self) -> crate::domain::capabilities::Deps<'_> {
        crate::domain::capabilities::Deps {
            catalog: &self.catalog,
            rails: &self.rails,
            stack: self.kind,
            secret: self.identity.secret(),
        }
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

    /// Pages of this stack's stored lists.
    pub(crate) fn lists(&self) -> crate::domain::pagination::Lists<'_> {
        crate::domain::pagination::Lists::from(self)
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.engine.now_ms()
    }
}

/// The stored lists of a stack as the pages of `domain::pagination` read
/// them: its ledger, its kind and the node's cursor secret.
impl<'a> From<&'a Stack> for crate::domain::pagination::Lists<'a> {
    fn from(stack: &'a Stack) -> Self {
        crate::domain::pagination::Lists {
            ledger: &stack.engine,
            stack: stack.kind,
            secret: stack.identity.secret(),
        }
    }
}

impl<'a> From<&'a Arc<Stack>> for crate::domain::pagination::Lists<'a> {
    fn from(stack: &'a Arc<Stack>) -> Self {
        crate::domain::pagination::Lists::from(stack.as_ref())
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
        crate::domain::webhooks::events::event_body(&self.engine, event)
    }
}
