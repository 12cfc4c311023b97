//! The search across the node: `/` on any tab but Activity and Requests
//! looks a text up in every organization's payouts, collections, orders,
//! payment pages and links (`GET /admin/v1/search`); Enter on a payout,
//! collection or order opens its timeline.

use super::{Action, App, Detail, Flash, Remote};
use crate::api::{MovementKind, SearchKind, SearchResults};

impl App {
    /// Opens the results of a search for `text`.
    pub(super) fn search_node(&mut self, text: Option<String>) -> Action {
        let Some(query) = text else { return Action::None };
        let detail =
            Detail::Search { query, results: Remote { loading: true, ..Remote::default() }, selected: 0 };
        let request = detail.request();
        self.detail = Some(detail);
        Action::Fetch(vec![request])
    }

    /// Enter on a search hit: a payout, collection or order opens its
    /// timeline; pages and links have none to show.
    pub(super) fn open_search_hit(&mut self) -> Action {
        let Some(Detail::Search { results, selected, .. }) = &self.detail else { return Action::None };
        let Some(hit) = results.data.as_ref().and_then(|r| r.data.get(*selected)) else {
            return Action::None;
        };
        let kind = match hit.kind {
            SearchKind::Payout => MovementKind::Payout,
            SearchKind::Collection => MovementKind::Collection,
            SearchKind::Order => MovementKind::Order,
            SearchKind::PaymentPage | SearchKind::PaymentLink => {
                self.flash =
                    Some(Flash { text: format!("{} has no timeline to open", hit.id), error: false });
                return Action::None;
            }
        };
        let detail = Detail::Movement {
            stack: hit.stack,
            kind,
            id: hit.id.clone(),
            data: Remote { loading: true, ..Remote::default() },
            selected: 0,
        };
        let request = detail.request();
        self.detail = Some(detail);
        Action::Fetch(vec![request])
    }
}

/// The rows of a search's results, for the selection.
pub(super) fn hit_count(results: &Remote<SearchResults>) -> usize {
    results.data.as_ref().map_or(0, |r| r.data.len())
}
