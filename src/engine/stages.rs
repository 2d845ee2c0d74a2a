//! Which stage a request is measured in, told from when it was due and
//! where measuring and each stage began. One pure function, called by the
//! parent on the values it keeps and by a worker on the values the parent
//! published in shared memory (`shm::run::Shared`), so both put a request
//! in the same block: a worker folds the inter-token gaps of the requests
//! whose verdict the parent cannot change into per-stage series of its own.

/// `IssueSlot::stage` of a conversation issued during warm-up. Every record
/// of a conversation carries the field back, so its last one says under
/// which block its in-flight count was kept; a worker's folded series names
/// its block the same way.
pub(crate) const WARMUP: u16 = u16::MAX;

/// The stage a request due at `t_sched` is measured in: the last one whose
/// measurement had begun by then (`starts[k]`, 0 for a stage not reached);
/// `None` during warm-up (`t_sched` before `measure_start`).
pub(crate) fn stage_of(
    t_sched: u64,
    measure_start: u64,
    starts: impl IntoIterator<Item = u64>,
) -> Option<u16> {
    if t_sched < measure_start {
        return None;
    }
    let mut stage = 0;
    for (k, start) in starts.into_iter().enumerate() {
        if start != 0 && start <= t_sched {
            stage = k;
        }
    }
    Some(stage as u16)
}

/// The slot of a block of a run with stages: 0 for warm-up, `1 + k` for
/// stage `k`.
pub(crate) fn slot_of(stage: Option<u16>) -> usize {
    stage.map_or(0, |k| k as usize + 1)
}

/// A block's stage as `IssueSlot::stage` spells it (`WARMUP`, or `k`).
pub(crate) fn issue_stage(stage: Option<u16>) -> u16 {
    stage.unwrap_or(WARMUP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_in_the_last_stage_begun_by_its_due_time() {
        let starts = [100, 0, 300];
        assert_eq!(stage_of(50, 100, starts), None, "warm-up");
        assert_eq!(stage_of(100, 100, starts), Some(0));
        assert_eq!(stage_of(299, 100, starts), Some(0), "stage 1 not reached");
        assert_eq!(stage_of(300, 100, starts), Some(2));
        assert_eq!(stage_of(5, u64::MAX, starts), None, "warm-up by count");
        // Measuring began but no stage start is published yet: stage 0.
        assert_eq!(stage_of(5, 0, [0, 0]), Some(0));
        assert_eq!((slot_of(None), slot_of(Some(2))), (0, 3));
        assert_eq!((issue_stage(None), issue_stage(Some(2))), (WARMUP, 2));
    }
}
