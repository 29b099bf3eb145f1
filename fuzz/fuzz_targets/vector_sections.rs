//! The vector-section decoders and the HNSW search over arbitrary bytes: `VectorMeta`
//! decoding, and a search through a `FlatView` of arbitrary arrays (what a damaged segment
//! could hand the kernel), plus a whole-segment parse with the vector shape and content
//! checks. None may panic; a search must return at most `k` rows, each in range.
#![no_main]

use hopgraph::format::segment::{SegmentLayout, VectorMeta};
use hopgraph::vector::hnsw::{FlatView, Visited, search};
use hopgraph::vector::{Vectors, exact};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut words = vec![0u64; data.len().div_ceil(8)];
    let aligned: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
    aligned[..data.len()].copy_from_slice(data);
    let bytes = &aligned[..data.len()];

    if let Ok(layout) = SegmentLayout::parse(bytes)
        && let Ok(Some(meta)) = layout.vector_meta(bytes)
        && layout.vector_sections(bytes, &meta).is_ok()
    {
        let _ = layout.verify_vectors(bytes);
    }

    // First byte: how much of the rest is the meta; then four u32 arrays and the rows.
    let Some((&split, rest)) = bytes.split_first() else {
        return;
    };
    let (meta_bytes, rest) = rest.split_at((split as usize).min(rest.len()));
    let meta = VectorMeta::decode(meta_bytes).unwrap_or(VectorMeta {
        dim: 2,
        count: 8,
        entry: u32::from(split % 9),
        layer_sizes: vec![8, u32::from(split % 3)],
        ..VectorMeta::default()
    });
    let mut u32s: Vec<u32> = rest
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let floats: Vec<f32> = u32s.iter().map(|&x| f32::from_bits(x % 0x7f00_0000)).collect();
    let third = u32s.len() / 3;
    let neighbors = u32s.split_off(2 * third);
    let offsets = u32s.split_off(third);
    let members = u32s;
    let dim = (meta.dim as usize).clamp(1, 8);
    let vectors = Vectors::new(&floats, dim);
    let g = FlatView::new(meta.entry, &meta.layer_sizes, &members, &offsets, &neighbors);
    let query = vec![0.5f32; dim];
    let k = (split % 12) as usize;
    let (hits, _) = search(&g, vectors, &query, k, 16, &mut Visited::default(), &mut |r| r % 2 == 0, 500);
    assert!(hits.len() <= k);
    assert!(hits.iter().all(|h| (h.index as usize) < vectors.len()));
    let hits = exact(vectors, &query, k, |_| true);
    assert!(hits.len() <= k.min(vectors.len()));
    // The same rows read as written with arbitrary scales (version 8 segments).
    let scales: Vec<f32> = floats.iter().rev().copied().collect();
    let scaled = Vectors::scaled(&floats, dim, &scales);
    let (hits, _) = search(&g, scaled, &query, k, 16, &mut Visited::default(), &mut |_| true, 500);
    assert!(hits.len() <= k);
    assert!(hits.iter().all(|h| (h.index as usize) < scaled.len()));
    assert!(exact(scaled, &query, k, |_| true).len() <= k.min(scaled.len()));
});
