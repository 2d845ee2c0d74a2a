//! What a run measured, kept the way the report needs it: HDR histograms with
//! exact count/min/max/mean beside them, and error counts in fixed arrays
//! indexed by class and HTTP status. Recording never allocates; rendering to
//! text happens only in `report`.

pub(crate) mod block;
pub(crate) mod dec128;
pub(crate) mod endpoints;
pub(crate) mod errors;
pub(crate) mod goodput;
pub(crate) mod hdr;
pub(crate) mod mlperf;
pub(crate) mod observe;
pub(crate) mod run;
pub(crate) mod series;
pub(crate) mod thresholds;
pub(crate) mod timeline;
