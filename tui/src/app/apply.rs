//! Taking in what the fetch threads return: data into its table, errors
//! into the banner or the table they belong to, actions into a message and
//! a reload.

use std::time::Instant;

use super::{
    App, Connection, Detail, Flash, RETRY_INTERVAL, STATUS_INTERVAL, clamp, kind_index, stack_index,
};
use crate::api::{ClientError, ClientResult, MovementQuery, Owned, StackName, WebhookDelivery, wire_name};
use crate::app::Remote;
use crate::fetch::{Payload, Request, Response};

impl App {
    /// Takes in one response; returns the requests it calls for (a list to
    /// reload after an action).
    pub fn apply(&mut self, response: Response, now: Instant) -> Vec<Request> {
        let Response { request, outcome } = response;
        self.in_flight.remove(&request);
        self.note_connection(&outcome, now);
        match outcome {
            Ok(payload) => self.apply_payload(request, payload, now),
            Err(error) => self.apply_error(request, &error),
        }
    }

    fn note_connection(&mut self, outcome: &ClientResult<Payload>, now: Instant) {
        match outcome {
            Err(ClientError::Unreachable(cause)) => {
                self.connection = Connection::Unreachable(cause.clone());
                self.status_due = Some(now + RETRY_INTERVAL);
            }
            Err(ClientError::Unauthorized(message)) => {
                self.connection = Connection::Unauthorized(message.clone());
                self.status_due = Some(now + RETRY_INTERVAL);
            }
            _ => {
                if self.connection != Connection::Connected {
                    // Back after an outage: reload the tab at once.
                    self.tab_due = None;
                }
                self.connection = Connection::Connected;
            }
        }
    }

    fn apply_error(&mut self, request: Request, error: &ClientError) -> Vec<Request> {
        if self.apply_organizations_error(&request, error) || self.apply_ledger_error(&request, error) {
            return Vec::new();
        }
        match &request {
            Request::Status => {}
            Request::Accounts(stack) => self.accounts[stack_index(*stack)].fail(error),
            Request::Movements { stack, query } if self.is_current_query(*stack, query) => {
                self.movements[kind_index(query.kind)].fail(error)
            }
            Request::Rates(stack) if *stack == self.stack => self.rates.fail(error),
            Request::Disputes(stack) if *stack == self.stack => self.disputes.fail(error),
            Request::Endpoints(stack) if *stack == self.stack => self.endpoints.fail(error),
            Request::Deliveries { stack, status } if *stack == self.stack => {
                self.deliveries_mut(status).fail(error)
            }
            Request::Lookup(id) if Some(id) == self.lookup_id.as_ref() => self.lookup.fail(error),
            Request::FailedRequests(stack) if *stack == self.stack => self.failed_requests.fail(error),
            Request::Emails => self.emails.fail(error),
            Request::Keys { .. }
            | Request::Movement { .. }
            | Request::Dispute { .. }
            | Request::Attempts { .. }
            | Request::Members(_)
            | Request::LedgerEntries { .. }
            | Request::Search(_)
            | Request::Reconciliation => self.detail_error(&request, error),
            _ => {}
        }
        if request.is_action() {
            self.flash = Some(Flash { text: format!("{}: {error}", action_name(&request)), error: true });
            // The node may have moved on (409 invalid_state): show its state.
            return self.tab_requests();
        }
        Vec::new()
    }

    fn detail_error(&mut self, request: &Request, error: &ClientError) {
        let Some(detail) = &mut self.detail else { return };
        if detail.request() != *request {
            return;
        }
        match detail {
            Detail::Movement { data, .. } => data.fail(error),
            Detail::Dispute { data, .. } => data.fail(error),
            Detail::Endpoint { attempts, .. } => attempts.fail(error),
            Detail::Organization { members, .. } => members.fail(error),
            Detail::Keys { keys, .. } => keys.fail(error),
            Detail::LedgerAccount { entries, .. } => entries.fail(error),
            Detail::Search { results, .. } => results.fail(error),
            Detail::Reconciliation { data, .. } => data.fail(error),
        }
    }

    fn is_current_query(&self, stack: StackName, query: &MovementQuery) -> bool {
        stack == self.stack && *query == self.movement_query(query.kind)
    }

    fn deliveries_mut(&mut self, status: &str) -> &mut Remote<Vec<Owned<WebhookDelivery>>> {
        if status == "failed" { &mut self.failed_deliveries } else { &mut self.pending_deliveries }
    }

    fn apply_payload(&mut self, request: Request, payload: Payload, now: Instant) -> Vec<Request> {
        // The newer tabs take their answers first; what they leave is the
        // older tabs'.
        let mut payload = Some(payload);
        if let Some(follow_up) = self.apply_organizations(&request, &mut payload) {
            return follow_up;
        }
        if let Some(follow_up) = self.apply_resolution(&request, &mut payload) {
            return follow_up;
        }
        self.apply_ledger(&request, &mut payload);
        let Some(payload) = payload else { return Vec::new() };
        match (request, payload) {
            (Request::Status, Payload::Status(status)) => {
                self.status_due = Some(now + STATUS_INTERVAL);
                for stack in [StackName::Live, StackName::Sandbox] {
                    self.throughput[stack_index(stack)].record(now, status.stack(stack).commands);
                }
                self.status = Some(status);
            }
            (Request::Accounts(stack), Payload::Accounts(page)) => {
                self.accounts[stack_index(stack)].finish(page);
                self.accounts_selected = clamp(self.accounts_selected, self.account_rows().len());
            }
            (Request::Movements { stack, query }, Payload::Movements(rows))
                if self.is_current_query(stack, &query) =>
            {
                let selected = self.selected_activity_id();
                self.movements[kind_index(query.kind)].finish(rows);
                self.activity_selected = self.reselect_activity(selected);
            }
            (Request::Rates(stack), Payload::Rates(rates)) if stack == self.stack => {
                self.rates.finish(rates);
                self.rates_selected = clamp(self.rates_selected, self.rate_rows().len());
            }
            (Request::Disputes(stack), Payload::Disputes(rows)) if stack == self.stack => {
                self.disputes.finish(rows);
                self.disputes_selected = clamp(self.disputes_selected, self.dispute_rows().len());
            }
            (Request::Endpoints(stack), Payload::Endpoints(rows)) if stack == self.stack => {
                self.endpoints.finish(rows);
                self.endpoints_selected = clamp(self.endpoints_selected, self.endpoint_rows().len());
            }
            (Request::Deliveries { stack, status }, Payload::Deliveries(rows)) if stack == self.stack => {
                self.deliveries_mut(status).finish(rows);
                self.deliveries_selected = clamp(self.deliveries_selected, self.failing_deliveries().len());
            }
            (Request::Lookup(id), Payload::Lookup(found)) if Some(&id) == self.lookup_id.as_ref() => {
                self.lookup.finish(found);
            }
            (Request::FailedRequests(stack), Payload::FailedRequests(rows)) if stack == self.stack => {
                self.finish_failed_requests(rows);
            }
            (
                request @ (Request::Movement { .. }
                | Request::Keys { .. }
                | Request::Dispute { .. }
                | Request::Attempts { .. }
                | Request::Members(_)
                | Request::LedgerEntries { .. }
                | Request::Search(_)
                | Request::Reconciliation),
                payload,
            ) => {
                self.apply_detail(&request, payload);
            }
            (request, payload) if request.is_action() => return self.apply_action(request, payload),
            _ => {}
        }
        Vec::new()
    }

    fn apply_detail(&mut self, request: &Request, payload: Payload) {
        let Some(detail) = &mut self.detail else { return };
        if detail.request() != *request {
            return;
        }
        match (&mut *detail, payload) {
            (Detail::Movement { data, .. }, Payload::Movement(movement)) => data.finish(movement),
            (Detail::Dispute { data, .. }, Payload::Dispute(dispute)) => data.finish(dispute),
            (Detail::Endpoint { attempts, .. }, Payload::Attempts(rows)) => attempts.finish(rows),
            (Detail::Organization { members, .. }, Payload::Members(rows)) => members.finish(rows),
            (Detail::Keys { keys, .. }, Payload::Keys(rows)) => keys.finish(rows),
            (Detail::LedgerAccount { entries, .. }, Payload::LedgerEntries(page)) => entries.finish(page),
            (Detail::Search { results, .. }, Payload::Search(found)) => results.finish(found),
            (Detail::Reconciliation { data, .. }, Payload::Reconciliation(found)) => data.finish(found),
            _ => {}
        }
        let len = detail.len();
        let selected = detail.selected_mut();
        *selected = clamp(*selected, len);
    }

    fn apply_action(&mut self, request: Request, payload: Payload) -> Vec<Request> {
        let text = match (&request, payload) {
            (Request::Verify(stack), Payload::Verify(result)) => {
                let verdict = if result.consistent { "consistent" } else { "INCONSISTENT" };
                let text = format!("verify {}: {verdict}: {}", stack.as_str(), result.summary);
                if let Some(page) = &mut self.accounts[stack_index(*stack)].data {
                    page.ledger.last_verify = Some(result.clone());
                }
                self.flash = Some(Flash { text, error: !result.consistent });
                return self.tab_requests();
            }
            (Request::Settle { kind, .. }, Payload::Settled(settled)) => {
                self.form = None;
                let text = format!("{} {} is now {}", kind.singular(), settled.id(), settled.status());
                if let Some(Detail::Movement { data: Remote { data: Some(movement), .. }, .. }) =
                    &mut self.detail
                {
                    // The answer has no webhook entries; the reload adds them.
                    movement.apply(settled);
                }
                text
            }
            (Request::RetryDelivery { delivery_id, .. }, Payload::Delivery(delivery)) => {
                format!("delivery {delivery_id} retried: {}", wire_name(&delivery.status))
            }
            (Request::EnableEndpoint { .. }, Payload::Endpoint(endpoint)) => {
                format!("endpoint {} is now {}", endpoint.url, wire_name(&endpoint.status))
            }
            (Request::RevokeKey { stack, .. }, Payload::Revoked(key)) => {
                format!("{} key \"{}\" ({}) is revoked", stack.as_str(), key.name, key.id)
            }
            _ => return Vec::new(),
        };
        self.flash = Some(Flash { text, error: false });
        self.tab_requests()
    }

    fn selected_activity_id(&self) -> Option<String> {
        self.activity_rows().get(self.activity_selected).map(|m| m.id().to_string())
    }

    /// Keeps the same row selected when new rows arrive above it.
    fn reselect_activity(&self, id: Option<String>) -> usize {
        let rows = self.activity_rows();
        id.and_then(|id| rows.iter().position(|m| m.id() == id))
            .unwrap_or_else(|| clamp(self.activity_selected, rows.len()))
    }
}

fn action_name(request: &Request) -> String {
    match request {
        Request::Verify(stack) => format!("verify {}", stack.as_str()),
        Request::Settle { kind, id, settlement, .. } => {
            format!("{} {} {id}", settlement.as_str(), kind.singular())
        }
        Request::RetryDelivery { delivery_id, .. } => format!("retry delivery {delivery_id}"),
        Request::EnableEndpoint { endpoint_id, .. } => format!("enable endpoint {endpoint_id}"),
        Request::SetSuspended { id, suspended: true } => format!("suspend {id}"),
        Request::SetSuspended { id, suspended: false } => format!("reinstate {id}"),
        Request::ReissueInvitation { member_id, .. } => format!("invite {member_id}"),
        Request::ResolveDispute { id, outcome, .. } => {
            format!("resolve dispute {id} as {}", wire_name(outcome))
        }
        Request::CreateOrganization(new) => format!("create {}", new.name),
        Request::RevokeKey { key_id, .. } => format!("revoke key {key_id}"),
        Request::RenameOrganization { id, .. } => format!("rename {id}"),
        other => format!("{other:?}"),
    }
}
