//! Checks an Arrow IPC file's framing against its length before the
//! arrow-ipc reader reads it. That reader allocates whatever a message
//! declares (a metadata length, a `bodyLength`, an IPC file's footer) and
//! slices buffers at the offsets a batch names, panicking when one lies
//! past the body. Here every message of the stream is visited in order —
//! its 8-byte prefix and metadata read, its body skipped — and each length
//! and buffer is held to the bytes the file has; an IPC file's footer and
//! the blocks it lists likewise. The cost is one read of each message's
//! metadata (a few hundred bytes) and a seek over its body.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use arrow_ipc::{Message, RecordBatch, root_as_footer, root_as_message};
use arrow_schema::Schema;

use super::ipc_schema;

use crate::dataset::MAX_RECORD;

/// Where the messages of an IPC file (not a stream) begin: after `ARROW1`
/// and two bytes of padding.
const FILE_START: u64 = 8;
/// An IPC file's trailer: the footer's length (4 bytes) and `ARROW1`.
const TRAILER: u64 = 10;

/// Checks the IPC stream (`is_file`: the IPC file format) at `path`.
pub(super) fn check(path: &Path, is_file: bool) -> Result<(), String> {
    let shown = path.display();
    let f = File::open(path).map_err(|e| format!("{shown}: {e}"))?;
    let len = f.metadata().map_err(|e| format!("{shown}: {e}"))?.len();
    let mut r = BufReader::with_capacity(8 << 10, f);
    let corrupt = |(at, what): (u64, String)| {
        format!("{shown}: at byte {at}: {what} (the file is cut or corrupt)")
    };
    if is_file {
        blocks(&mut r, len).map_err(corrupt)
    } else {
        stream(&mut r, len).map_err(corrupt)
    }
}

/// Walks a stream's messages to its end-of-stream marker or its end.
fn stream(r: &mut BufReader<File>, end: u64) -> Result<(), (u64, String)> {
    let mut pos = 0;
    let mut meta = Vec::new();
    let mut schema = None;
    r.rewind().map_err(|e| (0, e.to_string()))?;
    while pos < end {
        let at = pos;
        let Some(message) = metadata(r, &mut pos, end, &mut meta)? else {
            return Ok(());
        };
        if let Some(fb) = message.header_as_schema() {
            schema = Some(ipc_schema::convert(fb).map_err(|e| (at, e))?);
        }
        let body = body_length(&message, end - pos, None, schema.as_ref()).map_err(|e| (at, e))?;
        r.seek_relative(body as i64)
            .map_err(|e| (at, e.to_string()))?;
        pos += body;
    }
    Ok(())
}

/// Reads the message at `pos` (the reader is there) up to its body, which
/// with its metadata must end by `end`; `None` at an end-of-stream marker.
fn metadata<'m>(
    r: &mut BufReader<File>,
    pos: &mut u64,
    end: u64,
    meta: &'m mut Vec<u8>,
) -> Result<Option<Message<'m>>, (u64, String)> {
    let at = *pos;
    let io = |e: std::io::Error| (at, e.to_string());
    let mut word = [0u8; 4];
    r.read_exact(&mut word).map_err(io)?;
    *pos += 4;
    if word == [0xff; 4] {
        r.read_exact(&mut word).map_err(io)?;
        *pos += 4;
    }
    let n = i32::from_le_bytes(word);
    if n == 0 {
        return Ok(None);
    }
    let left = end.saturating_sub(*pos);
    let n = u64::try_from(n)
        .ok()
        .filter(|&n| n <= left && n <= MAX_RECORD as u64)
        .ok_or_else(|| {
            (
                at,
                format!("a message declares {n} bytes of metadata, with {left} bytes left"),
            )
        })?;
    meta.resize(n as usize, 0);
    r.read_exact(meta).map_err(io)?;
    *pos += n;
    root_as_message(meta)
        .map(Some)
        .map_err(|e| (at, format!("not an Arrow IPC message ({e})")))
}

/// A message's body length, checked against the `left` bytes that follow
/// it, with every buffer of its batch inside the body — or inside `block`
/// bytes, the body an IPC file's footer gives it, which the reader uses —
/// and a record batch carrying the buffers `schema` needs.
fn body_length(
    m: &Message<'_>,
    left: u64,
    block: Option<u64>,
    schema: Option<&Schema>,
) -> Result<u64, String> {
    let body = m.bodyLength();
    let body = u64::try_from(body)
        .ok()
        .filter(|&b| b <= left)
        .ok_or_else(|| format!("a message declares a body of {body} bytes, with {left} left"))?;
    let body = block.unwrap_or(body);
    if let Some(d) = m.header_as_dictionary_batch() {
        let b = d
            .data()
            .ok_or_else(|| "a dictionary batch without its data".to_string())?;
        batch_within(&b, body)?;
    }
    if let Some(b) = m.header_as_record_batch() {
        batch_within(&b, body)?;
        if let Some(schema) = schema {
            let nodes: Vec<(i64, i64)> = b
                .nodes()
                .iter()
                .flatten()
                .map(|n| (n.length(), n.null_count()))
                .collect();
            let buffers: Vec<i64> = b.buffers().iter().flatten().map(|b| b.length()).collect();
            let variadic: Vec<i64> = b.variadicBufferCounts().iter().flatten().collect();
            let batch = ipc_schema::Batch {
                nodes: &nodes,
                buffers: &buffers,
                variadic: &variadic,
            };
            ipc_schema::check_batch(schema, &batch)?;
        }
    }
    Ok(body)
}

/// Every buffer of `b` inside its `body` bytes, and no more rows than the
/// body could describe (each row takes a bit of some buffer; a batch of
/// only null-typed columns is the exception, with at most 8 rows a byte
/// allowed it anyway), so a handful of bytes cannot claim 2^60 rows.
fn batch_within(b: &RecordBatch<'_>, body: u64) -> Result<(), String> {
    for buf in b.buffers().iter().flatten() {
        let (off, n) = (buf.offset(), buf.length());
        let inside = u64::try_from(off)
            .ok()
            .zip(u64::try_from(n).ok())
            .and_then(|(o, n)| o.checked_add(n))
            .is_some_and(|e| e <= body);
        if !inside {
            return Err(format!(
                "a batch's buffer at offset {off}, {n} bytes, lies outside its {body}-byte body"
            ));
        }
    }
    let rows_cap = body.saturating_add(8).saturating_mul(8);
    let nodes = b.nodes();
    let lengths = std::iter::once(b.length()).chain(nodes.iter().flatten().map(|n| n.length()));
    for rows in lengths {
        if !u64::try_from(rows).is_ok_and(|r| r <= rows_cap) {
            return Err(format!(
                "a batch declares {rows} values in a body of {body} bytes"
            ));
        }
    }
    Ok(())
}

/// Checks an IPC file's footer and each block it lists: inside the file
/// before the footer, its message readable, its batch's buffers inside the
/// block's body.
fn blocks(r: &mut BufReader<File>, len: u64) -> Result<(), (u64, String)> {
    if len < FILE_START + TRAILER {
        return Err((0, format!("{len} bytes, too short for an Arrow IPC file")));
    }
    let at = len - TRAILER;
    let io = |e: std::io::Error| (at, e.to_string());
    let mut trailer = [0u8; TRAILER as usize];
    r.seek(SeekFrom::Start(at)).map_err(io)?;
    r.read_exact(&mut trailer).map_err(io)?;
    let n = i32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let room = len - TRAILER - FILE_START;
    let n = u64::try_from(n)
        .ok()
        .filter(|&n| n <= room)
        .ok_or_else(|| {
            (
                at,
                format!("the footer declares {n} bytes, with {room} in the file"),
            )
        })?;
    let start = len - TRAILER - n;
    let mut data = vec![0u8; n as usize];
    r.seek(SeekFrom::Start(start)).map_err(io)?;
    r.read_exact(&mut data).map_err(io)?;
    let footer =
        root_as_footer(&data).map_err(|e| (start, format!("not an Arrow IPC footer ({e})")))?;
    let fb = footer
        .schema()
        .ok_or_else(|| (start, "a footer without a schema".to_string()))?;
    let schema = ipc_schema::convert(fb).map_err(|e| (start, e))?;
    let custom = footer.custom_metadata();
    if custom
        .iter()
        .flatten()
        .any(|kv| kv.key().is_none() || kv.value().is_none())
    {
        return Err((start, "footer metadata without a key or value".to_string()));
    }
    let blocks = footer
        .recordBatches()
        .into_iter()
        .flatten()
        .chain(footer.dictionaries().into_iter().flatten());
    let mut meta = Vec::new();
    for b in blocks {
        let (off, meta_len, body) = (b.offset(), b.metaDataLength(), b.bodyLength());
        let ends = u64::try_from(off)
            .ok()
            .zip(u64::try_from(meta_len).ok())
            .zip(u64::try_from(body).ok())
            .and_then(|((o, m), b)| {
                Some((o, o.checked_add(m)?, o.checked_add(m)?.checked_add(b)?))
            });
        let Some((off, meta_end, end)) = ends.filter(|&(_, _, e)| e <= start) else {
            return Err((
                start,
                format!(
                    "the footer lists a block at offset {off} of {meta_len} + {body} bytes, \
                     outside the {start} bytes before the footer"
                ),
            ));
        };
        r.seek(SeekFrom::Start(off))
            .map_err(|e| (off, e.to_string()))?;
        let mut pos = off;
        let Some(message) = metadata(r, &mut pos, meta_end, &mut meta)? else {
            return Err((off, "a block holds an end-of-stream marker".to_string()));
        };
        body_length(&message, u64::MAX, Some(end - meta_end), Some(&schema))
            .map_err(|e| (off, e))?;
    }
    Ok(())
}
