//! The Organizations and Audit tabs: their keys and what their answers
//! change. Organizations are also where every other tab finds the name it
//! shows for an organization id.

use crossterm::event::{KeyCode, KeyEvent};

use super::form::Form;
use super::{Action, App, Confirm, Detail, Flash, Remote, Tab, clamp};
use crate::api::{
    ClientError, CreatedOrganization, Invitation, Organization, OrganizationStatus, ReissuedInvitation,
};
use crate::fetch::{Payload, Request};

/// Rows fetched per page of the audit log.
pub const AUDIT_PAGE_LIMIT: usize = 50;
/// Emails of the outbox shown under the audit log.
pub const EMAILS_SHOWN: usize = 20;

/// Text the operator must read before it goes (an invitation token is
/// shown once): only Enter or Esc closes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub title: String,
    pub lines: Vec<String>,
}

impl App {
    pub fn organization_rows(&self) -> &[Organization] {
        self.organizations.data.as_deref().unwrap_or(&[])
    }

    /// The organization's name, or its id while the names are not loaded
    /// (or for an organization created since).
    pub fn organization_name<'a>(&'a self, id: &'a str) -> &'a str {
        self.organization_rows().iter().find(|o| o.id == id).map_or(id, |o| o.name.as_str())
    }

    pub fn audit_rows(&self) -> &[crate::api::AuditEntry] {
        self.audit.data.as_ref().map_or(&[], |p| p.data.as_slice())
    }

    /// The page of the audit log on screen, counted from 1 (newest).
    pub fn audit_page_number(&self) -> usize {
        self.audit_previous.len() + 1
    }

    fn selected_organization(&self) -> Option<&Organization> {
        self.organization_rows().get(self.organizations_selected)
    }

    /// Keys only the Organizations and Audit tabs know; `None` leaves the
    /// key to the common handling.
    pub(super) fn handle_tab_key(&mut self, key: KeyEvent) -> Option<Action> {
        if self.tab == Tab::Accounts {
            return self.handle_ledger_key(key);
        }
        if matches!(self.detail, Some(Detail::Dispute { .. })) {
            return self.handle_dispute_key(key);
        }
        match (self.tab, &self.detail, key.code) {
            (Tab::Organizations, None, KeyCode::Enter) => Some(self.open_organization()),
            (Tab::Organizations, None, KeyCode::Char('n')) => {
                self.form = Some(Form::create_organization());
                Some(Action::None)
            }
            (Tab::Organizations, None, KeyCode::Char('e')) => {
                if let Some(org) = self.selected_organization() {
                    self.form = Some(Form::rename_organization(&org.id, &org.name));
                }
                Some(Action::None)
            }
            (Tab::Organizations, None, KeyCode::Char(c @ ('x' | 'a'))) => {
                self.ask_suspend(c == 'x');
                Some(Action::None)
            }
            (Tab::Organizations, None | Some(Detail::Organization { .. }), KeyCode::Char('K')) => {
                Some(self.open_keys())
            }
            (Tab::Organizations, Some(Detail::Keys { .. }), KeyCode::Char('x')) => {
                self.ask_revoke();
                Some(Action::None)
            }
            (Tab::Organizations, Some(Detail::Organization { .. }), KeyCode::Char('i')) => {
                self.ask_invitation();
                Some(Action::None)
            }
            (Tab::Audit, None, KeyCode::Char('n')) => Some(self.audit_next_page()),
            (Tab::Audit, None, KeyCode::Char('p')) => Some(self.audit_previous_page()),
            _ => None,
        }
    }

    fn open_organization(&mut self) -> Action {
        let Some(organization) = self.selected_organization().cloned() else { return Action::None };
        let detail = Detail::Organization {
            organization,
            members: Remote { loading: true, ..Remote::default() },
            selected: 0,
        };
        let request = detail.request();
        self.detail = Some(detail);
        Action::Fetch(vec![request])
    }

    fn ask_suspend(&mut self, suspend: bool) {
        let Some(org) = self.selected_organization() else {
            self.flash = Some(Flash { text: "no organization selected".into(), error: true });
            return;
        };
        let suspended = org.status == OrganizationStatus::Suspended;
        if suspended == suspend {
            let state = if suspended { "suspended" } else { "active" };
            self.flash = Some(Flash { text: format!("{} is already {state}", org.name), error: true });
            return;
        }
        let prompt = if suspend {
            format!(
                "Suspend {} ({})? Its API keys and sessions are refused until it is reinstated.",
                org.name, org.id
            )
        } else {
            format!("Reinstate {} ({})? Its API keys work again.", org.name, org.id)
        };
        let request = Request::SetSuspended { id: org.id.clone(), suspended: suspend };
        self.confirm = Some(Confirm { prompt, request });
    }

    fn ask_invitation(&mut self) {
        let Some(Detail::Organization { organization, members, selected }) = &self.detail else { return };
        let Some(member) = members.data.as_ref().and_then(|m| m.get(*selected)) else {
            self.flash = Some(Flash { text: "no member selected".into(), error: true });
            return;
        };
        self.confirm = Some(Confirm {
            prompt: format!(
                "Issue {} ({}) of {} a new invitation? Earlier invitations stop working; accepting it sets a new password.",
                member.name, member.email, organization.name
            ),
            request: Request::ReissueInvitation {
                organization_id: organization.id.clone(),
                member_id: member.id.clone(),
            },
        });
    }

    fn audit_next_page(&mut self) -> Action {
        let Some(next) = self.audit.data.as_ref().and_then(|p| p.next_cursor.clone()) else {
            self.flash = Some(Flash { text: "this is the oldest page".into(), error: false });
            return Action::None;
        };
        self.audit_previous.push(self.audit_cursor.take());
        self.audit_cursor = Some(next);
        self.audit = Remote::default();
        self.audit_selected = 0;
        Action::Fetch(self.tab_requests())
    }

    fn audit_previous_page(&mut self) -> Action {
        let Some(previous) = self.audit_previous.pop() else {
            self.flash = Some(Flash { text: "this is the newest page".into(), error: false });
            return Action::None;
        };
        self.audit_cursor = previous;
        self.audit = Remote::default();
        self.audit_selected = 0;
        Action::Fetch(self.tab_requests())
    }

    /// Takes an answer of the Organizations or Audit tab out of `payload`,
    /// returning what to fetch next; any other answer is left there.
    pub(super) fn apply_organizations(
        &mut self,
        request: &Request,
        payload: &mut Option<Payload>,
    ) -> Option<Vec<Request>> {
        let taken = payload.take()?;
        match (request, taken) {
            (Request::Organizations, Payload::Organizations(rows)) => {
                self.organizations.finish(rows);
                self.organizations_selected =
                    clamp(self.organizations_selected, self.organization_rows().len());
            }
            (Request::Audit { cursor }, Payload::Audit(page)) if *cursor == self.audit_cursor => {
                self.audit.finish(page);
                self.audit_selected = clamp(self.audit_selected, self.audit_rows().len());
            }
            (Request::Audit { .. }, Payload::Audit(_)) => {}
            (Request::Emails, Payload::Emails(page)) => self.emails.finish(page),
            (Request::CreateOrganization(_), Payload::Created(created)) => {
                self.form = None;
                self.notice = Some(created_notice(&created));
                return Some(self.tab_requests());
            }
            (
                Request::RenameOrganization { .. } | Request::SetSuspended { .. },
                Payload::Organization(org),
            ) => {
                self.form = None;
                self.flash = Some(Flash {
                    text: format!("{} ({}) is now {}", org.name, org.id, crate::api::wire_name(&org.status)),
                    error: false,
                });
                return Some(self.tab_requests());
            }
            (Request::ReissueInvitation { .. }, Payload::Invitation(reissued)) => {
                self.notice = Some(reissued_notice(&reissued));
                return Some(self.tab_requests());
            }
            (_, other) => {
                *payload = Some(other);
                return None;
            }
        }
        Some(Vec::new())
    }

    /// Takes in a failure of the Organizations or Audit tab's requests;
    /// `true` when it was one of theirs and needs nothing more.
    pub(super) fn apply_organizations_error(&mut self, request: &Request, error: &ClientError) -> bool {
        match request {
            Request::Organizations => self.organizations.fail(error),
            Request::Audit { cursor } if *cursor == self.audit_cursor => self.audit.fail(error),
            Request::Audit { .. } => {}
            _ if self.is_form_request(request) => {
                if let Some(form) = &mut self.form {
                    form.submitting = false;
                    form.error = Some(error.to_string());
                }
            }
            _ => return false,
        }
        true
    }
}

fn invitation_lines(invitation: &Invitation) -> Vec<String> {
    vec![
        format!("Invitation token: {}", invitation.token),
        format!("Expires: {}", crate::view::format::time(&invitation.expires_at)),
        String::new(),
        "It is shown once: give it to the member, who sets a password with it".into(),
        "at POST /v1/sessions {\"invitation\": …, \"password\": …}.".into(),
    ]
}

fn created_notice(created: &CreatedOrganization) -> Notice {
    let org = &created.organization;
    let mut lines = vec![format!("Created {} ({}).", org.name, org.id), String::new()];
    lines.extend(invitation_lines(&created.invitation));
    Notice { title: "Organization created".into(), lines }
}

fn reissued_notice(reissued: &ReissuedInvitation) -> Notice {
    let member = &reissued.member;
    let mut lines = vec![format!("New invitation for {} ({}).", member.name, member.email), String::new()];
    lines.extend(invitation_lines(&reissued.invitation));
    Notice { title: "Invitation issued".into(), lines }
}
