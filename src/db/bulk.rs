//! Bulk load: many nodes and edges written straight into one new segment.
//!
//! A [`BulkLoad`] accumulates keys, node properties and edges in memory; on
//! [`Database::bulk_load`] the writer checkpoints the delta, maps keys to ids (existing
//! nodes keep theirs), drops duplicate triples (within the input, first occurrence wins,
//! and against the database), assigns dense edge ids in input order and writes one segment.
//! The manifest switch is the commit point, so a bulk load is all or nothing. Cost:
//! O(E log E) for the CSR sort, with no WAL traffic.

use std::collections::HashMap;

use super::Database;
use super::batch::{check_key, check_type_name};
use super::build::{SegmentContent, write_segment};
use super::commit::now_ms;
use super::segment::Segment;
use super::state::{SegmentSet, State};
use crate::error::{Error, Result};
use crate::format::manifest::Manifest;
use crate::format::record::encode_edge_props;
use crate::graph::{NodeId, TypeId, limits};
use crate::model::{EdgeProps, Node, NodeProps};

/// Nodes and edges to load in one atomic step.
#[derive(Debug, Default)]
pub struct BulkLoad {
    keys: HashMap<Box<str>, u32>,
    key_list: Vec<Box<str>>,
    props: Vec<Option<NodeProps>>,
    types: HashMap<Box<str>, u16>,
    type_list: Vec<Box<str>>,
    edges: Vec<(u32, u32, u16, f32)>,
    edge_props: Vec<(u32, String)>,
}

/// What a bulk load did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BulkReport {
    /// Nodes created.
    pub nodes_created: u64,
    /// Existing nodes whose properties were replaced.
    pub nodes_updated: u64,
    /// Edges created.
    pub edges_created: u64,
    /// Edges skipped because the triple repeated in the input or already existed.
    pub duplicates_skipped: u64,
    /// The segment written (None when there was nothing to load).
    pub segment: Option<u64>,
    /// Its size.
    pub bytes: u64,
}

impl BulkLoad {
    /// An empty load.
    pub fn new() -> BulkLoad {
        BulkLoad::default()
    }

    fn local(&mut self, key: &str) -> Result<u32> {
        if let Some(&i) = self.keys.get(key) {
            return Ok(i);
        }
        check_key(key)?;
        let i = u32::try_from(self.key_list.len())
            .ok()
            .filter(|&i| u64::from(i) < limits::NODES_MAX)
            .ok_or_else(|| Error::invalid("too many nodes in one bulk load"))?;
        self.keys.insert(key.into(), i);
        self.key_list.push(key.into());
        self.props.push(None);
        Ok(i)
    }

    /// Adds node `key` with `props` (replacing the properties of an existing node).
    ///
    /// # Errors
    /// `InvalidInput` for a bad key or properties over the limits.
    pub fn node(&mut self, key: &str, props: NodeProps) -> Result<()> {
        super::batch::check_props(&props)?;
        let i = self.local(key)?;
        self.props[i as usize] = Some(props);
        Ok(())
    }

    /// Adds edge `source -edge_type-> target`; missing nodes are created with default
    /// properties.
    ///
    /// # Errors
    /// `InvalidInput` for a bad key, type name or properties.
    pub fn edge(
        &mut self,
        source: &str,
        edge_type: &str,
        target: &str,
        props: EdgeProps,
    ) -> Result<()> {
        check_type_name(edge_type)?;
        check_key(source)?;
        check_key(target)?;
        super::batch::check_edge_props(&props)?;
        let s = self.local(source)?;
        let t = self.local(target)?;
        let ty = match self.types.get(edge_type) {
            Some(&x) => x,
            None => {
                let x = u16::try_from(self.type_list.len())
                    .ok()
                    .filter(|&x| (x as usize) < limits::EDGE_TYPES_MAX)
                    .ok_or_else(|| Error::invalid("too many edge types"))?;
                self.types.insert(edge_type.into(), x);
                self.type_list.push(edge_type.into());
                x
            }
        };
        if !props.props.is_empty() {
            let idx = u32::try_from(self.edges.len())
                .map_err(|_| Error::invalid("too many edges in one bulk load"))?;
            self.edge_props.push((idx, encode_edge_props(&props.props)));
        }
        self.edges.push((s, t, ty, props.weight));
        if self.edges.len() as u64 > limits::SEGMENT_EDGES_MAX {
            return Err(Error::invalid("too many edges in one bulk load"));
        }
        Ok(())
    }

    /// Nodes named so far.
    pub fn node_count(&self) -> usize {
        self.key_list.len()
    }

    /// Edges added so far (duplicates included).
    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }
}

impl Database {
    /// Loads `load` atomically by building one segment directly. Far faster than one
    /// commit per edge; the delta is checkpointed first.
    ///
    /// # Errors
    /// `InvalidInput` past a limit; I/O errors; `ReadOnly`; `WriterPoisoned`. On error
    /// nothing of the load is visible.
    pub fn bulk_load(&self, load: BulkLoad) -> Result<BulkReport> {
        let mut w = self.shared.writer.lock();
        self.checkpoint_locked(&mut w)?;
        let lock = self.shared.lock.as_ref().ok_or(Error::ReadOnly)?;
        let _g = lock.lock()?;
        super::open::catch_up(
            &self.shared.dir,
            &mut w,
            true,
            &mut super::RecoveryReport::default(),
        )?;
        // Commits from other processes may have arrived between the checkpoint and the
        // lock; the new segment must come after everything, so flush them too.
        if !w.state.delta.is_empty() {
            self.checkpoint_held(&mut w)?;
        }
        let st = w.state.clone();
        let now = now_ms();
        let mut report = BulkReport::default();
        let mut next = State::clone(&st);

        // Keys to ids.
        let mut ids = Vec::with_capacity(load.key_list.len());
        let mut existed = Vec::with_capacity(load.key_list.len());
        let mut content = SegmentContent::default();
        for (i, key) in load.key_list.iter().enumerate() {
            let (id, old) = match st.node_id(key) {
                Some(id) => (id, true),
                None => {
                    let id = NodeId(next.node_bound);
                    next.node_bound = next
                        .node_bound
                        .checked_add(1)
                        .filter(|&b| u64::from(b) <= limits::NODES_MAX)
                        .ok_or_else(|| Error::invalid("node id space exhausted"))?;
                    next.live_nodes += 1;
                    report.nodes_created += 1;
                    (id, false)
                }
            };
            ids.push(id.0);
            existed.push(old);
            let props = match (&load.props[i], old) {
                (Some(p), _) => Some(p.clone()),
                (None, false) => Some(NodeProps::default()),
                (None, true) => None,
            };
            if let Some(props) = props {
                let created_at = if old {
                    report.nodes_updated += 1;
                    st.node(id)?.map(|n| n.created_at).unwrap_or(now)
                } else {
                    now
                };
                content.push_node(&Node {
                    id,
                    key: key.to_string(),
                    props,
                    created_at,
                    updated_at: now,
                });
            }
        }
        // Types to ids.
        let mut type_map = Vec::with_capacity(load.type_list.len());
        for name in &load.type_list {
            let id = match next.type_ids.get(&**name) {
                Some(&t) => t,
                None => {
                    let t = u16::try_from(next.types.len())
                        .map_err(|_| Error::invalid("too many edge types"))?;
                    let op = crate::format::record::WalOp::NewType {
                        id: TypeId(t),
                        name: name.to_string(),
                    };
                    next.apply(&op).map_err(Error::invalid)?;
                    t
                }
            };
            type_map.push(id);
        }
        // Dedup: first occurrence of each triple wins; then drop triples that exist.
        // `edge` keeps the count below SEGMENT_EDGES_MAX, which fits in u32.
        let mut order: Vec<u32> =
            (0..u32::try_from(load.edges.len()).unwrap_or(u32::MAX)).collect();
        let key_of = |i: u32| {
            let (s, t, ty, _) = load.edges[i as usize];
            (ids[s as usize], type_map[ty as usize], ids[t as usize])
        };
        order.sort_unstable_by_key(|&i| (key_of(i), i));
        let mut keep = vec![false; load.edges.len()];
        for (j, &i) in order.iter().enumerate() {
            let first = j == 0 || key_of(order[j - 1]) != key_of(i);
            let (s, t, _, _) = load.edges[i as usize];
            let (gs, gty, gt) = key_of(i);
            let in_db = existed[s as usize]
                && existed[t as usize]
                && st
                    .edge_by_triple(NodeId(gs), TypeId(gty), NodeId(gt))
                    .is_some();
            keep[i as usize] = first && !in_db;
        }
        drop(order);
        let mut props_iter = load.edge_props.iter().peekable();
        let mut edge_id = next.next_edge_id;
        for (i, &(s, t, ty, weight)) in load.edges.iter().enumerate() {
            let mut props = String::new();
            while let Some((pi, p)) = props_iter.peek() {
                if *pi as usize > i {
                    break;
                }
                if *pi as usize == i {
                    props = p.clone();
                }
                props_iter.next();
            }
            if !keep[i] {
                report.duplicates_skipped += 1;
                continue;
            }
            let gty = type_map[ty as usize];
            content.edges.push(
                edge_id,
                ids[s as usize],
                ids[t as usize],
                gty,
                weight,
                now,
                props,
            );
            if let Some(c) = next.type_counts.get_mut(gty as usize) {
                *c += 1;
            }
            edge_id += 1;
        }
        next.next_edge_id = edge_id;
        report.edges_created = content.edges.len() as u64;
        if content.edges.len() == 0 && content.nodes.is_empty() {
            return Ok(report);
        }
        content.summary = super::maintenance::summary_of(&next);
        let dir = &self.shared.dir;
        let seg_id = w.manifest.next_segment_id;
        report.bytes = write_segment(dir, seg_id, self.shared.db_id, st.lsn, content)?;
        let seg = Segment::open(dir, seg_id, self.shared.db_id)?;
        seg.file.verify()?;
        report.segment = Some(seg_id);
        let mut segments = st.segs.segments.clone();
        segments.push(seg);
        let m = Manifest {
            generation: w.manifest.generation + 1,
            checkpoint_time_ms: now,
            next_segment_id: seg_id + 1,
            segments: segments.iter().map(|s| s.file.id).collect(),
            ..w.manifest.clone()
        };
        self.switch_manifest(
            &mut w,
            m,
            State::from_segments(SegmentSet::new(segments), 0, st.lsn),
            None,
        )?;
        Ok(report)
    }
}
