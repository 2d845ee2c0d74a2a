//! The load engine: scheduler in the parent, event-loop workers in forked
//! children, and the shared-memory rings between them.

pub mod arrival;
