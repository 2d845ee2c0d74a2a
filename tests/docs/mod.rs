//! The documents tell the truth: every command in the README and the guides
//! runs (`commands`), their links lead somewhere (`links`), and DESIGN.md's
//! dependency list is the code's (`deps`).

mod commands;
mod deps;
mod links;
