//! Keys: what each one changes in the state and what it asks to fetch.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{Action, App, Confirm, Detail, Flash, Form, Remote, SEARCH_LENGTH_MAX, Tab, WebhookPane, clamp};
use crate::api::{EndpointHealth, MovementKind, Settlement, other_stack};
use crate::fetch::Request;

impl App {
    /// Changes the state for one key; never blocks and does no I/O.
    pub fn handle_key(&mut self, key: KeyEvent) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        self.flash = None;
        if self.help {
            // Any key closes the help; it does nothing else.
            self.help = false;
            return Action::None;
        }
        if self.confirm.is_some() {
            return self.handle_confirm_key(key);
        }
        if self.notice.is_some() {
            if matches!(key.code, KeyCode::Enter | KeyCode::Esc) {
                self.notice = None;
            }
            return Action::None;
        }
        if self.form.is_some() {
            return self.handle_form_key(key);
        }
        if self.search.is_some() {
            return self.handle_search_key(key);
        }
        self.handle_normal_key(key)
    }

    fn handle_confirm_key(&mut self, key: KeyEvent) -> Action {
        match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => match self.confirm.take() {
                Some(confirm) => Action::Fetch(vec![confirm.request]),
                None => Action::None,
            },
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => {
                self.confirm = None;
                self.flash = Some(Flash { text: "cancelled".into(), error: false });
                Action::None
            }
            _ => Action::None,
        }
    }

    fn handle_search_key(&mut self, key: KeyEvent) -> Action {
        let Some(buffer) = &mut self.search else { return Action::None };
        match key.code {
            KeyCode::Esc => self.search = None,
            KeyCode::Backspace => {
                buffer.pop();
            }
            KeyCode::Enter => {
                let text = buffer.trim().to_string();
                self.search = None;
                return self.submit_search(text);
            }
            KeyCode::Char(c) if !c.is_control() && buffer.chars().count() < SEARCH_LENGTH_MAX => {
                buffer.push(c)
            }
            _ => {}
        }
        Action::None
    }

    fn submit_search(&mut self, text: String) -> Action {
        let query = if text.is_empty() { None } else { Some(text) };
        match self.tab {
            Tab::Activity => {
                self.activity_query = query;
                self.activity_selected = 0;
                self.movements = Default::default();
            }
            Tab::Requests => self.search_requests(query),
            _ => return self.search_node(query),
        }
        Action::Fetch(self.tab_requests())
    }

    fn handle_normal_key(&mut self, key: KeyEvent) -> Action {
        if let Some(action) = self.handle_tab_key(key) {
            return action;
        }
        match key.code {
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Char('?') => self.help = true,
            KeyCode::Tab => return self.set_tab(self.tab.next()),
            KeyCode::BackTab => return self.set_tab(self.tab.previous()),
            KeyCode::Char(c @ '1'..='9') => return self.set_tab(Tab::ALL[(c as usize) - ('1' as usize)]),
            KeyCode::Char('r') => {
                let mut requests = vec![Request::Status];
                requests.extend(self.tab_requests());
                requests.dedup();
                return Action::Fetch(requests);
            }
            KeyCode::Char('s') => return self.toggle_stack(),
            KeyCode::Char('/') => self.open_search(),
            KeyCode::Esc => return self.back(),
            KeyCode::Enter => return self.open_detail(),
            KeyCode::Up | KeyCode::Char('k') => self.move_selection(-1),
            KeyCode::Down | KeyCode::Char('j') => self.move_selection(1),
            KeyCode::PageUp => self.move_selection(-10),
            KeyCode::PageDown => self.move_selection(10),
            KeyCode::Home | KeyCode::Char('g') => self.move_selection(isize::MIN),
            KeyCode::End | KeyCode::Char('G') => self.move_selection(isize::MAX),
            KeyCode::Left | KeyCode::Char('h') => self.set_pane(WebhookPane::Endpoints),
            KeyCode::Right | KeyCode::Char('l') => self.set_pane(WebhookPane::Deliveries),
            KeyCode::Char('R') if self.tab == Tab::Activity && self.detail.is_none() => {
                return self.open_reconciliation();
            }
            KeyCode::Char('F') if self.tab == Tab::Activity && self.detail.is_none() => {
                self.activity_status = self.activity_status.next();
                self.activity_selected = 0;
                self.movements = Default::default();
                return Action::Fetch(self.tab_requests());
            }
            KeyCode::Char(c @ ('c' | 'f')) => self.ask_settle(c),
            KeyCode::Char('t') => self.ask_retry(),
            KeyCode::Char('e') => self.ask_enable(),
            KeyCode::Char('v') if self.tab == Tab::Accounts => {
                let stack = self.stack;
                self.confirm = Some(Confirm {
                    prompt: format!(
                        "Run verify on the {} ledger? It re-reads the whole journal.",
                        stack.as_str()
                    ),
                    request: Request::Verify(stack),
                });
            }
            _ => {}
        }
        Action::None
    }

    fn set_tab(&mut self, tab: Tab) -> Action {
        self.tab = tab;
        self.detail = None;
        Action::Fetch(self.tab_requests())
    }

    fn toggle_stack(&mut self) -> Action {
        self.stack = other_stack(self.stack);
        self.detail = None;
        self.rates = Remote::default();
        self.movements = Default::default();
        self.disputes = Remote::default();
        self.system_accounts = Remote::default();
        self.endpoints = Remote::default();
        self.failed_deliveries = Remote::default();
        self.pending_deliveries = Remote::default();
        self.failed_requests = Remote::default();
        self.failed_requests_selected = 0;
        self.accounts_selected = 0;
        self.rates_selected = 0;
        self.activity_selected = 0;
        self.disputes_selected = 0;
        self.endpoints_selected = 0;
        self.deliveries_selected = 0;
        Action::Fetch(self.tab_requests())
    }

    fn open_search(&mut self) {
        match self.tab {
            Tab::Activity => {
                self.detail = None;
                self.search = Some(self.activity_query.clone().unwrap_or_default());
            }
            Tab::Requests => self.search = Some(self.requests_query.clone().unwrap_or_default()),
            _ => {
                self.detail = None;
                self.search = Some(String::new());
            }
        }
    }

    /// Closes the detail; on the Activity list, clears the search.
    fn back(&mut self) -> Action {
        if self.detail.take().is_some() {
            return Action::None;
        }
        if self.tab == Tab::Requests {
            self.back_from_requests();
            return Action::None;
        }
        if self.tab != Tab::Activity || self.activity_query.is_none() {
            return Action::None;
        }
        self.flash = Some(Flash { text: "search cleared".into(), error: false });
        self.activity_query = None;
        self.movements = Default::default();
        self.activity_selected = 0;
        Action::Fetch(self.tab_requests())
    }

    fn set_pane(&mut self, pane: WebhookPane) {
        if self.tab == Tab::Webhooks && self.detail.is_none() {
            self.webhook_pane = pane;
        }
    }

    /// The length of the list the arrow keys move through on this tab.
    fn list_len(&self) -> usize {
        match self.tab {
            Tab::Overview => 0,
            Tab::Accounts if self.show_system_accounts => self.system_account_rows().len(),
            Tab::Accounts => self.account_rows().len(),
            Tab::Rates => self.rate_rows().len(),
            Tab::Activity => self.activity_rows().len(),
            Tab::Disputes => self.dispute_rows().len(),
            Tab::Webhooks => match self.webhook_pane {
                WebhookPane::Endpoints => self.endpoint_rows().len(),
                WebhookPane::Deliveries => self.failing_deliveries().len(),
            },
            Tab::Requests if self.lookup_id.is_some() => self.lookup_line_count(),
            Tab::Requests => self.failed_request_rows().len(),
            Tab::Organizations => self.organization_rows().len(),
            Tab::Audit => self.audit_rows().len(),
        }
    }

    fn list_selection_mut(&mut self) -> &mut usize {
        match self.tab {
            Tab::Overview | Tab::Accounts => &mut self.accounts_selected,
            Tab::Rates => &mut self.rates_selected,
            Tab::Activity => &mut self.activity_selected,
            Tab::Disputes => &mut self.disputes_selected,
            Tab::Webhooks => match self.webhook_pane {
                WebhookPane::Endpoints => &mut self.endpoints_selected,
                WebhookPane::Deliveries => &mut self.deliveries_selected,
            },
            Tab::Requests if self.lookup_id.is_some() => &mut self.lookup_scroll,
            Tab::Requests => &mut self.failed_requests_selected,
            Tab::Organizations => &mut self.organizations_selected,
            Tab::Audit => &mut self.audit_selected,
        }
    }

    /// Moves the selection of the open detail, else of the tab's list, and
    /// keeps it inside the list.
    fn move_selection(&mut self, delta: isize) {
        if let Some(detail) = &mut self.detail {
            let len = detail.len();
            let selected = detail.selected_mut();
            *selected = clamp(selected.saturating_add_signed(delta), len);
            return;
        }
        let len = self.list_len();
        let selected = self.list_selection_mut();
        *selected = clamp(selected.saturating_add_signed(delta), len);
    }

    fn open_detail(&mut self) -> Action {
        if matches!(self.detail, Some(Detail::Search { .. })) {
            return self.open_search_hit();
        }
        if self.detail.is_some() {
            return Action::None;
        }
        if self.tab == Tab::Requests && self.lookup_id.is_none() {
            return self.open_failed_request();
        }
        let stack = self.stack;
        let detail = match self.tab {
            Tab::Activity => self.activity_rows().get(self.activity_selected).map(|m| Detail::Movement {
                stack,
                kind: m.kind(),
                id: m.id().to_string(),
                data: Remote::with((*m).clone()),
                selected: 0,
            }),
            Tab::Disputes => self.dispute_rows().get(self.disputes_selected).map(|d| Detail::Dispute {
                stack,
                id: d.item.id.clone(),
                data: Remote::with(d.clone()),
                selected: 0,
            }),
            Tab::Webhooks => self.selected_endpoint().map(|health| Detail::Endpoint {
                stack,
                health: health.clone(),
                attempts: Remote { loading: true, ..Remote::default() },
                selected: 0,
            }),
            _ => None,
        };
        let Some(detail) = detail else { return Action::None };
        let request = detail.request();
        self.detail = Some(detail);
        Action::Fetch(vec![request])
    }

    /// The endpoint under the selection: the selected row, or the endpoint
    /// of the selected failing delivery.
    fn selected_endpoint(&self) -> Option<&EndpointHealth> {
        match self.webhook_pane {
            WebhookPane::Endpoints => self.endpoint_rows().get(self.endpoints_selected),
            WebhookPane::Deliveries => {
                let delivery = self.failing_deliveries().get(self.deliveries_selected).copied()?;
                self.endpoint_rows().iter().find(|e| e.endpoint.id == delivery.item.endpoint_id)
            }
        }
    }

    fn ask_settle(&mut self, key: char) {
        let Some(Detail::Movement { stack, kind, id, data, .. }) = &self.detail else { return };
        let Some(movement) = &data.data else { return };
        if !movement.awaits_settlement() {
            self.flash = Some(Flash {
                text: format!(
                    "only a pending payout, collection or refund can be settled; this is {}",
                    movement.status()
                ),
                error: true,
            });
            return;
        }
        let (settlement, consequence) = match (key, kind) {
            ('c', MovementKind::Refund) => {
                (Settlement::Complete, "The money is confirmed as returned to the payer; the hold is taken")
            }
            ('c', _) => (Settlement::Complete, "The money is confirmed as moved"),
            (_, MovementKind::Payout | MovementKind::Refund) => {
                (Settlement::Fail, "The held funds return to the merchant")
            }
            _ => (Settlement::Fail, "No money is credited"),
        };
        let (amount, currency) = movement.amount();
        let intro = format!(
            "{} {} {id} ({amount} {currency}) on {}? {consequence}. The provider's reference and a note \
             (optional) go on its timeline and into the audit log.",
            if settlement == Settlement::Complete { "Complete" } else { "Fail" },
            kind.singular(),
            stack.as_str(),
        );
        self.form = Some(Form::settle(*stack, *kind, id, settlement, intro));
    }

    fn ask_retry(&mut self) {
        let stack = self.stack;
        let delivery_id = match &self.detail {
            Some(Detail::Endpoint { attempts, selected, .. }) => {
                attempts.data.as_ref().and_then(|a| a.get(*selected)).map(|a| a.delivery_id.clone())
            }
            None if self.tab == Tab::Webhooks => {
                self.failing_deliveries().get(self.deliveries_selected).map(|d| d.item.id.clone())
            }
            _ => return,
        };
        let Some(delivery_id) = delivery_id else {
            self.flash = Some(Flash { text: "no failing delivery selected".into(), error: true });
            return;
        };
        self.confirm = Some(Confirm {
            prompt: format!("Retry delivery {delivery_id} on {} now?", stack.as_str()),
            request: Request::RetryDelivery { stack, delivery_id },
        });
    }

    fn ask_enable(&mut self) {
        let stack = self.stack;
        let health = match &self.detail {
            Some(Detail::Endpoint { health, .. }) => Some(health),
            None if self.tab == Tab::Webhooks => self.selected_endpoint(),
            _ => return,
        };
        let Some(EndpointHealth { endpoint, .. }) = health else {
            self.flash = Some(Flash { text: "no endpoint selected".into(), error: true });
            return;
        };
        self.confirm = Some(Confirm {
            prompt: format!("Re-enable endpoint {} ({}) on {}?", endpoint.url, endpoint.id, stack.as_str()),
            request: Request::EnableEndpoint { stack, endpoint_id: endpoint.id.clone() },
        });
    }
}
