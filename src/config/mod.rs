//! Run configuration: flags (and later profiles) resolved into one validated
//! value that the engine and the report read.

pub mod duration;
