//! Little-endian byte writer and a bounds-checked reader.
//!
//! Every variable-length read checks the remaining length before allocating, so a corrupt
//! length field can never make the decoder allocate gigabytes or read out of bounds.

/// Why decoding stopped: the byte offset (relative to the decoded buffer) and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Offset of the field that failed, relative to the start of the buffer.
    pub offset: usize,
    /// Human-readable description.
    pub what: String,
}

impl DecodeError {
    /// A decode error at `offset`.
    pub fn new(offset: usize, what: impl Into<String>) -> DecodeError {
        DecodeError {
            offset,
            what: what.into(),
        }
    }
}

/// Appends little-endian values to a byte vector.
#[derive(Default, Debug)]
pub struct ByteWriter {
    /// The bytes written so far.
    pub buf: Vec<u8>,
}

impl ByteWriter {
    /// An empty writer.
    pub fn new() -> ByteWriter {
        ByteWriter { buf: Vec::new() }
    }
    /// Appends one byte.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    /// Appends a `u16`.
    pub fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Appends a `u32`.
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Appends a `u64`.
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Appends a `u128`.
    pub fn u128(&mut self, v: u128) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Appends an `f32`.
    pub fn f32(&mut self, v: f32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Appends `f32`s back to back.
    pub fn f32s(&mut self, v: &[f32]) {
        self.buf.reserve(v.len() * 4);
        for x in v {
            self.buf.extend_from_slice(&x.to_le_bytes());
        }
    }
    /// Appends raw bytes without a length.
    pub fn raw(&mut self, v: &[u8]) {
        self.buf.extend_from_slice(v);
    }
    /// Appends a `u32` length followed by the bytes. Callers enforce the documented limits
    /// (all far below 4 GiB) before encoding.
    pub fn bytes(&mut self, v: &[u8]) {
        let len = u32::try_from(v.len()).unwrap_or(u32::MAX);
        self.u32(len);
        self.buf.extend_from_slice(&v[..len as usize]);
    }
    /// Appends a length-prefixed UTF-8 string.
    pub fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }
}

/// Reads little-endian values from a byte slice, checking bounds on every read.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> ByteReader<'a> {
        ByteReader { buf, pos: 0 }
    }
    /// Current offset.
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    /// Whether everything was read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }
    /// Takes the next `n` bytes.
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(DecodeError::new(
                self.pos,
                format!("{what}: needs {n} bytes, {} left", self.remaining()),
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], DecodeError> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    /// Reads one byte.
    pub fn u8(&mut self, what: &str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(what)?[0])
    }
    /// Reads a `u16`.
    pub fn u16(&mut self, what: &str) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    /// Reads a `u32`.
    pub fn u32(&mut self, what: &str) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    /// Reads a `u64`.
    pub fn u64(&mut self, what: &str) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }
    /// Reads a `u128`.
    pub fn u128(&mut self, what: &str) -> Result<u128, DecodeError> {
        Ok(u128::from_le_bytes(self.array(what)?))
    }
    /// Reads an `f32`.
    pub fn f32(&mut self, what: &str) -> Result<f32, DecodeError> {
        Ok(f32::from_le_bytes(self.array(what)?))
    }
    /// Reads a `u32` length, checks it against `max` and the remaining bytes, then the bytes.
    pub fn bytes(&mut self, max: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        let at = self.pos;
        let len = self.u32(what)? as usize;
        if len > max {
            return Err(DecodeError::new(
                at,
                format!("{what}: length {len} exceeds limit {max}"),
            ));
        }
        self.take(len, what)
    }
    /// Reads a length-prefixed UTF-8 string of at most `max` bytes.
    pub fn str(&mut self, max: usize, what: &str) -> Result<&'a str, DecodeError> {
        let at = self.pos;
        let b = self.bytes(max, what)?;
        std::str::from_utf8(b).map_err(|_| DecodeError::new(at, format!("{what}: invalid UTF-8")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bounds() {
        let mut w = ByteWriter::new();
        w.u8(7);
        w.u32(0xdead_beef);
        w.str("héllo");
        w.f32(1.5);
        let mut r = ByteReader::new(&w.buf);
        assert_eq!(r.u8("a").unwrap(), 7);
        assert_eq!(r.u32("b").unwrap(), 0xdead_beef);
        assert_eq!(r.str(16, "c").unwrap(), "héllo");
        assert_eq!(r.f32("d").unwrap(), 1.5);
        assert!(r.is_empty());
        assert!(r.u8("e").is_err());
        // A length beyond the limit is refused before reading.
        let mut r = ByteReader::new(&[255, 255, 255, 255, 1]);
        let e = r.bytes(10, "blob").unwrap_err();
        assert!(e.what.contains("exceeds limit"), "{}", e.what);
    }
}
