//! The wiring: opening the node, its listeners and stacks, the scheduler
//! that drives jobs, the after-commit effects, the storage watch, and
//! shutdown.

pub(crate) mod effects;
pub(crate) mod emails;
pub(crate) mod error;
pub(crate) mod feed;
pub(crate) mod listen;
pub(crate) mod node;
pub(crate) mod rails;
pub(crate) mod scheduler;
pub(crate) mod storage_watch;
