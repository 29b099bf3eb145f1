//! Encoding of the roaring sections: per-(direction, type) node bitmaps and tombstones.

use crate::format::codec::{ByteReader, ByteWriter, DecodeError};
use crate::graph::limits;

/// One entry of the `TypeBitmaps` section: direction (0 = out, 1 = in), type id and the
/// serialized roaring bitmap of node ids.
pub fn encode_type_bitmaps(entries: &[(u8, u16, roaring::RoaringBitmap)]) -> Vec<u8> {
    let mut w = ByteWriter::new();
    w.u32(u32::try_from(entries.len()).unwrap_or(u32::MAX));
    for (dir, t, bm) in entries {
        w.u8(*dir);
        w.u16(*t);
        let mut b = Vec::with_capacity(bm.serialized_size());
        // Writing into a Vec cannot fail.
        let _ = bm.serialize_into(&mut b);
        w.bytes(&b);
    }
    w.buf
}

/// Decodes the `TypeBitmaps` section.
pub fn decode_type_bitmaps(
    buf: &[u8],
) -> Result<Vec<(u8, u16, roaring::RoaringBitmap)>, DecodeError> {
    let mut r = ByteReader::new(buf);
    let n = r.u32("bitmap count")? as usize;
    if n > 2 * limits::EDGE_TYPES_MAX {
        return Err(DecodeError::new(
            0,
            format!("{n} type bitmaps is impossible"),
        ));
    }
    let mut out = Vec::with_capacity(n.min(buf.len() / 7));
    for _ in 0..n {
        let at = r.pos();
        let dir = r.u8("bitmap direction")?;
        let t = r.u16("bitmap type")?;
        let bytes = r.bytes(buf.len(), "bitmap")?;
        if dir > 1 {
            return Err(DecodeError::new(at, format!("bitmap direction {dir}")));
        }
        let bm = roaring::RoaringBitmap::deserialize_from(bytes)
            .map_err(|e| DecodeError::new(at, format!("type bitmap: {e}")))?;
        out.push((dir, t, bm));
    }
    if !r.is_empty() {
        return Err(DecodeError::new(
            r.pos(),
            "trailing bytes after type bitmaps",
        ));
    }
    Ok(out)
}

/// Serializes a roaring bitmap section.
pub fn encode_bitmap(bm: &roaring::RoaringBitmap) -> Vec<u8> {
    let mut b = Vec::with_capacity(bm.serialized_size());
    let _ = bm.serialize_into(&mut b);
    b
}

/// Serializes a roaring treemap section.
pub fn encode_treemap(tm: &roaring::RoaringTreemap) -> Vec<u8> {
    let mut b = Vec::with_capacity(tm.serialized_size());
    let _ = tm.serialize_into(&mut b);
    b
}
