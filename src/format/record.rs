//! Encoding of node records, edge records and WAL commit payloads.
//!
//! A commit payload holds *resolved* operations: every id is already assigned and every
//! implied change (a deleted node's edges, a new edge type) is explicit, so replaying a
//! record needs no look-ups and gives every process the same state.

use super::codec::{ByteReader, ByteWriter, DecodeError};
use super::segment::VectorSections;
use crate::graph::{EdgeId, NodeId, TypeId, limits};
use crate::model::{Edge, Node, NodeProps, Props};

/// One resolved operation inside a commit.
#[derive(Clone, Debug, PartialEq)]
pub enum WalOp {
    /// A new edge type name was interned.
    NewType {
        /// The id it got.
        id: TypeId,
        /// The name.
        name: String,
    },
    /// A node was created or its record replaced (the full new record).
    PutNode(Node),
    /// A node was deleted (its edges are removed by explicit `RemoveEdge` ops before it).
    DeleteNode {
        /// The node.
        id: NodeId,
    },
    /// An edge was created.
    AddEdge(Edge),
    /// An edge's validity interval changed (it was ended, or its interval set).
    SetEdgeValidity {
        /// The edge.
        id: EdgeId,
        /// New start of validity.
        valid_from: u64,
        /// New end of validity (exclusive); `None`: never ends.
        valid_to: Option<u64>,
    },
    /// An edge was removed.
    RemoveEdge {
        /// The edge.
        id: EdgeId,
        /// Its source.
        source: NodeId,
        /// Its target.
        target: NodeId,
        /// Its type.
        edge_type: TypeId,
    },
}

const TAG_NEW_TYPE: u8 = 1;
const TAG_PUT_NODE: u8 = 2;
const TAG_DELETE_NODE: u8 = 3;
const TAG_ADD_EDGE: u8 = 4;
const TAG_REMOVE_EDGE: u8 = 5;
/// `PutNode` from format version 9: the node record ends with its validity interval.
const TAG_PUT_NODE_TIMED: u8 = 6;
/// `AddEdge` from format version 9: with the edge's validity interval.
const TAG_ADD_EDGE_TIMED: u8 = 7;
const TAG_SET_EDGE_VALIDITY: u8 = 8;

/// How an open end of validity (`valid_to` `None`) is written.
pub const VALID_TO_NONE: u64 = u64::MAX;

/// The encoding of an optional end of validity.
#[inline]
pub fn valid_to_code(to: Option<u64>) -> u64 {
    to.unwrap_or(VALID_TO_NONE)
}

/// The end of validity an encoded value stands for.
#[inline]
pub fn valid_to_of(code: u64) -> Option<u64> {
    (code != VALID_TO_NONE).then_some(code)
}

/// Whether node records carry their validity interval (format version 9 on); older
/// records read as valid from their creation, never ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordValidity {
    /// The record ends with `valid_from u64, valid_to u64`.
    Stored,
    /// The record has no interval (written before version 9).
    Implied,
}

/// The payload of one WAL record: one committed batch.
#[derive(Clone, Debug, PartialEq)]
pub struct CommitPayload {
    /// Commit time, milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// The resolved operations, in order.
    pub ops: Vec<WalOp>,
}

fn props_json(props: &Props) -> String {
    if props.is_empty() {
        String::new()
    } else {
        serde_json::Value::Object(props.clone()).to_string()
    }
}

fn parse_props(s: &str, at: usize) -> Result<Props, DecodeError> {
    if s.is_empty() {
        return Ok(Props::new());
    }
    match serde_json::from_str::<serde_json::Value>(s) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        _ => Err(DecodeError::new(at, "props: not a JSON object")),
    }
}

/// The embedding length written for a node without an embedding.
pub const EMBEDDING_NONE: u32 = u32::MAX;
/// The embedding length written, in a segment record (format version 8 on), for an
/// embedding that is the node's row of the segment's vector sections: the floats are not
/// repeated in the record.
pub const EMBEDDING_IN_ROW: u32 = u32::MAX - 1;

/// Where [`encode_node`] writes a node's embedding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmbeddingAt {
    /// In the record (WAL records).
    Inline,
    /// In the segment's vector rows; the record keeps [`EMBEDDING_IN_ROW`] (segment
    /// records, whose segment writes every embedding as a row).
    Row,
}

/// Where [`decode_node`] finds the embedding of a record that keeps it in its row.
#[derive(Clone, Copy, Debug)]
pub struct EmbeddingRows<'a> {
    /// The segment's vector sections.
    pub sections: VectorSections<'a>,
    /// Their dimension.
    pub dim: usize,
}

/// Appends the encoding of a node record (id excluded: callers store it beside), its
/// embedding written `at` the place given.
pub fn encode_node(w: &mut ByteWriter, node: &Node, at: EmbeddingAt) {
    let p = &node.props;
    let props = props_json(&p.props);
    // The record's size, so that it is written into one allocation.
    w.buf.reserve(
        [&node.key, &p.kind, &p.title, &p.content, &p.status, &props]
            .iter()
            .map(|s| 4 + s.len())
            .sum::<usize>()
            + 4
            + 4
            + match (&p.embedding, at) {
                (Some(v), EmbeddingAt::Inline) => 4 * v.len(),
                _ => 0,
            }
            + 32,
    );
    w.str(&node.key);
    w.str(&p.kind);
    w.str(&p.title);
    w.str(&p.content);
    w.f32(p.importance);
    w.str(&p.status);
    w.str(&props);
    match &p.embedding {
        None => w.u32(EMBEDDING_NONE),
        Some(_) if at == EmbeddingAt::Row => w.u32(EMBEDDING_IN_ROW),
        Some(v) => {
            // Bounded by EMBEDDING_DIMS_MAX, checked when the batch was built.
            w.u32(u32::try_from(v.len()).unwrap_or(u32::MAX));
            w.f32s(v);
        }
    }
    w.u64(node.created_at);
    w.u64(node.updated_at);
    w.u64(node.valid_from);
    w.u64(valid_to_code(node.valid_to));
}

/// The title and content of a node record, borrowed from it: what a phrase check in those
/// fields reads.
#[derive(Clone, Copy, Debug)]
pub struct RecordTexts<'a> {
    pub title: &'a str,
    pub content: &'a str,
}

/// Decodes only the title and content of a node record written by [`encode_node`]: the
/// fields before them are skipped, those after them not read.
///
/// # Errors
/// Truncated input or invalid UTF-8 in the title or content.
pub fn decode_node_texts<'a>(r: &mut ByteReader<'a>) -> Result<RecordTexts<'a>, DecodeError> {
    r.bytes(limits::NODE_KEY_BYTES_MAX, "node key")?;
    r.bytes(limits::NODE_SHORT_TEXT_BYTES_MAX, "node kind")?;
    let title = r.str(limits::NODE_SHORT_TEXT_BYTES_MAX, "node title")?;
    let content = r.str(limits::NODE_CONTENT_BYTES_MAX, "node content")?;
    Ok(RecordTexts { title, content })
}

/// Decodes a node record written by [`encode_node`]; an embedding kept in its row is read
/// from `rows` (`None` where records keep their embeddings inline: a record that says
/// otherwise is an error, as is a row that is missing).
pub fn decode_node(
    r: &mut ByteReader<'_>,
    id: NodeId,
    rows: Option<&EmbeddingRows<'_>>,
    validity: RecordValidity,
) -> Result<Node, DecodeError> {
    let key = r.str(limits::NODE_KEY_BYTES_MAX, "node key")?.to_owned();
    let kind = r
        .str(limits::NODE_SHORT_TEXT_BYTES_MAX, "node kind")?
        .to_owned();
    let title = r
        .str(limits::NODE_SHORT_TEXT_BYTES_MAX, "node title")?
        .to_owned();
    let content = r
        .str(limits::NODE_CONTENT_BYTES_MAX, "node content")?
        .to_owned();
    let importance = r.f32("node importance")?;
    let status = r
        .str(limits::NODE_SHORT_TEXT_BYTES_MAX, "node status")?
        .to_owned();
    let at = r.pos();
    let props = parse_props(r.str(limits::NODE_PROPS_BYTES_MAX, "node props")?, at)?;
    let at = r.pos();
    let dims = r.u32("embedding length")?;
    let embedding = if dims == EMBEDDING_NONE {
        None
    } else if dims == EMBEDDING_IN_ROW {
        let row = rows
            .and_then(|x| x.sections.row_of(id.0, x.dim))
            .ok_or_else(|| {
                DecodeError::new(at, format!("the embedding row of node {} is missing", id.0))
            })?;
        Some(row.to_vec())
    } else {
        let dims = dims as usize;
        if dims > limits::EMBEDDING_DIMS_MAX {
            return Err(DecodeError::new(
                at,
                format!("embedding has {dims} dimensions"),
            ));
        }
        let raw = r.take(dims * 4, "embedding")?;
        Some(
            raw.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        )
    };
    let created_at = r.u64("node created_at")?;
    let updated_at = r.u64("node updated_at")?;
    let (valid_from, valid_to) = decode_validity(r, validity, created_at)?;
    Ok(Node {
        id,
        key,
        props: NodeProps {
            kind,
            title,
            content,
            importance,
            status,
            props,
            embedding,
        },
        created_at,
        updated_at,
        valid_from,
        valid_to,
    })
}

fn decode_validity(
    r: &mut ByteReader<'_>,
    validity: RecordValidity,
    created_at: u64,
) -> Result<(u64, Option<u64>), DecodeError> {
    if validity == RecordValidity::Implied {
        return Ok((created_at, None));
    }
    let at = r.pos();
    let from = r.u64("valid_from")?;
    let to = valid_to_of(r.u64("valid_to")?);
    if to.is_some_and(|to| to <= from) {
        return Err(DecodeError::new(at, "valid_to is not after valid_from"));
    }
    Ok((from, to))
}

/// Decodes only the creation time and validity interval of a node record written by
/// [`encode_node`], skipping every other field (no string is checked or copied).
///
/// # Errors
/// Truncated input or an interval that ends before it starts.
pub fn decode_node_validity(
    r: &mut ByteReader<'_>,
    validity: RecordValidity,
) -> Result<(u64, u64, Option<u64>), DecodeError> {
    r.bytes(limits::NODE_KEY_BYTES_MAX, "node key")?;
    r.bytes(limits::NODE_SHORT_TEXT_BYTES_MAX, "node kind")?;
    r.bytes(limits::NODE_SHORT_TEXT_BYTES_MAX, "node title")?;
    r.bytes(limits::NODE_CONTENT_BYTES_MAX, "node content")?;
    r.f32("node importance")?;
    r.bytes(limits::NODE_SHORT_TEXT_BYTES_MAX, "node status")?;
    r.bytes(limits::NODE_PROPS_BYTES_MAX, "node props")?;
    let dims = r.u32("embedding length")?;
    if dims != EMBEDDING_NONE && dims != EMBEDDING_IN_ROW {
        let dims = dims as usize;
        if dims > limits::EMBEDDING_DIMS_MAX {
            return Err(DecodeError::new(
                r.pos(),
                format!("embedding has {dims} dimensions"),
            ));
        }
        r.take(dims * 4, "embedding")?;
    }
    let created_at = r.u64("node created_at")?;
    r.u64("node updated_at")?;
    let (from, to) = decode_validity(r, validity, created_at)?;
    Ok((created_at, from, to))
}

/// Encodes edge properties as compact JSON (empty string for none).
pub fn encode_edge_props(props: &Props) -> String {
    props_json(props)
}

/// Decodes edge properties written by [`encode_edge_props`].
pub fn decode_edge_props(s: &str) -> Result<Props, DecodeError> {
    parse_props(s, 0)
}

/// Encodes a commit payload.
pub fn encode_commit(c: &CommitPayload) -> Vec<u8> {
    let mut w = ByteWriter::new();
    w.u64(c.time_ms);
    w.u32(u32::try_from(c.ops.len()).unwrap_or(u32::MAX));
    for op in &c.ops {
        match op {
            WalOp::NewType { id, name } => {
                w.u8(TAG_NEW_TYPE);
                w.u16(id.0);
                w.str(name);
            }
            WalOp::PutNode(node) => {
                w.u8(TAG_PUT_NODE_TIMED);
                w.u32(node.id.0);
                encode_node(&mut w, node, EmbeddingAt::Inline);
            }
            WalOp::DeleteNode { id } => {
                w.u8(TAG_DELETE_NODE);
                w.u32(id.0);
            }
            WalOp::AddEdge(e) => {
                w.u8(TAG_ADD_EDGE_TIMED);
                w.u64(e.id.0);
                w.u32(e.source.0);
                w.u32(e.target.0);
                w.u16(e.edge_type.0);
                w.f32(e.weight);
                w.u64(e.created_at);
                w.str(&props_json(&e.props));
                w.u64(e.valid_from);
                w.u64(valid_to_code(e.valid_to));
            }
            WalOp::SetEdgeValidity {
                id,
                valid_from,
                valid_to,
            } => {
                w.u8(TAG_SET_EDGE_VALIDITY);
                w.u64(id.0);
                w.u64(*valid_from);
                w.u64(valid_to_code(*valid_to));
            }
            WalOp::RemoveEdge {
                id,
                source,
                target,
                edge_type,
            } => {
                w.u8(TAG_REMOVE_EDGE);
                w.u64(id.0);
                w.u32(source.0);
                w.u32(target.0);
                w.u16(edge_type.0);
            }
        }
    }
    w.buf
}

/// Decodes a commit payload. Never panics; every count and length is bounds-checked.
pub fn decode_commit(buf: &[u8]) -> Result<CommitPayload, DecodeError> {
    let mut r = ByteReader::new(buf);
    let time_ms = r.u64("commit time")?;
    let count = r.u32("op count")? as usize;
    if count > limits::BATCH_OPS_MAX * 4 {
        return Err(DecodeError::new(
            8,
            format!("op count {count} exceeds limit"),
        ));
    }
    // Each op takes at least 3 bytes, so this capacity is bounded by the buffer size.
    let mut ops = Vec::with_capacity(count.min(r.remaining() / 3));
    for _ in 0..count {
        let at = r.pos();
        let tag = r.u8("op tag")?;
        let op = match tag {
            TAG_NEW_TYPE => {
                let id = TypeId(r.u16("type id")?);
                let name = r.str(limits::EDGE_TYPE_BYTES_MAX, "type name")?.to_owned();
                WalOp::NewType { id, name }
            }
            TAG_PUT_NODE | TAG_PUT_NODE_TIMED => {
                let id = NodeId(r.u32("node id")?);
                let validity = if tag == TAG_PUT_NODE {
                    RecordValidity::Implied
                } else {
                    RecordValidity::Stored
                };
                WalOp::PutNode(decode_node(&mut r, id, None, validity)?)
            }
            TAG_DELETE_NODE => WalOp::DeleteNode {
                id: NodeId(r.u32("node id")?),
            },
            TAG_ADD_EDGE | TAG_ADD_EDGE_TIMED => {
                let id = EdgeId(r.u64("edge id")?);
                let source = NodeId(r.u32("edge source")?);
                let target = NodeId(r.u32("edge target")?);
                let edge_type = TypeId(r.u16("edge type")?);
                let weight = r.f32("edge weight")?;
                let created_at = r.u64("edge created_at")?;
                let pat = r.pos();
                let props = parse_props(r.str(limits::EDGE_PROPS_BYTES_MAX, "edge props")?, pat)?;
                let validity = if tag == TAG_ADD_EDGE {
                    RecordValidity::Implied
                } else {
                    RecordValidity::Stored
                };
                let (valid_from, valid_to) = decode_validity(&mut r, validity, created_at)?;
                WalOp::AddEdge(Edge {
                    id,
                    source,
                    target,
                    edge_type,
                    weight,
                    props,
                    created_at,
                    valid_from,
                    valid_to,
                })
            }
            TAG_SET_EDGE_VALIDITY => {
                let id = EdgeId(r.u64("edge id")?);
                let (valid_from, valid_to) = decode_validity(&mut r, RecordValidity::Stored, 0)?;
                WalOp::SetEdgeValidity {
                    id,
                    valid_from,
                    valid_to,
                }
            }
            TAG_REMOVE_EDGE => WalOp::RemoveEdge {
                id: EdgeId(r.u64("edge id")?),
                source: NodeId(r.u32("edge source")?),
                target: NodeId(r.u32("edge target")?),
                edge_type: TypeId(r.u16("edge type")?),
            },
            t => return Err(DecodeError::new(at, format!("unknown op tag {t}"))),
        };
        ops.push(op);
    }
    if !r.is_empty() {
        return Err(DecodeError::new(
            r.pos(),
            "trailing bytes after the last op",
        ));
    }
    Ok(CommitPayload { time_ms, ops })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CommitPayload {
        let mut props = Props::new();
        props.insert("a".into(), serde_json::json!(1));
        CommitPayload {
            time_ms: 42,
            ops: vec![
                WalOp::NewType {
                    id: TypeId(3),
                    name: "caused_by".into(),
                },
                WalOp::PutNode(Node {
                    id: NodeId(9),
                    key: "k".into(),
                    props: NodeProps {
                        kind: "semantic".into(),
                        title: "t".into(),
                        content: "c".into(),
                        importance: 0.5,
                        status: "active".into(),
                        props: props.clone(),
                        embedding: Some(vec![1.0, 2.0]),
                    },
                    created_at: 1,
                    updated_at: 2,
                    valid_from: 1,
                    valid_to: Some(9),
                }),
                WalOp::AddEdge(Edge {
                    id: EdgeId(7),
                    source: NodeId(1),
                    target: NodeId(2),
                    edge_type: TypeId(3),
                    weight: 2.5,
                    props,
                    created_at: 5,
                    valid_from: 3,
                    valid_to: None,
                }),
                WalOp::SetEdgeValidity {
                    id: EdgeId(7),
                    valid_from: 3,
                    valid_to: Some(8),
                },
                WalOp::RemoveEdge {
                    id: EdgeId(7),
                    source: NodeId(1),
                    target: NodeId(2),
                    edge_type: TypeId(3),
                },
                WalOp::DeleteNode { id: NodeId(9) },
            ],
        }
    }

    #[test]
    fn commit_round_trip() {
        let c = sample();
        let bytes = encode_commit(&c);
        assert_eq!(decode_commit(&bytes).unwrap(), c);
    }

    /// The texts-only decoder reads the title and content the full decoder reads, from
    /// either record form; a record cut inside them is an error.
    #[test]
    fn node_texts_are_those_of_the_record() {
        let WalOp::PutNode(mut node) = sample().ops[1].clone() else {
            unreachable!("op 1 is a node");
        };
        node.props.title = "Pool size — 連線池".into();
        node.props.content = "content after\na title".into();
        for at in [EmbeddingAt::Inline, EmbeddingAt::Row] {
            let mut w = ByteWriter::new();
            encode_node(&mut w, &node, at);
            let t = decode_node_texts(&mut ByteReader::new(&w.buf)).unwrap();
            assert_eq!(
                (t.title, t.content),
                ("Pool size — 連線池", "content after\na title")
            );
            let title_end = 4 + node.key.len() + 4 + node.props.kind.len() + 4 + 5;
            assert!(decode_node_texts(&mut ByteReader::new(&w.buf[..title_end])).is_err());
        }
    }

    /// A segment record keeps a marker for its embedding, read back from the node's row;
    /// without rows, or without the node's row, it is an error, not a missing embedding.
    #[test]
    fn embedding_in_row_reads_the_row() {
        let WalOp::PutNode(node) = sample().ops[1].clone() else {
            unreachable!("op 1 is a node");
        };
        let mut inline = ByteWriter::new();
        encode_node(&mut inline, &node, EmbeddingAt::Inline);
        let mut w = ByteWriter::new();
        encode_node(&mut w, &node, EmbeddingAt::Row);
        assert_eq!(w.buf.len() + 8, inline.buf.len());
        let (ids, data) = ([3u32, 9, 12], [0.0f32, 0.0, 1.0, 2.0, 5.0, 5.0]);
        let sections = VectorSections {
            ids: &ids,
            data: &data,
            scales: &[],
            offsets: &[],
            neighbors: &[],
            members: &[],
        };
        let rows = EmbeddingRows { sections, dim: 2 };
        let back = decode_node(
            &mut ByteReader::new(&w.buf),
            node.id,
            Some(&rows),
            RecordValidity::Stored,
        )
        .unwrap();
        assert_eq!(back, node);
        assert!(
            decode_node(
                &mut ByteReader::new(&w.buf),
                node.id,
                None,
                RecordValidity::Stored
            )
            .is_err()
        );
        assert!(
            decode_node(
                &mut ByteReader::new(&w.buf),
                NodeId(4),
                Some(&rows),
                RecordValidity::Stored
            )
            .is_err()
        );
        let back = decode_node(
            &mut ByteReader::new(&inline.buf),
            node.id,
            None,
            RecordValidity::Stored,
        )
        .unwrap();
        assert_eq!(back, node);
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let bytes = encode_commit(&sample());
        for cut in 0..bytes.len() {
            assert!(
                decode_commit(&bytes[..cut]).is_err(),
                "cut at {cut} decoded"
            );
        }
    }
}
