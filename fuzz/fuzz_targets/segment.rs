//! `format::segment::SegmentLayout::parse` and, when it accepts, the full checks and the
//! accessors every reader uses, on arbitrary bytes.
//!
//! Segments are memory-mapped, so in production their bytes are page aligned; the input
//! is copied into a `u64` buffer to give the typed accessors the same alignment (an
//! unaligned buffer would only make every array section look empty).
#![no_main]

use hopgraph::format::segment::{SectionKind, SegmentLayout, decode_type_bitmaps};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut words = vec![0u64; data.len().div_ceil(8)];
    let aligned: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
    aligned[..data.len()].copy_from_slice(data);
    let bytes = &aligned[..data.len()];
    let _ = decode_type_bitmaps(bytes);
    let Ok(layout) = SegmentLayout::parse(bytes) else {
        return;
    };
    for &kind in SectionKind::ALL {
        if let Some(e) = layout.entry(kind) {
            assert!(e.range.end <= bytes.len());
        }
        let _ = layout.bytes(bytes, kind).len();
        let _ = layout.u32s(bytes, kind).len();
        let _ = layout.u16s(bytes, kind).len();
        let _ = layout.u64s(bytes, kind).len();
        let _ = layout.f32s(bytes, kind).len();
    }
    let _ = layout.node_tombstones(bytes);
    let _ = layout.edge_tombstones(bytes);
    let _ = layout.type_bitmaps(bytes);
    // verify_contents runs after verify_checksums in production, but it must be safe on
    // its own too: the fuzzer rarely produces matching section checksums.
    let _ = layout.verify_checksums(bytes);
    let _ = layout.verify_contents(bytes);
});

