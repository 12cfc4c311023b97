//! Records the server owns, stored as engine documents (postcard). One
//! place encodes, decodes and loads them.

use serde::Serialize;
use serde::de::DeserializeOwned;
use sika_engine::{Document, EngineError, Snapshot};

/// Encodes a record. Postcard cannot fail on the node's own plain structs.
pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_stdvec(value).expect("API records encode")
}

/// Decodes a stored record; bytes that do not decode are an internal error.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, EngineError> {
    postcard::from_bytes(bytes)
        .map_err(|e| EngineError::Corrupt(format!("a stored document does not decode: {e}")))
}

/// The record `id` of `collection`, if stored.
pub(crate) fn load<T: DeserializeOwned>(
    snapshot: &Snapshot,
    collection: &str,
    id: &str,
) -> Result<Option<T>, EngineError> {
    snapshot.document(collection, id)?.map(|bytes| decode(&bytes)).transpose()
}

/// A document for `Command::PutDocuments` / `Save`; `list` is
/// (organization, kind) to index it under when new.
pub(crate) fn document<T: Serialize>(
    collection: &str,
    id: &str,
    value: &T,
    list: Option<(&str, &str)>,
) -> Document {
    Document {
        collection: collection.to_string(),
        id: id.to_string(),
        body: encode(value),
        list: list.map(|(o, k)| (o.to_string(), k.to_string())),
    }
}
