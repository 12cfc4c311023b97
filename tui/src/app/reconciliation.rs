//! The reconciliation view: `R` on the Activity tab compares the live
//! stack's movements on the provider's rail with what the provider reports
//! for the last 24 hours (`GET /admin/v1/live/reconciliation`). It is read
//! when opened and on `r`, never on the refresh timer: the node reads every
//! page the provider lists for it.

use super::{Action, App, Detail, Remote};
use crate::api::Reconciliation;

impl App {
    /// Opens the reconciliation of the last 24 hours.
    pub(super) fn open_reconciliation(&mut self) -> Action {
        let detail =
            Detail::Reconciliation { data: Remote { loading: true, ..Remote::default() }, selected: 0 };
        let request = detail.request();
        self.detail = Some(detail);
        Action::Fetch(vec![request])
    }
}

/// The findings a reconciliation lists, for the selection: the movements
/// missing on either side, then the mismatched fields.
pub(super) fn finding_count(data: &Remote<Reconciliation>) -> usize {
    data.data
        .as_ref()
        .map_or(0, |r| r.missing_at_provider.len() + r.missing_in_sika.len() + r.mismatched.len())
}
