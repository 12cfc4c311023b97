//! CSV exports: the period they cover (`range`), their columns read from
//! the wire type (`columns`), the streaming writer every export shares
//! (`csv_export`: `csv` over any page-producing closure, `stored_pages`
//! for a stored list), and the exports of the lists (`lists`).

mod columns;
pub(crate) mod csv_export;
mod lists;
pub(crate) mod range;

pub(crate) use csv_export::CsvExport;
pub(crate) use lists::{balance_transactions, collections, payouts, refunds};
