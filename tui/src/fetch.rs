//! Data fetching off the draw path: the console turns keys and timers into
//! [`Request`]s, a few worker threads run them against a [`Client`], and the
//! [`Response`]s come back over a channel that the event loop drains between
//! frames. A slow or dead node therefore never freezes input.

use crate::api::DisputeOutcome;
use crate::api::{Reconciliation, SearchResults};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;

use crate::api::{
    ApiKey, AuditEntry, Client, ClientResult, CreatedOrganization, Dispute, EmailItem, EndpointAttempt,
    EndpointHealth, FailedRequest, LedgerEntries, ListPage, Member, Movement, MovementKind, MovementQuery,
    NewOrganization, NodeStatus, Organization, Owned, ReissuedInvitation, RequestLookup, Settled, Settlement,
    SettlementRecord, StackAccounts, StackName, StackRates, SystemAccount, VerifyResult, WebhookDelivery,
    WebhookEndpoint,
};

/// Enough for a slow `verify` not to hold up the status heartbeat and the
/// tab's lists, few enough not to load the node.
const FETCH_THREAD_COUNT: usize = 3;

/// One call to the admin API.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Request {
    Status,
    Accounts(StackName),
    Rates(StackName),
    Verify(StackName),
    Movements {
        stack: StackName,
        query: MovementQuery,
    },
    Movement {
        stack: StackName,
        kind: MovementKind,
        id: String,
    },
    Settle {
        stack: StackName,
        kind: MovementKind,
        id: String,
        settlement: Settlement,
        record: SettlementRecord,
    },
    Disputes(StackName),
    Dispute {
        stack: StackName,
        id: String,
    },
    Endpoints(StackName),
    Deliveries {
        stack: StackName,
        status: &'static str,
    },
    Attempts {
        stack: StackName,
        endpoint_id: String,
    },
    RetryDelivery {
        stack: StackName,
        delivery_id: String,
    },
    EnableEndpoint {
        stack: StackName,
        endpoint_id: String,
    },
    Lookup(String),
    Organizations,
    CreateOrganization(NewOrganization),
    RenameOrganization {
        id: String,
        name: String,
    },
    SetSuspended {
        id: String,
        suspended: bool,
    },
    Members(String),
    ReissueInvitation {
        organization_id: String,
        member_id: String,
    },
    /// A page of the audit log from `cursor` (the first page without one).
    Audit {
        cursor: Option<String>,
    },
    /// The newest emails of the outbox.
    Emails,
    SystemAccounts(StackName),
    ResolveDispute {
        stack: StackName,
        id: String,
        outcome: DisputeOutcome,
    },
    /// A search across both stacks.
    Search(String),
    /// The live stack against the provider over the last 24 hours (the
    /// period is read from the clock when it runs).
    Reconciliation,
    /// The stack's recent failed requests.
    FailedRequests(StackName),
    /// An organization's API keys on a stack.
    Keys {
        stack: StackName,
        organization_id: String,
    },
    RevokeKey {
        stack: StackName,
        organization_id: String,
        key_id: String,
    },
    /// A page of an account's journal entries from `cursor`.
    LedgerEntries {
        stack: StackName,
        id: String,
        cursor: Option<String>,
    },
}

impl Request {
    /// Actions change the node; they are never repeated by a timer.
    pub fn is_action(&self) -> bool {
        matches!(
            self,
            Request::Verify(_)
                | Request::Settle { .. }
                | Request::RetryDelivery { .. }
                | Request::EnableEndpoint { .. }
                | Request::CreateOrganization(_)
                | Request::RenameOrganization { .. }
                | Request::SetSuspended { .. }
                | Request::ReissueInvitation { .. }
                | Request::ResolveDispute { .. }
                | Request::RevokeKey { .. }
        )
    }
}

/// What a successful [`Request`] returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    Status(NodeStatus),
    Accounts(StackAccounts),
    Rates(StackRates),
    Verify(VerifyResult),
    Movements(Vec<Movement>),
    Movement(Movement),
    Settled(Settled),
    Disputes(Vec<Owned<Dispute>>),
    Dispute(Owned<Dispute>),
    Endpoints(Vec<EndpointHealth>),
    Deliveries(Vec<Owned<WebhookDelivery>>),
    Attempts(Vec<EndpointAttempt>),
    Delivery(WebhookDelivery),
    Endpoint(WebhookEndpoint),
    Lookup(RequestLookup),
    Organizations(Vec<Organization>),
    Created(CreatedOrganization),
    Organization(Organization),
    Members(Vec<Member>),
    Invitation(ReissuedInvitation),
    Audit(ListPage<AuditEntry>),
    Emails(ListPage<EmailItem>),
    SystemAccounts(Vec<SystemAccount>),
    LedgerEntries(LedgerEntries),
    Search(SearchResults),
    Reconciliation(Reconciliation),
    /// A dispute the operator resolved.
    Resolved(Owned<Dispute>),
    FailedRequests(Vec<FailedRequest>),
    Keys(Vec<ApiKey>),
    /// A key the operator revoked.
    Revoked(ApiKey),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub request: Request,
    pub outcome: ClientResult<Payload>,
}

/// Runs one request to completion; blocking.
pub fn execute(client: &dyn Client, request: Request) -> Response {
    let outcome = match &request {
        Request::Status => client.status().map(Payload::Status),
        Request::Accounts(stack) => client.accounts(*stack).map(Payload::Accounts),
        Request::Rates(stack) => client.rates(*stack).map(Payload::Rates),
        Request::Verify(stack) => client.verify(*stack).map(Payload::Verify),
        Request::Movements { stack, query } => client.movements(*stack, query).map(Payload::Movements),
        Request::Movement { stack, kind, id } => client.movement(*stack, *kind, id).map(Payload::Movement),
        Request::Settle { stack, kind, id, settlement, record } => {
            client.settle(*stack, *kind, id, *settlement, record).map(Payload::Settled)
        }
        Request::FailedRequests(stack) => client.failed_requests(*stack).map(Payload::FailedRequests),
        Request::Keys { stack, organization_id } => client.keys(*stack, organization_id).map(Payload::Keys),
        Request::RevokeKey { stack, organization_id, key_id } => {
            client.revoke_key(*stack, organization_id, key_id).map(Payload::Revoked)
        }
        Request::Disputes(stack) => client.disputes(*stack).map(Payload::Disputes),
        Request::Dispute { stack, id } => client.dispute(*stack, id).map(Payload::Dispute),
        Request::Endpoints(stack) => client.webhook_endpoints(*stack).map(Payload::Endpoints),
        Request::Deliveries { stack, status } => client.deliveries(*stack, status).map(Payload::Deliveries),
        Request::Attempts { stack, endpoint_id } => {
            client.endpoint_attempts(*stack, endpoint_id).map(Payload::Attempts)
        }
        Request::RetryDelivery { stack, delivery_id } => {
            client.retry_delivery(*stack, delivery_id).map(Payload::Delivery)
        }
        Request::EnableEndpoint { stack, endpoint_id } => {
            client.enable_endpoint(*stack, endpoint_id).map(Payload::Endpoint)
        }
        Request::Lookup(id) => client.request(id).map(Payload::Lookup),
        Request::Organizations => client.organizations().map(Payload::Organizations),
        Request::CreateOrganization(new) => client.create_organization(new).map(Payload::Created),
        Request::RenameOrganization { id, name } => {
            client.rename_organization(id, name).map(Payload::Organization)
        }
        Request::SetSuspended { id, suspended } => {
            client.set_suspended(id, *suspended).map(Payload::Organization)
        }
        Request::Members(id) => client.members(id).map(Payload::Members),
        Request::ReissueInvitation { organization_id, member_id } => {
            client.reissue_invitation(organization_id, member_id).map(Payload::Invitation)
        }
        Request::Audit { cursor } => {
            client.audit(cursor.as_deref(), crate::app::AUDIT_PAGE_LIMIT).map(Payload::Audit)
        }
        Request::Emails => client.emails(crate::app::EMAILS_SHOWN).map(Payload::Emails),
        Request::SystemAccounts(stack) => client.system_accounts(*stack).map(Payload::SystemAccounts),
        Request::Search(query) => client.search(query).map(Payload::Search),
        Request::Reconciliation => {
            let (from, to) = last_day(chrono::Utc::now());
            client.reconciliation(&from, &to).map(Payload::Reconciliation)
        }
        Request::ResolveDispute { stack, id, outcome } => {
            client.resolve_dispute(*stack, id, *outcome).map(Payload::Resolved)
        }
        Request::LedgerEntries { stack, id, cursor } => client
            .ledger_entries(*stack, id, cursor.as_deref(), crate::app::LEDGER_PAGE_LIMIT)
            .map(Payload::LedgerEntries),
    };
    Response { request, outcome }
}

/// The 24 hours up to `now`, as the admin API takes a period.
pub fn last_day(now: chrono::DateTime<chrono::Utc>) -> (String, String) {
    // To the millisecond: what was made in the last second is in it.
    let text = |at: chrono::DateTime<chrono::Utc>| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    (text(now - chrono::Duration::hours(24)), text(now))
}

/// The worker threads and both ends of their channels. Dropping it closes
/// the request channel; idle workers then exit, and a worker stuck in a
/// call exits when the call times out.
pub struct Fetcher {
    requests: Sender<Request>,
    responses: Receiver<Response>,
}

impl Fetcher {
    pub fn spawn(client: Arc<dyn Client>) -> Fetcher {
        let (request_sender, request_receiver) = mpsc::channel::<Request>();
        let (response_sender, response_receiver) = mpsc::channel();
        let request_receiver = Arc::new(Mutex::new(request_receiver));
        for index in 0..FETCH_THREAD_COUNT {
            let client = client.clone();
            let requests = request_receiver.clone();
            let responses = response_sender.clone();
            let spawned = thread::Builder::new()
                .name(format!("sika-tui-fetch-{index}"))
                .spawn(move || work(client.as_ref(), &requests, &responses));
            // Without workers the console still draws and says nothing came
            // back; there is nothing better to do with the error here.
            drop(spawned);
        }
        Fetcher { requests: request_sender, responses: response_receiver }
    }

    pub fn send(&self, request: Request) {
        // The workers only stop when this sender is dropped.
        let _ = self.requests.send(request);
    }

    /// A response that has arrived, without waiting.
    pub fn try_receive(&self) -> Option<Response> {
        self.responses.try_recv().ok()
    }
}

fn work(client: &dyn Client, requests: &Mutex<Receiver<Request>>, responses: &Sender<Response>) {
    loop {
        let next = match requests.lock() {
            Ok(receiver) => receiver.recv(),
            Err(_) => return,
        };
        let Ok(request) = next else { return };
        if responses.send(execute(client, request)).is_err() {
            return;
        }
    }
}
