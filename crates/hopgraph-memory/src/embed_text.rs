//! The text a sentence model embeds for a memory or an entity.
//!
//! One definition for every program that embeds (the MCP server on each write,
//! `hopgraph reembed` over a whole store), so a vector means the same everywhere.

use hopgraph::Node;

/// The text embedded for a memory: its title and content, one per line (an empty title
/// adds nothing).
pub fn memory_text(title: Option<&str>, content: &str) -> String {
    match title.filter(|t| !t.is_empty()) {
        Some(t) => format!("{t}\n{content}"),
        None => content.to_owned(),
    }
}

/// The text embedded for an AIM / server-memory entity: its name, its type, then its
/// observations, one per line.
pub fn entity_text<S: AsRef<str>>(name: &str, entity_type: &str, observations: &[S]) -> String {
    let mut s = format!("{name}\n{entity_type}");
    for o in observations {
        s.push('\n');
        s.push_str(o.as_ref());
    }
    s
}

/// The text embedded for a stored node: an entity's (a node whose metadata holds an
/// `observations` list of strings; its title is the entity's name, its kind the entity
/// type), otherwise a memory's. `None` when the node has no text at all.
pub fn node_text(node: &Node) -> Option<String> {
    let p = &node.props;
    if let Some(obs) = p.props.get("observations").and_then(|v| v.as_array())
        && let Some(obs) = obs.iter().map(|o| o.as_str()).collect::<Option<Vec<_>>>()
    {
        return Some(entity_text(&p.title, &p.kind, &obs));
    }
    (!p.title.is_empty() || !p.content.is_empty()).then(|| memory_text(Some(&p.title), &p.content))
}

#[cfg(test)]
mod tests {
    use super::{entity_text, memory_text, node_text};
    use hopgraph::{Node, NodeId, NodeProps};
    use serde_json::json;

    fn node(props: NodeProps) -> Node {
        Node {
            id: NodeId(0),
            key: "k".into(),
            props,
            created_at: 0,
            updated_at: 0,
            valid_from: 0,
            valid_to: None,
        }
    }

    #[test]
    fn node_text_agrees_with_the_write_paths() {
        let m = node(NodeProps {
            title: "cat".into(),
            content: "the cat sat".into(),
            ..NodeProps::default()
        });
        assert_eq!(node_text(&m), Some(memory_text(Some("cat"), "the cat sat")));
        assert_eq!(node_text(&m).as_deref(), Some("cat\nthe cat sat"));
        let untitled = node(NodeProps {
            content: "hello".into(),
            ..NodeProps::default()
        });
        assert_eq!(node_text(&untitled).as_deref(), Some("hello"));
        let mut props = hopgraph::Props::new();
        props.insert(
            "observations".into(),
            json!(["likes graphs", "lives in Oslo"]),
        );
        let e = node(NodeProps {
            title: "alice".into(),
            kind: "person".into(),
            props,
            ..NodeProps::default()
        });
        assert_eq!(
            node_text(&e),
            Some(entity_text(
                "alice",
                "person",
                &["likes graphs", "lives in Oslo"]
            ))
        );
        assert_eq!(node_text(&node(NodeProps::default())), None);
    }
}
