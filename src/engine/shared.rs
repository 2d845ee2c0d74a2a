//! The engine's names for the shared mapping of a run: the control block
//! (run phase), per-worker counters and doorbells, and per worker an issue
//! ring and a completion ring. The layout, its placement before `fork()` and
//! the once-only handout of ring ends are `shm::run`'s, the one place allowed
//! the pointer work they need; the engine only uses them.

pub(crate) use crate::shm::run::{IssueSlot, MAX_GAPS, RunPhase, Shared, WorkerCounters};
