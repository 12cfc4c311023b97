//! A fake admin API with fixed data, and helpers to drive and draw an
//! [`App`] without a terminal or a network.

#![allow(dead_code)]

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use sika_api::ListPage;
use sika_api::accounts::Account;
use sika_api::admin::{
    Attention, CurrencyTotal, EndpointAttempt, EndpointHealth, FailedRequest, LedgerFigures, NodeStatus,
    Owned, RateFeedStatus, RateSourceName, RequestLookup, StackAccounts, StackName, StackRate, StackRates,
    StackStatus, VerifyResult,
};
use sika_api::admin::{
    AuditEntry, AuditOutcome, CreatedOrganization, EntrySide, LedgerAccount, LedgerEntries, LedgerEntry,
    LedgerEntryKind, Organization, OrganizationStatus, ReissuedInvitation, SystemAccount, SystemAccountKind,
};
use sika_api::admin::{EmailItem, EmailStatus, SearchHit, SearchKind, SearchResults};
use sika_api::collections::{Collection, CollectionStatus};
use sika_api::disputes::{
    Dispute, DisputeAttachment, DisputeAuthorType, DisputeMessage, DisputeOutcome, DisputeReason,
    DisputeResult, DisputeStatus,
};
use sika_api::keys::ApiKey;
use sika_api::members::{Invitation, Member, MemberStatus, Role};
use sika_api::orders::{Order, OrderDestination, OrderSource, OrderStatus};
use sika_api::payouts::{Payout, PayoutDestination, PayoutSource, PayoutStatus};
use sika_api::refunds::{Refund, RefundStatus};
use sika_api::requests::LoggedRequest;
use sika_api::webhooks::{
    WebhookDelivery, WebhookDeliveryStatus, WebhookDisabledReason, WebhookEndpoint, WebhookEndpointStatus,
};
use sika_api::{Metadata, Money, TimelineEntry};
use sika_tui::{
    Action, App, Client, ClientError, ClientResult, Movement, MovementKind, MovementQuery, NewOrganization,
    Request, Settled, Settlement, SettlementRecord, render,
};

pub const ADMIN_URL: &str = "http://127.0.0.1:8082";
pub const ORG_A: &str = "org_3xV8bN1mQ7wE4rT6yU9iO2pA";
pub const ORG_B: &str = "org_5zX1cV4bN7mQ0wE3rT6yU9iO";
pub const PENDING_PAYOUT: &str = "pay_ngn_4fQ9xK2mTz8LwP3bN7cR1dYe";
pub const COMPLETED_PAYOUT: &str = "pay_kes_8HwT2pLq6Vx0ZcN4bM9sR3aF";
pub const PENDING_COLLECTION: &str = "col_2KdP7sW9qXe4RtY1uI8oA5zL";
pub const ORDER: &str = "ord_6MnB3vC8xZ1aS4dF7gH0jK2L";
/// A live refund waiting for the operator (the oldest row of Activity).
pub const PENDING_REFUND: &str = "rf_3QwE6rT9yU2iO5pA8sD1fG4h";
pub const DISPUTE: &str = "dsp_5TgY8uH1jN4mK7lP0oI3uY6T";
pub const HEALTHY_ENDPOINT: &str = "we_1AsD4fG7hJ0kL3zX6cV9bN2m";
pub const FAILING_ENDPOINT: &str = "we_9QaZ2wS5xE8dC1rF4vT7gB0Y";
pub const FAILED_DELIVERY: &str = "whd_3EdC6rF9vT2gB5yH8nU1jM4K";
pub const REQUEST_ID: &str = "req_8sKd02LmQx7VbN3cT5wY1zHe";
const VERIFY_SUMMARY: &str = "1234 journal entries; debits equal credits; hash chain intact";

/// Transfer counts the status answers with, one per call, so the
/// throughput sparkline has a fixed shape.
const COMMAND_STEPS: [u64; 16] = [4, 7, 12, 9, 15, 22, 18, 11, 6, 14, 25, 31, 19, 8, 13, 17];

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Up,
    Down,
    WrongToken,
}

/// The fake node. Every action is logged in `calls`.
pub struct FakeClient {
    pub mode: Mutex<Mode>,
    pub calls: Mutex<Vec<String>>,
    status_calls: Mutex<usize>,
    settled: Mutex<Vec<(String, Settlement)>>,
    organizations: Mutex<Vec<Organization>>,
    resolved: Mutex<Option<DisputeStatus>>,
    revoked: Mutex<Vec<String>>,
}

impl Default for FakeClient {
    fn default() -> Self {
        FakeClient {
            mode: Mutex::new(Mode::Up),
            calls: Mutex::new(Vec::new()),
            status_calls: Mutex::new(0),
            settled: Mutex::new(Vec::new()),
            organizations: Mutex::new(organizations()),
            resolved: Mutex::new(None),
            revoked: Mutex::new(Vec::new()),
        }
    }
}

impl FakeClient {
    pub fn set_mode(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn check(&self) -> ClientResult<()> {
        match *self.mode.lock().unwrap() {
            Mode::Up => Ok(()),
            Mode::Down => Err(ClientError::Unreachable("Connection refused (os error 111)".into())),
            Mode::WrongToken => Err(ClientError::Unauthorized("invalid operator token".into())),
        }
    }

    fn log(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }

    fn all_movements(&self, stack: StackName, kind: MovementKind) -> Vec<Movement> {
        let mut rows: Vec<Movement> = match (stack, kind) {
            (StackName::Live, MovementKind::Payout) => {
                live_payouts().into_iter().map(Movement::Payout).collect()
            }
            (StackName::Live, MovementKind::Collection) => {
                live_collections().into_iter().map(Movement::Collection).collect()
            }
            (StackName::Live, MovementKind::Order) => {
                live_orders().into_iter().map(Movement::Order).collect()
            }
            (StackName::Live, MovementKind::Refund) => {
                live_refunds().into_iter().map(Movement::Refund).collect()
            }
            (StackName::Sandbox, MovementKind::Payout) => {
                sandbox_payouts().into_iter().map(Movement::Payout).collect()
            }
            (StackName::Sandbox, _) => Vec::new(),
        };
        for (id, settlement) in self.settled.lock().unwrap().iter() {
            let completed = *settlement == Settlement::Complete;
            match rows.iter_mut().find(|m| m.id() == id) {
                Some(Movement::Payout(p)) => {
                    p.item.status = if completed { PayoutStatus::Completed } else { PayoutStatus::Failed }
                }
                Some(Movement::Collection(c)) => {
                    c.item.status =
                        if completed { CollectionStatus::Completed } else { CollectionStatus::Failed }
                }
                Some(Movement::Refund(r)) => {
                    r.item.status = if completed { RefundStatus::Completed } else { RefundStatus::Failed }
                }
                _ => {}
            }
        }
        rows
    }
}

impl Client for FakeClient {
    fn status(&self) -> ClientResult<NodeStatus> {
        self.check()?;
        let mut calls = self.status_calls.lock().unwrap();
        let step = *calls;
        *calls += 1;
        let live: u64 = 2_000 + COMMAND_STEPS.iter().cycle().take(step).sum::<u64>();
        let sandbox: u64 = 50_000 + 40 * step as u64;
        Ok(node_status(live, sandbox))
    }

    fn accounts(&self, stack: StackName) -> ClientResult<StackAccounts> {
        self.check()?;
        Ok(match stack {
            StackName::Live => live_accounts(),
            StackName::Sandbox => sandbox_accounts(),
        })
    }

    fn rates(&self, stack: StackName) -> ClientResult<StackRates> {
        self.check()?;
        Ok(match stack {
            StackName::Live => live_rates(),
            StackName::Sandbox => sandbox_rates(),
        })
    }

    fn verify(&self, stack: StackName) -> ClientResult<VerifyResult> {
        self.check()?;
        self.log(format!("verify {}", stack.as_str()));
        Ok(verify_result(true, VERIFY_SUMMARY, &[]))
    }

    fn movements(&self, stack: StackName, query: &MovementQuery) -> ClientResult<Vec<Movement>> {
        self.check()?;
        let rows = self.all_movements(stack, query.kind);
        Ok(rows
            .into_iter()
            // Like the node: any part of the id or reference, in any case.
            .filter(|m| {
                query.q.as_deref().map(str::to_lowercase).is_none_or(|q| {
                    m.id().to_lowercase().contains(&q) || m.external_reference().to_lowercase().contains(&q)
                })
            })
            .filter(|m| query.status.as_deref().is_none_or(|s| m.status() == s))
            .take(query.limit)
            .collect())
    }

    fn movement(&self, stack: StackName, kind: MovementKind, id: &str) -> ClientResult<Movement> {
        self.check()?;
        let found = self.all_movements(stack, kind).into_iter().find(|m| m.id() == id);
        let mut movement = found.ok_or_else(|| not_found(kind.singular(), id))?;
        // The full answer carries the webhook deliveries on the timeline.
        if let Movement::Payout(p) = &mut movement {
            p.item.timeline.extend(timeline(&[(
                "2025-03-14T09:15:03.120Z",
                "webhook",
                "Webhook payout.pending delivered",
                "200 from https://shop.example.com/hooks/sika in 84 ms",
            )]));
        }
        Ok(movement)
    }

    fn settle(
        &self,
        stack: StackName,
        kind: MovementKind,
        id: &str,
        settlement: Settlement,
        record: &SettlementRecord,
    ) -> ClientResult<Settled> {
        self.check()?;
        let mut call = format!("{} {} {} {id}", settlement.as_str(), stack.as_str(), kind.singular());
        if let Some(reference) = &record.provider_reference {
            call.push_str(&format!(" reference={reference}"));
        }
        if let Some(note) = &record.note {
            call.push_str(&format!(" note={note}"));
        }
        self.log(call);
        let movement = self.movement(stack, kind, id)?;
        if !movement.awaits_settlement() {
            return Err(ClientError::Api {
                status: 409,
                code: "invalid_state".into(),
                message: format!("the {} is already {}", kind.singular(), movement.status()),
            });
        }
        self.settled.lock().unwrap().push((id.to_string(), settlement));
        // Like the node, the answer is the public view, without the organization.
        match self.movement(stack, kind, id)? {
            Movement::Payout(p) => Ok(Settled::Payout(p.item)),
            Movement::Collection(c) => Ok(Settled::Collection(c.item)),
            Movement::Refund(r) => Ok(Settled::Refund(r.item)),
            Movement::Order(_) => Err(not_found("order action", settlement.as_str())),
        }
    }

    fn disputes(&self, stack: StackName) -> ClientResult<Vec<Owned<Dispute>>> {
        self.check()?;
        Ok(match stack {
            StackName::Live => vec![dispute(false)],
            StackName::Sandbox => Vec::new(),
        })
    }

    fn dispute(&self, stack: StackName, id: &str) -> ClientResult<Owned<Dispute>> {
        self.check()?;
        match stack {
            StackName::Live if id == DISPUTE => {
                let mut found = dispute(true);
                if let Some(status) = *self.resolved.lock().unwrap() {
                    found.item.status = status;
                    found.item.status_message = "Resolved by the operator".into();
                    // Accepted takes the whole amount; declined releases the hold.
                    let (held, outcome) = match status {
                        DisputeStatus::Accepted => ("100.00", Some(DisputeResult::Lost)),
                        _ => ("0.00", Some(DisputeResult::Won)),
                    };
                    found.item.held_amount = held.into();
                    found.item.outcome = outcome;
                }
                Ok(found)
            }
            _ => Err(not_found("dispute", id)),
        }
    }

    fn webhook_endpoints(&self, stack: StackName) -> ClientResult<Vec<EndpointHealth>> {
        self.check()?;
        Ok(match stack {
            StackName::Live => endpoints(),
            StackName::Sandbox => Vec::new(),
        })
    }

    fn endpoint_attempts(&self, _stack: StackName, endpoint_id: &str) -> ClientResult<Vec<EndpointAttempt>> {
        self.check()?;
        if endpoint_id != FAILING_ENDPOINT {
            return Ok(Vec::new());
        }
        Ok(attempts())
    }

    fn deliveries(&self, stack: StackName, status: &str) -> ClientResult<Vec<Owned<WebhookDelivery>>> {
        self.check()?;
        if stack == StackName::Sandbox {
            return Ok(Vec::new());
        }
        Ok(deliveries().into_iter().filter(|d| sika_tui::wire_name(&d.item.status) == status).collect())
    }

    fn retry_delivery(&self, stack: StackName, delivery_id: &str) -> ClientResult<WebhookDelivery> {
        self.check()?;
        self.log(format!("retry {} {delivery_id}", stack.as_str()));
        let mut delivery = deliveries()
            .into_iter()
            .find(|d| d.item.id == delivery_id)
            .ok_or_else(|| not_found("delivery", delivery_id))?
            .item;
        delivery.status = WebhookDeliveryStatus::Pending;
        Ok(delivery)
    }

    fn enable_endpoint(&self, stack: StackName, endpoint_id: &str) -> ClientResult<WebhookEndpoint> {
        self.check()?;
        self.log(format!("enable {} {endpoint_id}", stack.as_str()));
        let mut endpoint = endpoints()
            .into_iter()
            .find(|e| e.endpoint.id == endpoint_id)
            .ok_or_else(|| not_found("webhook endpoint", endpoint_id))?
            .endpoint;
        endpoint.status = WebhookEndpointStatus::Active;
        endpoint.disabled_reason = None;
        endpoint.consecutive_failures = 0;
        Ok(endpoint)
    }

    fn request(&self, request_id: &str) -> ClientResult<RequestLookup> {
        self.check()?;
        if request_id != REQUEST_ID {
            return Err(not_found("request", request_id));
        }
        Ok(request_lookup())
    }

    fn organizations(&self) -> ClientResult<Vec<Organization>> {
        self.check()?;
        Ok(self.organizations.lock().unwrap().clone())
    }

    fn create_organization(&self, new: &NewOrganization) -> ClientResult<CreatedOrganization> {
        self.check()?;
        self.log(format!("create {} {} {}", new.name, new.owner_email, new.owner_name));
        if !new.owner_email.contains('@') {
            return Err(ClientError::Api {
                status: 400,
                code: "validation_error".into(),
                message: "owner.email must be an email address".into(),
            });
        }
        let organization = organization(NEW_ORG, &new.name, OrganizationStatus::Active);
        self.organizations.lock().unwrap().push(organization.clone());
        Ok(CreatedOrganization { organization, invitation: invitation() })
    }

    fn rename_organization(&self, id: &str, name: &str) -> ClientResult<Organization> {
        self.check()?;
        self.log(format!("rename {id} {name}"));
        let mut orgs = self.organizations.lock().unwrap();
        let org = orgs.iter_mut().find(|o| o.id == id).ok_or_else(|| not_found("organization", id))?;
        org.name = name.to_string();
        Ok(org.clone())
    }

    fn set_suspended(&self, id: &str, suspended: bool) -> ClientResult<Organization> {
        self.check()?;
        self.log(format!("{} {id}", if suspended { "suspend" } else { "reinstate" }));
        let mut orgs = self.organizations.lock().unwrap();
        let org = orgs.iter_mut().find(|o| o.id == id).ok_or_else(|| not_found("organization", id))?;
        org.status = if suspended { OrganizationStatus::Suspended } else { OrganizationStatus::Active };
        Ok(org.clone())
    }

    fn members(&self, organization_id: &str) -> ClientResult<Vec<Member>> {
        self.check()?;
        Ok(members(organization_id))
    }

    fn reissue_invitation(&self, organization_id: &str, member_id: &str) -> ClientResult<ReissuedInvitation> {
        self.check()?;
        self.log(format!("invite {organization_id} {member_id}"));
        let member = members(organization_id)
            .into_iter()
            .find(|m| m.id == member_id)
            .ok_or_else(|| not_found("member", member_id))?;
        Ok(ReissuedInvitation { member, invitation: invitation() })
    }

    fn emails(&self, limit: usize) -> ClientResult<ListPage<EmailItem>> {
        self.check()?;
        let email = |id: &str, kind: &str, to: &str, status, attempts, error: Option<&str>| EmailItem {
            id: id.into(),
            message_id: format!("<{id}@sika.example>"),
            kind: kind.into(),
            organization_id: Some(ORG_B.into()),
            to: to.into(),
            subject: "subject".into(),
            status,
            attempts,
            last_error: error.map(Into::into),
            next_attempt_at: None,
            created_at: "2025-03-14T10:21:00.000Z".into(),
            sent_at: None,
        };
        let data = vec![
            email(
                "eml_3",
                "payout_failed",
                "ama@shop.example",
                EmailStatus::Retrying,
                2,
                Some("451 try later"),
            ),
            email("eml_2", "invitation", "kofi@shop.example", EmailStatus::Sent, 1, None),
            email("eml_1", "receipt", "payer@buyer.example", EmailStatus::Suppressed, 0, None),
        ];
        Ok(ListPage { data: data.into_iter().take(limit).collect(), has_more: false, next_cursor: None })
    }

    fn audit(&self, cursor: Option<&str>, limit: usize) -> ClientResult<ListPage<AuditEntry>> {
        self.check()?;
        let entries = audit_entries();
        let start = match cursor {
            None => 0,
            Some(cursor) => {
                entries.iter().position(|e| e.id == cursor).ok_or_else(|| not_found("cursor", cursor))? + 1
            }
        };
        // Pages of two, whatever the console asks, so paging shows.
        let take = limit.min(AUDIT_FAKE_PAGE);
        let data: Vec<AuditEntry> = entries.iter().skip(start).take(take).cloned().collect();
        let has_more = start + data.len() < entries.len();
        let next_cursor = if has_more { data.last().map(|e| e.id.clone()) } else { None };
        Ok(ListPage { data, has_more, next_cursor })
    }

    fn resolve_dispute(
        &self,
        stack: StackName,
        id: &str,
        outcome: DisputeOutcome,
    ) -> ClientResult<Owned<Dispute>> {
        self.check()?;
        self.log(format!("resolve {id} {}", sika_tui::wire_name(&outcome)));
        self.dispute(stack, id)?;
        *self.resolved.lock().unwrap() = Some(match outcome {
            DisputeOutcome::Accepted => DisputeStatus::Accepted,
            DisputeOutcome::Declined => DisputeStatus::Declined,
        });
        self.dispute(stack, id)
    }

    fn reconciliation(&self, from: &str, to: &str) -> ClientResult<sika_api::reconciliation::Reconciliation> {
        use sika_api::reconciliation::{Mismatch, ReconciledField, ReconciledKind, ReconciliationItem};
        self.check()?;
        // The period comes from the wall clock; the answer's is fixed, so
        // frames compare.
        self.log(format!("reconciliation {}", u8::from(!from.is_empty() && !to.is_empty())));
        Ok(sika_api::reconciliation::Reconciliation {
            from: "2026-11-26T09:00:00.000Z".into(),
            to: "2026-11-27T09:00:00.000Z".into(),
            matched: 41,
            missing_at_provider: vec![ReconciliationItem {
                id: "pay_0VbowfAbCdEf".into(),
                kind: ReconciledKind::Payout,
                amount: "25.00".into(),
                currency: "GHS".into(),
                status: "completed".into(),
                provider_id: None,
                created_at: Some("2026-11-27T09:12:03.000Z".into()),
            }],
            missing_in_sika: vec![],
            mismatched: vec![Mismatch {
                id: "col_0VbowfGhIjKl".into(),
                field: ReconciledField::Amount,
                sika: "10.00".into(),
                provider: "12.00".into(),
            }],
        })
    }

    fn search(&self, query: &str) -> ClientResult<SearchResults> {
        self.check()?;
        self.log(format!("search {query}"));
        let hit =
            |kind: SearchKind, id: &str, organization: &str, field: &str, value: &str, at: &str| SearchHit {
                kind,
                id: id.into(),
                stack: StackName::Live,
                organization_id: organization.into(),
                field: field.into(),
                value: value.into(),
                created_at: at.into(),
            };
        let all = vec![
            hit(
                SearchKind::Payout,
                PENDING_PAYOUT,
                ORG_A,
                "to.accountNumber",
                "0123456789",
                "2025-03-14T09:15:02.000Z",
            ),
            hit(
                SearchKind::PaymentLink,
                "plink_3Fg6Hj9Kl2Zx5Cv8Bn1Mq4We",
                ORG_B,
                "email",
                "buyer@example.com",
                "2025-03-12T11:00:00.000Z",
            ),
        ];
        let q = query.to_lowercase();
        let data =
            all.into_iter().filter(|h| h.value.to_lowercase().contains(&q) || h.id.contains(&q)).collect();
        Ok(SearchResults { q, data, scanned: 20_000, scan_limit_reached: true, hits_limit_reached: false })
    }

    fn system_accounts(&self, stack: StackName) -> ClientResult<Vec<SystemAccount>> {
        self.check()?;
        Ok(fake_system_accounts(stack))
    }

    fn failed_requests(&self, stack: StackName) -> ClientResult<Vec<FailedRequest>> {
        self.check()?;
        Ok(if stack == StackName::Live { failed_requests() } else { Vec::new() })
    }

    fn keys(&self, stack: StackName, organization_id: &str) -> ClientResult<Vec<ApiKey>> {
        self.check()?;
        if stack != StackName::Live || organization_id != ORG_A {
            return Ok(Vec::new());
        }
        let revoked = self.revoked.lock().unwrap().clone();
        Ok(api_keys()
            .into_iter()
            .map(|mut key| {
                if revoked.contains(&key.id) {
                    key.revoked_at = Some("2025-03-14T09:20:00.000Z".into());
                }
                key
            })
            .collect())
    }

    fn revoke_key(&self, stack: StackName, organization_id: &str, key_id: &str) -> ClientResult<ApiKey> {
        self.check()?;
        self.log(format!("revoke {} {organization_id} {key_id}", stack.as_str()));
        self.revoked.lock().unwrap().push(key_id.to_string());
        self.keys(stack, organization_id)?
            .into_iter()
            .find(|k| k.id == key_id)
            .ok_or_else(|| not_found("API key", key_id))
    }

    fn ledger_entries(
        &self,
        _stack: StackName,
        id: &str,
        cursor: Option<&str>,
        _limit: usize,
    ) -> ClientResult<LedgerEntries> {
        self.check()?;
        if id != FEE_REVENUE {
            let mut page = fee_entries(Some("page-2"));
            page.data.clear();
            page.account = LedgerAccount { id: id.into(), currency: id[..3].into(), kind: None };
            return Ok(page);
        }
        Ok(fee_entries(cursor))
    }
}

fn fake_system_accounts(stack: StackName) -> Vec<SystemAccount> {
    if stack == StackName::Sandbox {
        return Vec::new();
    }
    vec![
        system_account(
            SystemAccountKind::FeeRevenue,
            "NGN",
            "2250.00",
            ["0.00", "2250.00", "0.00", "750.00"],
        ),
        system_account(SystemAccountKind::FxDesk, "USD", "12.40", ["987.60", "1000.00", "0.00", "0.00"]),
        system_account(
            SystemAccountKind::RailClearing,
            "NGN",
            "0.00",
            ["300000.00", "300000.00", "0.00", "150000.00"],
        ),
        system_account(
            SystemAccountKind::World,
            "NGN",
            "-450000.00",
            ["750000.00", "300000.00", "0.00", "0.00"],
        ),
    ]
}

/// `[debits, credits, debits pending, credits pending]`.
pub fn system_account(
    kind: SystemAccountKind,
    currency: &str,
    balance: &str,
    sums: [&str; 4],
) -> SystemAccount {
    let name = sika_tui::wire_name(&kind);
    SystemAccount {
        id: format!("sys_{name}_{currency}"),
        kind,
        currency: currency.into(),
        balance: balance.into(),
        debits_posted: sums[0].into(),
        credits_posted: sums[1].into(),
        debits_pending: sums[2].into(),
        credits_pending: sums[3].into(),
        created_at: "2025-01-05T12:00:00.000Z".into(),
    }
}

pub const FEE_REVENUE: &str = "sys_fee_revenue_NGN";

/// The fee account's entries, newest first, three to a page.
fn fee_entries(cursor: Option<&str>) -> LedgerEntries {
    let entry = |seq: u64, amount: &str, memo: &str, at: &str| LedgerEntry {
        seq,
        transfer_id: seq,
        kind: LedgerEntryKind::Posted,
        side: EntrySide::Credit,
        counterparty: "NGN4820193375".into(),
        amount: amount.into(),
        currency: "NGN".into(),
        memo: memo.into(),
        created_at: at.into(),
    };
    let all = vec![
        entry(41, "750.00", "payout fee pay_ngn_4fQ9xK2mTz8LwP3bN7cR1dYe", "2025-03-14T09:15:02.010Z"),
        entry(33, "750.00", "payout fee pay_ngn_1aB2cD3eF4gH5iJ6kL7mN8oP", "2025-03-12T14:02:11.000Z"),
        entry(20, "500.00", "payout fee pay_ngn_9zY8xW7vU6tS5rQ4pO3nM2lK", "2025-03-10T08:30:00.000Z"),
        entry(7, "250.00", "payout fee pay_ngn_2bC3dE4fG5hI6jK7lM8nO9pQ", "2025-03-01T16:45:00.000Z"),
    ];
    let start = if cursor == Some("page-2") { 3 } else { 0 };
    let data: Vec<LedgerEntry> = all.into_iter().skip(start).take(3).collect();
    let has_more = start == 0;
    LedgerEntries {
        account: LedgerAccount {
            id: FEE_REVENUE.into(),
            currency: "NGN".into(),
            kind: Some(SystemAccountKind::FeeRevenue),
        },
        data,
        has_more,
        next_cursor: has_more.then(|| "page-2".to_string()),
        scanned: if has_more { 10_000 } else { 7 },
        scan_limit_reached: has_more,
    }
}

pub const NEW_ORG: &str = "org_7Lm2Nb5Vc8Xz1Qw4Er7Ty0Ui";
pub const OWNER: &str = "mem_4Rt7Yu0Io3Pa6Sd9Fg2Hj5Kl";
pub const INVITATION: &str = "inv_9Zx2Cv5Bn8Mq1We4Rt7Yu0IoP";
const AUDIT_FAKE_PAGE: usize = 2;

pub fn organization(id: &str, name: &str, status: OrganizationStatus) -> Organization {
    Organization {
        id: id.into(),
        name: name.into(),
        status,
        created_at: "2025-01-05T11:58:00.000Z".into(),
        balances: None,
    }
}

fn organizations() -> Vec<Organization> {
    vec![
        organization(ORG_A, "Accra Market Co", OrganizationStatus::Active),
        organization(ORG_B, "Lagos Freight Ltd", OrganizationStatus::Suspended),
    ]
}

fn invitation() -> Invitation {
    Invitation { token: INVITATION.into(), expires_at: "2025-03-21T10:21:00.000Z".into() }
}

fn members(organization_id: &str) -> Vec<Member> {
    let member = |id: &str, email: &str, name: &str, role: Role, status: MemberStatus| Member {
        id: id.into(),
        email: email.into(),
        name: name.into(),
        role,
        organization_id: organization_id.into(),
        status,
        created_at: "2025-01-05T11:58:00.000Z".into(),
    };
    vec![
        member(OWNER, "efua@accra-market.example", "Efua Mensah", Role::Owner, MemberStatus::Active),
        member(
            "mem_8Uj1Ik4Ol7Pz0Xs3Dc6Fv9Gb",
            "kwame@accra-market.example",
            "Kwame Boateng",
            Role::Developer,
            MemberStatus::Invited,
        ),
    ]
}

/// Newest first, as the node answers.
fn audit_entries() -> Vec<AuditEntry> {
    use AuditOutcome::{Failed, Succeeded};
    let live = Some(StackName::Live);
    let rows = [
        ("aud_5", "organization.suspend", ORG_B, None, Succeeded, None, "2025-03-14T10:20:00.000Z"),
        (
            "aud_4",
            "payout.fail",
            COMPLETED_PAYOUT,
            live,
            Failed,
            Some("the payout is already completed"),
            "2025-03-13T17:52:00.000Z",
        ),
        (
            "aud_3",
            "payout.complete",
            COMPLETED_PAYOUT,
            live,
            Succeeded,
            Some("provider reference: MP-99812"),
            "2025-03-13T17:50:00.000Z",
        ),
        ("aud_2", "rates.replace", "live", live, Succeeded, None, "2025-03-12T09:00:00.000Z"),
        ("aud_1", "organization.create", ORG_A, None, Succeeded, None, "2025-01-05T11:58:00.000Z"),
    ];
    rows.into_iter()
        .map(|(id, action, target, stack, outcome, detail, at)| AuditEntry {
            id: id.into(),
            action: action.into(),
            target: target.into(),
            stack,
            outcome,
            detail: detail.map(str::to_string),
            created_at: at.into(),
        })
        .collect()
}

pub const LIVE_KEY: &str = "key_7Hn2Jk5Lm8Np1Qr4St6Uv9Wx";
pub const CI_KEY: &str = "key_2Bc5Df8Gh1Jk4Lm7Np0Qr3St";

fn api_keys() -> Vec<ApiKey> {
    let key = |id: &str, name: &str, hint: &str, scopes: &[&str], at: &str| ApiKey {
        id: id.into(),
        name: name.into(),
        hint: hint.into(),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        allowed_ips: Vec::new(),
        caps: Default::default(),
        expires_at: None,
        revoked_at: None,
        created_at: at.into(),
    };
    vec![
        key(
            CI_KEY,
            "ci deploys",
            "sk_live_Zq3T",
            &["payouts:write", "payouts:read"],
            "2025-03-01T08:00:00.000Z",
        ),
        key(LIVE_KEY, "Default live key", "sk_live_Ab7K", &["*"], "2025-01-05T12:00:00.000Z"),
    ]
}

pub const FAILED_REQUEST: &str = "req_4Gh7Jk0Lm3Np6Qr9St2Uv5Wx";

fn failed_requests() -> Vec<FailedRequest> {
    let failed = |id: &str,
                  method: &str,
                  route: &str,
                  status: u16,
                  error: &str,
                  org: Option<&str>,
                  client: &str,
                  at: &str| {
        FailedRequest {
            id: id.into(),
            method: method.into(),
            route: route.into(),
            status,
            error: Some(error.into()),
            organization_id: org.map(str::to_string),
            client_address: Some(client.into()),
            created_at: at.into(),
        }
    };
    vec![
        failed(
            FAILED_REQUEST,
            "POST",
            "/v1/payouts",
            422,
            "insufficient_funds",
            Some(ORG_A),
            "203.0.113.7",
            "2025-03-14T09:16:40.000Z",
        ),
        failed(
            "req_1Ab4Cd7Ef0Gh3Jk6Lm9Np2Qr",
            "GET",
            "/v1/payouts/{id}",
            404,
            "not_found",
            Some(ORG_B),
            "198.51.100.23",
            "2025-03-14T09:12:05.000Z",
        ),
        failed(
            "req_9Zy6Xw3Vu0Ts7Rq4Po1Nm8Lk",
            "GET",
            "/v1/accounts",
            401,
            "unauthorized",
            None,
            "192.0.2.99",
            "2025-03-14T08:59:59.000Z",
        ),
    ]
}

fn not_found(what: &str, id: &str) -> ClientError {
    ClientError::Api { status: 404, code: "not_found".into(), message: format!("{what} '{id}' not found") }
}

// ----- the fake node's data, as sika-api's types -----

/// `item` as the admin API shows it, with its organization.
pub fn owned<T>(organization_id: &str, item: T) -> Owned<T> {
    Owned { organization_id: organization_id.to_string(), item }
}

/// The fake node's status, whose command counters move between samples.
pub fn node_status(live_commands: u64, sandbox_commands: u64) -> NodeStatus {
    NodeStatus {
        version: "0.1.0".into(),
        uptime_seconds: 3_723,
        live: StackStatus {
            journal_length: 1_234,
            commits: 456,
            commands: live_commands,
            commands_failed: 3,
            transfers: 789,
            writer_queue_depth: 0,
            database_bytes: 5_242_880,
            attention: Attention {
                awaiting_settlement: 2,
                oldest_awaiting_since: Some("2025-03-14T07:10:00.000Z".into()),
                oldest_awaiting_age_seconds: Some(7_620),
                open_disputes: 1,
                failing_endpoints: 1,
                recent_failed_requests: 3,
                counted_at: Some("2025-03-14T09:17:00.000Z".into()),
            },
        },
        sandbox: StackStatus {
            journal_length: 98_765,
            commits: 12_001,
            commands: sandbox_commands,
            commands_failed: 0,
            transfers: 40_321,
            writer_queue_depth: 2,
            database_bytes: 73_400_320,
            attention: Attention::default(),
        },
    }
}

pub fn verify_result(consistent: bool, summary: &str, problems: &[&str]) -> VerifyResult {
    VerifyResult {
        at: "2025-03-14T10:20:30.000Z".into(),
        consistent,
        summary: summary.into(),
        problems: problems.iter().map(|p| p.to_string()).collect(),
    }
}

fn live_accounts() -> StackAccounts {
    StackAccounts {
        data: vec![
            account(ORG_A, "NGN4820193375", ["1250000.00", "150750.00", "1400750.00", "912.35"]),
            account(ORG_A, "USD1002003004", ["4200.50", "0.00", "4200.50", "4200.50"]),
            account(ORG_B, "KES7730021190", ["98000.00", "2000.00", "100000.00", "773.99"]),
            account(ORG_B, "NGN1190028833", ["300000.00", "0.00", "300000.00", "195.40"]),
        ],
        has_more: false,
        next_cursor: None,
        totals: vec![
            total("KES", ["98000.00", "2000.00", "100000.00"], 1),
            total("NGN", ["1550000.00", "150750.00", "1700750.00"], 2),
            total("USD", ["4200.50", "0.00", "4200.50"], 1),
        ],
        ledger: LedgerFigures {
            journal_length: 1234,
            last_verify: Some(VerifyResult {
                at: "2025-03-14T08:00:00.000Z".into(),
                ..verify_result(true, VERIFY_SUMMARY, &[])
            }),
        },
    }
}

fn sandbox_accounts() -> StackAccounts {
    StackAccounts {
        data: vec![
            account(ORG_A, "GHS5500110022", ["10.50", "0.25", "10.75", "0.69"]),
            account(ORG_B, "GHS5500110023", ["2.00", "0.00", "2.00", "0.12"]),
        ],
        has_more: false,
        next_cursor: None,
        totals: vec![total("GHS", ["12.50", "0.25", "12.75"], 2)],
        ledger: LedgerFigures { journal_length: 98_765, last_verify: None },
    }
}

/// Every kind of row the Rates tab draws, in one frame: a rate from the
/// configuration file, one set through the admin API, one from the feed,
/// and a currency left without a rate by a stale feed that is failing. The
/// node would not show all four at once (a table set through the admin API
/// replaces the file's; a stale feed's rates are all withdrawn together).
pub fn live_rates() -> StackRates {
    StackRates {
        stack: StackName::Live,
        base: "USD".into(),
        spread_bps: 100,
        rates: [
            ("GHS", rate("15.5", RateSourceName::Config, "2025-03-14T08:00:00.000Z", 8_460)),
            ("KES", rate("129.25", RateSourceName::Admin, "2025-03-14T10:17:00.000Z", 240)),
            ("NGN", rate("1550.75", RateSourceName::Feed, "2025-03-14T10:09:00.000Z", 720)),
            ("XOF", StackRate { rate: None, source: None, as_of: None, age_seconds: None }),
        ]
        .into_iter()
        .map(|(code, rate)| (code.to_string(), rate))
        .collect(),
        feed: Some(RateFeedStatus {
            url: "https://rates.example.com/usd.json".into(),
            interval_seconds: 60,
            max_age_seconds: 600,
            as_of: Some("2025-03-14T10:09:00.000Z".into()),
            age_seconds: Some(720),
            stale: true,
            last_attempt_at: Some("2025-03-14T10:21:00.000Z".into()),
            last_success_at: Some("2025-03-14T10:09:05.000Z".into()),
            last_error: Some("GET https://rates.example.com/usd.json: 503 Service Unavailable".into()),
        }),
    }
}

/// An unconfigured sandbox: the built-in reference table, no feed.
fn sandbox_rates() -> StackRates {
    StackRates {
        stack: StackName::Sandbox,
        base: "USD".into(),
        spread_bps: 100,
        rates: [(
            "GHS".to_string(),
            rate("15", RateSourceName::Builtin, "2025-01-01T00:00:00.000Z", 6_307_200),
        )]
        .into_iter()
        .collect(),
        feed: None,
    }
}

/// A rate in effect from `source`, set at `as_of`, `age_seconds` ago.
pub fn rate(rate: &str, source: RateSourceName, as_of: &str, age_seconds: i64) -> StackRate {
    StackRate {
        rate: Some(rate.into()),
        source: Some(source),
        as_of: Some(as_of.into()),
        age_seconds: Some(age_seconds),
    }
}

/// An account whose currency is its id's first three letters;
/// `[available, pending, total, estimatedUsd]`.
pub fn account(org: &str, id: &str, [available, pending, total, usd]: [&str; 4]) -> Owned<Account> {
    owned(
        org,
        Account {
            available_balance: available.into(),
            created_at: "2025-01-05T12:00:00.000Z".into(),
            currency: id[..3].into(),
            estimated_usd: usd.into(),
            id: id.into(),
            pending_balance: pending.into(),
            total_balance: total.into(),
        },
    )
}

/// `[available, pending, total]` of `accounts` accounts.
pub fn total(currency: &str, [available, pending, total]: [&str; 3], accounts: u64) -> CurrencyTotal {
    CurrencyTotal {
        currency: currency.into(),
        available_balance: available.into(),
        pending_balance: pending.into(),
        total_balance: total.into(),
        accounts,
    }
}

/// Entries of `(at, kind, title, detail)`.
pub fn timeline(entries: &[(&str, &str, &str, &str)]) -> Vec<TimelineEntry> {
    entries
        .iter()
        .map(|(at, kind, title, detail)| TimelineEntry {
            at: at.to_string(),
            kind: kind.to_string(),
            title: title.to_string(),
            detail: detail.to_string(),
        })
        .collect()
}

/// A payout of `amount` from the balance `account` to `to_account` via
/// `code`, in one currency, with the console's columns left empty.
pub fn payout(
    id: &str,
    status: PayoutStatus,
    account: &str,
    [amount, fee]: [&str; 2],
    to: [&str; 2],
) -> Payout {
    let currency = &account[..3];
    let [code, to_account] = to;
    Payout {
        id: id.into(),
        status,
        from: PayoutSource {
            account_number: account.into(),
            amount: amount.into(),
            currency: currency.into(),
            kyc: Metadata::new(),
        },
        to: PayoutDestination {
            code: code.into(),
            amount: amount.into(),
            currency: currency.into(),
            account_number: Some(to_account.into()),
            address: None,
            tag: None,
            recipient_id: None,
            bank_code: None,
            kyc: Metadata::new(),
        },
        fee: Money { amount: fee.into(), currency: currency.into() },
        rate: "1".into(),
        narration: String::new(),
        external_reference: String::new(),
        metadata: Metadata::new(),
        status_message: String::new(),
        completed_at: None,
        created_at: String::new(),
        updated_at: String::new(),
        timeline: Vec::new(),
    }
}

fn live_payouts() -> Vec<Owned<Payout>> {
    let pending = Payout {
        external_reference: "inv-2041".into(),
        status_message: "Waiting for the operator to confirm settlement".into(),
        created_at: "2025-03-14T09:15:02.000Z".into(),
        // Out of order on purpose: the detail sorts by time.
        timeline: timeline(&[
            (
                "2025-03-14T09:15:02.500Z",
                "provider",
                "Sent to rail",
                "manual settlement: waiting for the operator",
            ),
            (
                "2025-03-14T09:15:02.000Z",
                "state",
                "Payout created",
                "150000.00 NGN to bank_ng_gtb 0123456789",
            ),
            ("2025-03-14T09:15:02.010Z", "fee", "Fee held", "750.00 NGN fee"),
        ]),
        ..payout(
            PENDING_PAYOUT,
            PayoutStatus::Pending,
            "NGN4820193375",
            ["150000.00", "750.00"],
            ["bank_ng_gtb", "0123456789"],
        )
    };
    let completed = Payout {
        status_message: "Confirmed by the operator".into(),
        completed_at: Some("2025-03-13T17:50:00.000Z".into()),
        created_at: "2025-03-13T17:42:10.000Z".into(),
        timeline: timeline(&[
            ("2025-03-13T17:42:10.000Z", "state", "Payout created", "5000.00 KES to mpesa_ke 254700000001"),
            (
                "2025-03-13T17:50:00.000Z",
                "provider",
                "Provider confirmed delivery",
                "Confirmed by the operator",
            ),
            ("2025-03-13T17:50:00.000Z", "state", "Payout completed", "Status completed"),
        ]),
        ..payout(
            COMPLETED_PAYOUT,
            PayoutStatus::Completed,
            "KES7730021190",
            ["5000.00", "25.00"],
            ["mpesa_ke", "254700000001"],
        )
    };
    vec![owned(ORG_A, pending), owned(ORG_B, completed)]
}

pub fn live_collections() -> Vec<Owned<Collection>> {
    let collection = Collection {
        id: PENDING_COLLECTION.into(),
        status: CollectionStatus::Pending,
        amount: "20000.00".into(),
        refunded_amount: "0.00".into(),
        currency: "NGN".into(),
        account_number: "08031234567".into(),
        code: "ussd_ng".into(),
        balance_account: "NGN4820193375".into(),
        external_reference: "cart-77".into(),
        metadata: Metadata::new(),
        status_message: "Prompt sent to the payer".into(),
        completed_at: None,
        created_at: "2025-03-14T08:30:00.000Z".into(),
        updated_at: "2025-03-14T08:30:00.200Z".into(),
        timeline: timeline(&[
            (
                "2025-03-14T08:30:00.000Z",
                "state",
                "Collection created",
                "20000.00 NGN from ussd_ng 08031234567",
            ),
            (
                "2025-03-14T08:30:00.200Z",
                "provider",
                "Prompt sent",
                "manual settlement: waiting for the operator",
            ),
        ]),
    };
    vec![owned(ORG_A, collection)]
}

/// A live refund of a payment the operator settled: it waits for them.
pub fn live_refunds() -> Vec<Owned<Refund>> {
    let refund = Refund {
        id: PENDING_REFUND.into(),
        status: RefundStatus::Pending,
        collection_id: "col_9LkJ2hG5fD8sA1qW4eR7tY0u".into(),
        session_id: None,
        amount: "5000.00".into(),
        currency: "NGN".into(),
        reason: Some("Order cancelled".into()),
        external_reference: "refund-cart-41".into(),
        metadata: Metadata::new(),
        status_message: "Waiting for the operator".into(),
        timeline: timeline(&[
            ("2025-03-11T16:20:00.000Z", "state", "Refund created", "5000.00 NGN to the payer"),
            (
                "2025-03-11T16:20:00.000Z",
                "provider",
                "Waiting for the operator",
                "Waiting for the operator to return the money to the payer",
            ),
        ]),
        created_at: "2025-03-11T16:20:00.000Z".into(),
        updated_at: "2025-03-11T16:20:00.000Z".into(),
        completed_at: None,
    };
    vec![owned(ORG_A, refund)]
}

pub fn live_orders() -> Vec<Owned<Order>> {
    let order = Order {
        id: ORDER.into(),
        status: OrderStatus::Completed,
        from: OrderSource {
            method: "crypto".into(),
            currency: "USDT".into(),
            amount: "100.00".into(),
            chain: None,
            received_amount: "100.00".into(),
        },
        to: OrderDestination {
            code: "bank_ng_gtb".into(),
            currency: "NGN".into(),
            account_number: Some("0987654321".into()),
            address: None,
            tag: None,
            bank_code: None,
        },
        deposit_instructions: Metadata::new(),
        required_confirmations: 3,
        payout_id: None,
        payout: None,
        external_reference: "order-9".into(),
        metadata: Metadata::new(),
        status_message: "Paid out".into(),
        expires_at: "2025-03-12T12:00:00.000Z".into(),
        created_at: "2025-03-12T11:00:00.000Z".into(),
        updated_at: "2025-03-12T11:06:00.000Z".into(),
        timeline: timeline(&[
            ("2025-03-12T11:00:00.000Z", "state", "Order created", "100.00 USDT by crypto"),
            ("2025-03-12T11:05:00.000Z", "provider", "Deposit confirmed", "3 confirmations"),
            ("2025-03-12T11:05:01.000Z", "provider", "Payout: Sent to rail", "bank_ng_gtb 0987654321"),
            ("2025-03-12T11:06:00.000Z", "state", "Payout: Payout completed", "Status completed"),
            ("2025-03-12T11:06:00.500Z", "webhook", "Webhook order.completed delivered", "200 in 91 ms"),
        ]),
    };
    vec![owned(ORG_B, order)]
}

fn sandbox_payouts() -> Vec<Owned<Payout>> {
    let failed = Payout {
        external_reference: "test-fail".into(),
        status_message: "Simulated failure".into(),
        created_at: "2025-03-14T07:00:00.000Z".into(),
        timeline: timeline(&[("2025-03-14T07:00:00.000Z", "state", "Payout failed", "Simulated failure")]),
        ..payout(
            "pay_ghs_1AbC2dEf3GhI4jKl5MnO6pQr",
            PayoutStatus::Failed,
            "GHS5500110022",
            ["1.00", "0.01"],
            ["momo_gh", "233200000000"],
        )
    };
    vec![owned(ORG_A, failed)]
}

/// An open dispute of a collection, with its thread when `with_messages`.
pub fn dispute(with_messages: bool) -> Owned<Dispute> {
    let message = |id: &str, at: &str, body: &str| DisputeMessage {
        attachments: Vec::new(),
        author_type: DisputeAuthorType::Merchant,
        body: body.into(),
        created_at: at.into(),
        dispute_id: DISPUTE.into(),
        id: id.into(),
    };
    let messages = with_messages.then(|| {
        let mut thread = vec![
            message(
                "dsm_1",
                "2025-03-13T10:00:00.000Z",
                "I was charged twice for order 9.\nPlease refund one of them.",
            ),
            message("dsm_2", "2025-03-13T15:30:00.000Z", "We see one charge only; attaching the receipt."),
            message("dsm_3", "2025-03-14T09:00:00.000Z", "Reviewing both statements."),
        ];
        thread[1].attachments.push(DisputeAttachment {
            file_id: "file_7Hq2Lm5Np8Rs1Tv4Wx".into(),
            name: "receipt-0309.pdf".into(),
            url: "/v1/files/file_7Hq2Lm5Np8Rs1Tv4Wx/contents".into(),
        });
        thread
    });
    let dispute = Dispute {
        amount: "100.00".into(),
        collection_id: PENDING_COLLECTION.into(),
        created_at: "2025-03-13T10:00:00.000Z".into(),
        currency: "USDT".into(),
        evidence_due_by: "2025-03-20T10:00:00.000Z".into(),
        // The balance held 60.00 at opening; the rest waits for inflows.
        held_amount: "60.00".into(),
        id: DISPUTE.into(),
        messages,
        outcome: None,
        payment_link_id: None,
        reason: DisputeReason::Duplicate,
        resolved_at: None,
        status: DisputeStatus::Open,
        status_message: "Waiting for the merchant's answer".into(),
        updated_at: "2025-03-14T09:00:00.000Z".into(),
    };
    owned(ORG_B, dispute)
}

/// An endpoint receiving every event, created and last changed at `at`.
pub fn endpoint(
    id: &str,
    url: &str,
    status: WebhookEndpointStatus,
    consecutive_failures: u32,
) -> WebhookEndpoint {
    WebhookEndpoint {
        id: id.into(),
        url: url.into(),
        events: vec!["*".into()],
        description: String::new(),
        status,
        disabled_reason: None,
        consecutive_failures,
        created_at: "2025-01-05T12:00:00.000Z".into(),
        updated_at: "2025-01-05T12:00:00.000Z".into(),
    }
}

fn endpoints() -> Vec<EndpointHealth> {
    let healthy =
        endpoint(HEALTHY_ENDPOINT, "https://shop.example.com/hooks/sika", WebhookEndpointStatus::Active, 0);
    let failing = WebhookEndpoint {
        disabled_reason: Some(WebhookDisabledReason::ConsecutiveFailures),
        ..endpoint(
            FAILING_ENDPOINT,
            "https://api.merchant.test/webhooks",
            WebhookEndpointStatus::Disabled,
            37,
        )
    };
    vec![
        EndpointHealth {
            organization_id: ORG_A.into(),
            endpoint: healthy,
            success_rate: Some(0.987),
            average_latency_ms: Some(142.3),
            pending_deliveries: 1,
            failed_deliveries: 0,
            last_attempt_at: Some("2025-03-14T09:15:03.120Z".into()),
            last_error: None,
            last_error_at: None,
        },
        EndpointHealth {
            organization_id: ORG_B.into(),
            endpoint: failing,
            success_rate: Some(0.0),
            average_latency_ms: None,
            pending_deliveries: 0,
            failed_deliveries: 2,
            last_attempt_at: Some("2025-03-13T22:00:00.000Z".into()),
            last_error: Some("the receiver answered 503".into()),
            last_error_at: Some("2025-03-13T22:00:00.000Z".into()),
        },
    ]
}

/// `(delivery, event, at, HTTP status, duration, error)`; it succeeded
/// when there is no error.
pub fn attempt(
    (delivery_id, event, at, status_code, duration_ms, error): (
        &str,
        &str,
        &str,
        Option<u16>,
        u64,
        Option<&str>,
    ),
) -> EndpointAttempt {
    EndpointAttempt {
        delivery_id: delivery_id.into(),
        event: event.into(),
        at: at.into(),
        status_code,
        duration_ms,
        error: error.map(str::to_string),
        succeeded: error.is_none(),
    }
}

fn attempts() -> Vec<EndpointAttempt> {
    [
        (FAILED_DELIVERY, "payout.completed", "2025-03-13T22:00:00.000Z", Some(500), 231, Some("HTTP 500")),
        (
            FAILED_DELIVERY,
            "payout.completed",
            "2025-03-13T14:00:00.000Z",
            None,
            15000,
            Some("timed out after 15 s"),
        ),
        ("whd_7YhN0uJ3mK6lP9oI2uY5tR8E", "order.completed", "2025-03-08T09:00:00.000Z", Some(200), 88, None),
    ]
    .into_iter()
    .map(attempt)
    .collect()
}

/// A delivery of `event` to `endpoint_id` with no attempts listed; a
/// pending one is tried again at `next_attempt_at`.
pub fn delivery(
    id: &str,
    endpoint_id: &str,
    event: &str,
    (status, attempt_count): (WebhookDeliveryStatus, usize),
    [next_attempt_at, created_at]: [Option<&str>; 2],
) -> WebhookDelivery {
    let created_at = created_at.unwrap_or_default().to_string();
    WebhookDelivery {
        id: id.into(),
        endpoint_id: endpoint_id.into(),
        event_id: format!("evt_{}", &id[4..]),
        event: event.into(),
        resource_id: None,
        status,
        attempt_count,
        attempts: Vec::new(),
        next_attempt_at: next_attempt_at.map(str::to_string),
        updated_at: created_at.clone(),
        created_at,
    }
}

fn deliveries() -> Vec<Owned<WebhookDelivery>> {
    use WebhookDeliveryStatus::{Failed, Pending};
    let failed =
        |id, event, created| delivery(id, FAILING_ENDPOINT, event, (Failed, 8), [None, Some(created)]);
    let pending = |id, event, attempts, next: &str, created: &str| {
        delivery(id, HEALTHY_ENDPOINT, event, (Pending, attempts), [Some(next), Some(created)])
    };
    vec![
        owned(ORG_B, failed(FAILED_DELIVERY, "payout.completed", "2025-03-09T22:00:00.000Z")),
        owned(ORG_B, failed("whd_0PlM9oK8iJ7uH6yG5tF4rD3e", "order.completed", "2025-03-09T20:00:00.000Z")),
        owned(
            ORG_A,
            pending(
                "whd_4RfV7tG0yH3nJ6mK9lP2oI5u",
                "payout.pending",
                2,
                "2025-03-14T09:20:00.000Z",
                "2025-03-14T09:15:02.000Z",
            ),
        ),
        owned(
            ORG_A,
            pending(
                "whd_8IkU7yT6rE5wQ4aS3dF2gH1j",
                "collection.pending",
                0,
                "2025-03-14T09:16:00.000Z",
                "2025-03-14T09:16:00.000Z",
            ),
        ),
    ]
}

fn request_lookup() -> RequestLookup {
    RequestLookup {
        request: LoggedRequest {
            id: REQUEST_ID.into(),
            method: "POST".into(),
            path: "/v1/payouts".into(),
            status: 201,
            duration_ms: 12.4,
            api_key_id: Some("key_2WsX5eDc8RfV1tGb4YhN7uJm".into()),
            request_body: Some(
                json!({ "amount": "150000.00", "currency": "NGN", "externalReference": "inv-2041" }),
            ),
            response_body: Some(json!({ "payout": { "id": PENDING_PAYOUT, "status": "pending" } })),
            created_at: "2025-03-14T09:15:02.000Z".into(),
        },
        stack: StackName::Live,
        organization_id: ORG_A.into(),
    }
}

// ----- driving the app -----

pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

pub fn char_key(c: char) -> KeyEvent {
    let modifiers = if c.is_ascii_uppercase() { KeyModifiers::SHIFT } else { KeyModifiers::NONE };
    KeyEvent::new(KeyCode::Char(c), modifiers)
}

/// A console and a fake node, with a clock the test moves.
pub struct Harness {
    pub app: App,
    pub client: FakeClient,
    pub now: Instant,
}

impl Harness {
    /// Connected, with the Overview loaded and a throughput history.
    pub fn new() -> Harness {
        let mut harness =
            Harness { app: App::new(ADMIN_URL), client: FakeClient::default(), now: Instant::now() };
        for _ in 0..COMMAND_STEPS.len() {
            harness.advance(Duration::from_secs(1));
        }
        harness
    }

    /// Moves the clock and runs whatever is due.
    pub fn advance(&mut self, by: Duration) {
        self.now += by;
        let requests = self.app.tick(self.now);
        self.app.fetch_now(&self.client, requests, self.now);
    }

    /// Presses a key and runs what it fetches.
    pub fn press(&mut self, key: KeyEvent) -> Action {
        let action = self.app.handle_key(key);
        if let Action::Fetch(requests) = &action {
            self.app.fetch_now(&self.client, requests.clone(), self.now);
        }
        action
    }

    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.press(char_key(c));
        }
    }

    /// What the open confirmation would send on `y`.
    #[track_caller]
    pub fn confirming(&self) -> Request {
        self.app.confirm.as_ref().expect("a confirmation is open").request.clone()
    }

    /// Types each of `fields` into the open form and presses Enter after
    /// each: the new organization form's name, email and owner's name.
    pub fn fill_form(&mut self, fields: &[&str]) {
        for text in fields {
            self.type_text(text);
            self.press(key(KeyCode::Enter));
        }
    }

    pub fn screen(&self, width: u16, height: u16) -> String {
        screen(&self.app, width, height)
    }
}

/// The text of one frame, trailing spaces trimmed.
pub fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    terminal.draw(|frame| render(app, frame)).expect("draw");
    let buffer = terminal.backend().buffer();
    let mut lines = Vec::with_capacity(usize::from(height));
    for y in 0..height {
        let line: String = (0..width).map(|x| buffer[(x, y)].symbol()).collect();
        lines.push(line.trim_end().to_string());
    }
    lines.join("\n")
}
