//! The node's own books on the Accounts tab: `o` swaps the organizations'
//! balance accounts for the system accounts (fee revenue, FX desk, rail
//! clearing, the outside world), and Enter opens an account's journal
//! entries, a page at a time.

use crossterm::event::{KeyCode, KeyEvent};

use super::{Action, App, Detail, Flash, Remote, Tab, clamp};
use crate::api::{ClientError, LedgerEntries, SystemAccount};
use crate::fetch::{Payload, Request};

/// Entries fetched per page of an account's journal.
pub const LEDGER_PAGE_LIMIT: usize = 50;

/// The open account's pages: the cursor of the one on screen and of those
/// before it, for `p`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pages {
    pub cursor: Option<String>,
    pub previous: Vec<Option<String>>,
}

impl App {
    pub fn system_account_rows(&self) -> &[SystemAccount] {
        self.system_accounts.data.as_deref().unwrap_or(&[])
    }

    /// Keys of the Accounts tab's system accounts and of an open account's
    /// entries; `None` leaves the key to the common handling.
    pub(super) fn handle_ledger_key(&mut self, key: KeyEvent) -> Option<Action> {
        match (&self.detail, key.code) {
            (None, KeyCode::Char('o')) => {
                self.show_system_accounts = !self.show_system_accounts;
                self.accounts_selected = 0;
                Some(Action::Fetch(self.tab_requests()))
            }
            (None, KeyCode::Enter) => Some(self.open_ledger_account()),
            (Some(Detail::LedgerAccount { .. }), KeyCode::Char(c @ ('n' | 'p'))) => {
                Some(self.turn_ledger_page(c == 'n'))
            }
            _ => None,
        }
    }

    fn open_ledger_account(&mut self) -> Action {
        let id = if self.show_system_accounts {
            self.system_account_rows().get(self.accounts_selected).map(|a| a.id.clone())
        } else {
            self.account_rows().get(self.accounts_selected).map(|a| a.item.id.clone())
        };
        let Some(id) = id else { return Action::None };
        let detail = Detail::LedgerAccount {
            stack: self.stack,
            id,
            pages: Pages::default(),
            entries: Remote { loading: true, ..Remote::default() },
            selected: 0,
        };
        let request = detail.request();
        self.detail = Some(detail);
        Action::Fetch(vec![request])
    }

    fn turn_ledger_page(&mut self, older: bool) -> Action {
        let Some(Detail::LedgerAccount { pages, entries, selected, .. }) = &mut self.detail else {
            return Action::None;
        };
        if older {
            let Some(next) = entries.data.as_ref().and_then(|p| p.next_cursor.clone()) else {
                self.flash = Some(Flash { text: "no older entries".into(), error: false });
                return Action::None;
            };
            pages.previous.push(pages.cursor.replace(next));
        } else {
            let Some(previous) = pages.previous.pop() else {
                self.flash = Some(Flash { text: "this is the newest page".into(), error: false });
                return Action::None;
            };
            pages.cursor = previous;
        }
        *entries = Remote { loading: true, ..Remote::default() };
        *selected = 0;
        let request = self.detail.as_ref().map(Detail::request);
        Action::Fetch(request.into_iter().collect())
    }

    /// Takes the system accounts out of `payload`, leaving any other answer.
    pub(super) fn apply_ledger(&mut self, request: &Request, payload: &mut Option<Payload>) {
        let Some(taken) = payload.take() else { return };
        match (request, taken) {
            (Request::SystemAccounts(stack), Payload::SystemAccounts(rows)) => {
                if *stack == self.stack {
                    self.system_accounts.finish(rows);
                    if self.show_system_accounts && self.tab == Tab::Accounts {
                        self.accounts_selected =
                            clamp(self.accounts_selected, self.system_account_rows().len());
                    }
                }
            }
            (_, other) => *payload = Some(other),
        }
    }

    pub(super) fn apply_ledger_error(&mut self, request: &Request, error: &ClientError) -> bool {
        match request {
            Request::SystemAccounts(stack) => {
                if *stack == self.stack {
                    self.system_accounts.fail(error);
                }
                true
            }
            _ => false,
        }
    }
}

/// The rows of an entries page, for the selection.
pub(super) fn entry_count(entries: &Remote<LedgerEntries>) -> usize {
    entries.data.as_ref().map_or(0, |p| p.data.len())
}
