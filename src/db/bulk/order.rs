//! The order in which a bulk load numbers its new nodes: hubs first, grouped by degree.
//!
//! Traversals touch per-node state (the segment's CSR offsets, the scratch arrays) at the
//! ids of the nodes they reach, and on graphs with hubs most searches pass through the same
//! few hundred hubs. Numbered in input order, those hubs are scattered over the whole id
//! range, so every query reads a cache line per hub. Numbered first, they share a few lines
//! that stay in cache from one query to the next.
//!
//! The grouping is degree-based grouping (Faldu, Diamond and Grot, "A Closer Look at
//! Lightweight Graph Reordering", IISWC 2019): nodes whose degree (in this load, both
//! directions) is at least the load's mean are put in groups by the power of two of
//! degree / mean, highest group first; all other nodes come last. Within a group nodes
//! keep their input order, which keeps whatever locality the input had (on agent-memory
//! graphs, time order) for the many low-degree nodes. A full sort by degree would tear
//! that apart. The permutation costs one counting sort, O(nodes), and changes no answer's
//! length, only which of several equally short paths is picked.

/// Groups of hot nodes: degree / mean in [2^k, 2^(k+1)) for k < GROUPS - 1, the last open.
const GROUPS: usize = 16;

/// The local numbers of the new nodes (`is_new`) in the order they get ids. `degree[i]`
/// is local node `i`'s degree in this load.
pub(super) fn new_node_order(degree: &[u32], is_new: impl Fn(usize) -> bool) -> Vec<u32> {
    let new: Vec<u32> = (0u32..)
        .zip(degree)
        .filter(|&(i, _)| is_new(i as usize))
        .map(|(i, _)| i)
        .collect();
    if new.is_empty() {
        return new;
    }
    let total: u64 = new.iter().map(|&i| u64::from(degree[i as usize])).sum();
    // The mean rounded up, at least 1, so that a load with no edges keeps input order.
    let mean = total.div_ceil(new.len() as u64).max(1);
    // Group 0 is cold (below the mean); group 1 + k holds degree / mean in [2^k, 2^(k+1)).
    let group = |i: u32| -> usize {
        let ratio = u64::from(degree[i as usize]) / mean;
        if ratio == 0 {
            0
        } else {
            (1 + ratio.ilog2() as usize).min(GROUPS)
        }
    };
    let mut count = [0usize; GROUPS + 1];
    for &i in &new {
        count[group(i)] += 1;
    }
    // Start of each group in the output: the highest group first.
    let mut start = [0usize; GROUPS + 1];
    let mut at = 0;
    for g in (0..=GROUPS).rev() {
        start[g] = at;
        at += count[g];
    }
    let mut out = vec![0u32; new.len()];
    for &i in &new {
        let g = group(i);
        out[start[g]] = i;
        start[g] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hubs_come_first_by_group_and_the_rest_keep_input_order() {
        // Mean degree of the new nodes: (1 + 40 + 2 + 9 + 3 + 20 + 1) / 7 = 76 / 7 -> 11.
        let degree = [1, 40, 2, 9, 3, 20, 1, 100];
        // Local 7 is an existing node: not numbered, and not counted in the mean.
        let order = new_node_order(&degree, |i| i != 7);
        // 40 / 11 = 3 (group 2), 20 / 11 = 1 (group 1), the rest below the mean.
        assert_eq!(order, vec![1, 5, 0, 2, 3, 4, 6]);
    }

    #[test]
    fn equal_groups_keep_input_order_and_no_edges_keeps_everything() {
        assert_eq!(new_node_order(&[0, 0, 0], |_| true), vec![0, 1, 2]);
        // Mean 5: local 0 is cold, the other three share group 1 in input order.
        assert_eq!(new_node_order(&[4, 5, 6, 5], |_| true), vec![1, 2, 3, 0]);
        assert_eq!(new_node_order(&[3, 1], |_| false), Vec::<u32>::new());
        // One giant hub lifts the mean above the second-largest degree.
        let order = new_node_order(&[1, 1, 1, 1, 1000, 1, 100_000], |_| true);
        assert_eq!(order, vec![6, 0, 1, 2, 3, 4, 5]);
    }
}
