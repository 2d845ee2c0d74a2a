//! Just enough of Thrift's compact protocol to read a Parquet page header's
//! sizes before the parquet crate allocates by them (its own header type is
//! private). Every other field, however nested, is skipped without being
//! stored: a binary field is read past rather than into memory, so a header
//! costs no allocation whatever lengths it declares, and a read past the
//! column chunk's end is an error because the reader given is bounded by it.

use std::io::{self, Read};

/// Nesting a header may have: real ones have 3 levels (statistics in a
/// data page header in the page header).
const MAX_DEPTH: u32 = 16;

/// What a page header says about the page after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct PageHeader {
    /// Parquet's `PageType`: 0 data, 1 index, 2 dictionary, 3 data v2.
    pub kind: i32,
    pub uncompressed: i32,
    pub compressed: i32,
    /// Values in a v1 data page (rows, for a column that is not repeated),
    /// or rows in a v2 data page.
    pub rows: Option<i32>,
}

/// Compact-protocol element types.
const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;

pub(super) const DATA_PAGE: i32 = 0;
pub(super) const DATA_PAGE_V2: i32 = 3;

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("page header: {what}"))
}

struct Compact<'a, R: Read> {
    r: &'a mut R,
}

impl<R: Read> Compact<'_, R> {
    fn byte(&mut self) -> io::Result<u8> {
        let mut b = [0u8; 1];
        self.r.read_exact(&mut b)?;
        Ok(b[0])
    }

    fn varint(&mut self) -> io::Result<u64> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift.min(63);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad("a varint longer than 10 bytes"))
    }

    fn zigzag(&mut self) -> io::Result<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn i32(&mut self, ty: u8) -> io::Result<i32> {
        if ty != I32 {
            return Err(bad("an i32 field of another type"));
        }
        i32::try_from(self.zigzag()?).map_err(|_| bad("an i32 field out of range"))
    }

    /// Reads a struct's fields, handing each `(id, type)` to `field`, which
    /// reads the value or returns `false` to have it skipped.
    fn fields(
        &mut self,
        depth: u32,
        mut field: impl FnMut(&mut Self, i16, u8) -> io::Result<bool>,
    ) -> io::Result<()> {
        if depth > MAX_DEPTH {
            return Err(bad("nested too deep"));
        }
        let mut last: i16 = 0;
        loop {
            let b = self.byte()?;
            if b == 0 {
                return Ok(());
            }
            let ty = b & 0x0f;
            let delta = (b >> 4) as i16;
            let id = if delta == 0 {
                i16::try_from(self.zigzag()?).map_err(|_| bad("a field id out of range"))?
            } else {
                last.wrapping_add(delta)
            };
            last = id;
            if !field(self, id, ty)? {
                self.skip(ty, depth, false)?;
            }
        }
    }

    /// Skips a value of type `ty`; `element`: inside a list, set or map,
    /// where a boolean takes a byte of its own.
    fn skip(&mut self, ty: u8, depth: u32, element: bool) -> io::Result<()> {
        match ty {
            BOOL_TRUE | BOOL_FALSE if !element => Ok(()),
            BOOL_TRUE | BOOL_FALSE | BYTE => self.byte().map(drop),
            I16 | I32 | I64 => self.varint().map(drop),
            DOUBLE => self.r.read_exact(&mut [0u8; 8]),
            BINARY => {
                let len = self.varint()?;
                let got = io::copy(&mut self.r.take(len), &mut io::sink())?;
                if got == len {
                    Ok(())
                } else {
                    Err(bad("a binary field past the end of its column chunk"))
                }
            }
            LIST | SET => {
                let b = self.byte()?;
                let mut n = u64::from(b >> 4);
                if n == 15 {
                    n = self.varint()?;
                }
                // Each element takes a byte at least, so a reader bounded by
                // the chunk ends this loop however large `n` claims to be.
                for _ in 0..n {
                    self.skip(b & 0x0f, depth + 1, true)?;
                }
                Ok(())
            }
            MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let kv = self.byte()?;
                for _ in 0..n {
                    self.skip(kv >> 4, depth + 1, true)?;
                    self.skip(kv & 0x0f, depth + 1, true)?;
                }
                Ok(())
            }
            STRUCT => self.fields(depth + 1, |_, _, _| Ok(false)),
            _ => Err(bad("an unknown field type")),
        }
    }
}

/// Reads one page header from `r`, which ends where the column chunk does.
pub(super) fn page_header<R: Read>(r: &mut R) -> io::Result<PageHeader> {
    let mut c = Compact { r };
    let mut h = PageHeader::default();
    let mut seen = 0u8;
    c.fields(0, |c, id, ty| {
        match id {
            1 => h.kind = c.i32(ty)?,
            2 => h.uncompressed = c.i32(ty)?,
            3 => h.compressed = c.i32(ty)?,
            // data_page_header { 1: num_values }, data_page_header_v2
            // { 1: num_values, 2: num_nulls, 3: num_rows }.
            5 | 8 if ty == STRUCT => {
                let wanted = if id == 5 { 1 } else { 3 };
                let mut rows = None;
                c.fields(1, |c, id, ty| {
                    if id == wanted {
                        rows = Some(c.i32(ty)?);
                        return Ok(true);
                    }
                    Ok(false)
                })?;
                h.rows = rows;
            }
            _ => return Ok(false),
        }
        if id <= 3 {
            seen |= 1 << id;
        }
        Ok(true)
    })?;
    if seen != 0b1110 {
        return Err(bad("type or sizes missing"));
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header as the compact protocol writes it: type, sizes, then a
    /// data page header with `rows` values and statistics holding a binary.
    fn header(kind: u8, uncompressed: u32, compressed: u32, rows: u32) -> Vec<u8> {
        fn varint(mut v: u64, out: &mut Vec<u8>) {
            while v >= 0x80 {
                out.push(v as u8 | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
        }
        let zz = |v: u32| u64::from(v) << 1;
        let mut b = vec![0x15];
        varint(zz(kind.into()), &mut b);
        b.push(0x15);
        varint(zz(uncompressed), &mut b);
        b.push(0x15);
        varint(zz(compressed), &mut b);
        // Field 5, a struct: num_values, then field 5 (statistics) with a
        // binary max (field 1) of 3 bytes and a list of two booleans.
        b.push(0x2c);
        b.push(0x15);
        varint(zz(rows), &mut b);
        b.push(0x4c);
        b.extend_from_slice(&[0x18, 3, b'a', b'b', b'c']);
        b.extend_from_slice(&[0x19, 0x21, 1, 2]);
        b.push(0);
        b.push(0);
        b.push(0);
        b
    }

    #[test]
    fn reads_sizes_and_skips_the_rest() {
        let bytes = header(0, 200_000_000, 6_000, 1);
        let mut r = &bytes[..];
        let h = page_header(&mut r).unwrap();
        assert!(r.is_empty(), "the header is read to its end");
        assert_eq!(
            h,
            PageHeader {
                kind: DATA_PAGE,
                uncompressed: 200_000_000,
                compressed: 6_000,
                rows: Some(1),
            }
        );
    }

    #[test]
    fn refuses_cut_and_hostile_headers() {
        let bytes = header(0, 10, 10, 1);
        for cut in 0..bytes.len() {
            assert!(page_header(&mut &bytes[..cut]).is_err(), "cut at {cut}");
        }
        // A binary claiming 2^62 bytes in a small input: an error, no
        // allocation.
        let mut b = vec![0x15, 0, 0x15, 2, 0x15, 2, 0x28];
        b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f]);
        assert!(page_header(&mut &b[..]).is_err());
        // A list claiming 2^40 elements ends at the input's end.
        let mut b = vec![0x15, 0, 0x15, 2, 0x15, 2, 0x29, 0xf3];
        b.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
        assert!(page_header(&mut &b[..]).is_err());
        // Structs nested past the limit.
        let mut b = vec![0x15, 0, 0x15, 2, 0x15, 2];
        b.extend(std::iter::repeat_n(0x1c, 100));
        assert!(page_header(&mut &b[..]).is_err());
        // Sizes missing.
        assert!(page_header(&mut &[0x15, 0, 0][..]).is_err());
    }
}
