//! Commands queued together (`Engine::enqueue_all_blocking`,
//! `Engine::execute_in_order`): each is applied on its own, in the order
//! given, and answered in that order; a group larger than a batch is split
//! across batches without losing or reordering a command.

use sika_engine::{
    AccountRef, BATCH_COMMANDS_MAX, Command, Engine, EngineConfig, EngineError, Outcome, TransferSpec,
};

fn deposit(organization: &str, amount: i128) -> Command {
    Command::Deposit {
        organization: organization.into(),
        currency: "USD".into(),
        amount,
        external_reference: None,
    }
}

fn transfer(from: &str, to: &str, amount: i128) -> Command {
    Command::Transfers {
        transfers: vec![TransferSpec::Posted {
            debit: AccountRef::Organization(from.into()),
            credit: AccountRef::Organization(to.into()),
            currency: "USD".into(),
            amount,
            memo: String::new(),
        }],
        external_reference: None,
    }
}

fn available(engine: &Engine, organization: &str) -> i128 {
    let snapshot = engine.read().unwrap();
    let account = snapshot.organization_account(organization, "USD").unwrap().expect("the account exists");
    account.balances().unwrap().available
}

#[test]
fn a_group_applies_each_command_on_its_own_in_order() {
    let engine = Engine::open(EngineConfig::new(None)).unwrap();
    let results = engine
        .enqueue_all_blocking(vec![
            deposit("org_a", 100),
            // More than org_a has: refused, and nothing of it stays.
            transfer("org_a", "org_b", 500),
            transfer("org_a", "org_b", 60),
            // Only after the one before is there enough on org_b.
            transfer("org_b", "org_a", 50),
        ])
        .unwrap()
        .wait();
    assert_eq!(results.len(), 4);
    assert!(matches!(results[0], Ok(ref applied) if matches!(applied.outcome, Outcome::Deposit(_))));
    assert!(
        matches!(results[1], Err(EngineError::InsufficientFunds { available: 100, required: 500, .. })),
        "{:?}",
        results[1]
    );
    assert!(results[2].is_ok() && results[3].is_ok(), "{results:?}");
    assert_eq!(available(&engine, "org_a"), 90);
    assert_eq!(available(&engine, "org_b"), 10);
    engine.shutdown();
}

#[test]
fn a_group_larger_than_a_batch_is_split_and_answered_in_order() {
    let engine = Engine::open(EngineConfig::new(None)).unwrap();
    let commits_before = engine.stats().commits;
    let count = BATCH_COMMANDS_MAX + 5;
    let mut commands = vec![deposit("org_a", 1)];
    commands.extend(
        (1..count).map(|i| if i % 2 == 0 { deposit("org_a", 1) } else { transfer("org_a", "org_b", 1) }),
    );
    let results = engine.enqueue_all_blocking(commands).unwrap().wait();
    assert_eq!(results.len(), count);
    for (i, result) in results.iter().enumerate() {
        let applied = result.as_ref().unwrap_or_else(|e| panic!("command {i}: {e:?}"));
        let expected_deposit = i % 2 == 0;
        assert_eq!(matches!(applied.outcome, Outcome::Deposit(_)), expected_deposit, "command {i}");
    }
    // Each transfer spent the deposit before it, so none was refused and
    // the order held across the two batches.
    assert_eq!(available(&engine, "org_b"), i128::try_from(count / 2).unwrap());
    assert!(engine.stats().commits - commits_before >= 2, "more than a batch holds");
    engine.shutdown();
}
