//! The documents tell the truth: DESIGN.md's dependency list is the code's
//! (`deps`).

mod deps;
