//! Fills the sandbox ledger of a data directory `sika init` made with N
//! pending collections of one organization, straight through the engine
//! (the writer's batches, not HTTP), to measure exports and lists at a
//! scale the API would take minutes to reach. The collections are on the
//! sandbox simulator's rail with no scheduled steps, so a node serving the
//! directory afterwards has no job to run for them.
//!
//! Usage: `seed_collections DATA_DIR ORGANIZATION_ID N` (the node stopped).

use std::collections::VecDeque;
use std::path::PathBuf;

use sika_engine::movements::NewCollection;
use sika_engine::{Command, Engine, EngineConfig, Rail};

/// Commands in flight at once: enough to fill the writer's batches.
const IN_FLIGHT_MAX: usize = 16_384;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: seed_collections DATA_DIR ORGANIZATION_ID N";
    let dir = PathBuf::from(args.next().ok_or(usage)?);
    let organization = args.next().ok_or(usage)?;
    let count: u64 = args.next().ok_or(usage)?.parse()?;
    let engine = Engine::open(EngineConfig::new(Some(dir.join("sandbox.redb"))))?;
    let started = std::time::Instant::now();
    let mut pending = VecDeque::with_capacity(IN_FLIGHT_MAX);
    for index in 0..count {
        pending.push_back(
            engine.enqueue_blocking(Command::CreateCollection(Box::new(collection(&organization, index))))?,
        );
        if pending.len() >= IN_FLIGHT_MAX
            && let Some(oldest) = pending.pop_front()
        {
            oldest.wait()?;
        }
    }
    for command in pending {
        command.wait()?;
    }
    let seconds = started.elapsed().as_secs_f64();
    println!("{count} collections in {seconds:.1} s ({:.0}/s)", count as f64 / seconds);
    Ok(())
}

fn collection(organization: &str, index: u64) -> NewCollection {
    let mut fingerprint = [0; 32];
    fingerprint[..8].copy_from_slice(&index.to_be_bytes());
    NewCollection {
        organization: organization.to_string(),
        currency: "GHS".to_string(),
        amount: 1_000 + i128::from(index % 9_000),
        code: "mtn_gh".to_string(),
        account_number: "+233241234567".to_string(),
        metadata: "{}".to_string(),
        external_reference: format!("seed-{index}"),
        rail: Rail::SandboxSimulator.name().to_string(),
        rail_note: "Seeded".to_string(),
        payer: Some("+233241234567".to_string()),
        schedule: Vec::new(),
        request_fingerprint: fingerprint,
        id: None,
        attach: Vec::new(),
        group: None,
    }
}
