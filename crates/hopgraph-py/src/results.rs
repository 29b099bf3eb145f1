//! What queries return, as plain read-only Python objects with readable reprs.

use pyo3::prelude::*;

use crate::convert::{datetime, py_object};

fn short(s: &str) -> String {
    const MAX: usize = 60;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{:?}…", &s[..i]),
        None => format!("{s:?}"),
    }
}

/// A node: its key, kind (`type`), title, content, importance, status, metadata,
/// embedding, commit times and validity interval.
#[pyclass(frozen, get_all, module = "hopgraph")]
pub struct Node {
    /// The unique key.
    pub key: String,
    /// The engine's dense id (stable for the node's life).
    pub id: u32,
    /// What kind of thing the node is (a memory type, an entity type, ...).
    #[pyo3(name = "type")]
    pub kind: String,
    /// Short title.
    pub title: String,
    /// Body text.
    pub content: String,
    /// Importance score.
    pub importance: f32,
    /// Lifecycle status ("" when unset).
    pub status: String,
    /// Free-form properties (a dict).
    pub metadata: Py<PyAny>,
    /// The embedding, or None.
    pub embedding: Option<Vec<f32>>,
    /// When the node was created (UTC datetime).
    pub created_at: Py<PyAny>,
    /// When it last changed (UTC datetime).
    pub updated_at: Py<PyAny>,
    /// Start of its validity in event time (UTC datetime; by default its creation).
    pub valid_from: Py<PyAny>,
    /// End of its validity (exclusive; UTC datetime), or None: it never ends.
    pub valid_to: Option<Py<PyAny>>,
}

impl Node {
    pub fn new(py: Python<'_>, n: &hopgraph::Node) -> PyResult<Node> {
        Ok(Node {
            key: n.key.clone(),
            id: n.id.0,
            kind: n.props.kind.clone(),
            title: n.props.title.clone(),
            content: n.props.content.clone(),
            importance: n.props.importance,
            status: n.props.status.clone(),
            metadata: py_object(py, &n.props.props)?,
            embedding: n.props.embedding.clone(),
            created_at: datetime(py, n.created_at)?,
            updated_at: datetime(py, n.updated_at)?,
            valid_from: datetime(py, n.valid_from)?,
            valid_to: n.valid_to.map(|t| datetime(py, t)).transpose()?,
        })
    }
}

#[pymethods]
impl Node {
    fn __repr__(&self) -> String {
        format!(
            "Node(key={:?}, type={:?}, title={})",
            self.key,
            self.kind,
            short(&self.title)
        )
    }
}

/// A directed, typed edge.
#[pyclass(frozen, get_all, module = "hopgraph")]
pub struct Edge {
    /// Stable edge id (for `WriteBatch.unlink`).
    pub id: u64,
    /// The source node's key.
    pub source: String,
    /// The edge type.
    #[pyo3(name = "type")]
    pub edge_type: String,
    /// The target node's key.
    pub target: String,
    /// Weight (1.0 unless given).
    pub weight: f32,
    /// Free-form properties (a dict).
    pub metadata: Py<PyAny>,
    /// When the edge was created (UTC datetime).
    pub created_at: Py<PyAny>,
    /// Start of its validity in event time (UTC datetime; by default its creation).
    pub valid_from: Py<PyAny>,
    /// End of its validity (exclusive; UTC datetime), or None: it never ends
    /// (`WriteBatch.end_edge` ends it).
    pub valid_to: Option<Py<PyAny>>,
}

impl Edge {
    pub fn new(
        py: Python<'_>,
        e: &hopgraph::Edge,
        source: String,
        edge_type: String,
        target: String,
    ) -> PyResult<Edge> {
        Ok(Edge {
            id: e.id.0,
            source,
            edge_type,
            target,
            weight: e.weight,
            metadata: py_object(py, &e.props)?,
            created_at: datetime(py, e.created_at)?,
            valid_from: datetime(py, e.valid_from)?,
            valid_to: e.valid_to.map(|t| datetime(py, t)).transpose()?,
        })
    }
}

#[pymethods]
impl Edge {
    fn __repr__(&self) -> String {
        format!(
            "Edge({:?} -{}-> {:?}, id={})",
            self.source, self.edge_type, self.target, self.id
        )
    }
}

/// One hop of a path or walk: the edge, its type, and whether it was walked from its
/// source to its target (`forward`) or against it.
#[pyclass(frozen, get_all, module = "hopgraph")]
#[derive(Clone)]
pub struct Step {
    /// The edge id.
    pub edge_id: u64,
    /// The edge type.
    #[pyo3(name = "type")]
    pub edge_type: String,
    /// True when walked source -> target.
    pub forward: bool,
}

impl Step {
    pub fn new(s: &hopgraph::PathStep) -> Step {
        Step {
            edge_id: s.edge.0,
            edge_type: s.edge_type.clone(),
            forward: s.forward,
        }
    }
}

#[pymethods]
impl Step {
    fn __repr__(&self) -> String {
        let arrow = if self.forward { "->" } else { "<-" };
        format!("Step({}{arrow}, edge_id={})", self.edge_type, self.edge_id)
    }
}

/// A path: `keys[i]` and `keys[i + 1]` are joined by `steps[i]`. `len(path)` is its hops.
#[pyclass(frozen, get_all, module = "hopgraph")]
pub struct Path {
    /// The node keys from the first to the last, both included.
    pub keys: Vec<String>,
    /// The hops, one fewer than the keys.
    pub steps: Vec<Step>,
}

impl Path {
    pub fn new(p: &hopgraph::FoundPath) -> Path {
        Path {
            keys: p.keys().into_iter().map(str::to_owned).collect(),
            steps: p.steps.iter().map(Step::new).collect(),
        }
    }
}

#[pymethods]
impl Path {
    fn __len__(&self) -> usize {
        self.steps.len()
    }

    fn __repr__(&self) -> String {
        let mut s = String::from("Path(");
        for (i, k) in self.keys.iter().enumerate() {
            if let Some(step) = i.checked_sub(1).and_then(|j| self.steps.get(j)) {
                if step.forward {
                    s.push_str(&format!(" -{}-> ", step.edge_type));
                } else {
                    s.push_str(&format!(" <-{}- ", step.edge_type));
                }
            }
            s.push_str(k);
        }
        s.push(')');
        s
    }
}

/// A node one hop away.
#[pyclass(frozen, get_all, module = "hopgraph")]
pub struct Neighbor {
    /// Its key.
    pub key: String,
    /// The edge id.
    pub edge_id: u64,
    /// The edge type.
    #[pyo3(name = "type")]
    pub edge_type: String,
    /// True when the edge leaves the queried node.
    pub outgoing: bool,
}

impl Neighbor {
    pub fn new(n: &hopgraph::NeighborOf) -> Neighbor {
        Neighbor {
            key: n.key.clone(),
            edge_id: n.edge.0,
            edge_type: n.edge_type.clone(),
            outgoing: n.outgoing,
        }
    }
}

#[pymethods]
impl Neighbor {
    fn __repr__(&self) -> String {
        let arrow = if self.outgoing { "->" } else { "<-" };
        format!("Neighbor({:?}, {}{arrow})", self.key, self.edge_type)
    }
}

/// A node reached by `expand`: from which seed, in how many hops, by which last edge.
#[pyclass(frozen, get_all, module = "hopgraph")]
pub struct Reached {
    /// Its key.
    pub key: String,
    /// The seed it was reached from (the nearest; ties: the earlier seed).
    pub seed: String,
    /// Hops from that seed.
    pub hops: u32,
    /// The last edge walked.
    pub edge_id: u64,
    /// Its type.
    #[pyo3(name = "type")]
    pub edge_type: String,
    /// True when the last edge was walked source -> target.
    pub forward: bool,
}

impl Reached {
    pub fn new(r: &hopgraph::Expanded) -> Reached {
        Reached {
            key: r.key.clone(),
            seed: r.seed.clone(),
            hops: r.hops,
            edge_id: r.edge.0,
            edge_type: r.edge_type.clone(),
            forward: r.forward,
        }
    }
}

#[pymethods]
impl Reached {
    fn __repr__(&self) -> String {
        format!(
            "Reached({:?}, seed={:?}, hops={})",
            self.key, self.seed, self.hops
        )
    }
}

/// A node reached by `traverse`, with the hops taken from the start.
#[pyclass(frozen, get_all, module = "hopgraph")]
pub struct Visit {
    /// Its key.
    pub key: String,
    /// Hops from the start.
    pub depth: u32,
    /// The hops from the start to this node.
    pub steps: Vec<Step>,
}

impl Visit {
    pub fn new(v: &hopgraph::Visited) -> Visit {
        Visit {
            key: v.key.clone(),
            depth: v.depth,
            steps: v.steps.iter().map(Step::new).collect(),
        }
    }
}

#[pymethods]
impl Visit {
    fn __repr__(&self) -> String {
        format!("Visit({:?}, depth={})", self.key, self.depth)
    }
}

/// A search hit: the node's key, its score, and (text search) the best field and a
/// snippet around the first match.
#[pyclass(frozen, get_all, module = "hopgraph")]
pub struct Hit {
    /// The node's key.
    pub key: String,
    /// Text: BM25F score (comparable within one search). Vector: cosine similarity.
    pub score: f64,
    /// Text: "title", "content" or "props". Vector: None.
    pub field: Option<&'static str>,
    /// Text: up to 200 characters around the first match. Vector: None.
    pub snippet: Option<String>,
}

#[pymethods]
impl Hit {
    fn __repr__(&self) -> String {
        match &self.snippet {
            Some(s) => format!("Hit({:?}, score={:.3}, {})", self.key, self.score, short(s)),
            None => format!("Hit({:?}, score={:.3})", self.key, self.score),
        }
    }
}
