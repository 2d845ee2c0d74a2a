//! Bugs fixed, one test each, named for what broke: each test failed before
//! its fix. Kept apart from the topic modules so a regression is never
//! "cleaned up" with the feature tests around it.

#[allow(unused_imports)]
use crate::util::*;
