//! Shared memory between the parent and its forked workers: one anonymous
//! shared mapping made before `fork()`, single-producer single-consumer rings
//! laid out inside it, and a doorbell (eventfd) that wakes a side only when it
//! said it was about to sleep. Nothing here allocates or makes a syscall per
//! message; this is one of the few modules allowed `unsafe`.

pub mod doorbell;
pub mod mapping;
pub mod ring;
