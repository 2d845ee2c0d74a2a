//! What a run measured, kept the way the report needs it: HDR histograms with
//! exact count/min/max/mean beside them, and error counts in fixed arrays
//! indexed by class and HTTP status. Recording never allocates; rendering to
//! text happens only in `report`.

#![forbid(unsafe_code)]

pub mod block;
pub mod errors;
pub mod observe;
pub mod run;
pub mod series;
pub mod thresholds;
