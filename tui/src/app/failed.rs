//! The Requests tab: the stack's recent failed requests, filtered by `/`
//! (any part of the id, route, status, error code, organization or
//! address, as every search of the console matches), and one request's log
//! entry with its bodies, opened with Enter or looked up by a full id that
//! no failed request holds (a request that succeeded).

use super::{Action, App, Remote, clamp};
use crate::api::FailedRequest;

impl App {
    /// The failed requests the Requests tab lists: those holding its
    /// search, newest first.
    pub fn failed_request_rows(&self) -> Vec<&FailedRequest> {
        let rows = self.failed_requests.data.iter().flatten();
        let Some(query) = self.requests_query.as_deref().map(str::to_lowercase) else {
            return rows.collect();
        };
        rows.filter(|r| self.failed_request_text(r).contains(&query)).collect()
    }

    /// Everything a search of a failed request looks in, in lower case.
    fn failed_request_text(&self, request: &FailedRequest) -> String {
        let organization = request.organization_id.as_deref().unwrap_or_default();
        [
            request.id.as_str(),
            request.method.as_str(),
            request.route.as_str(),
            &request.status.to_string(),
            request.error.as_deref().unwrap_or_default(),
            organization,
            self.organization_name(organization),
            request.client_address.as_deref().unwrap_or_default(),
        ]
        .join("\n")
        .to_lowercase()
    }

    /// `/` on the Requests tab: lists the failed requests holding `query`;
    /// a request id none of them holds is looked up in the request log.
    pub(super) fn search_requests(&mut self, query: Option<String>) {
        self.requests_query = query.clone();
        self.failed_requests_selected = 0;
        let unlisted = self.failed_request_rows().is_empty();
        self.lookup_id = query.filter(|q| unlisted && q.starts_with("req_"));
        self.lookup = Remote::default();
        self.lookup_scroll = 0;
    }

    /// Enter on a failed request: its log entry.
    pub(super) fn open_failed_request(&mut self) -> Action {
        let Some(id) = self.failed_request_rows().get(self.failed_requests_selected).map(|r| r.id.clone())
        else {
            return Action::None;
        };
        self.lookup_id = Some(id.clone());
        self.lookup = Remote { loading: true, ..Remote::default() };
        self.lookup_scroll = 0;
        Action::Fetch(vec![crate::fetch::Request::Lookup(id)])
    }

    /// Esc on the Requests tab: closes the entry, then clears the search.
    pub(super) fn back_from_requests(&mut self) -> bool {
        if self.lookup_id.take().is_some() {
            self.lookup = Remote::default();
            self.lookup_scroll = 0;
            return true;
        }
        if self.requests_query.take().is_some() {
            self.failed_requests_selected = 0;
            return true;
        }
        false
    }

    pub(super) fn finish_failed_requests(&mut self, rows: Vec<FailedRequest>) {
        self.failed_requests.finish(rows);
        self.failed_requests_selected =
            clamp(self.failed_requests_selected, self.failed_request_rows().len());
    }
}
