//! Fuzz targets, run as property tests (cargo-fuzz needs a nightly
//! compiler; CI has stable): amount parsing and write-ahead-log record
//! reading, fed arbitrary input and near-valid input (valid input with one
//! mutation). Each target checks that nothing panics, that what is written
//! reads back the same, and that what is damaged is refused.
//!
//! `SIKA_FUZZ_CASES` sets the cases per round (default 256, a short run for
//! every `cargo test`); `SIKA_FUZZ_SECONDS` keeps running rounds until that
//! many seconds have passed. Each target prints how many inputs it ran:
//!
//! ```text
//! SIKA_FUZZ_SECONDS=600 SIKA_FUZZ_CASES=10000 cargo test -p sika-engine --test fuzz amount -- --nocapture
//! ```

use std::path::Path;

#[path = "support/fuzz_runner.rs"]
mod fuzz_runner;

use fuzz_runner::fuzz;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use sika_engine::money::{AMOUNT_MINOR_MAX, CURRENCIES};
use sika_engine::wal::{OwnedChanges, read_records};
use sika_engine::{Currency, MoneyError};

// ---------------------------------------------------------------------------
// Amount parsing: `Currency::parse`, which every amount a client sends goes
// through.

/// What parsing a plain decimal (`-?digits(.digits)?`) must give, worked out
/// on the digits: `None` for any other shape.
fn plain_amount(input: &str, currency: Currency, allow_zero: bool) -> Option<Result<i128, ()>> {
    let body = input.strip_prefix('-').unwrap_or(input);
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || (body.contains('.') && !digits(fraction)) || input.len() > 64 {
        return None;
    }
    let whole = whole.trim_start_matches('0');
    // Every digit written counts, trailing zeros too ("1.000" GHS is refused).
    let written = fraction.len();
    let fraction = fraction.trim_end_matches('0');
    let zero = whole.is_empty() && fraction.is_empty();
    if (input.starts_with('-') && !zero) || (zero && !allow_zero) {
        return Some(Err(()));
    }
    if written > currency.scale as usize || whole.len() > 19 {
        return Some(Err(()));
    }
    let scaled = format!("{whole}{fraction:0<width$}", width = currency.scale as usize);
    let minor = if scaled.is_empty() { 0 } else { scaled.parse::<i128>().expect("at most 25 digits") };
    Some(if minor > AMOUNT_MINOR_MAX { Err(()) } else { Ok(minor) })
}

/// One edit of a valid amount's text.
#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, char),
    Remove(usize),
    Replace(usize, char),
    Append(String),
    Prefix(String),
}

fn apply(text: &str, edit: &Edit) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
    match edit {
        Edit::Insert(i, c) => chars.insert(at(*i, chars.len() + 1), *c),
        Edit::Remove(i) if !chars.is_empty() => {
            chars.remove(at(*i, chars.len()));
        }
        Edit::Remove(_) => {}
        Edit::Replace(i, c) if !chars.is_empty() => {
            let i = at(*i, chars.len());
            chars[i] = *c;
        }
        Edit::Replace(..) => {}
        Edit::Append(s) => chars.extend(s.chars()),
        Edit::Prefix(s) => {
            let mut prefixed: Vec<char> = s.chars().collect();
            prefixed.extend(chars);
            chars = prefixed;
        }
    }
    chars.into_iter().collect()
}

fn amount_char() -> impl Strategy<Value = char> {
    prop_oneof![
        6 => prop::sample::select(vec!['0', '1', '5', '9', '.', '-', '+', 'e', 'E', ' ']),
        1 => any::<char>(),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), amount_char()).prop_map(|(i, c)| Edit::Insert(i, c)),
        any::<usize>().prop_map(Edit::Remove),
        (any::<usize>(), amount_char()).prop_map(|(i, c)| Edit::Replace(i, c)),
        "[0.eE+-]{1,40}".prop_map(Edit::Append),
        "[0-]{1,3}".prop_map(Edit::Prefix),
    ]
}

#[derive(Debug, Clone)]
enum AmountInput {
    /// Any text at all.
    Text(String),
    /// Text made of the characters numbers are made of.
    Numberish(String),
    /// An amount the node formatted, then edited.
    Edited { minor: i128, edits: Vec<Edit> },
}

fn amount_input() -> impl Strategy<Value = (AmountInput, usize, bool)> {
    let minor = prop_oneof![
        4 => 0i128..=1_000_000,
        2 => 0i128..=AMOUNT_MINOR_MAX,
        1 => prop::sample::select(vec![0, 1, AMOUNT_MINOR_MAX - 1, AMOUNT_MINOR_MAX, AMOUNT_MINOR_MAX + 1]),
    ];
    let input = prop_oneof![
        1 => any::<String>().prop_map(AmountInput::Text),
        2 => "-?[0-9.eE+-]{0,70}".prop_map(AmountInput::Numberish),
        4 => (minor, prop::collection::vec(edit(), 0..4))
            .prop_map(|(minor, edits)| AmountInput::Edited { minor, edits }),
    ];
    (input, 0..CURRENCIES.len(), any::<bool>())
}

fn check_amount(input: &AmountInput, currency: Currency, allow_zero: bool) -> Result<(), TestCaseError> {
    let text = match input {
        AmountInput::Text(text) | AmountInput::Numberish(text) => text.clone(),
        AmountInput::Edited { minor, edits } => {
            let rendered = currency.format(*minor);
            if edits.is_empty() {
                // parse(render(x)) == x for every amount the node accepts.
                let expected = if *minor > AMOUNT_MINOR_MAX || (*minor == 0 && !allow_zero) {
                    None
                } else {
                    Some(*minor)
                };
                prop_assert_eq!(currency.parse(&rendered, allow_zero).ok(), expected, "{}", rendered);
            }
            edits.iter().fold(rendered, |text, edit| apply(&text, edit))
        }
    };
    let parsed = currency.parse(&text, allow_zero);
    if let Ok(minor) = parsed {
        prop_assert!((0..=AMOUNT_MINOR_MAX).contains(&minor), "{:?} gave {}", text, minor);
        prop_assert!(minor > 0 || allow_zero, "{:?} gave zero", text);
        // What was accepted renders to a text that reads back the same.
        prop_assert_eq!(currency.parse(&currency.format(minor), allow_zero), Ok(minor));
    }
    if let Some(expected) = plain_amount(&text, currency, allow_zero) {
        prop_assert_eq!(parsed.clone().ok(), expected.ok(), "{:?} in {}: {:?}", text, currency.code, parsed);
    }
    if let Err(MoneyError::TooManyDigits { currency: code, scale, .. }) = &parsed {
        prop_assert_eq!((*code, *scale), (currency.code, currency.scale), "the error names the currency");
    }
    Ok(())
}

#[test]
fn amount_parsing() {
    fuzz("amount_parsing", amount_input(), |(input, currency, allow_zero)| {
        check_amount(&input, CURRENCIES[currency], allow_zero)
    });
}

/// Inputs the fuzzer found or that sit on an edge, kept as regressions.
#[test]
fn amount_parsing_edges() {
    let usd = Currency::find("USD").unwrap();
    for text in
        ["0.0000000000000000000000000000001", "10.500000000000000000000000000000", "1e-40", "1e+99999"]
    {
        check_amount(&AmountInput::Text(text.to_string()), usd, true).unwrap();
    }
}

// ---------------------------------------------------------------------------
// Write-ahead-log record reading: `wal::read_records`, which recovery and
// `sika verify` trust with every acknowledged batch.

const FILE_HEADER_LEN: usize = 16;

/// A log file's header, as the format documented in `wal.rs` writes it.
fn file_header(format: u32) -> Vec<u8> {
    let mut header = b"SIKA-WAL".to_vec();
    header.extend_from_slice(&format.to_le_bytes());
    header.extend_from_slice(&0u32.to_le_bytes());
    header
}

/// One record, encoded from the format's description (not from the
/// engine's encoder, so the two are checked against each other).
fn encode_record(epoch: u64, changes: &OwnedChanges) -> Vec<u8> {
    let mut body = Vec::new();
    for (key, value) in changes {
        body.extend_from_slice(&(key.len() as u32).to_le_bytes());
        body.extend_from_slice(key);
        match value {
            None => body.push(0),
            Some(value) => {
                body.push(1);
                body.extend_from_slice(&(value.len() as u32).to_le_bytes());
                body.extend_from_slice(value);
            }
        }
    }
    raw_record(epoch, &body)
}

/// A record around any body, with a correct length and checksum.
fn raw_record(epoch: u64, body: &[u8]) -> Vec<u8> {
    let mut covered = epoch.to_le_bytes().to_vec();
    covered.extend_from_slice(body);
    let mut record = (body.len() as u32).to_le_bytes().to_vec();
    record.extend_from_slice(&crc32fast::hash(&covered).to_le_bytes());
    record.extend_from_slice(&covered);
    record
}

fn changes() -> impl Strategy<Value = OwnedChanges> {
    let bytes = |max| prop::collection::vec(any::<u8>(), 0..max);
    prop::collection::vec((bytes(24), prop::option::of(bytes(64))), 0..6)
}

/// Records with growing epochs.
fn records() -> impl Strategy<Value = Vec<(u64, OwnedChanges)>> {
    prop::collection::vec((1u64..1_000, changes()), 1..6).prop_map(|records| {
        let mut epoch = 0;
        records
            .into_iter()
            .map(|(step, changes)| {
                epoch += step;
                (epoch, changes)
            })
            .collect()
    })
}

#[derive(Debug, Clone)]
enum Damage {
    /// XOR one byte of record `record` (at `offset` into it) with `mask`.
    Flip { record: usize, offset: usize, mask: u8 },
    /// Cut the file inside record `record`.
    Truncate { record: usize, offset: usize },
    /// Overwrite record `record`'s epoch (checksum recomputed) with one not
    /// newer than the record before it, as a reused file's older generation.
    Stale { record: usize, back: u64 },
}

#[derive(Debug, Clone)]
enum LogFile {
    /// Any bytes, with or without a valid header.
    Bytes { header: bool, bytes: Vec<u8> },
    /// Any record body (well formed or not) under a correct length and checksum.
    Body { body: Vec<u8> },
    /// Valid records, followed by the zeros a grown file holds.
    Valid { header: bool, records: Vec<(u64, OwnedChanges)>, zeros: usize },
    /// Valid records with one of them damaged.
    Damaged { header: bool, records: Vec<(u64, OwnedChanges)>, damage: Damage },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<usize>(), any::<usize>(), 1u8..=255).prop_map(|(record, offset, mask)| Damage::Flip {
            record,
            offset,
            mask
        }),
        (any::<usize>(), any::<usize>()).prop_map(|(record, offset)| Damage::Truncate { record, offset }),
        (any::<usize>(), 0u64..3).prop_map(|(record, back)| Damage::Stale { record, back }),
    ]
}

fn log_file() -> impl Strategy<Value = LogFile> {
    prop_oneof![
        1 => (any::<bool>(), prop::collection::vec(any::<u8>(), 0..256))
            .prop_map(|(header, bytes)| LogFile::Bytes { header, bytes }),
        1 => prop::collection::vec(prop_oneof![4 => 0u8..3, 1 => any::<u8>()], 0..64)
            .prop_map(|body| LogFile::Body { body }),
        1 => (any::<bool>(), records(), prop_oneof![Just(0usize), 1usize..64])
            .prop_map(|(header, records, zeros)| LogFile::Valid { header, records, zeros }),
        3 => (any::<bool>(), records(), damage())
            .prop_map(|(header, records, damage)| LogFile::Damaged { header, records, damage }),
    ]
}

/// The file's bytes, and the records reading it must return.
fn build(file: &LogFile) -> (Vec<u8>, Option<Vec<(u64, OwnedChanges)>>) {
    let start = |header: bool| if header { file_header(1) } else { Vec::new() };
    match file {
        LogFile::Bytes { header, bytes } => {
            let mut all = start(*header);
            all.extend_from_slice(bytes);
            (all, None)
        }
        LogFile::Body { body } => {
            let mut all = file_header(1);
            all.extend(raw_record(1, body));
            (all, None)
        }
        LogFile::Valid { header, records, zeros } => {
            let mut all = start(*header);
            for (epoch, changes) in records {
                all.extend(encode_record(*epoch, changes));
            }
            all.extend(std::iter::repeat_n(0, *zeros));
            (all, Some(records.clone()))
        }
        LogFile::Damaged { header, records, damage } => {
            let mut encoded: Vec<Vec<u8>> = records.iter().map(|(e, c)| encode_record(*e, c)).collect();
            let kept = match *damage {
                Damage::Flip { record, offset, mask } => {
                    let record = record % encoded.len();
                    let offset = offset % encoded[record].len();
                    encoded[record][offset] ^= mask;
                    record
                }
                Damage::Truncate { record, offset } => {
                    let record = record % encoded.len();
                    let offset = offset % encoded[record].len();
                    encoded[record].truncate(offset);
                    encoded.truncate(record + 1);
                    record
                }
                Damage::Stale { record, back } => {
                    let record = record % encoded.len();
                    let previous = if record == 0 { 0 } else { records[record - 1].0 };
                    let epoch = previous.saturating_sub(back);
                    encoded[record] = encode_record(epoch, &records[record].1);
                    record
                }
            };
            let mut all = start(*header);
            all.extend(encoded.concat());
            (all, Some(records[..kept].to_vec()))
        }
    }
}

fn check_log(file: &LogFile, path: &Path) -> Result<(), TestCaseError> {
    let (bytes, expected) = build(file);
    std::fs::write(path, &bytes).expect("write the log file");
    let read = read_records(path);
    if bytes.len() >= FILE_HEADER_LEN && bytes.starts_with(b"SIKA-WAL") {
        let format = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
        if format > sika_engine::format::FORMAT_VERSION {
            prop_assert!(read.is_err(), "a newer format's log is refused, not misread");
            return Ok(());
        }
    }
    let read = read.map_err(|e| TestCaseError::fail(format!("reading failed: {e}")))?;
    if let Some(expected) = expected {
        prop_assert_eq!(&read, &expected);
    }
    // Whatever was read is exactly what the file holds, record by record,
    // in growing epochs: nothing invented, nothing skipped.
    let mut at =
        if bytes.starts_with(b"SIKA-WAL") && bytes.len() >= FILE_HEADER_LEN { FILE_HEADER_LEN } else { 0 };
    let mut last_epoch = 0;
    for (epoch, changes) in &read {
        prop_assert!(*epoch > last_epoch, "epoch {} after {}", epoch, last_epoch);
        last_epoch = *epoch;
        let encoded = encode_record(*epoch, changes);
        prop_assert_eq!(bytes.get(at..at + encoded.len()), Some(encoded.as_slice()), "record at {}", at);
        at += encoded.len();
    }
    Ok(())
}

#[test]
fn wal_record_reading() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzz.wal");
    fuzz("wal_record_reading", log_file(), |file| check_log(&file, &path));
}

#[test]
fn a_log_of_a_newer_format_is_refused_and_a_headerless_one_read_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.wal");
    let record = encode_record(7, &vec![(b"k".to_vec(), Some(b"v".to_vec()))]);
    let mut newer = file_header(sika_engine::format::FORMAT_VERSION + 1);
    newer.extend_from_slice(&record);
    std::fs::write(&path, &newer).unwrap();
    assert!(read_records(&path).is_err());
    std::fs::write(&path, &record).unwrap();
    assert_eq!(read_records(&path).unwrap(), vec![(7, vec![(b"k".to_vec(), Some(b"v".to_vec()))])]);
}
