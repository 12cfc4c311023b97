//! `/v1/capabilities`: the payment methods of each country, from the
//! catalog shipped with the node with the operator's per-stack overrides,
//! each shown with its status now (the breaker's while its provider keeps
//! failing).

use sika_api::capabilities::Method;
use sika_api::{ListPage, ListQuery};

use crate::domain::catalog::{self, Catalog};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::pagination::page_of_items;
use crate::domain::rails::Rails;
use crate::domain::stack_kind::StackKind;

/// What answering for one stack's methods needs.
pub(crate) struct Deps<'a> {
    pub catalog: &'a Catalog,
    /// The breakers of the providers methods are routed through.
    pub rails: &'a Rails,
    pub stack: StackKind,
    /// What list cursors are signed with.
    pub secret: Vec<u8>,
}

/// `GET /v1/capabilities/{country}`: one page of the country's methods.
pub(crate) fn country(deps: &Deps, country: &str, query: &ListQuery) -> ApiResult<ListPage<Method>> {
    let methods = deps.catalog.methods_for(country).ok_or_else(|| {
        ApiError::not_found(format!("no payment methods are known for country '{country}'"))
    })?;
    let data = methods.into_iter().map(|m| rendered(deps.rails, m)).collect();
    let scope = format!("{}/capabilities/{}", deps.stack.name(), country.to_ascii_uppercase());
    page_of_items(data, query, &deps.secret, &scope)
}

/// `GET /v1/capabilities/{country}/{code}`: one method of a country.
pub(crate) fn method(deps: &Deps, country: &str, code: &str) -> ApiResult<Method> {
    let method = deps
        .catalog
        .method(country, code)
        .ok_or_else(|| ApiError::not_found(format!("method '{code}' is not available in '{country}'")))?;
    Ok(rendered(deps.rails, method))
}

fn rendered(rails: &Rails, method: &catalog::Method) -> Method {
    let mut shown = method.render();
    shown.status = rails.status(&method.code, method.status);
    shown
}
