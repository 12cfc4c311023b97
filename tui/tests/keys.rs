//! Key handling and data flow through `App`, against the fake node: what
//! each key changes and what it asks to fetch.

mod common;

use std::time::Duration;

use common::{Harness, Mode, char_key, key};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use sika_tui::app::{RETRY_INTERVAL, STATUS_INTERVAL, WebhookPane};
use sika_tui::{
    Action, Connection, Detail, MovementKind, Request, Settlement, SettlementRecord, StackName, Tab,
};

fn on_tab(tab: Tab) -> Harness {
    let mut harness = Harness::new();
    while harness.app.tab != tab {
        harness.press(key(KeyCode::Tab));
    }
    harness
}

#[test]
fn tab_and_shift_tab_cycle_through_every_tab() {
    let mut harness = Harness::new();
    let mut seen = vec![harness.app.tab];
    for _ in 0..Tab::ALL.len() {
        harness.press(key(KeyCode::Tab));
        seen.push(harness.app.tab);
    }
    assert_eq!(&seen[..Tab::ALL.len()], &Tab::ALL);
    assert_eq!(harness.app.tab, Tab::Overview, "wraps around");
    harness.press(key(KeyCode::BackTab));
    assert_eq!(harness.app.tab, Tab::Audit, "Shift-Tab wraps backwards");
    harness.press(char_key('4'));
    assert_eq!(harness.app.tab, Tab::Activity);
}

#[test]
fn switching_tabs_fetches_the_new_tab() {
    let mut harness = Harness::new();
    let action = harness.app.handle_key(key(KeyCode::Tab));
    assert_eq!(action, Action::Fetch(vec![Request::Accounts(StackName::Live)]));
    let action = harness.app.handle_key(key(KeyCode::Tab));
    assert_eq!(action, Action::Fetch(vec![Request::Rates(StackName::Live)]));
    let action = harness.app.handle_key(key(KeyCode::Tab));
    let Action::Fetch(requests) = action else { panic!("expected a fetch") };
    assert_eq!(requests.len(), 4, "payouts, collections, orders and refunds: {requests:?}");
}

#[test]
fn j_and_k_stay_inside_the_list() {
    let mut harness = on_tab(Tab::Activity);
    let rows = harness.app.activity_rows().len();
    assert_eq!(rows, 5);
    harness.press(char_key('k'));
    assert_eq!(harness.app.activity_selected, 0, "k at the top stays");
    for _ in 0..10 {
        harness.press(char_key('j'));
    }
    assert_eq!(harness.app.activity_selected, rows - 1, "j at the bottom stays");
    harness.press(key(KeyCode::Up));
    assert_eq!(harness.app.activity_selected, rows - 2, "arrows move too");
    harness.press(char_key('g'));
    assert_eq!(harness.app.activity_selected, 0);
    harness.press(key(KeyCode::End));
    assert_eq!(harness.app.activity_selected, rows - 1);
}

#[test]
fn j_and_k_on_an_empty_list_do_nothing() {
    let mut harness = on_tab(Tab::Disputes);
    harness.press(char_key('s'));
    assert!(harness.app.dispute_rows().is_empty());
    harness.press(char_key('j'));
    harness.press(char_key('k'));
    assert_eq!(harness.app.disputes_selected, 0);
    assert_eq!(harness.press(key(KeyCode::Enter)), Action::None, "no row, no detail");
    assert!(harness.app.detail.is_none());
}

#[test]
fn help_overlay_opens_and_any_key_closes_it_without_acting() {
    let mut harness = Harness::new();
    harness.press(char_key('?'));
    assert!(harness.app.help);
    assert_eq!(harness.press(char_key('q')), Action::None, "q closes the help, it does not quit");
    assert!(!harness.app.help);
    assert_eq!(harness.app.tab, Tab::Overview);
    assert_eq!(harness.press(char_key('q')), Action::Quit);
}

#[test]
fn help_lists_every_key() {
    let listed: String = sika_tui::view::KEYS.iter().map(|(k, _)| format!("{k} ")).collect();
    for expected in
        ["Tab", "Shift-Tab", "j k", "Enter", "Esc", "/", "r", "?", "q", "s", "c  f", "t", "e", "v", "y  n"]
    {
        assert!(listed.contains(expected), "{expected} missing from the help: {listed}");
    }
}

#[test]
fn quit_keys() {
    let mut harness = Harness::new();
    assert_eq!(harness.press(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)), Action::Quit);
    harness.press(char_key('/'));
    assert_eq!(
        harness.press(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
        Action::Quit,
        "Ctrl-C quits even from a prompt"
    );
}

#[test]
fn key_releases_are_ignored() {
    let mut harness = Harness::new();
    let mut release = key(KeyCode::Tab);
    release.kind = KeyEventKind::Release;
    assert_eq!(harness.press(release), Action::None);
    assert_eq!(harness.app.tab, Tab::Overview);
}

#[test]
fn enter_opens_a_payout_timeline_in_time_order_and_esc_goes_back() {
    let mut harness = on_tab(Tab::Activity);
    let action = harness.press(key(KeyCode::Enter));
    let expected = Request::Movement {
        stack: StackName::Live,
        kind: MovementKind::Payout,
        id: common::PENDING_PAYOUT.into(),
    };
    assert_eq!(action, Action::Fetch(vec![expected]));
    let Some(Detail::Movement { data, .. }) = &harness.app.detail else { panic!("no detail") };
    let movement = data.data.as_ref().expect("loaded");
    let times: Vec<&str> = sika_tui::view::detail::timeline(movement).iter().map(|e| e.at.as_str()).collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted);
    assert_eq!(times.len(), 4, "the full answer adds the webhook entry");
    harness.press(key(KeyCode::Esc));
    assert!(harness.app.detail.is_none());
    assert_eq!(harness.app.tab, Tab::Activity);
}

#[test]
fn complete_opens_the_settle_form_and_esc_cancels() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(key(KeyCode::Enter));
    assert_eq!(harness.press(char_key('c')), Action::None);
    let form = harness.app.form.clone().expect("the settle form");
    let intro = form.intro.clone().unwrap_or_default();
    assert!(intro.contains(common::PENDING_PAYOUT) && intro.starts_with("Complete payout"), "{intro}");
    let labels: Vec<&str> = form.fields.iter().map(|f| f.label).collect();
    assert_eq!(labels, vec!["Provider reference", "Note"]);
    // Keys are typed into the form, not acted on.
    harness.press(char_key('j'));
    assert_eq!(harness.app.form.as_ref().unwrap().fields[0].value, "j");
    assert_eq!(harness.press(key(KeyCode::Esc)), Action::None);
    assert!(harness.app.form.is_none());
    assert!(harness.client.calls.lock().unwrap().is_empty(), "nothing was sent");
}

#[test]
fn the_settle_form_records_the_provider_reference_and_note() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(key(KeyCode::Enter));
    harness.press(char_key('c'));
    harness.type_text("MP-99812");
    harness.press(key(KeyCode::Tab));
    harness.type_text("paid at the branch");
    let action = harness.press(key(KeyCode::Enter));
    let expected = Request::Settle {
        stack: StackName::Live,
        kind: MovementKind::Payout,
        id: common::PENDING_PAYOUT.into(),
        settlement: Settlement::Complete,
        record: SettlementRecord {
            provider_reference: Some("MP-99812".into()),
            note: Some("paid at the branch".into()),
        },
    };
    assert_eq!(action, Action::Fetch(vec![expected]));
    assert_eq!(
        *harness.client.calls.lock().unwrap(),
        vec![format!(
            "complete live payout {} reference=MP-99812 note=paid at the branch",
            common::PENDING_PAYOUT
        )]
    );
    assert!(harness.app.form.is_none(), "the form closes once the node answers");
    let Some(Detail::Movement { data, .. }) = &harness.app.detail else { panic!("no detail") };
    assert_eq!(data.data.as_ref().unwrap().status(), "completed");
    let flash = harness.app.flash.clone().expect("a message");
    assert!(!flash.error && flash.text.contains("completed"), "{flash:?}");
    // The list was reloaded too.
    let row = harness.app.activity_rows().into_iter().find(|m| m.id() == common::PENDING_PAYOUT).unwrap();
    assert_eq!(row.status(), "completed");
}

#[test]
fn fail_on_a_pending_collection_with_nothing_recorded() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(char_key('j'));
    harness.press(key(KeyCode::Enter));
    harness.press(char_key('f'));
    let form = harness.app.form.clone().expect("the settle form");
    assert!(form.intro.unwrap().starts_with("Fail collection"));
    // Both fields are optional: Enter twice settles.
    harness.press(key(KeyCode::Enter));
    harness.press(key(KeyCode::Enter));
    assert_eq!(
        *harness.client.calls.lock().unwrap(),
        vec![format!("fail live collection {}", common::PENDING_COLLECTION)]
    );
}

/// A live refund waiting for the operator is in Activity (its oldest
/// row); `f` fails it through the admin API and `c` on it then is refused.
#[test]
fn a_refund_awaiting_the_operator_is_completed_or_failed_from_activity() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(key(KeyCode::End));
    let action = harness.press(key(KeyCode::Enter));
    let expected = Request::Movement {
        stack: StackName::Live,
        kind: MovementKind::Refund,
        id: common::PENDING_REFUND.into(),
    };
    assert_eq!(action, Action::Fetch(vec![expected]));
    harness.press(char_key('f'));
    let form = harness.app.form.clone().expect("the settle form");
    let intro = form.intro.clone().unwrap_or_default();
    assert!(
        intro.starts_with(&format!("Fail refund {} (5000.00 NGN) on live?", common::PENDING_REFUND)),
        "{intro}"
    );
    assert!(intro.contains("The held funds return to the merchant"), "{intro}");
    harness.type_text("MTN-REV-7");
    harness.press(key(KeyCode::Enter));
    harness.press(key(KeyCode::Enter));
    assert_eq!(
        *harness.client.calls.lock().unwrap(),
        vec![format!("fail live refund {} reference=MTN-REV-7", common::PENDING_REFUND)]
    );
    let Some(Detail::Movement { data, .. }) = &harness.app.detail else { panic!("no detail") };
    assert_eq!(data.data.as_ref().unwrap().status(), "failed");
    let flash = harness.app.flash.clone().expect("a message");
    assert_eq!(flash.text, format!("refund {} is now failed", common::PENDING_REFUND));
    let row = harness.app.activity_rows().into_iter().find(|m| m.id() == common::PENDING_REFUND).unwrap();
    assert_eq!(row.status(), "failed");
    // Final now: `c` is refused without a form.
    harness.press(char_key('c'));
    assert!(harness.app.form.is_none());
    assert!(harness.app.flash.as_ref().unwrap().error);
}

#[test]
fn completing_a_refund_says_the_money_went_back_to_the_payer() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(key(KeyCode::End));
    harness.press(key(KeyCode::Enter));
    harness.press(char_key('c'));
    let intro = harness.app.form.clone().expect("the settle form").intro.unwrap_or_default();
    assert!(intro.starts_with("Complete refund") && intro.contains("returned to the payer"), "{intro}");
    harness.press(key(KeyCode::Enter));
    harness.press(key(KeyCode::Enter));
    assert_eq!(
        *harness.client.calls.lock().unwrap(),
        vec![format!("complete live refund {}", common::PENDING_REFUND)]
    );
}

#[test]
fn settling_a_final_payout_is_refused_without_asking() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(char_key('j'));
    harness.press(char_key('j'));
    harness.press(key(KeyCode::Enter));
    let Some(Detail::Movement { id, .. }) = &harness.app.detail else { panic!("no detail") };
    assert_eq!(id, common::COMPLETED_PAYOUT);
    harness.press(char_key('c'));
    assert!(harness.app.form.is_none());
    assert!(harness.app.flash.as_ref().unwrap().error);
}

#[test]
fn a_409_from_the_node_shows_in_the_settle_form() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(key(KeyCode::Enter));
    harness.press(char_key('c'));
    assert!(harness.app.form.is_some());
    // Someone else completes it while the form is open.
    let record = SettlementRecord::default();
    sika_tui::Client::settle(
        &harness.client,
        StackName::Live,
        MovementKind::Payout,
        common::PENDING_PAYOUT,
        Settlement::Complete,
        &record,
    )
    .unwrap();
    harness.press(key(KeyCode::Enter));
    harness.press(key(KeyCode::Enter));
    let form = harness.app.form.clone().expect("the form stays open");
    let error = form.error.unwrap_or_default();
    assert!(error.contains("409 invalid_state") && !form.submitting, "{error}");
}

#[test]
fn search_filters_activity_through_q() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(char_key('/'));
    assert_eq!(harness.app.search.as_deref(), Some(""));
    harness.type_text("inv-2041x");
    harness.press(key(KeyCode::Backspace));
    assert_eq!(harness.app.search.as_deref(), Some("inv-2041"));
    let action = harness.press(key(KeyCode::Enter));
    let Action::Fetch(requests) = action else { panic!("expected a fetch") };
    assert!(
        requests
            .iter()
            .all(|r| matches!(r, Request::Movements { query, .. } if query.q.as_deref() == Some("inv-2041"))),
        "{requests:?}"
    );
    assert!(harness.app.search.is_none());
    let ids: Vec<&str> = harness.app.activity_rows().iter().map(|m| m.id()).collect();
    assert_eq!(ids, vec![common::PENDING_PAYOUT]);
    // Esc clears the search and shows everything again.
    harness.press(key(KeyCode::Esc));
    assert_eq!(harness.app.activity_query, None);
    assert_eq!(harness.app.activity_rows().len(), 5);
}

#[test]
fn keys_typed_into_the_search_do_not_act() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(char_key('/'));
    harness.type_text("qs?r");
    assert_eq!(harness.app.tab, Tab::Activity);
    assert!(!harness.app.help);
    assert_eq!(harness.app.stack, StackName::Live);
    assert_eq!(harness.app.search.as_deref(), Some("qs?r"));
    harness.press(key(KeyCode::Esc));
    assert!(harness.app.search.is_none());
    assert_eq!(harness.app.activity_query, None, "Esc cancels without searching");
}

#[test]
fn status_filter_cycles() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(char_key('F'));
    assert_eq!(harness.app.activity_status.status(), Some("pending"));
    assert!(harness.app.activity_rows().iter().all(|m| m.status() == "pending"));
    // The pending payout and collection, and the refund awaiting the operator.
    let kinds: Vec<MovementKind> = harness.app.activity_rows().iter().map(|m| m.kind()).collect();
    assert_eq!(kinds, [MovementKind::Payout, MovementKind::Collection, MovementKind::Refund]);
    for _ in 0..3 {
        harness.press(char_key('F'));
    }
    assert_eq!(harness.app.activity_status.status(), None);
}

#[test]
fn slash_looks_up_a_request_id() {
    let mut harness = on_tab(Tab::Requests);
    harness.press(char_key('/'));
    harness.type_text(common::REQUEST_ID);
    let action = harness.press(key(KeyCode::Enter));
    let Action::Fetch(requests) = action else { panic!("expected a fetch") };
    assert!(requests.contains(&Request::Lookup(common::REQUEST_ID.into())), "{requests:?}");
    let lookup = harness.app.lookup.data.clone().expect("found");
    assert_eq!(lookup.request.path.as_str(), "/v1/payouts");
    // An unknown id is a 404 on the tab, not a banner.
    harness.press(char_key('/'));
    harness.type_text("req_missing");
    harness.press(key(KeyCode::Enter));
    assert!(harness.app.lookup.error.as_deref().unwrap().contains("404"));
    assert_eq!(harness.app.connection, Connection::Connected);
}

#[test]
fn s_switches_the_stack_and_refetches() {
    let mut harness = on_tab(Tab::Activity);
    let action = harness.press(char_key('s'));
    assert_eq!(harness.app.stack, StackName::Sandbox);
    let Action::Fetch(requests) = action else { panic!("expected a fetch") };
    assert!(requests.iter().all(|r| matches!(r, Request::Movements { stack: StackName::Sandbox, .. })));
    let ids: Vec<&str> = harness.app.activity_rows().iter().map(|m| m.id()).collect();
    assert_eq!(ids, vec!["pay_ghs_1AbC2dEf3GhI4jKl5MnO6pQr"]);
}

#[test]
fn s_on_rates_shows_the_other_stacks_rates() {
    let mut harness = on_tab(Tab::Rates);
    assert_eq!(harness.app.rate_rows().len(), 4);
    harness.press(char_key('G'));
    assert_eq!(harness.app.rates_selected, 3);
    let action = harness.press(char_key('s'));
    assert_eq!(action, Action::Fetch(vec![Request::Rates(StackName::Sandbox)]));
    assert_eq!(harness.app.rates_selected, 0);
    let codes: Vec<&str> = harness.app.rate_rows().iter().map(|(code, _)| *code).collect();
    assert_eq!(codes, vec!["GHS"]);
    let screen = harness.screen(120, 30);
    assert!(screen.contains("builtin"), "{screen}");
    assert!(screen.contains("no rate feed configured"), "{screen}");
    // A live answer that arrives after the switch is not shown as sandbox's.
    let late = sika_tui::fetch::execute(&harness.client, Request::Rates(StackName::Live));
    harness.app.apply(late, harness.now);
    assert_eq!(harness.app.rate_rows().len(), 1);
}

#[test]
fn answers_for_the_other_stack_are_dropped() {
    let mut harness = on_tab(Tab::Disputes);
    // A live answer that arrives after the switch to sandbox.
    harness.press(char_key('s'));
    let stale = sika_tui::fetch::execute(&harness.client, Request::Disputes(StackName::Live));
    harness.app.apply(stale, harness.now);
    assert!(harness.app.dispute_rows().is_empty());
}

#[test]
fn webhooks_retry_and_enable_ask_first() {
    let mut harness = on_tab(Tab::Webhooks);
    // e acts on the selected endpoint.
    harness.press(char_key('j'));
    harness.press(char_key('e'));
    let enable =
        Request::EnableEndpoint { stack: StackName::Live, endpoint_id: common::FAILING_ENDPOINT.into() };
    assert_eq!(harness.confirming(), enable);
    harness.press(char_key('y'));
    // t acts on the selected failing delivery.
    harness.press(char_key('l'));
    assert_eq!(harness.app.webhook_pane, WebhookPane::Deliveries);
    harness.press(char_key('t'));
    let retry =
        Request::RetryDelivery { stack: StackName::Live, delivery_id: common::FAILED_DELIVERY.into() };
    assert_eq!(harness.confirming(), retry);
    harness.press(char_key('n'));
    harness.press(char_key('t'));
    harness.press(char_key('y'));
    assert_eq!(
        *harness.client.calls.lock().unwrap(),
        vec![
            format!("enable live {}", common::FAILING_ENDPOINT),
            format!("retry live {}", common::FAILED_DELIVERY),
        ]
    );
}

#[test]
fn failing_deliveries_leave_out_fresh_pending_ones() {
    let harness = on_tab(Tab::Webhooks);
    let ids: Vec<&str> = harness.app.failing_deliveries().iter().map(|d| d.item.id.as_str()).collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert!(!ids.contains(&"whd_8IkU7yT6rE5wQ4aS3dF2gH1j"), "never attempted yet");
}

#[test]
fn enter_on_an_endpoint_shows_its_attempts() {
    let mut harness = on_tab(Tab::Webhooks);
    harness.press(char_key('j'));
    harness.press(key(KeyCode::Enter));
    let Some(Detail::Endpoint { attempts, .. }) = &harness.app.detail else { panic!("no detail") };
    assert_eq!(attempts.data.as_ref().unwrap().len(), 3);
}

#[test]
fn v_runs_verify_after_confirmation() {
    let mut harness = on_tab(Tab::Accounts);
    harness.press(char_key('v'));
    assert_eq!(harness.confirming(), Request::Verify(StackName::Live));
    harness.press(char_key('y'));
    assert_eq!(*harness.client.calls.lock().unwrap(), vec!["verify live".to_string()]);
    assert!(harness.app.flash.as_ref().unwrap().text.contains("consistent"));
    // Only the Accounts tab verifies.
    let mut harness = on_tab(Tab::Overview);
    harness.press(char_key('v'));
    assert!(harness.app.confirm.is_none());
}

#[test]
fn an_unreachable_node_is_retried_every_two_seconds() {
    let mut harness = Harness::new();
    assert_eq!(harness.app.connection, Connection::Connected);
    harness.client.set_mode(Mode::Down);
    harness.advance(STATUS_INTERVAL);
    assert!(matches!(harness.app.connection, Connection::Unreachable(_)));
    // Not before the retry interval…
    assert!(
        !harness.app.tick(harness.now + RETRY_INTERVAL - Duration::from_millis(1)).contains(&Request::Status)
    );
    // …and again after it.
    harness.client.set_mode(Mode::Up);
    harness.advance(RETRY_INTERVAL);
    assert_eq!(harness.app.connection, Connection::Connected);
}

#[test]
fn a_wrong_token_says_so() {
    let mut harness = Harness::new();
    harness.client.set_mode(Mode::WrongToken);
    harness.advance(STATUS_INTERVAL);
    assert!(matches!(harness.app.connection, Connection::Unauthorized(_)));
    assert!(harness.screen(120, 30).contains("refused the operator token"));
}

#[test]
fn refresh_fetches_status_and_the_tab() {
    let mut harness = on_tab(Tab::Disputes);
    let action = harness.app.handle_key(char_key('r'));
    assert_eq!(action, Action::Fetch(vec![Request::Status, Request::Disputes(StackName::Live)]));
}

#[test]
fn requests_already_running_are_not_sent_twice() {
    let mut app = sika_tui::App::new(common::ADMIN_URL);
    let first = app.start(vec![Request::Status, Request::Accounts(StackName::Live)]);
    assert_eq!(first.len(), 2);
    let second = app.start(vec![Request::Status, Request::Accounts(StackName::Sandbox)]);
    assert_eq!(second, vec![Request::Accounts(StackName::Sandbox)]);
}

#[test]
fn overview_sparkline_has_one_rate_per_status_sample() {
    let harness = Harness::new();
    let live = &harness.app.throughput[0];
    assert_eq!(live.per_second.len(), 15, "16 samples make 15 rates");
    assert_eq!(live.latest(), Some(13), "the fake's 15th step");
}

#[test]
fn organizations_are_named_on_every_tab() {
    let harness = on_tab(Tab::Disputes);
    assert_eq!(harness.app.organization_name(common::ORG_A), "Accra Market Co");
    assert_eq!(harness.app.organization_name("org_unknown"), "org_unknown", "an unknown id stays an id");
    let screen = harness.screen(160, 48);
    assert!(screen.contains("Lagos Freight Ltd"), "{screen}");
    assert!(!screen.contains(common::ORG_B), "the id gives way to the name:\n{screen}");
}

#[test]
fn creating_an_organization_sends_the_form_and_shows_the_invitation_once() {
    let mut harness = on_tab(Tab::Organizations);
    harness.press(char_key('n'));
    assert!(harness.app.form.is_some());
    // Keys go to the form, not to the tabs.
    harness.type_text("Kumasi 2");
    assert_eq!(harness.app.tab, Tab::Organizations);
    harness.press(key(KeyCode::Tab));
    harness.type_text("yaw@kumasi.example");
    harness.press(key(KeyCode::Enter));
    harness.type_text("Yaw");
    let action = harness.press(key(KeyCode::Enter));
    let Action::Fetch(requests) = action else { panic!("expected a fetch") };
    assert_eq!(
        requests,
        vec![Request::CreateOrganization(sika_tui::NewOrganization {
            name: "Kumasi 2".into(),
            owner_email: "yaw@kumasi.example".into(),
            owner_name: "Yaw".into(),
        })]
    );
    assert!(harness.app.form.is_none(), "the form closes once the node accepts it");
    let notice = harness.app.notice.clone().expect("the invitation is shown");
    assert!(notice.lines.iter().any(|l| l.contains(common::INVITATION)), "{notice:?}");
    assert!(harness.app.organization_rows().iter().any(|o| o.name == "Kumasi 2"), "the list reloads");
    // Other keys leave the notice up; Enter closes it.
    harness.press(char_key('q'));
    assert!(harness.app.notice.is_some(), "q does not close the token before it is read");
    harness.press(key(KeyCode::Enter));
    assert!(harness.app.notice.is_none());
}

#[test]
fn a_refused_form_stays_open_with_the_reason() {
    let mut harness = on_tab(Tab::Organizations);
    harness.press(char_key('n'));
    harness.fill_form(&["Kumasi", "nope", "Yaw"]);
    let form = harness.app.form.clone().expect("still open");
    assert!(form.error.as_deref().unwrap_or_default().contains("email"), "{form:?}");
    assert_eq!(form.fields[1].value, "nope");
    harness.press(key(KeyCode::Esc));
    assert!(harness.app.form.is_none());
    assert!(!harness.client.calls.lock().unwrap().iter().any(|c| c.contains("create Kumasi Kumasi")));
}

#[test]
fn rename_suspend_and_reinstate_ask_first() {
    let mut harness = on_tab(Tab::Organizations);
    harness.press(char_key('e'));
    let form = harness.app.form.clone().expect("rename form");
    assert_eq!(form.fields[0].value, "Accra Market Co", "starts from the current name");
    for _ in 0.."Accra Market Co".len() {
        harness.press(key(KeyCode::Backspace));
    }
    harness.type_text("Accra Market");
    harness.press(key(KeyCode::Enter));
    assert_eq!(harness.app.organization_rows()[0].name, "Accra Market");

    // Suspending an active organization asks, then suspends.
    harness.press(char_key('x'));
    let confirm = harness.app.confirm.clone().expect("asks before suspending");
    assert!(confirm.prompt.contains("Suspend Accra Market"), "{}", confirm.prompt);
    harness.press(char_key('y'));
    assert_eq!(harness.app.organization_rows()[0].status, sika_tui::OrganizationStatus::Suspended);
    // Suspending it again is refused on the spot.
    harness.press(char_key('x'));
    assert!(harness.app.confirm.is_none());
    assert!(harness.app.flash.as_ref().is_some_and(|f| f.text.contains("already suspended")));
    harness.press(char_key('a'));
    harness.press(char_key('y'));
    assert_eq!(harness.app.organization_rows()[0].status, sika_tui::OrganizationStatus::Active);
    let calls = harness.client.calls.lock().unwrap().clone();
    assert_eq!(
        calls,
        vec![
            format!("rename {} Accra Market", common::ORG_A),
            format!("suspend {}", common::ORG_A),
            format!("reinstate {}", common::ORG_A),
        ]
    );
}

#[test]
fn a_member_gets_a_new_invitation_from_the_organization_detail() {
    let mut harness = on_tab(Tab::Organizations);
    harness.press(key(KeyCode::Enter));
    assert!(matches!(harness.app.detail, Some(Detail::Organization { .. })));
    harness.press(char_key('j'));
    harness.press(char_key('i'));
    assert!(harness.app.confirm.as_ref().is_some_and(|c| c.prompt.contains("Kwame Boateng")));
    harness.press(char_key('y'));
    let notice = harness.app.notice.clone().expect("the new invitation is shown");
    assert!(notice.lines.iter().any(|l| l.contains(common::INVITATION)));
    assert!(harness.client.calls.lock().unwrap().iter().any(|c| c.ends_with("mem_8Uj1Ik4Ol7Pz0Xs3Dc6Fv9Gb")));
}

#[test]
fn the_audit_log_pages_forward_and_back() {
    let mut harness = on_tab(Tab::Audit);
    let ids = |h: &common::Harness| h.app.audit_rows().iter().map(|e| e.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&harness), ["aud_5", "aud_4"], "newest first");
    harness.press(char_key('n'));
    assert_eq!(ids(&harness), ["aud_3", "aud_2"]);
    assert_eq!(harness.app.audit_page_number(), 2);
    harness.press(char_key('n'));
    assert_eq!(ids(&harness), ["aud_1"]);
    harness.press(char_key('n'));
    assert_eq!(ids(&harness), ["aud_1"], "no page after the oldest");
    harness.press(char_key('p'));
    harness.press(char_key('p'));
    assert_eq!(ids(&harness), ["aud_5", "aud_4"]);
    harness.press(char_key('p'));
    assert_eq!(harness.app.audit_page_number(), 1);
    // The periodic refresh reloads the page on screen, not the first.
    harness.press(char_key('n'));
    harness.advance(Duration::from_secs(6));
    assert_eq!(ids(&harness), ["aud_3", "aud_2"]);
}

#[test]
fn o_shows_the_nodes_own_accounts_and_enter_their_entries_a_page_at_a_time() {
    let mut harness = on_tab(Tab::Accounts);
    let action = harness.press(char_key('o'));
    assert_eq!(
        action,
        Action::Fetch(vec![Request::Accounts(StackName::Live), Request::SystemAccounts(StackName::Live)])
    );
    assert_eq!(harness.app.system_account_rows().len(), 4);
    for _ in 0..10 {
        harness.press(char_key('j'));
    }
    assert_eq!(harness.app.accounts_selected, 3, "the selection stays inside the system accounts");
    harness.press(char_key('g'));
    harness.press(key(KeyCode::Enter));
    let entries = |h: &common::Harness| match &h.app.detail {
        Some(Detail::LedgerAccount { entries, .. }) => entries
            .data
            .as_ref()
            .map(|p| p.data.iter().map(|e| e.seq).collect::<Vec<_>>())
            .unwrap_or_default(),
        other => panic!("expected the entries, got {other:?}"),
    };
    assert_eq!(entries(&harness), [41, 33, 20]);
    harness.press(char_key('n'));
    assert_eq!(entries(&harness), [7]);
    harness.press(char_key('n'));
    assert_eq!(entries(&harness), [7], "nothing older");
    harness.press(char_key('p'));
    assert_eq!(entries(&harness), [41, 33, 20]);
    harness.press(key(KeyCode::Esc));
    harness.press(char_key('o'));
    assert!(!harness.app.show_system_accounts, "o goes back to the organizations' accounts");
    // Enter on an organization's account opens its entries too.
    harness.press(key(KeyCode::Enter));
    assert!(matches!(harness.app.detail, Some(Detail::LedgerAccount { .. })));
}

#[test]
fn slash_outside_activity_searches_the_node_and_enter_opens_a_payout() {
    let mut harness = on_tab(Tab::Overview);
    harness.press(char_key('/'));
    assert!(harness.app.search.is_some(), "the prompt opens on the Overview");
    harness.type_text("0123");
    let action = harness.press(key(KeyCode::Enter));
    assert_eq!(action, Action::Fetch(vec![Request::Search("0123".into())]));
    let Some(Detail::Search { results, .. }) = &harness.app.detail else { panic!("results open") };
    let hits = &results.data.as_ref().expect("answered").data;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].field, "to.accountNumber");
    harness.press(key(KeyCode::Enter));
    assert!(
        matches!(&harness.app.detail, Some(Detail::Movement { id, kind: MovementKind::Payout, .. }) if id == common::PENDING_PAYOUT),
        "{:?}",
        harness.app.detail
    );
    // A link has no timeline: Enter says so and stays.
    harness.press(key(KeyCode::Esc));
    harness.press(char_key('/'));
    harness.type_text("buyer@");
    harness.press(key(KeyCode::Enter));
    harness.press(key(KeyCode::Enter));
    assert!(matches!(harness.app.detail, Some(Detail::Search { .. })));
    assert!(harness.app.flash.as_ref().is_some_and(|f| f.text.contains("no timeline")));
}

#[test]
fn an_open_dispute_is_accepted_or_declined_after_a_confirmation() {
    let mut harness = on_tab(Tab::Disputes);
    harness.press(key(KeyCode::Enter));
    harness.press(char_key('d'));
    let confirm = harness.app.confirm.clone().expect("asks first");
    assert!(
        confirm.prompt.contains("Decline dispute") && confirm.prompt.contains("100.00 USDT"),
        "{}",
        confirm.prompt
    );
    harness.press(char_key('n'));
    assert!(harness.client.calls.lock().unwrap().is_empty(), "n sends nothing");
    harness.press(char_key('d'));
    harness.press(char_key('y'));
    assert_eq!(*harness.client.calls.lock().unwrap(), [format!("resolve {} declined", common::DISPUTE)]);
    let Some(Detail::Dispute { data, .. }) = &harness.app.detail else { panic!("the dispute stays open") };
    let status = data.data.as_ref().map(|d| d.item.status);
    assert_eq!(status, Some(sika_api::disputes::DisputeStatus::Declined));
    assert!(harness.app.flash.as_ref().is_some_and(|f| f.text.contains("declined")));
    // Declined: the hold is released and the merchant won.
    let screen = harness.screen(160, 48);
    assert!(screen.contains("held 0.00 USDT") && screen.contains("outcome won"), "{screen}");
}

#[test]
fn a_dispute_shows_its_hold_and_once_accepted_what_was_taken_and_its_outcome() {
    let mut harness = on_tab(Tab::Disputes);
    let screen = harness.screen(160, 48);
    assert!(
        screen.contains("60.00 USDT") && screen.contains("Held") && screen.contains("Outcome"),
        "{screen}"
    );
    harness.press(key(KeyCode::Enter));
    let screen = harness.screen(160, 48);
    assert!(screen.contains("held 60.00 USDT") && screen.contains("outcome —"), "{screen}");
    harness.press(char_key('a'));
    harness.press(char_key('y'));
    assert_eq!(*harness.client.calls.lock().unwrap(), [format!("resolve {} accepted", common::DISPUTE)]);
    let screen = harness.screen(160, 48);
    assert!(screen.contains("held 100.00 USDT") && screen.contains("outcome lost"), "{screen}");
}

#[test]
fn slash_on_activity_matches_any_part_of_a_reference_in_any_case() {
    let mut harness = on_tab(Tab::Activity);
    harness.press(char_key('/'));
    harness.type_text("INV-20");
    harness.press(key(KeyCode::Enter));
    let ids: Vec<&str> = harness.app.activity_rows().iter().map(|m| m.id()).collect();
    assert_eq!(ids, vec![common::PENDING_PAYOUT]);
}

#[test]
fn the_requests_tab_lists_failed_requests_and_searches_them_by_substring() {
    let mut harness = on_tab(Tab::Requests);
    assert_eq!(harness.app.failed_request_rows().len(), 3);
    // Any part of the route, error code, address or organization name.
    for (text, count) in [("payouts", 2), ("INSUFFICIENT", 1), ("198.51", 1), ("nobody", 0)] {
        harness.press(char_key('/'));
        for _ in 0..40 {
            harness.press(key(KeyCode::Backspace));
        }
        harness.type_text(text);
        harness.press(key(KeyCode::Enter));
        assert_eq!(harness.app.failed_request_rows().len(), count, "{text}");
        assert!(harness.app.lookup_id.is_none(), "a search that is not a request id looks nothing up");
    }
    // Esc clears the search; Enter opens the selected request's log entry.
    harness.press(key(KeyCode::Esc));
    assert_eq!(harness.app.failed_request_rows().len(), 3);
    let action = harness.press(key(KeyCode::Enter));
    assert_eq!(action, Action::Fetch(vec![Request::Lookup(common::FAILED_REQUEST.into())]));
    assert_eq!(harness.app.lookup_id.as_deref(), Some(common::FAILED_REQUEST));
    harness.press(key(KeyCode::Esc));
    assert!(harness.app.lookup_id.is_none(), "Esc goes back to the list");
}

#[test]
fn keys_of_an_organization_are_listed_and_x_revokes_after_y() {
    let mut harness = on_tab(Tab::Organizations);
    let Action::Fetch(requests) = harness.press(char_key('K')) else { panic!("expected a fetch") };
    let organization_id = harness.app.organization_rows()[0].id.clone();
    assert_eq!(
        requests,
        vec![Request::Keys { stack: StackName::Live, organization_id: organization_id.clone() }]
    );
    let Some(Detail::Keys { keys, .. }) = &harness.app.detail else { panic!("no keys view") };
    assert_eq!(keys.data.as_ref().map(Vec::len), Some(2));
    harness.press(char_key('x'));
    let confirm = harness.app.confirm.clone().expect("a question first");
    assert!(confirm.prompt.contains(common::CI_KEY), "{}", confirm.prompt);
    assert!(harness.client.calls.lock().unwrap().is_empty(), "nothing sent before y");
    harness.press(char_key('y'));
    assert_eq!(
        *harness.client.calls.lock().unwrap(),
        vec![format!("revoke live {organization_id} {}", common::CI_KEY)]
    );
    let flash = harness.app.flash.clone().expect("a message");
    assert!(flash.text.contains("revoked") && !flash.error, "{flash:?}");
    let Some(Detail::Keys { keys, .. }) = &harness.app.detail else { panic!("no keys view") };
    let revoked = keys.data.as_ref().unwrap().iter().find(|k| k.id == common::CI_KEY).unwrap();
    assert!(revoked.revoked_at.is_some(), "the list was reloaded");
    // A revoked key is refused without asking.
    harness.press(char_key('x'));
    assert!(harness.app.confirm.is_none());
    assert!(harness.app.flash.as_ref().unwrap().error);
}

#[test]
fn r_on_activity_reconciles_once_and_only_again_when_asked() {
    let mut harness = on_tab(Tab::Activity);
    harness.client.calls.lock().unwrap().clear();
    harness.press(char_key('R'));
    let Some(Detail::Reconciliation { data, .. }) = &harness.app.detail else { panic!("open") };
    let found = data.data.as_ref().expect("answered");
    assert_eq!((found.matched, found.missing_at_provider.len(), found.mismatched.len()), (41, 1, 1));
    let asked = |harness: &Harness| {
        harness.client.calls.lock().unwrap().iter().filter(|c| c.starts_with("reconciliation")).count()
    };
    assert_eq!(asked(&harness), 1);
    // The tab's timer refreshes the lists, never the reconciliation: it
    // reads every page the provider lists.
    harness.advance(Duration::from_secs(30));
    assert_eq!(asked(&harness), 1);
    harness.press(char_key('r'));
    assert_eq!(asked(&harness), 2, "r asks again");
    harness.press(key(KeyCode::Esc));
    assert!(harness.app.detail.is_none());
    // Elsewhere R does nothing.
    let mut harness = on_tab(Tab::Overview);
    harness.press(char_key('R'));
    assert!(harness.app.detail.is_none());
}
