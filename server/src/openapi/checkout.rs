//! The checkout part of the OpenAPI document.

use serde_json::Value;

#[allow(unused_imports)]
use super::{Operation, amount, amount_input, envelope, list, nullable_string, object, reference, string};

pub(super) const OPERATIONS: &[Operation] = &[];

pub(super) fn schemas(_add: &mut impl FnMut(&str, Value)) {}
