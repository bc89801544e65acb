//! Module values (RDB type 7): a 64-bit module type ID (nine characters of its name and an
//! encoding version), then fields each led by an opcode (unsigned, signed, float, double,
//! string) until an end opcode. The opcodes let a reader pass over a module's value without
//! knowing it, which is how an import skips the types sieved does not hold.
//!
//! Four modules are read and written here:
//! - `MBbloom--` version 4, RedisBloom's Bloom filter: items, link count, options, expansion,
//!   then per link capacity, error rate (double), hashes, bits per element (double), bits,
//!   power-of-two exponent, the bit array (one string), the link's items.
//! - `MBbloomCF` version 4, RedisBloom's cuckoo filter: sub-filter count, first sub-filter's
//!   buckets, items, deletes, bucket size, max iterations, expansion, then per sub-filter its
//!   bucket count and its slots (one string).
//! - `ReJSON-RL` versions 3, 2 and 0, RedisJSON's document (its fields are `json::rdb`'s to
//!   read and write): 2.8 writes version 3, the document's compact text in one string.
//! - `sieved---` version 1, sieved's own, for every value RedisBloom has no encoding for
//!   (counting filters, blocked or xxh3 Bloom filters, and any kind added later): the value's
//!   snapshot kind, its snapshot header (`Value::snapshot_header`) and payload length, then the
//!   payload in strings of at most 64 MiB. Being the snapshot's own codec, it covers a new value
//!   type as soon as snapshots do, and builds the value (limits checked) before any payload
//!   arrives.
//! - `CMSk-TYPE`, `TopK-TYPE` and `TDIS-TYPE` version 0, RedisBloom's Count-Min sketch, Top-K
//!   and t-digest: the fields their `rdb_save` writes (`filter::ModuleField`, in the order each
//!   shape's `to_fields` gives), which are also their snapshot form (`store/sketch.rs`).

use super::primitives::{
    read_array, read_binary_double, read_length, read_string, skip_string, write_binary_double,
    write_length, write_string, Input, RdbError, RdbResult,
};
use super::types::{Decoded, Limits, TYPE_MODULE_2};
use crate::filter::CUCKOO_HEADER_LEN;
use crate::filter::{
    BloomChain, CountMinShape, CountMinSketch, CuckooFilter, FilterError, ModuleField,
    RedisBloomLink, RedisBloomShape, SketchError, TDigest, TDigestShape, TopK, TopKShape,
    COUNT_MIN_ENCODING_VERSION, TOP_K_ENCODING_VERSION, T_DIGEST_ENCODING_VERSION,
};
use crate::json::rdb::{self as json_rdb, ModuleField as JsonField};
use crate::store::sketch::TopKValue;
use crate::store::{Value, ValueKind};

const CHARSET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

const OPCODE_EOF: u64 = 0;
const OPCODE_SINT: u64 = 1;
const OPCODE_UINT: u64 = 2;
const OPCODE_FLOAT: u64 = 3;
const OPCODE_DOUBLE: u64 = 4;
const OPCODE_STRING: u64 = 5;

const BLOOM: &[u8; 9] = b"MBbloom--";
const BLOOM_VERSION: u64 = 4;
/// The oldest Bloom encoding read: 2 added the options (whose 64-bit hash bit sieved needs),
/// 4 the expansion (2 before).
const BLOOM_OLDEST: u64 = 2;
const CUCKOO: &[u8; 9] = b"MBbloomCF";
const CUCKOO_VERSION: u64 = 4;
const COUNT_MIN: &[u8; 9] = b"CMSk-TYPE";
const TOP_K: &[u8; 9] = b"TopK-TYPE";
const T_DIGEST: &[u8; 9] = b"TDIS-TYPE";
const JSON: &[u8; 9] = b"ReJSON-RL";
const SIEVED: &[u8; 9] = b"sieved---";
const SIEVED_VERSION: u64 = 1;
/// The largest string a payload is written in.
const PIECE: u64 = 64 << 20;

/// Redis's module type ID: each name character's index in `CHARSET` in 6 bits, first character
/// highest, then the encoding version in the low 10 bits.
fn module_id(name: &[u8; 9], version: u64) -> u64 {
    let id = name.iter().fold(0u64, |id, &c| {
        let index = CHARSET
            .iter()
            .position(|&known| known == c)
            .expect("name in the charset");
        id << 6 | index as u64
    });
    id << 10 | version
}

fn module_name(id: u64) -> ([u8; 9], u64) {
    let mut name = [0u8; 9];
    for (i, c) in name.iter_mut().enumerate() {
        *c = CHARSET[((id >> (10 + 6 * (8 - i))) & 63) as usize];
    }
    (name, id & 1023)
}

/// The name of the module a type ID belongs to, for messages.
pub fn describe(id: u64) -> String {
    let (name, version) = module_name(id);
    format!(
        "module type {} (encoding version {version})",
        String::from_utf8_lossy(&name)
    )
}

/// Reads fields in the order the module wrote them, each checked for its opcode.
struct Fields<'a, I: ?Sized>(&'a mut I);

impl<I: Input + ?Sized> Fields<'_, I> {
    fn opcode(&mut self, expected: u64) -> RdbResult<()> {
        if read_length(self.0)? != expected {
            return Err(RdbError::Invalid(
                "a module value's fields are not as expected",
            ));
        }
        Ok(())
    }

    fn uint(&mut self) -> RdbResult<u64> {
        self.opcode(OPCODE_UINT)?;
        read_length(self.0)
    }

    fn double(&mut self) -> RdbResult<f64> {
        self.opcode(OPCODE_DOUBLE)?;
        read_binary_double(self.0)
    }

    fn string(&mut self, limit: u64) -> RdbResult<Vec<u8>> {
        self.opcode(OPCODE_STRING)?;
        read_string(self.0, limit)
    }

    fn end(&mut self) -> RdbResult<()> {
        self.opcode(OPCODE_EOF)
    }
}

/// Passes over a module's fields up to and including its end opcode.
pub fn skip_fields(input: &mut (impl Input + ?Sized)) -> RdbResult<()> {
    loop {
        match read_length(input)? {
            OPCODE_EOF => return Ok(()),
            OPCODE_SINT | OPCODE_UINT => {
                read_length(input)?;
            }
            OPCODE_FLOAT => input.skip(4)?,
            OPCODE_DOUBLE => input.skip(8)?,
            OPCODE_STRING => skip_string(input)?,
            _ => return Err(RdbError::Invalid("unknown module field opcode")),
        }
    }
}

fn filter_error(error: FilterError) -> RdbError {
    match error {
        FilterError::TooLarge { bytes, limit } => RdbError::TooLarge { bytes, limit },
        FilterError::OutOfMemory => RdbError::OutOfMemory,
        _ => RdbError::Invalid("a filter's shape is invalid"),
    }
}

fn sketch_error(error: SketchError) -> RdbError {
    match error {
        SketchError::CmsTooLarge { bytes, limit }
        | SketchError::TopKTooLarge { bytes, limit }
        | SketchError::TDigestTooLarge { bytes, limit }
        | SketchError::TDigestMergeTooLarge { bytes, limit } => RdbError::TooLarge { bytes, limit },
        _ => RdbError::Invalid("a sketch's saved form is invalid"),
    }
}

/// A module's fields up to its end opcode, whatever they are; its strings together at most
/// `limits.filter_bytes`.
fn read_fields(input: &mut (impl Input + ?Sized), limits: &Limits) -> RdbResult<Vec<ModuleField>> {
    let mut fields = Vec::new();
    let mut budget = limits.filter_bytes;
    loop {
        fields.push(match read_length(input)? {
            OPCODE_EOF => return Ok(fields),
            // `SaveSigned` writes an unsigned field; a signed one is read as its bits.
            OPCODE_SINT | OPCODE_UINT => ModuleField::Unsigned(read_length(input)?),
            OPCODE_DOUBLE => ModuleField::Double(read_binary_double(input)?),
            OPCODE_STRING => {
                let bytes = read_string(input, budget)?;
                budget -= bytes.len() as u64;
                ModuleField::Buffer(bytes)
            }
            _ => return Err(RdbError::Invalid("a module field this build cannot read")),
        });
    }
}

/// Fields as a module's `rdb_save` writes them, then the end opcode.
fn write_module_fields(out: &mut Vec<u8>, fields: &[ModuleField]) {
    for field in fields {
        match field {
            ModuleField::Unsigned(value) => write_uint(out, *value),
            ModuleField::Double(value) => write_double(out, *value),
            ModuleField::Buffer(bytes) => write_module_string(out, bytes),
        }
    }
    write_length(out, OPCODE_EOF);
}

/// A module value, after its type byte.
pub(super) fn read(input: &mut (impl Input + ?Sized), limits: &Limits) -> RdbResult<Decoded> {
    let id = read_length(input)?;
    let (name, version) = module_name(id);
    let value = match &name {
        BLOOM if (BLOOM_OLDEST..=BLOOM_VERSION).contains(&version) => {
            read_bloom(&mut Fields(input), version, limits)?
        }
        CUCKOO if version == CUCKOO_VERSION => read_cuckoo(&mut Fields(input), limits)?,
        SIEVED if version == SIEVED_VERSION => read_sieved(&mut Fields(input), limits)?,
        COUNT_MIN if version == COUNT_MIN_ENCODING_VERSION => {
            let shape = CountMinShape::from_fields(read_fields(input, limits)?);
            let sketch =
                shape.and_then(|shape| CountMinSketch::from_shape(&shape, limits.filter_bytes));
            Value::CountMin(Box::new(sketch.map_err(sketch_error)?))
        }
        TOP_K if version == TOP_K_ENCODING_VERSION => {
            let shape = TopKShape::from_fields(read_fields(input, limits)?);
            let sketch = shape.and_then(|shape| TopK::from_shape(&shape, limits.filter_bytes));
            Value::TopK(Box::new(TopKValue::new(sketch.map_err(sketch_error)?)))
        }
        T_DIGEST if version == T_DIGEST_ENCODING_VERSION => {
            let shape = TDigestShape::from_fields(read_fields(input, limits)?);
            let digest = shape.and_then(|shape| TDigest::from_shape(&shape, limits.filter_bytes));
            Value::TDigest(Box::new(digest.map_err(sketch_error)?))
        }
        JSON if matches!(version, 0 | 2 | 3) => read_json(input, version, limits)?,
        BLOOM | CUCKOO | SIEVED | JSON | COUNT_MIN | TOP_K | T_DIGEST => {
            return Err(RdbError::Invalid(
                "a module encoding version this build cannot read",
            ))
        }
        _ => {
            skip_fields(input)?;
            return Ok(Decoded::Skipped(describe(id)));
        }
    };
    Ok(Decoded::Value(value))
}

fn read_bloom<I: Input + ?Sized>(
    fields: &mut Fields<I>,
    version: u64,
    limits: &Limits,
) -> RdbResult<Value> {
    let items = fields.uint()?;
    let count = fields.uint()?;
    let options = fields.uint()?;
    let expansion = if version >= 4 { fields.uint()? } else { 2 };
    // Each link takes at least 30 bytes; the count can then size the lists below.
    if count == 0 || count.saturating_mul(30) > fields.0.remaining() {
        return Err(RdbError::Invalid("a Bloom filter's link count is invalid"));
    }
    let mut links = Vec::with_capacity(count as usize);
    let mut arrays = Vec::with_capacity(count as usize);
    let mut total = 0u64;
    for _ in 0..count {
        let capacity = fields.uint()?;
        let error_rate = fields.double()?;
        let hashes = fields.uint()?;
        let bits_per_element = fields.double()?;
        let bits = fields.uint()?;
        let exponent = fields.uint()?;
        let array = fields.string(limits.filter_bytes - total)?;
        total += array.len() as u64;
        links.push(RedisBloomLink {
            capacity,
            error_rate,
            hashes,
            bits_per_element,
            bits,
            exponent,
            bytes: array.len() as u64,
            items: fields.uint()?,
        });
        arrays.push(array);
    }
    fields.end()?;
    let shape = RedisBloomShape {
        items,
        options,
        expansion,
        links,
    };
    let mut chain =
        BloomChain::from_redisbloom_shape(&shape, limits.filter_bytes).map_err(filter_error)?;
    let mut offset = 0;
    for array in arrays {
        chain.write_payload(offset, &array).map_err(filter_error)?;
        offset += array.len() as u64;
    }
    Ok(Value::Bloom(chain))
}

fn read_cuckoo<I: Input + ?Sized>(fields: &mut Fields<I>, limits: &Limits) -> RdbResult<Value> {
    let narrow = |value: u64| {
        u16::try_from(value).map_err(|_| RdbError::Invalid("a cuckoo filter's shape is invalid"))
    };
    let filters = fields.uint()?;
    let buckets = fields.uint()?;
    let items = fields.uint()?;
    let deletes = fields.uint()?;
    let (bucket_size, max_iterations, expansion) = (
        narrow(fields.uint()?)?,
        narrow(fields.uint()?)?,
        narrow(fields.uint()?)?,
    );
    narrow(filters)?;
    let mut header = [0u8; CUCKOO_HEADER_LEN];
    header[0..8].copy_from_slice(&items.to_le_bytes());
    header[8..16].copy_from_slice(&buckets.to_le_bytes());
    header[16..24].copy_from_slice(&deletes.to_le_bytes());
    header[24..32].copy_from_slice(&filters.to_le_bytes());
    header[32..34].copy_from_slice(&bucket_size.to_le_bytes());
    header[34..36].copy_from_slice(&max_iterations.to_le_bytes());
    header[36..38].copy_from_slice(&expansion.to_le_bytes());
    let mut filter =
        CuckooFilter::from_header(&header, limits.filter_bytes).map_err(filter_error)?;
    let sizes: Vec<(u64, u64)> = filter
        .sub_filters()
        .map(|(buckets, slots)| (buckets, slots.len() as u64))
        .collect();
    let mut offset = 0;
    for (buckets, len) in sizes {
        if fields.uint()? != buckets {
            return Err(RdbError::Invalid(
                "a cuckoo sub-filter's size is not its header's",
            ));
        }
        let slots = fields.string(len)?;
        if slots.len() as u64 != len {
            return Err(RdbError::Invalid(
                "a cuckoo sub-filter's size is not its header's",
            ));
        }
        filter.write_payload(offset, &slots).map_err(filter_error)?;
        offset += len;
    }
    fields.end()?;
    Ok(Value::Cuckoo(Box::new(filter)))
}

fn read_sieved<I: Input + ?Sized>(fields: &mut Fields<I>, limits: &Limits) -> RdbResult<Value> {
    // Sketches are written in RedisBloom's encodings only; their snapshot form is not
    // checked against the filter limit, so it is not taken from a payload.
    let kind = u8::try_from(fields.uint()?)
        .ok()
        .and_then(ValueKind::from_tag)
        .filter(|kind| !kind.is_sketch())
        .ok_or(RdbError::Invalid("an unknown value kind"))?;
    let header = fields.string(limits.string_bytes)?;
    let payload_len = fields.uint()?;
    if kind == ValueKind::String && payload_len > limits.string_bytes {
        return Err(RdbError::TooLarge {
            bytes: payload_len,
            limit: limits.string_bytes,
        });
    }
    // Checks the header, and a filter's size against the limit, before allocating it.
    let mut value = Value::from_snapshot_header(kind, &header, payload_len, limits.filter_bytes)
        .map_err(filter_error)?;
    let mut offset = 0;
    loop {
        match read_length(fields.0)? {
            OPCODE_EOF => break,
            OPCODE_STRING if offset < payload_len => {
                let piece = read_string(fields.0, (payload_len - offset).min(PIECE))?;
                if piece.is_empty() {
                    return Err(RdbError::Invalid("an empty payload piece"));
                }
                value.write_payload(offset, &piece).map_err(filter_error)?;
                offset += piece.len() as u64;
            }
            _ => {
                return Err(RdbError::Invalid(
                    "a module value's fields are not as expected",
                ))
            }
        }
    }
    if offset != payload_len {
        return Err(RdbError::Invalid("a payload shorter than its header says"));
    }
    Ok(value)
}

/// A RedisJSON document: its fields as written (each field costs at least two bytes of input,
/// and their strings together at most `string_bytes`), then the document built from them.
fn read_json(input: &mut (impl Input + ?Sized), version: u64, limits: &Limits) -> RdbResult<Value> {
    let mut fields = Vec::new();
    let mut budget = limits.string_bytes;
    loop {
        let field = match read_length(input)? {
            OPCODE_EOF => break,
            OPCODE_SINT => JsonField::Signed(read_length(input)? as i64),
            OPCODE_UINT => JsonField::Unsigned(read_length(input)?),
            OPCODE_FLOAT => JsonField::Float(f32::from_le_bytes(read_array(input)?)),
            OPCODE_DOUBLE => JsonField::Double(read_binary_double(input)?),
            OPCODE_STRING => {
                let text = read_string(input, budget)?;
                budget -= text.len() as u64;
                JsonField::String(text)
            }
            _ => return Err(RdbError::Invalid("unknown module field opcode")),
        };
        fields.push(field);
    }
    let max_bytes = usize::try_from(limits.string_bytes).unwrap_or(usize::MAX);
    json_rdb::load(version as u32, &fields, max_bytes)
        .map(|document| Value::Json(Box::new(document)))
        .map_err(|_| RdbError::Invalid("a ReJSON-RL document that does not load"))
}

/// A JSON document as RedisJSON 2.8 writes it.
pub(super) fn write_json(out: &mut Vec<u8>, document: &crate::json::Value) {
    start(out, JSON, u64::from(json_rdb::ENCODING_VERSION));
    for field in json_rdb::save(document) {
        match field {
            JsonField::String(text) => write_module_string(out, &text),
            JsonField::Unsigned(value) => write_uint(out, value),
            JsonField::Signed(value) => {
                write_length(out, OPCODE_SINT);
                write_length(out, value as u64);
            }
            JsonField::Double(value) => write_double(out, value),
            JsonField::Float(value) => {
                write_length(out, OPCODE_FLOAT);
                out.extend_from_slice(&value.to_le_bytes());
            }
        }
    }
    write_length(out, OPCODE_EOF);
}

fn write_uint(out: &mut Vec<u8>, value: u64) {
    write_length(out, OPCODE_UINT);
    write_length(out, value);
}

fn write_double(out: &mut Vec<u8>, value: f64) {
    write_length(out, OPCODE_DOUBLE);
    write_binary_double(out, value);
}

fn write_module_string(out: &mut Vec<u8>, bytes: &[u8]) {
    write_length(out, OPCODE_STRING);
    write_string(out, bytes);
}

fn start(out: &mut Vec<u8>, name: &[u8; 9], version: u64) {
    out.push(TYPE_MODULE_2);
    write_length(out, module_id(name, version));
}

/// A Bloom filter RedisBloom can hold, as RedisBloom writes it.
pub(super) fn write_bloom(out: &mut Vec<u8>, chain: &BloomChain, shape: &RedisBloomShape) {
    start(out, BLOOM, BLOOM_VERSION);
    write_uint(out, shape.items);
    write_uint(out, shape.links.len() as u64);
    write_uint(out, shape.options);
    write_uint(out, shape.expansion);
    let mut offset = 0;
    let mut array = Vec::new();
    for link in &shape.links {
        write_uint(out, link.capacity);
        write_double(out, link.error_rate);
        write_uint(out, link.hashes);
        write_double(out, link.bits_per_element);
        write_uint(out, link.bits);
        write_uint(out, link.exponent);
        array.clear();
        chain.read_payload(offset, link.bytes, &mut array);
        write_module_string(out, &array);
        write_uint(out, link.items);
        offset += link.bytes;
    }
    write_length(out, OPCODE_EOF);
}

/// A cuckoo filter as RedisBloom writes it.
pub(super) fn write_cuckoo(out: &mut Vec<u8>, filter: &CuckooFilter) {
    start(out, CUCKOO, CUCKOO_VERSION);
    write_uint(out, filter.filter_count() as u64);
    write_uint(out, filter.buckets());
    write_uint(out, filter.items());
    write_uint(out, filter.deletes());
    write_uint(out, u64::from(filter.bucket_size()));
    write_uint(out, u64::from(filter.max_iterations()));
    write_uint(out, u64::from(filter.expansion()));
    for (buckets, slots) in filter.sub_filters() {
        write_uint(out, buckets);
        write_module_string(out, slots);
    }
    write_length(out, OPCODE_EOF);
}

/// A sketch as RedisBloom writes it; None for other values. A t-digest is compressed first,
/// as RedisBloom's save does: the caller compresses the live digest when RedisBloom would
/// (DUMP), and this compresses a copy otherwise.
pub(super) fn write_sketch(out: &mut Vec<u8>, value: &Value) -> bool {
    let (name, version, fields) = match value {
        Value::CountMin(sketch) => (
            COUNT_MIN,
            COUNT_MIN_ENCODING_VERSION,
            sketch.to_shape().to_fields(),
        ),
        Value::TopK(top_k) => (
            TOP_K,
            TOP_K_ENCODING_VERSION,
            top_k.sketch.to_shape().to_fields(),
        ),
        Value::TDigest(digest) => (
            T_DIGEST,
            T_DIGEST_ENCODING_VERSION,
            digest.as_ref().clone().to_shape().to_fields(),
        ),
        _ => return false,
    };
    start(out, name, version);
    write_module_fields(out, &fields);
    true
}

/// Any value through its snapshot codec.
pub(super) fn write_sieved(out: &mut Vec<u8>, value: &Value) {
    start(out, SIEVED, SIEVED_VERSION);
    write_uint(out, value.kind() as u64);
    write_module_string(out, &value.snapshot_header());
    let len = value.payload_len();
    write_uint(out, len);
    let mut piece = Vec::new();
    let mut offset = 0;
    while offset < len {
        let size = PIECE.min(len - offset);
        piece.clear();
        value.read_payload(offset, size, &mut piece);
        write_module_string(out, &piece);
        offset += size;
    }
    write_length(out, OPCODE_EOF);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RedisBloom's IDs, as Redis computes them (module.c's moduleTypeEncodeId).
    #[test]
    fn module_ids_encode_and_decode() {
        for (name, version) in [(BLOOM, 4), (CUCKOO, 4), (SIEVED, 1), (JSON, 3)] {
            let id = module_id(name, version);
            assert_eq!(module_name(id), (*name, version));
        }
        assert_eq!(module_id(b"AAAAAAAAA", 0), 0);
        assert_eq!(module_id(b"AAAAAAAAB", 3), 1 << 10 | 3);
        assert_eq!(
            describe(module_id(b"MBbloomCM", 0)),
            "module type MBbloomCM (encoding version 0)"
        );
        assert_eq!(module_id(JSON, 3), json_rdb::module_type_id(3));
    }
}
