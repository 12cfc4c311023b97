//! An organization's API keys on a stack, from the Organizations tab: `K`
//! on an organization (or in its members) lists them, `x` revokes the
//! selected one through the admin API after a y/n question, so a leaked
//! key is stopped without waiting for the merchant.

use super::{Action, App, Confirm, Detail, Flash, Remote};
use crate::fetch::Request;

impl App {
    /// Opens the keys of the organization under the selection (or the one
    /// whose members are open) on the selected stack.
    pub(super) fn open_keys(&mut self) -> Action {
        let organization = match &self.detail {
            Some(Detail::Organization { organization, .. }) => Some(organization.clone()),
            None => self.organization_rows().get(self.organizations_selected).cloned(),
            _ => None,
        };
        let Some(organization) = organization else {
            self.flash = Some(Flash { text: "no organization selected".into(), error: true });
            return Action::None;
        };
        let detail = Detail::Keys {
            stack: self.stack,
            organization,
            keys: Remote { loading: true, ..Remote::default() },
            selected: 0,
        };
        let request = detail.request();
        self.detail = Some(detail);
        Action::Fetch(vec![request])
    }

    /// Asks before revoking the selected key; a revoked key is refused
    /// without asking.
    pub(super) fn ask_revoke(&mut self) {
        let Some(Detail::Keys { stack, organization, keys, selected }) = &self.detail else { return };
        let Some(key) = keys.data.as_ref().and_then(|k| k.get(*selected)) else {
            self.flash = Some(Flash { text: "no key selected".into(), error: true });
            return;
        };
        if key.revoked_at.is_some() {
            self.flash = Some(Flash { text: format!("key {} is already revoked", key.id), error: true });
            return;
        }
        self.confirm = Some(Confirm {
            prompt: format!(
                "Revoke {} key \"{}\" ({}, {}…) of {}? Every request with it is refused at once.",
                stack.as_str(),
                key.name,
                key.id,
                key.hint,
                organization.name
            ),
            request: Request::RevokeKey {
                stack: *stack,
                organization_id: organization.id.clone(),
                key_id: key.id.clone(),
            },
        });
    }
}
