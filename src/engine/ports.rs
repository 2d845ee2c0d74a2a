//! Local ports chosen by the workers themselves, for runs with more
//! connections per source address than the kernel hands out cheaply.
//!
//! The kernel picks a `connect()`'s local port by walking the even ports of
//! the ephemeral range first (`bind()` takes the odd ones), checking each
//! against the established connections to the same destination. Up to half
//! the range that walk is short; past it (14,116 connections to one address
//! with the default range) every connect walks all the even ports before it
//! finds an odd one, and 19,000 connections take seconds of kernel time
//! instead of a fraction of one. So when a run's connections per source
//! address pass half the range, each worker takes a slice of the range of
//! its own (per source address, so all workers together still have the
//! whole range at each address) and binds each new socket to the next port
//! of its slice (`SO_REUSEADDR`, so a port also serves other destinations).
//! A port another socket holds is skipped (`EADDRINUSE` at bind,
//! `EADDRNOTAVAIL` at connect) a few times at most; after that the kernel
//! picks, as for smaller runs. Ports `ip_local_reserved_ports` names are
//! never taken.

use crate::sys::info::{PortRange, port_range};

/// Ports tried for one connection before the kernel is left to choose.
pub(crate) const PORT_TRIES: usize = 16;

/// The range the workers bind in, when the run needs it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PortPlan {
    range: PortRange,
    /// `ip_local_reserved_ports`, as inclusive ranges.
    reserved: Vec<(u16, u16)>,
}

impl PortPlan {
    /// The plan for `connections` over `sources` source addresses (0: the
    /// kernel's choice of address), from this host's settings; `None` when
    /// the kernel's own choice stays cheap.
    pub(crate) fn for_run(connections: usize, sources: usize) -> Option<PortPlan> {
        let text = |p: &str| std::fs::read_to_string(p).ok();
        let range = text("/proc/sys/net/ipv4/ip_local_port_range").and_then(|t| port_range(&t))?;
        let reserved = text("/proc/sys/net/ipv4/ip_local_reserved_ports")
            .map_or_else(Vec::new, |t| reserved_ports(&t));
        PortPlan::decide(connections, sources, range, reserved)
    }

    fn decide(
        connections: usize,
        sources: usize,
        range: PortRange,
        reserved: Vec<(u16, u16)>,
    ) -> Option<PortPlan> {
        let span = usize::from(range.high - range.low) + 1;
        let per_source = connections.div_ceil(sources.max(1));
        (per_source > span / 2).then_some(PortPlan { range, reserved })
    }
}

/// `ip_local_reserved_ports`: `8080,9000-9010`, or empty. What does not
/// read as a port or a range is left out.
fn reserved_ports(text: &str) -> Vec<(u16, u16)> {
    text.trim()
        .split(',')
        .filter_map(|part| {
            let part = part.trim();
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (a, b) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            (a <= b).then_some((a, b))
        })
        .collect()
}

/// One worker's slice of the range and where it is in it for each source
/// address; empty when the kernel chooses.
#[derive(Debug, Default)]
pub(crate) struct LocalPorts {
    low: u16,
    len: u16,
    /// Per source address: the offset in the slice of its next port.
    next: Vec<u16>,
    reserved: Vec<(u16, u16)>,
}

impl LocalPorts {
    /// Worker `k`'s slice (of `workers`) of `plan`'s range, with a cursor
    /// for each of `sources` addresses (at least one).
    pub(crate) fn for_worker(
        plan: Option<&PortPlan>,
        k: usize,
        workers: usize,
        sources: usize,
    ) -> LocalPorts {
        let Some(plan) = plan else {
            return LocalPorts::default();
        };
        let span = usize::from(plan.range.high - plan.range.low) + 1;
        let workers = workers.max(1);
        let (from, to) = (span * k / workers, span * (k + 1) / workers);
        let len = to - from;
        if len == 0 {
            return LocalPorts::default();
        }
        LocalPorts {
            low: plan.range.low + from as u16,
            len: len as u16,
            next: vec![0; sources.max(1)],
            reserved: plan.reserved.clone(),
        }
    }

    /// The next port for a connection from source address `source` (its
    /// position in `--source-addrs`, 0 without), or `None`: the kernel
    /// chooses.
    pub(crate) fn next(&mut self, source: usize) -> Option<u16> {
        if self.len == 0 {
            return None;
        }
        let at = source % self.next.len();
        for _ in 0..self.len {
            let off = self.next[at];
            self.next[at] = if off + 1 == self.len { 0 } else { off + 1 };
            let port = self.low + off;
            if !self.reserved.iter().any(|&(a, b)| (a..=b).contains(&port)) {
                return Some(port);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RANGE: PortRange = PortRange {
        low: 32768,
        high: 60999,
    };

    #[test]
    fn only_runs_past_half_the_range_per_source_bind_their_own() {
        assert_eq!(PortPlan::decide(14_116, 1, RANGE, vec![]), None);
        assert!(PortPlan::decide(14_117, 1, RANGE, vec![]).is_some());
        assert!(PortPlan::decide(19_000, 0, RANGE, vec![]).is_some());
        // 60,000 over four addresses is 15,000 each.
        assert!(PortPlan::decide(60_000, 4, RANGE, vec![]).is_some());
        assert_eq!(PortPlan::decide(40_000, 4, RANGE, vec![]), None);
    }

    #[test]
    fn workers_get_disjoint_slices_covering_the_range() {
        let plan = PortPlan::decide(60_000, 1, RANGE, vec![]).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        for k in 0..3 {
            let mut p = LocalPorts::for_worker(Some(&plan), k, 3, 1);
            let first = p.next(0).unwrap();
            let mut n = 1;
            while let Some(port) = p.next(0) {
                if port == first {
                    break;
                }
                n += 1;
                assert!(seen.insert(port), "port {port} in two slices");
            }
            assert!(seen.insert(first));
            assert!((9410..=9411).contains(&n), "slice of {n}");
        }
        assert_eq!(seen.len(), 28_232);
        assert_eq!(*seen.first().unwrap(), 32768);
        assert_eq!(*seen.last().unwrap(), 60999);
    }

    #[test]
    fn each_source_address_walks_the_slice_on_its_own_and_wraps() {
        let plan = PortPlan::decide(60_000, 1, RANGE, vec![]).unwrap();
        let mut p = LocalPorts::for_worker(Some(&plan), 1, 2, 2);
        let low = 32768 + 14_116;
        assert_eq!(p.next(0), Some(low));
        assert_eq!(p.next(0), Some(low + 1));
        assert_eq!(p.next(1), Some(low));
        // Positions past the list wrap to its addresses.
        assert_eq!(p.next(3), Some(low + 1));
        for _ in 0..14_116 - 2 {
            p.next(0);
        }
        assert_eq!(p.next(0), Some(low));
    }

    #[test]
    fn reserved_ports_are_skipped() {
        let reserved = reserved_ports("32769-32770, 32772\n");
        assert_eq!(reserved, vec![(32769, 32770), (32772, 32772)]);
        let plan = PortPlan::decide(60_000, 1, RANGE, reserved).unwrap();
        let mut p = LocalPorts::for_worker(Some(&plan), 0, 1, 1);
        let got: Vec<u16> = (0..3).filter_map(|_| p.next(0)).collect();
        assert_eq!(got, vec![32768, 32771, 32773]);
        assert!(reserved_ports("\n").is_empty());
        assert!(reserved_ports("x,9-8").is_empty());
    }

    #[test]
    fn without_a_plan_the_kernel_chooses() {
        assert_eq!(LocalPorts::for_worker(None, 0, 1, 1).next(0), None);
        let whole = PortRange {
            low: 40000,
            high: 40000,
        };
        let plan = PortPlan::decide(10, 1, whole, vec![(40000, 40000)]).unwrap();
        assert_eq!(LocalPorts::for_worker(Some(&plan), 0, 1, 1).next(0), None);
    }
}
