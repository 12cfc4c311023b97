//! Starts the node's email sender (`domain::emails::sender`) with the SMTP
//! client (`adapters::smtp`), when `[email]` is configured: one more
//! follower of what the stacks commit, like the webhook dispatchers.

use std::sync::Arc;

use crate::domain::emails::sender::{Sender, Source};
use crate::domain::identity::Identity;
use crate::domain::stack::Stack;

/// Spawns the sender; without `[email]` nothing is sent and nothing runs.
pub(crate) fn spawn(identity: Arc<Identity>, stacks: [&Arc<Stack>; 2]) -> Result<(), String> {
    let Some(config) = stacks[0].config.email.as_ref() else { return Ok(()) };
    let transport = crate::adapters::smtp::Smtp::new(config)?;
    let sender = Sender {
        identity,
        config: stacks[0].config.clone(),
        sources: stacks
            .iter()
            .map(|stack| Source {
                kind: stack.kind,
                engine: stack.engine.clone(),
                rails: stack.rails.clone(),
                disk_reserve: stack.disk_reserve.clone(),
            })
            .collect(),
        transport: Arc::new(transport),
    };
    tokio::spawn(sender.run());
    Ok(())
}
