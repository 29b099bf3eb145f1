//! The edge rows of a segment being built, one column per field.
//!
//! Columns that bulk loads fill with one value (dense ids, one creation time, weight 1.0,
//! no properties) are stored as that value until a row differs, so a load of millions of
//! edges keeps only the source, target and type columns.

use crate::error::{Error, Result};
use crate::model::Edge;

/// A column that holds one repeated value until a row differs, then every row's value.
#[derive(Debug)]
enum Column<T> {
    Same { value: T, len: usize },
    List(Vec<T>),
}

impl<T: Copy + Default + PartialEq> Default for Column<T> {
    fn default() -> Self {
        Column::Same {
            value: T::default(),
            len: 0,
        }
    }
}

impl<T: Copy + Default + PartialEq> Column<T> {
    fn push(&mut self, x: T) {
        match self {
            Column::Same { value, len } if *len == 0 || *value == x => {
                *value = x;
                *len += 1;
            }
            Column::Same { value, len } => {
                let mut v = Vec::with_capacity(*len + 1);
                v.resize(*len, *value);
                v.push(x);
                *self = Column::List(v);
            }
            Column::List(v) => v.push(x),
        }
    }

    /// The value of every row, if there are rows and they agree.
    fn same(&self) -> Option<T> {
        match self {
            Column::Same { value, len } => (*len > 0).then_some(*value),
            Column::List(v) => v.first().copied().filter(|&f| v.iter().all(|&x| x == f)),
        }
    }

    /// The greatest value (without copying the column); None for no rows.
    fn max(&self) -> Option<T>
    where
        T: Ord,
    {
        match self {
            Column::Same { value, len } => (*len > 0).then_some(*value),
            Column::List(v) => v.iter().copied().max(),
        }
    }

    fn all(&self, f: impl Fn(T) -> bool) -> bool {
        match self {
            Column::Same { value, len } => *len == 0 || f(*value),
            Column::List(v) => v.iter().all(|&x| f(x)),
        }
    }

    fn to_vec(&self) -> Vec<T> {
        match self {
            Column::Same { value, len } => vec![*value; *len],
            Column::List(v) => v.clone(),
        }
    }

    fn permute(&mut self, order: &[usize]) {
        if let Column::List(v) = self {
            *v = order.iter().map(|&i| v[i]).collect();
        }
    }
}

/// Edge ids: `base + row` until a row breaks the run, then every row's id.
#[derive(Debug)]
enum Ids {
    Dense { base: u64, len: usize },
    List(Vec<u64>),
}

impl Default for Ids {
    fn default() -> Self {
        Ids::Dense { base: 0, len: 0 }
    }
}

impl Ids {
    fn push(&mut self, id: u64) {
        match self {
            Ids::Dense { base, len } if *len == 0 => {
                *base = id;
                *len = 1;
            }
            Ids::Dense { base, len } if base.checked_add(*len as u64) == Some(id) => *len += 1,
            Ids::Dense { base, len } => {
                let mut v: Vec<u64> = (*base..).take(*len).collect();
                v.push(id);
                *self = Ids::List(v);
            }
            Ids::List(v) => v.push(id),
        }
    }
}

/// Compact JSON per row; `offsets` stays empty while every row has none.
#[derive(Debug, Default)]
struct PropsColumn {
    len: usize,
    offsets: Vec<u64>,
    blob: Vec<u8>,
}

impl PropsColumn {
    fn push(&mut self, p: &str) {
        if self.offsets.is_empty() {
            if p.is_empty() {
                self.len += 1;
                return;
            }
            self.offsets = vec![0; self.len + 1];
        }
        self.blob.extend_from_slice(p.as_bytes());
        self.offsets.push(self.blob.len() as u64);
        self.len += 1;
    }

    fn permute(&mut self, order: &[usize]) {
        if self.offsets.is_empty() {
            return;
        }
        let old = std::mem::take(self);
        let mut blob = Vec::with_capacity(old.blob.len());
        let mut offsets = Vec::with_capacity(old.offsets.len());
        offsets.push(0);
        // `offsets` has one entry per row plus one, each within `blob`.
        let at = |j: usize| {
            old.offsets
                .get(j)
                .and_then(|&o| usize::try_from(o).ok())
                .unwrap_or(0)
        };
        for &i in order {
            blob.extend_from_slice(old.blob.get(at(i)..at(i + 1)).unwrap_or_default());
            offsets.push(blob.len() as u64);
        }
        *self = PropsColumn {
            len: old.len,
            offsets,
            blob,
        };
    }
}

/// Edge rows of a segment, sorted by id. Ids that run densely, a creation time shared by
/// every row, weights and properties are stored once until a row differs.
#[derive(Debug, Default)]
pub(crate) struct EdgeRows {
    ids: Ids,
    pub sources: Vec<u32>,
    pub targets: Vec<u32>,
    pub types: Vec<u16>,
    /// `f32::to_bits` of each weight (bitwise equality keeps -0.0 apart from 0.0).
    weights: Column<u32>,
    created: Column<u64>,
    props: PropsColumn,
    /// (edge id, valid_from, valid_to code) of the rows whose interval is not
    /// [created, never), in push order (by id once `validity` sorts them).
    timed: Vec<[u64; 3]>,
}

impl EdgeRows {
    /// Rows (counted by their ids: rows built by [`EdgeRows::dense_without_columns`] have
    /// no source, target and type columns).
    pub fn len(&self) -> usize {
        match &self.ids {
            Ids::Dense { len, .. } => *len,
            Ids::List(v) => v.len(),
        }
    }

    /// Rows with ids `base..`, all created at `created`, with weights `weights` (as
    /// `f32::to_bits`; None for all 1.0) and properties `props` (ascending `(row, json)`).
    ///
    /// # Errors
    /// `InvalidArgument` when the columns differ in length or a props row is out of order.
    pub fn dense(
        base: u64,
        created: u64,
        columns: (Vec<u32>, Vec<u32>, Vec<u16>),
        weights: Option<Vec<u32>>,
        props: &[(u32, String)],
    ) -> Result<EdgeRows> {
        let (sources, targets, types) = columns;
        let len = sources.len();
        if targets.len() != len || types.len() != len {
            return Err(Error::invalid("edge columns differ in length"));
        }
        let rows = EdgeRows::dense_without_columns(base, created, len, weights, props)?;
        Ok(EdgeRows {
            sources,
            targets,
            types,
            ..rows
        })
    }

    /// [`EdgeRows::dense`] for `len` rows whose sources, targets and types are not held
    /// here (an out-of-core bulk load hands the writer its CSR directions in spill files).
    ///
    /// # Errors
    /// `InvalidArgument` when `weights` has another length or a props row is out of order.
    pub fn dense_without_columns(
        base: u64,
        created: u64,
        len: usize,
        weights: Option<Vec<u32>>,
        props: &[(u32, String)],
    ) -> Result<EdgeRows> {
        let mismatch = || Error::invalid("edge columns differ in length");
        let weights = match weights {
            Some(w) if w.len() == len => Column::List(w),
            Some(_) => return Err(mismatch()),
            None => Column::Same {
                value: 1.0f32.to_bits(),
                len,
            },
        };
        let mut column = PropsColumn::default();
        for &(row, ref p) in props {
            let row = row as usize;
            if row < column.len || row >= len {
                return Err(Error::invalid("edge properties out of row order"));
            }
            while column.len < row {
                column.push("");
            }
            column.push(p);
        }
        while column.len < len {
            column.push("");
        }
        Ok(EdgeRows {
            ids: Ids::Dense { base, len },
            sources: Vec::new(),
            targets: Vec::new(),
            types: Vec::new(),
            weights,
            created: Column::Same {
                value: created,
                len,
            },
            props: column,
            timed: Vec::new(),
        })
    }

    #[allow(clippy::too_many_arguments, reason = "one argument per column")]
    pub fn push(
        &mut self,
        id: u64,
        source: u32,
        target: u32,
        t: u16,
        weight: f32,
        created: u64,
        props: &str,
    ) {
        self.ids.push(id);
        self.sources.push(source);
        self.targets.push(target);
        self.types.push(t);
        self.weights.push(weight.to_bits());
        self.created.push(created);
        self.props.push(props);
    }

    /// Gives the row of edge `id` (created at `created`) the interval [`from`, `to`),
    /// unless that is [created, never).
    pub fn set_validity(&mut self, id: u64, created: u64, from: u64, to: Option<u64>) {
        if from != created || to.is_some() {
            self.timed
                .push([id, from, crate::format::record::valid_to_code(to)]);
        }
    }

    /// Appends a stored edge.
    pub fn push_edge(&mut self, e: &Edge) {
        if e.valid_from != e.created_at || e.valid_to.is_some() {
            let to = crate::format::record::valid_to_code(e.valid_to);
            self.timed.push([e.id.0, e.valid_from, to]);
        }
        let props = crate::format::record::encode_edge_props(&e.props);
        self.push(
            e.id.0,
            e.source.0,
            e.target.0,
            e.edge_type.0,
            e.weight,
            e.created_at,
            &props,
        );
    }

    /// Sorts rows by edge id (a no-op when already sorted).
    pub fn sort_by_id(&mut self) {
        let Ids::List(ids) = &mut self.ids else {
            return;
        };
        if ids.windows(2).all(|w| w[0] < w[1]) {
            return;
        }
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_unstable_by_key(|&i| ids[i]);
        fn permute<T: Copy>(v: &mut Vec<T>, order: &[usize]) {
            *v = order.iter().map(|&i| v[i]).collect();
        }
        permute(ids, &order);
        permute(&mut self.sources, &order);
        permute(&mut self.targets, &order);
        permute(&mut self.types, &order);
        self.weights.permute(&order);
        self.created.permute(&order);
        self.props.permute(&order);
    }

    /// `Some(base)` when row `i` has id `base + i` (also for no rows: `Some(0)`).
    pub(super) fn dense_base(&self) -> Option<u64> {
        match &self.ids {
            Ids::Dense { base, len } => Some(if *len == 0 { 0 } else { *base }),
            Ids::List(v) if v.is_empty() => Some(0),
            Ids::List(v) => v
                .first()
                .copied()
                .filter(|&b| v.iter().enumerate().all(|(i, &x)| x == b + i as u64)),
        }
    }

    /// Every row's id.
    pub(super) fn ids(&self) -> Vec<u64> {
        match &self.ids {
            Ids::Dense { base, len } => (*base..).take(*len).collect(),
            Ids::List(v) => v.clone(),
        }
    }
}

/// The validity of a segment's rows as its sections hold it.
#[derive(Debug, Default)]
pub(crate) struct RowValidity {
    /// `EdgeValidFrom`, when a row starts at another time than its creation.
    pub from: Option<Vec<u64>>,
    /// `EdgeValidTo`, when a row has an end.
    pub to: Option<Vec<u64>>,
    /// The ids of the rows with an interval other than [created, never).
    pub timed: roaring::RoaringTreemap,
    /// The greatest start of validity of a row (0: no rows).
    pub from_max: u64,
}

impl EdgeRows {
    /// The rows' validity columns; call after [`EdgeRows::sort_by_id`].
    pub(super) fn validity(&mut self) -> RowValidity {
        let mut out = RowValidity {
            from_max: self.created.max().unwrap_or(0),
            ..RowValidity::default()
        };
        if self.timed.is_empty() {
            return out;
        }
        let created = self.created();
        self.timed.sort_unstable_by_key(|t| t[0]);
        let ids = self.ids();
        let (mut from, mut to) = (
            created,
            vec![crate::format::record::VALID_TO_NONE; ids.len()],
        );
        let (mut any_from, mut any_to) = (false, false);
        let mut j = 0usize;
        for (row, &id) in ids.iter().enumerate() {
            while j < self.timed.len() && self.timed[j][0] < id {
                j += 1;
            }
            if let Some(&[tid, f, t]) = self.timed.get(j)
                && tid == id
            {
                any_from |= f != from[row];
                any_to |= t != crate::format::record::VALID_TO_NONE;
                from[row] = f;
                to[row] = t;
                out.from_max = out.from_max.max(f);
                out.timed.insert(id);
            }
        }
        out.from = any_from.then_some(from);
        out.to = any_to.then_some(to);
        out
    }

    /// The creation time of every row, if there are rows and they agree.
    pub(super) fn uniform_created_at(&self) -> Option<u64> {
        self.created.same()
    }

    /// Every row's creation time.
    pub(super) fn created(&self) -> Vec<u64> {
        self.created.to_vec()
    }

    /// Whether every weight is 1.0 (the default, which the format leaves out).
    pub(super) fn weights_default(&self) -> bool {
        self.weights.all(|w| f32::from_bits(w) == 1.0)
    }

    /// Every row's weight as `f32::to_bits` (the same bytes as the `f32`s).
    pub(super) fn weight_bits(&self) -> Vec<u32> {
        self.weights.to_vec()
    }

    /// The properties' offsets (one per row plus one) and blob; None when no row has any.
    pub(super) fn props(&self) -> Option<(&[u64], &[u8])> {
        (!self.props.offsets.is_empty()).then_some((&self.props.offsets, &self.props.blob))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_stay_single_values_until_rows_differ() {
        let mut rows = EdgeRows::default();
        assert_eq!(rows.dense_base(), Some(0));
        for i in 0..3 {
            rows.push(10 + i, 1, 2, 0, 1.0, 5, "");
        }
        assert_eq!(rows.dense_base(), Some(10));
        assert_eq!(rows.uniform_created_at(), Some(5));
        assert!(rows.weights_default());
        assert!(rows.props().is_none());
        rows.push(20, 1, 2, 0, -0.0, 6, "{\"a\":1}");
        assert_eq!(rows.dense_base(), None);
        assert_eq!(rows.ids(), [10, 11, 12, 20]);
        assert_eq!(rows.uniform_created_at(), None);
        assert_eq!(rows.created(), [5, 5, 5, 6]);
        assert!(!rows.weights_default());
        assert_eq!(rows.weight_bits()[3], (-0.0f32).to_bits());
        let (offsets, blob) = rows.props().unwrap();
        assert_eq!((offsets, blob), (&[0, 0, 0, 0, 7][..], &b"{\"a\":1}"[..]));
    }

    #[test]
    fn sorting_by_id_moves_every_column() {
        let mut rows = EdgeRows::default();
        for (id, p) in [(3u64, "c"), (1, ""), (2, "bb")] {
            let x = u32::try_from(id).unwrap();
            rows.push(id, x, x + 10, 0, x as f32, id * 100, p);
        }
        rows.sort_by_id();
        assert_eq!(rows.ids(), [1, 2, 3]);
        assert_eq!(rows.sources, [1, 2, 3]);
        assert_eq!(rows.targets, [11, 12, 13]);
        assert_eq!(rows.created(), [100, 200, 300]);
        assert_eq!(rows.weight_bits(), [1.0f32, 2.0, 3.0].map(f32::to_bits));
        assert_eq!(rows.props().unwrap(), (&[0, 0, 2, 3][..], &b"bbc"[..]));
    }

    #[test]
    fn dense_rows_place_sparse_props() {
        let rows = EdgeRows::dense(
            7,
            9,
            (vec![0, 1, 2], vec![1, 2, 0], vec![0, 0, 1]),
            None,
            &[(1, "{}".to_owned())],
        )
        .unwrap();
        assert_eq!(rows.dense_base(), Some(7));
        assert_eq!(rows.uniform_created_at(), Some(9));
        assert!(rows.weights_default());
        assert_eq!(rows.props().unwrap(), (&[0, 0, 2, 2][..], &b"{}"[..]));
        let bad = EdgeRows::dense(0, 0, (vec![0], vec![0], vec![0]), None, &[(1, "x".into())]);
        assert!(bad.is_err());
    }
}
