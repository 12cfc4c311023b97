//! A small form in a popup: a few text fields typed in turn, submitted as
//! one [`Request`]. It stays open while the node answers, so a refusal
//! (a bad email, an empty name) is shown beside what was typed.

use crossterm::event::{KeyCode, KeyEvent};

use super::{Action, App, Flash};
use crate::api::{MovementKind, NewOrganization, Settlement, SettlementRecord, StackName};
use crate::fetch::Request;

/// Characters accepted in one field; the node's own maxima are lower.
pub const FIELD_LENGTH_MAX: usize = 255;

pub const PROVIDER_REFERENCE_LABEL: &str = "Provider reference";
pub const NOTE_LABEL: &str = "Note";

/// What a form creates or changes when it is submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormKind {
    CreateOrganization,
    RenameOrganization {
        id: String,
    },
    /// Completes or fails a pending payout or collection, with the
    /// provider's reference and a note (both optional).
    Settle {
        stack: StackName,
        kind: MovementKind,
        id: String,
        settlement: Settlement,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormField {
    pub label: &'static str,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    pub title: String,
    /// What submitting does, shown above the fields.
    pub intro: Option<String>,
    pub kind: FormKind,
    pub fields: Vec<FormField>,
    /// The field being typed in.
    pub focus: usize,
    /// Sent and not answered yet: keys wait.
    pub submitting: bool,
    /// The node's refusal of the last submission.
    pub error: Option<String>,
}

impl Form {
    pub fn create_organization() -> Form {
        Form::new(
            "New organization".into(),
            FormKind::CreateOrganization,
            &[("Name", ""), ("Owner email", ""), ("Owner name", "")],
        )
    }

    pub fn rename_organization(id: &str, name: &str) -> Form {
        Form::new(
            format!("Rename {name}"),
            FormKind::RenameOrganization { id: id.to_string() },
            &[("Name", name)],
        )
    }

    /// The settle form of a pending payout or collection: `intro` says
    /// what settling does; the provider reference and the note may stay
    /// empty, so Enter twice settles with nothing recorded.
    pub fn settle(
        stack: StackName,
        kind: MovementKind,
        id: &str,
        settlement: Settlement,
        intro: String,
    ) -> Form {
        let verb = if settlement == Settlement::Complete { "Complete" } else { "Fail" };
        let mut form = Form::new(
            format!("{verb} {} {id}", kind.singular()),
            FormKind::Settle { stack, kind, id: id.to_string(), settlement },
            &[(PROVIDER_REFERENCE_LABEL, ""), (NOTE_LABEL, "")],
        );
        form.intro = Some(intro);
        form
    }

    fn new(title: String, kind: FormKind, fields: &[(&'static str, &str)]) -> Form {
        let fields =
            fields.iter().map(|(label, value)| FormField { label, value: value.to_string() }).collect();
        Form { title, intro: None, kind, fields, focus: 0, submitting: false, error: None }
    }

    fn value(&self, index: usize) -> String {
        self.fields.get(index).map(|f| f.value.trim().to_string()).unwrap_or_default()
    }

    /// A field's trimmed text, or `None` when it was left empty.
    fn optional(&self, index: usize) -> Option<String> {
        Some(self.value(index)).filter(|v| !v.is_empty())
    }

    /// The request the form's fields make.
    pub fn request(&self) -> Request {
        match &self.kind {
            FormKind::CreateOrganization => Request::CreateOrganization(NewOrganization {
                name: self.value(0),
                owner_email: self.value(1),
                owner_name: self.value(2),
            }),
            FormKind::RenameOrganization { id } => {
                Request::RenameOrganization { id: id.clone(), name: self.value(0) }
            }
            FormKind::Settle { stack, kind, id, settlement } => Request::Settle {
                stack: *stack,
                kind: *kind,
                id: id.clone(),
                settlement: *settlement,
                record: SettlementRecord { provider_reference: self.optional(0), note: self.optional(1) },
            },
        }
    }
}

impl App {
    pub(super) fn handle_form_key(&mut self, key: KeyEvent) -> Action {
        let Some(form) = &mut self.form else { return Action::None };
        if form.submitting {
            return Action::None;
        }
        let last = form.fields.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc => {
                self.form = None;
                self.flash = Some(Flash { text: "cancelled".into(), error: false });
            }
            KeyCode::Tab | KeyCode::Down => form.focus = (form.focus + 1).min(last),
            KeyCode::BackTab | KeyCode::Up => form.focus = form.focus.saturating_sub(1),
            KeyCode::Enter if form.focus < last => form.focus += 1,
            KeyCode::Enter => {
                form.submitting = true;
                form.error = None;
                return Action::Fetch(vec![form.request()]);
            }
            KeyCode::Backspace => {
                if let Some(field) = form.fields.get_mut(form.focus) {
                    field.value.pop();
                }
            }
            KeyCode::Char(c) if !c.is_control() => {
                if let Some(field) = form.fields.get_mut(form.focus)
                    && field.value.chars().count() < FIELD_LENGTH_MAX
                {
                    field.value.push(c);
                }
            }
            _ => {}
        }
        Action::None
    }

    /// Whether `request` is the open form's submission.
    pub(super) fn is_form_request(&self, request: &Request) -> bool {
        self.form.as_ref().is_some_and(|f| f.submitting && f.request() == *request)
    }
}
