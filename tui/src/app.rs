//! [`App`]: everything the console shows, and the pure functions that change
//! it. Keys go through [`App::handle_key`], fetched data through
//! [`App::apply`], timers through [`App::tick`]; none of them does I/O. What
//! they want fetched comes back as [`Request`]s for the caller to run.

use crate::api::SearchResults;
use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

mod api_keys;
mod apply;
mod disputes;
mod failed;
mod form;
mod keys;
mod ledger;
mod organizations;
mod reconciliation;
mod search;

pub use form::{FIELD_LENGTH_MAX, Form, FormField, FormKind};
pub use ledger::{LEDGER_PAGE_LIMIT, Pages};
pub use organizations::{AUDIT_PAGE_LIMIT, EMAILS_SHOWN, Notice};

use crate::api::{
    Account, ApiKey, AuditEntry, Client, ClientError, CurrencyTotal, Dispute, EmailItem, EndpointAttempt,
    EndpointHealth, FailedRequest, LedgerEntries, ListPage, Member, Movement, MovementKind, MovementQuery,
    NodeStatus, Organization, Owned, Reconciliation, RequestLookup, StackAccounts, StackName, StackRate,
    StackRates, SystemAccount, WebhookDelivery, thread,
};
use crate::fetch::{self, Request};

/// How often the status heartbeat runs while the node answers.
pub const STATUS_INTERVAL: Duration = Duration::from_secs(1);
/// How often an unreachable node is tried again.
pub const RETRY_INTERVAL: Duration = Duration::from_secs(2);
/// How often the open tab's lists are fetched again.
pub const TAB_REFRESH_INTERVAL: Duration = Duration::from_secs(5);
/// Points kept for the throughput sparkline, one per status sample.
pub const THROUGHPUT_SAMPLES_MAX: usize = 240;
/// Rows fetched per kind on the Activity tab.
pub const ACTIVITY_PAGE_LIMIT: usize = 50;
/// Characters accepted in the search prompt.
pub const SEARCH_LENGTH_MAX: usize = 128;
/// Follow-up rounds [`App::fetch_now`] runs before it stops.
const FETCH_ROUNDS_MAX: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tab {
    Overview,
    Accounts,
    Rates,
    Activity,
    Disputes,
    Webhooks,
    Requests,
    Organizations,
    Audit,
}

impl Tab {
    pub const ALL: [Tab; 9] = [
        Tab::Overview,
        Tab::Accounts,
        Tab::Rates,
        Tab::Activity,
        Tab::Disputes,
        Tab::Webhooks,
        Tab::Requests,
        Tab::Organizations,
        Tab::Audit,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Overview => "Overview",
            Tab::Accounts => "Accounts",
            Tab::Rates => "Rates",
            Tab::Activity => "Activity",
            Tab::Disputes => "Disputes",
            Tab::Webhooks => "Webhooks",
            Tab::Requests => "Requests",
            Tab::Organizations => "Orgs",
            Tab::Audit => "Audit",
        }
    }

    /// The title where the tab bar is short of room (80 columns).
    pub fn short_title(self) -> &'static str {
        match self {
            Tab::Overview => "Home",
            Tab::Webhooks => "Hooks",
            Tab::Requests => "Reqs",
            other => other.title(),
        }
    }

    pub fn index(self) -> usize {
        Tab::ALL.iter().position(|t| *t == self).unwrap_or(0)
    }

    pub fn next(self) -> Tab {
        Tab::ALL[(self.index() + 1) % Tab::ALL.len()]
    }

    pub fn previous(self) -> Tab {
        Tab::ALL[(self.index() + Tab::ALL.len() - 1) % Tab::ALL.len()]
    }
}

/// What the event loop should do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    None,
    Quit,
    Fetch(Vec<Request>),
}

/// Data from the node with its loading and error state. Old data stays on
/// screen while a refresh runs or after one fails.
#[derive(Debug, Clone, PartialEq)]
pub struct Remote<T> {
    pub data: Option<T>,
    pub error: Option<String>,
    pub loading: bool,
}

impl<T> Default for Remote<T> {
    fn default() -> Self {
        Remote { data: None, error: None, loading: false }
    }
}

impl<T> Remote<T> {
    fn with(data: T) -> Self {
        Remote { data: Some(data), error: None, loading: true }
    }

    fn finish(&mut self, data: T) {
        self.loading = false;
        self.data = Some(data);
        self.error = None;
    }

    fn fail(&mut self, error: &ClientError) {
        self.loading = false;
        // The banner reports a dead node once, not in every table.
        if !error.is_connection() {
            self.error = Some(error.to_string());
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// No answer yet.
    Connecting,
    Connected,
    Unreachable(String),
    Unauthorized(String),
}

/// Commands per second (every command the writer applied: payouts,
/// documents, deposits, …), from successive status samples of one stack.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Throughput {
    last: Option<(Instant, u64)>,
    pub per_second: VecDeque<u64>,
}

impl Throughput {
    pub fn record(&mut self, at: Instant, commands: u64) {
        if let Some((then, before)) = self.last {
            let elapsed_ms = at.saturating_duration_since(then).as_millis();
            if elapsed_ms == 0 {
                return;
            }
            // A counter that went down means the node restarted: no rate.
            let delta = u128::from(commands.saturating_sub(before));
            let rate = (delta * 1000 + elapsed_ms / 2) / elapsed_ms;
            if self.per_second.len() == THROUGHPUT_SAMPLES_MAX {
                self.per_second.pop_front();
            }
            self.per_second.push_back(u64::try_from(rate).unwrap_or(u64::MAX));
        }
        self.last = Some((at, commands));
    }

    pub fn latest(&self) -> Option<u64> {
        self.per_second.back().copied()
    }
}

/// The Activity tab's status filter, cycled with `F`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StatusFilter {
    #[default]
    All,
    Pending,
    Completed,
    Failed,
}

impl StatusFilter {
    pub fn status(self) -> Option<&'static str> {
        match self {
            StatusFilter::All => None,
            StatusFilter::Pending => Some("pending"),
            StatusFilter::Completed => Some("completed"),
            StatusFilter::Failed => Some("failed"),
        }
    }

    fn next(self) -> StatusFilter {
        match self {
            StatusFilter::All => StatusFilter::Pending,
            StatusFilter::Pending => StatusFilter::Completed,
            StatusFilter::Completed => StatusFilter::Failed,
            StatusFilter::Failed => StatusFilter::All,
        }
    }
}

/// Which table of the Webhooks tab has the selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WebhookPane {
    #[default]
    Endpoints,
    Deliveries,
}

/// An open detail view; `selected` is the highlighted timeline entry,
/// message or attempt.
// At most one detail is open at a time, so the size of its largest variant
// costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Detail {
    Movement {
        stack: StackName,
        kind: MovementKind,
        id: String,
        data: Remote<Movement>,
        selected: usize,
    },
    Dispute {
        stack: StackName,
        id: String,
        data: Remote<Owned<Dispute>>,
        selected: usize,
    },
    Endpoint {
        stack: StackName,
        health: EndpointHealth,
        attempts: Remote<Vec<EndpointAttempt>>,
        selected: usize,
    },
    /// What a search across the node found; `selected` is a hit.
    Search {
        query: String,
        results: Remote<SearchResults>,
        selected: usize,
    },
    /// A ledger account's journal entries, a page at a time.
    LedgerAccount {
        stack: StackName,
        id: String,
        pages: Pages,
        entries: Remote<LedgerEntries>,
        selected: usize,
    },
    /// An organization and its members; `selected` is a member.
    Organization {
        organization: Organization,
        members: Remote<Vec<Member>>,
        selected: usize,
    },
    /// An organization's API keys on a stack; `selected` is a key.
    Keys {
        stack: StackName,
        organization: Organization,
        keys: Remote<Vec<ApiKey>>,
        selected: usize,
    },
    /// The live stack against the provider over the last 24 hours;
    /// `selected` is a finding.
    Reconciliation {
        data: Remote<Reconciliation>,
        selected: usize,
    },
}

impl Detail {
    fn request(&self) -> Request {
        match self {
            Detail::Movement { stack, kind, id, .. } => {
                Request::Movement { stack: *stack, kind: *kind, id: id.clone() }
            }
            Detail::Dispute { stack, id, .. } => Request::Dispute { stack: *stack, id: id.clone() },
            Detail::Endpoint { stack, health, .. } => {
                Request::Attempts { stack: *stack, endpoint_id: health.endpoint.id.clone() }
            }
            Detail::Organization { organization, .. } => Request::Members(organization.id.clone()),
            Detail::Keys { stack, organization, .. } => {
                Request::Keys { stack: *stack, organization_id: organization.id.clone() }
            }
            Detail::Search { query, .. } => Request::Search(query.clone()),
            Detail::Reconciliation { .. } => Request::Reconciliation,
            Detail::LedgerAccount { stack, id, pages, .. } => {
                Request::LedgerEntries { stack: *stack, id: id.clone(), cursor: pages.cursor.clone() }
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Detail::Movement { data, .. } => data.data.as_ref().map_or(0, |m| m.timeline().len()),
            Detail::Dispute { data, .. } => data.data.as_ref().map_or(0, |d| thread(&d.item).len()),
            Detail::Endpoint { attempts, .. } => attempts.data.as_ref().map_or(0, Vec::len),
            Detail::Organization { members, .. } => members.data.as_ref().map_or(0, Vec::len),
            Detail::Keys { keys, .. } => keys.data.as_ref().map_or(0, Vec::len),
            Detail::LedgerAccount { entries, .. } => ledger::entry_count(entries),
            Detail::Search { results, .. } => search::hit_count(results),
            Detail::Reconciliation { data, .. } => reconciliation::finding_count(data),
        }
    }

    fn selected_mut(&mut self) -> &mut usize {
        match self {
            Detail::Movement { selected, .. }
            | Detail::Dispute { selected, .. }
            | Detail::Endpoint { selected, .. }
            | Detail::Organization { selected, .. }
            | Detail::Keys { selected, .. }
            | Detail::LedgerAccount { selected, .. }
            | Detail::Search { selected, .. }
            | Detail::Reconciliation { selected, .. } => selected,
        }
    }
}

/// A y/n question before an action that changes the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirm {
    pub prompt: String,
    pub request: Request,
}

/// A one-line message on the status bar until the next key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flash {
    pub text: String,
    pub error: bool,
}

/// The console's whole state.
#[derive(Debug, Clone)]
pub struct App {
    pub admin_url: String,
    pub tab: Tab,
    pub stack: StackName,
    pub connection: Connection,
    pub status: Option<NodeStatus>,
    /// Indexed by [`stack_index`].
    pub throughput: [Throughput; 2],
    /// Indexed by [`stack_index`]; the Overview shows both.
    pub accounts: [Remote<StackAccounts>; 2],
    pub accounts_selected: usize,
    /// The selected stack's rates.
    pub rates: Remote<StackRates>,
    pub rates_selected: usize,
    /// Indexed by [`MovementKind`] order: payouts, collections, orders,
    /// refunds.
    pub movements: [Remote<Vec<Movement>>; 4],
    pub activity_query: Option<String>,
    pub activity_status: StatusFilter,
    pub activity_selected: usize,
    pub disputes: Remote<Vec<Owned<Dispute>>>,
    pub disputes_selected: usize,
    pub endpoints: Remote<Vec<EndpointHealth>>,
    pub failed_deliveries: Remote<Vec<Owned<WebhookDelivery>>>,
    pub pending_deliveries: Remote<Vec<Owned<WebhookDelivery>>>,
    pub webhook_pane: WebhookPane,
    pub endpoints_selected: usize,
    pub deliveries_selected: usize,
    pub lookup_id: Option<String>,
    pub lookup: Remote<RequestLookup>,
    pub lookup_scroll: usize,
    /// The selected stack's recent failed requests (the Requests tab).
    pub failed_requests: Remote<Vec<FailedRequest>>,
    /// The Requests tab's search: failed requests holding it are listed.
    pub requests_query: Option<String>,
    pub failed_requests_selected: usize,
    pub detail: Option<Detail>,
    /// The search prompt's text while it is open.
    pub search: Option<String>,
    pub confirm: Option<Confirm>,
    pub help: bool,
    pub flash: Option<Flash>,
    /// Every organization, for the Organizations tab and for the names the
    /// other tabs show.
    pub organizations: Remote<Vec<Organization>>,
    pub organizations_selected: usize,
    /// The audit log's page on screen, from `audit_cursor`.
    pub audit: Remote<ListPage<AuditEntry>>,
    pub audit_cursor: Option<String>,
    /// The cursors of the newer pages, to go back with `p`.
    pub audit_previous: Vec<Option<String>>,
    pub audit_selected: usize,
    /// The newest emails of the node's outbox, under the audit log.
    pub emails: Remote<ListPage<EmailItem>>,
    pub form: Option<Form>,
    pub notice: Option<Notice>,
    /// The Accounts tab shows the node's own accounts instead (`o`).
    pub show_system_accounts: bool,
    /// The selected stack's system accounts.
    pub system_accounts: Remote<Vec<SystemAccount>>,
    in_flight: HashSet<Request>,
    status_due: Option<Instant>,
    tab_due: Option<Instant>,
}

pub fn stack_index(stack: StackName) -> usize {
    match stack {
        StackName::Live => 0,
        StackName::Sandbox => 1,
    }
}

fn kind_index(kind: MovementKind) -> usize {
    match kind {
        MovementKind::Payout => 0,
        MovementKind::Collection => 1,
        MovementKind::Order => 2,
        MovementKind::Refund => 3,
    }
}

impl App {
    pub fn new(admin_url: &str) -> App {
        App {
            admin_url: admin_url.to_string(),
            tab: Tab::Overview,
            stack: StackName::Live,
            connection: Connection::Connecting,
            status: None,
            throughput: Default::default(),
            accounts: Default::default(),
            accounts_selected: 0,
            rates: Remote::default(),
            rates_selected: 0,
            movements: Default::default(),
            activity_query: None,
            activity_status: StatusFilter::All,
            activity_selected: 0,
            disputes: Remote::default(),
            disputes_selected: 0,
            endpoints: Remote::default(),
            failed_deliveries: Remote::default(),
            pending_deliveries: Remote::default(),
            webhook_pane: WebhookPane::Endpoints,
            endpoints_selected: 0,
            deliveries_selected: 0,
            lookup_id: None,
            lookup: Remote::default(),
            lookup_scroll: 0,
            failed_requests: Remote::default(),
            requests_query: None,
            failed_requests_selected: 0,
            detail: None,
            search: None,
            confirm: None,
            help: false,
            flash: None,
            organizations: Remote::default(),
            organizations_selected: 0,
            audit: Remote::default(),
            audit_cursor: None,
            audit_previous: Vec::new(),
            audit_selected: 0,
            emails: Remote::default(),
            form: None,
            notice: None,
            show_system_accounts: false,
            system_accounts: Remote::default(),
            in_flight: HashSet::new(),
            status_due: None,
            tab_due: None,
        }
    }

    // ----- derived views of the state -----

    /// The accounts of the selected stack.
    pub fn account_rows(&self) -> &[Owned<Account>] {
        self.accounts[stack_index(self.stack)].data.as_ref().map_or(&[], |p| p.data.as_slice())
    }

    /// Per-currency totals of a stack, as the node summed them.
    pub fn totals(&self, stack: StackName) -> &[CurrencyTotal] {
        self.accounts[stack_index(stack)].data.as_ref().map_or(&[], |p| p.totals.as_slice())
    }

    /// The selected stack's currencies and their rates, by currency code.
    pub fn rate_rows(&self) -> Vec<(&str, &StackRate)> {
        self.rates
            .data
            .iter()
            .flat_map(|r| r.rates.iter())
            .map(|(code, rate)| (code.as_str(), rate))
            .collect()
    }

    /// Payouts, collections, orders and refunds of the selected stack,
    /// newest first.
    pub fn activity_rows(&self) -> Vec<&Movement> {
        let mut rows: Vec<&Movement> =
            self.movements.iter().filter_map(|r| r.data.as_ref()).flat_map(|v| v.iter()).collect();
        rows.sort_by(|a, b| b.created_at().cmp(a.created_at()).then_with(|| a.id().cmp(b.id())));
        rows
    }

    /// Deliveries that failed for good, then those still being retried.
    pub fn failing_deliveries(&self) -> Vec<&Owned<WebhookDelivery>> {
        let failed = self.failed_deliveries.data.iter().flatten();
        let retrying = self.pending_deliveries.data.iter().flatten().filter(|d| d.item.attempt_count > 0);
        failed.chain(retrying).collect()
    }

    pub fn endpoint_rows(&self) -> &[EndpointHealth] {
        self.endpoints.data.as_deref().unwrap_or(&[])
    }

    pub fn dispute_rows(&self) -> &[Owned<Dispute>] {
        self.disputes.data.as_deref().unwrap_or(&[])
    }

    /// Lines of the request lookup's text, for scrolling.
    pub fn lookup_line_count(&self) -> usize {
        self.lookup
            .data
            .as_ref()
            .map_or(0, |l| crate::view::requests::lines(l, self.organization_name(&l.organization_id)).len())
    }

    fn movement_query(&self, kind: MovementKind) -> MovementQuery {
        MovementQuery {
            kind,
            q: self.activity_query.clone(),
            status: self.activity_status.status().map(str::to_string),
            limit: ACTIVITY_PAGE_LIMIT,
        }
    }

    // ----- fetching -----

    /// What the open tab (and its detail) shows.
    pub fn tab_requests(&self) -> Vec<Request> {
        let stack = self.stack;
        let mut requests = match self.tab {
            Tab::Overview => {
                vec![
                    Request::Status,
                    Request::Accounts(StackName::Live),
                    Request::Accounts(StackName::Sandbox),
                ]
            }
            Tab::Accounts if self.show_system_accounts => {
                vec![Request::Accounts(stack), Request::SystemAccounts(stack)]
            }
            Tab::Accounts => vec![Request::Accounts(stack)],
            Tab::Rates => vec![Request::Rates(stack)],
            Tab::Activity => MovementKind::ALL
                .iter()
                .map(|kind| Request::Movements { stack, query: self.movement_query(*kind) })
                .collect(),
            Tab::Disputes => vec![Request::Disputes(stack)],
            Tab::Webhooks => vec![
                Request::Endpoints(stack),
                Request::Deliveries { stack, status: "failed" },
                Request::Deliveries { stack, status: "pending" },
            ],
            Tab::Requests => {
                let mut requests = vec![Request::FailedRequests(stack)];
                requests.extend(self.lookup_id.iter().map(|id| Request::Lookup(id.clone())));
                requests
            }
            Tab::Organizations => vec![Request::Organizations],
            Tab::Audit => vec![
                Request::Audit { cursor: self.audit_cursor.clone() },
                Request::Emails,
                Request::Organizations,
            ],
        };
        requests.extend(self.detail.as_ref().map(Detail::request));
        requests
    }

    /// The requests due at `now`: the status heartbeat and the tab's
    /// periodic refresh.
    pub fn tick(&mut self, now: Instant) -> Vec<Request> {
        let mut requests = Vec::new();
        if self.status_due.is_none_or(|due| now >= due) {
            requests.push(Request::Status);
            // The answer reschedules it; this holds only if none comes.
            self.status_due = Some(now + RETRY_INTERVAL);
        }
        let reachable = matches!(self.connection, Connection::Connected | Connection::Connecting);
        if reachable && self.tab_due.is_none_or(|due| now >= due) {
            // A reconciliation reads every page the provider lists: only
            // when asked for (opening it, or `r`), never on the timer.
            requests.extend(
                self.tab_requests()
                    .into_iter()
                    .filter(|r| *r != Request::Status && *r != Request::Reconciliation),
            );
            // Every tab names organizations.
            if !requests.contains(&Request::Organizations) {
                requests.push(Request::Organizations);
            }
            self.tab_due = Some(now + TAB_REFRESH_INTERVAL);
        }
        requests
    }

    /// Keeps the requests not already running, and marks what they load.
    pub fn start(&mut self, requests: Vec<Request>) -> Vec<Request> {
        let mut started = Vec::new();
        for request in requests {
            if self.in_flight.insert(request.clone()) {
                self.mark_loading(&request);
                started.push(request);
            }
        }
        started
    }

    fn mark_loading(&mut self, request: &Request) {
        match request {
            Request::Accounts(stack) => self.accounts[stack_index(*stack)].loading = true,
            Request::Movements { query, .. } => self.movements[kind_index(query.kind)].loading = true,
            Request::Rates(_) => self.rates.loading = true,
            Request::Disputes(_) => self.disputes.loading = true,
            Request::Endpoints(_) => self.endpoints.loading = true,
            Request::Lookup(_) => self.lookup.loading = true,
            Request::Organizations => self.organizations.loading = true,
            Request::Audit { .. } => self.audit.loading = true,
            Request::Emails => self.emails.loading = true,
            Request::SystemAccounts(_) => self.system_accounts.loading = true,
            Request::FailedRequests(_) => self.failed_requests.loading = true,
            _ => {}
        }
    }

    /// Runs `requests` and their follow-ups against `client` on this
    /// thread; tests and one-shot tools use it instead of the fetch threads.
    pub fn fetch_now(&mut self, client: &dyn Client, requests: Vec<Request>, now: Instant) {
        let mut pending = requests;
        for _ in 0..FETCH_ROUNDS_MAX {
            let started = self.start(pending);
            if started.is_empty() {
                return;
            }
            pending = Vec::new();
            for request in started {
                pending.extend(self.apply(fetch::execute(client, request), now));
            }
        }
    }
}

/// Limits a selection to a list of `len` rows.
fn clamp(selected: usize, len: usize) -> usize {
    selected.min(len.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_is_the_rate_between_samples() {
        let start = Instant::now();
        let mut t = Throughput::default();
        t.record(start, 100);
        assert_eq!(t.latest(), None);
        t.record(start + Duration::from_millis(500), 150);
        assert_eq!(t.latest(), Some(100));
        // A restarted node's counter goes down: no negative rate.
        t.record(start + Duration::from_secs(1), 10);
        assert_eq!(t.latest(), Some(0));
    }

    #[test]
    fn throughput_keeps_a_bounded_history() {
        let start = Instant::now();
        let mut t = Throughput::default();
        for i in 0..(THROUGHPUT_SAMPLES_MAX as u64 + 10) {
            t.record(start + Duration::from_secs(i), i * 3);
        }
        assert_eq!(t.per_second.len(), THROUGHPUT_SAMPLES_MAX);
        assert!(t.per_second.iter().all(|r| *r == 3));
    }

    #[test]
    fn clamp_keeps_selection_inside_the_list() {
        assert_eq!(clamp(5, 3), 2);
        assert_eq!(clamp(5, 0), 0);
        assert_eq!(clamp(1, 3), 1);
    }
}
