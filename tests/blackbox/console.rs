//! The console against the real node: its `App`, driven by the keys an
//! operator presses, fetching over HTTP from the admin API (the same code
//! `sika tui` runs, without the terminal; `tui_pty` drives the terminal).

use crossterm::event::KeyCode;
use serde_json::json;
use sika_tui::{AuditOutcome, Client, Detail, MovementKind, OrganizationStatus, StackName, Tab};

use crate::support::console::Console;
use crate::support::{Api, MTN_PHONE, Node, Options};

#[test]
fn the_console_onboards_an_organization_and_its_audit_log_shows_every_step() {
    let node = Node::start(Options::unthrottled());
    let mut console = Console::open(&node);
    console.press(KeyCode::Char('8'));
    assert_eq!(console.app.tab, Tab::Organizations);
    assert!(!console.app.organization_rows().is_empty(), "the bootstrap organization is listed");

    // A refused form stays open with the field the node named.
    console.press(KeyCode::Char('n'));
    for text in ["Kumasi Traders", "not-an-email", "Yaw Asante"] {
        console.type_text(text);
        console.press(KeyCode::Enter);
    }
    let form = console.app.form.clone().expect("the form stays open");
    let error = form.error.unwrap_or_default();
    assert!(error.contains("validation_error") && error.contains("owner.email"), "{error}");
    // Fix the email and send it again.
    console.press(KeyCode::Up);
    for _ in 0.."not-an-email".len() {
        console.press(KeyCode::Backspace);
    }
    console.type_text("yaw@kumasi.example");
    console.press(KeyCode::Enter);
    console.press(KeyCode::Enter);
    assert!(console.app.form.is_none(), "accepted: {:?}", console.app.form);
    let notice = console.app.notice.clone().expect("the invitation is shown");
    assert!(notice.lines.iter().any(|l| l.contains("inv_")), "{notice:?}");
    console.press(KeyCode::Enter);
    let created = console.organization("Kumasi Traders");
    assert_eq!(created.status, OrganizationStatus::Active);

    // Rename it, suspend it, reinstate it.
    console.select_organization("Kumasi Traders");
    console.press(KeyCode::Char('e'));
    console.type_text(" Ltd");
    console.press(KeyCode::Enter);
    assert_eq!(console.organization("Kumasi Traders Ltd").id, created.id);
    console.press(KeyCode::Char('x'));
    console.press(KeyCode::Char('y'));
    assert_eq!(console.organization("Kumasi Traders Ltd").status, OrganizationStatus::Suspended);
    assert!(console.screen().contains("suspended"));
    console.press(KeyCode::Char('a'));
    console.press(KeyCode::Char('y'));
    assert_eq!(console.organization("Kumasi Traders Ltd").status, OrganizationStatus::Active);

    // Its owner is invited, and gets a fresh invitation.
    console.press(KeyCode::Enter);
    let Some(Detail::Organization { members, .. }) = &console.app.detail else { panic!("members open") };
    let owner = members.data.as_ref().and_then(|m| m.first()).cloned().expect("the owner");
    assert_eq!(owner.email, "yaw@kumasi.example");
    console.press(KeyCode::Char('i'));
    console.press(KeyCode::Char('y'));
    let notice = console.app.notice.clone().expect("the new invitation is shown");
    assert!(notice.lines.iter().any(|l| l.contains("inv_")), "{notice:?}");
    console.press(KeyCode::Esc);
    console.press(KeyCode::Esc);

    // The audit log: every step, newest first, the target by name.
    console.press(KeyCode::Char('9'));
    assert_eq!(console.app.tab, Tab::Audit);
    let actions: Vec<(String, String, AuditOutcome)> =
        console.app.audit_rows().iter().map(|e| (e.action.clone(), e.target.clone(), e.outcome)).collect();
    let ok = AuditOutcome::Succeeded;
    let expected = [
        ("member.invite", owner.id.clone(), ok),
        ("organization.reinstate", created.id.clone(), ok),
        ("organization.suspend", created.id.clone(), ok),
        ("organization.rename", created.id.clone(), ok),
        ("organization.create", created.id.clone(), ok),
        ("organization.create", "node".to_string(), AuditOutcome::Failed),
    ];
    let expected: Vec<(String, String, AuditOutcome)> =
        expected.into_iter().map(|(a, t, o)| (a.to_string(), t, o)).collect();
    assert_eq!(actions[..expected.len()], expected[..], "{actions:?}");
    let screen = console.screen();
    assert!(screen.contains("Kumasi Traders Ltd"), "the target by name:\n{screen}");
}

#[test]
fn the_audit_log_pages_through_older_actions() {
    let node = Node::start(Options::unthrottled());
    let mut console = Console::open(&node);
    let org = node.creds.organization_id.clone();
    // More actions than a page holds.
    let renames = sika_tui::app::AUDIT_PAGE_LIMIT + 3;
    for index in 0..renames {
        console.client.rename_organization(&org, &format!("Name {index}")).expect("renamed");
    }
    console.press(KeyCode::Char('9'));
    let first: Vec<String> = console.app.audit_rows().iter().map(|e| e.id.clone()).collect();
    assert_eq!(first.len(), sika_tui::app::AUDIT_PAGE_LIMIT);
    console.press(KeyCode::Char('n'));
    assert_eq!(console.app.audit_page_number(), 2);
    let second: Vec<String> = console.app.audit_rows().iter().map(|e| e.id.clone()).collect();
    assert!(second.len() >= 3, "{second:?}");
    assert!(second.iter().all(|id| !first.contains(id)), "no entry on both pages");
    assert!(console.screen().contains("page 2"));
    console.press(KeyCode::Char('p'));
    let again: Vec<String> = console.app.audit_rows().iter().map(|e| e.id.clone()).collect();
    assert_eq!(again, first);
}

/// What waits shows on the Overview; `/` on Activity finds a movement by
/// part of its reference; the settle form records the provider's reference
/// and a note on the timeline; the Overview's count drops at once; and the
/// keys view revokes the live key, which the live API then refuses.
#[test]
fn the_console_settles_with_a_reference_and_revokes_a_key() {
    let node = Node::start(Options::unthrottled());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let api = Api::new();
    let live = node.creds.live_key.clone();
    let created = runtime.block_on(api.post(
        &node.live_url("/v1/collections"),
        &live,
        json!({ "amount": "75.00", "currency": "GHS", "code": "mtn_gh", "accountNumber": MTN_PHONE, "externalReference": "Console-Shop-4471" }),
    ));
    let (_, collection_id) = created.created("collection", "col_");

    let mut console = Console::open(&node);
    let waiting = &console.app.status.as_ref().expect("the status").live.attention;
    assert_eq!(waiting.awaiting_settlement, 1, "{waiting:?}");
    assert!(console.screen().contains("awaiting operator 1"), "{}", console.screen());

    console.press(KeyCode::Char('4'));
    console.press(KeyCode::Char('/'));
    console.type_text("shop-44");
    console.press(KeyCode::Enter);
    let ids: Vec<String> = console.app.activity_rows().iter().map(|m| m.id().to_string()).collect();
    assert_eq!(ids, vec![collection_id.clone()], "part of the reference, in another case");
    console.press(KeyCode::Enter);
    console.press(KeyCode::Char('c'));
    console.type_text("MTN-7781");
    console.press(KeyCode::Tab);
    console.type_text("confirmed on the merchant's phone");
    console.press(KeyCode::Enter);
    assert!(console.app.form.is_none(), "settled: {:?}", console.app.form);
    let settled = console.client.movement(StackName::Live, MovementKind::Collection, &collection_id).unwrap();
    assert_eq!(settled.status(), "completed");
    let noted = settled.timeline().iter().any(|e| {
        e.detail.contains("provider reference: MTN-7781")
            && e.detail.contains("confirmed on the merchant's phone")
    });
    assert!(noted, "the timeline keeps what was recorded: {:?}", settled.timeline());

    console.press(KeyCode::Esc);
    console.press(KeyCode::Char('1'));
    console.press(KeyCode::Char('r'));
    assert_eq!(console.app.status.as_ref().unwrap().live.attention.awaiting_settlement, 0);

    console.press(KeyCode::Char('8'));
    let name = console.app.organization_name(&node.creds.organization_id).to_string();
    console.select_organization(&name);
    console.press(KeyCode::Char('K'));
    let Some(Detail::Keys { keys, .. }) = &console.app.detail else { panic!("the keys view") };
    let keys = keys.data.clone().expect("the live keys");
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(live.starts_with(&keys[0].hint), "{:?}", keys[0]);
    console.press(KeyCode::Char('x'));
    console.press(KeyCode::Char('y'));
    assert!(
        console.app.flash.as_ref().is_some_and(|f| !f.error && f.text.contains("revoked")),
        "{:?}",
        console.app.flash
    );
    let refused = runtime.block_on(api.get(&node.live_url("/v1/accounts"), &live));
    refused.expect(401);
}

/// A live refund waiting for the operator is found in Activity (`F` to
/// pending) and failed from the console: the admin API releases its hold.
#[test]
fn the_console_fails_a_refund_awaiting_the_operator() {
    let node = Node::start(Options::unthrottled());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let api = Api::new();
    let (live, admin) = (node.creds.live_key.clone(), node.creds.admin_token.clone());
    let created = runtime.block_on(api.post(
        &node.live_url("/v1/collections"),
        &live,
        json!({ "amount": "90.00", "currency": "GHS", "code": "mtn_gh", "accountNumber": MTN_PHONE, "externalReference": "console-refund-pay" }),
    ));
    let (_, collection_id) = created.created("collection", "col_");
    let url = node.admin_url(&format!("/admin/v1/live/collections/{collection_id}/complete"));
    runtime.block_on(api.call("POST", &url, Some(&admin), None)).expect(200);
    let body =
        json!({ "collectionId": collection_id, "amount": "30.00", "externalReference": "console-refund" });
    let refund = runtime.block_on(api.post(&node.live_url("/v1/refunds"), &live, body));
    let (_, refund_id) = refund.created("refund", "rf_");

    let mut console = Console::open(&node);
    console.press(KeyCode::Char('4'));
    console.press(KeyCode::Char('F'));
    let pending: Vec<(MovementKind, String)> =
        console.app.activity_rows().iter().map(|m| (m.kind(), m.id().to_string())).collect();
    assert_eq!(pending, vec![(MovementKind::Refund, refund_id.clone())], "only the refund waits");
    assert!(console.screen().contains(&refund_id), "{}", console.screen());
    console.press(KeyCode::Enter);
    console.press(KeyCode::Char('f'));
    console.type_text("MTN-REV-0091");
    console.press(KeyCode::Tab);
    console.type_text("the payer's wallet is closed");
    console.press(KeyCode::Enter);
    assert!(console.app.form.is_none(), "settled: {:?}", console.app.form);
    let settled = console.client.movement(StackName::Live, MovementKind::Refund, &refund_id).unwrap();
    assert_eq!(settled.status(), "failed");
    let noted = settled.timeline().iter().any(|e| e.detail.contains("provider reference: MTN-REV-0091"));
    assert!(noted, "the timeline keeps what was recorded: {:?}", settled.timeline());
    let balance = runtime.block_on(crate::support::balance(&api, &node.live, &live, "GHS"));
    assert_eq!(balance, "90.00", "the hold went back to the merchant");
}
