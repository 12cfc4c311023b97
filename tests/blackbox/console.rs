//! The console against the real node: its `App`, driven by the keys an
//! operator presses, fetching over HTTP from the admin API (the same code
//! `sika tui` runs, without the terminal; `tui_pty` drives the terminal).

use crossterm::event::KeyCode;
use sika_tui::{AuditOutcome, Client, Detail, OrganizationStatus, Tab};

use crate::support::console::Console;
use crate::support::{Node, Options};

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
