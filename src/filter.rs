//! [`NodeFilter`]: the conditions a search applies to each candidate node *during* the
//! search (text and vector kernels ask it before a candidate may enter the result), so a
//! filtered query still returns `limit` hits when enough nodes match.
//!
//! Every condition reads only the node record; an empty filter accepts every live node.

use std::collections::HashSet;
use std::sync::Arc;

use crate::graph::NodeId;
use crate::model::Node;

/// Conditions on a node record; all given conditions must hold.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct NodeFilter {
    /// Accepted node kinds (`NodeProps::kind`); empty: any kind.
    pub kinds: Vec<String>,
    /// Accepted statuses (`NodeProps::status`); empty: any status.
    pub statuses: Vec<String>,
    /// Lowest accepted importance (inclusive).
    pub min_importance: Option<f32>,
    /// Only nodes created at or after this time (ms since the Unix epoch).
    pub created_after: Option<u64>,
    /// Only nodes created strictly before this time (ms since the Unix epoch).
    pub created_before: Option<u64>,
    /// Only these nodes (e.g. those within some hops of a seed, from the expansion
    /// kernel); `None`: any node. Shared, so cloning a filter does not copy the set.
    pub nodes: Option<Arc<HashSet<NodeId>>>,
    /// Only nodes valid at this moment (ms since the Unix epoch; see
    /// [`Node::valid_at`](crate::Node::valid_at)).
    pub valid_at: Option<u64>,
}

impl NodeFilter {
    /// A filter that accepts every node.
    pub fn any() -> NodeFilter {
        NodeFilter::default()
    }

    /// Only nodes of these kinds.
    #[must_use]
    pub fn kinds<S: Into<String>>(mut self, kinds: impl IntoIterator<Item = S>) -> NodeFilter {
        self.kinds = kinds.into_iter().map(Into::into).collect();
        self
    }

    /// Only nodes with one of these statuses.
    #[must_use]
    pub fn statuses<S: Into<String>>(
        mut self,
        statuses: impl IntoIterator<Item = S>,
    ) -> NodeFilter {
        self.statuses = statuses.into_iter().map(Into::into).collect();
        self
    }

    /// Only nodes whose importance is at least `min`.
    #[must_use]
    pub fn min_importance(mut self, min: f32) -> NodeFilter {
        self.min_importance = Some(min);
        self
    }

    /// Only nodes created in `[after, before)` (ms since the Unix epoch); `None` leaves
    /// that side open.
    #[must_use]
    pub fn created_between(mut self, after: Option<u64>, before: Option<u64>) -> NodeFilter {
        self.created_after = after;
        self.created_before = before;
        self
    }

    /// Only nodes valid at `t` (ms since the Unix epoch). A store where nothing has an
    /// interval other than [created, never) and `t` is after every creation checks no
    /// record for it.
    #[must_use]
    pub fn valid_at(mut self, t: u64) -> NodeFilter {
        self.valid_at = Some(t);
        self
    }

    /// Only the nodes in `nodes`.
    #[must_use]
    pub fn nodes(mut self, nodes: impl IntoIterator<Item = NodeId>) -> NodeFilter {
        self.nodes = Some(Arc::new(nodes.into_iter().collect()));
        self
    }

    /// Whether no condition is set (the kernels then skip reading node records).
    pub fn is_empty(&self) -> bool {
        self == &NodeFilter::default()
    }

    /// Whether `node` satisfies every condition.
    pub fn matches(&self, node: &Node) -> bool {
        let p = &node.props;
        (self.kinds.is_empty() || self.kinds.contains(&p.kind))
            && (self.statuses.is_empty() || self.statuses.contains(&p.status))
            && self.min_importance.is_none_or(|m| p.importance >= m)
            && self.created_after.is_none_or(|t| node.created_at >= t)
            && self.created_before.is_none_or(|t| node.created_at < t)
            && self.nodes.as_ref().is_none_or(|s| s.contains(&node.id))
            && self.valid_at.is_none_or(|t| node.valid_at(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::NodeId;
    use crate::model::NodeProps;

    fn node(kind: &str, importance: f32, created_at: u64) -> Node {
        Node {
            id: NodeId(0),
            key: "k".to_owned(),
            props: NodeProps {
                kind: kind.to_owned(),
                importance,
                ..NodeProps::default()
            },
            created_at,
            updated_at: created_at,
            valid_from: created_at,
            valid_to: None,
        }
    }

    #[test]
    fn each_condition_filters() {
        let n = node("decision", 0.5, 100);
        assert!(NodeFilter::any().matches(&n));
        assert!(NodeFilter::any().kinds(["decision", "fact"]).matches(&n));
        assert!(!NodeFilter::any().kinds(["fact"]).matches(&n));
        assert!(NodeFilter::any().min_importance(0.5).matches(&n));
        assert!(!NodeFilter::any().min_importance(0.6).matches(&n));
        assert!(
            NodeFilter::any()
                .created_between(Some(100), Some(101))
                .matches(&n)
        );
        assert!(
            !NodeFilter::any()
                .created_between(None, Some(100))
                .matches(&n)
        );
        assert!(
            !NodeFilter::any()
                .created_between(Some(101), None)
                .matches(&n)
        );
        assert!(!NodeFilter::any().statuses(["active"]).matches(&n));
        assert!(NodeFilter::any().nodes([NodeId(3), NodeId(0)]).matches(&n));
        assert!(!NodeFilter::any().nodes([NodeId(3)]).matches(&n));
        assert!(!NodeFilter::any().nodes([]).matches(&n));
        assert!(!NodeFilter::any().nodes([NodeId(0)]).is_empty());
    }
}
