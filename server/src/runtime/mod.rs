//! The wiring: opening the node, its listeners and stacks, the scheduler
//! that drives jobs, and shutdown.

pub(crate) mod feed;
pub(crate) mod listen;
pub(crate) mod node;
pub(crate) mod rails;
pub(crate) mod scheduler;
