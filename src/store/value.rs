use super::collection_encoding;
use super::hash::Hash;
use super::list::List;
use super::set::Set;
use super::sketch::{self, TopKValue};
use super::zset::ZSet;
use crate::filter::{
    BloomChain, CountMinSketch, CountingChain, CuckooFilter, FilterError, TDigest, WindowedFilter,
};
use crate::frontier::Frontier;
use crate::json;

/// What a key holds.
#[derive(Debug, Clone)]
pub enum Value {
    String(Vec<u8>),
    Bloom(BloomChain),
    /// Boxed so that adding the type leaves every value, and so MEMORY USAGE of every other
    /// type, as small as it was.
    Counting(Box<CountingChain>),
    /// RedisBloom's cuckoo filter, boxed for the same reason.
    Cuckoo(Box<CuckooFilter>),
    /// sieved's time-windowed Bloom filter, boxed for the same reason.
    Windowed(Box<WindowedFilter>),
    List(Box<List>),
    Set(Box<Set>),
    ZSet(Box<ZSet>),
    Hash(Box<Hash>),
    /// A crawl frontier (FQ.*), boxed for the same reason.
    Frontier(Box<Frontier>),
    /// A JSON document (JSON.*, as RedisJSON's `ReJSON-RL`), boxed for the same reason.
    Json(Box<json::Value>),
    /// RedisBloom's Count-Min sketch, Top-K and t-digest (`sketch.rs`), boxed for the same
    /// reason.
    CountMin(Box<CountMinSketch>),
    TopK(Box<TopKValue>),
    TDigest(Box<TDigest>),
}

impl Value {
    /// The name TYPE reports: RedisBloom's module type name for Bloom filters, and one in the same
    /// style for counting Bloom filters, which RedisBloom does not have.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::Bloom(_) => "MBbloom--",
            Value::Counting(_) => "MBbloomCBF",
            Value::Cuckoo(_) => "MBbloomCF",
            Value::Windowed(_) => "MBbloomTBF",
            Value::List(_) => "list",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Hash(_) => "hash",
            Value::Frontier(_) => "frontier",
            Value::Json(_) => json::rdb::TYPE_NAME,
            Value::CountMin(_) => "CMSk-TYPE",
            Value::TopK(_) => "TopK-TYPE",
            Value::TDigest(_) => "TDIS-TYPE",
        }
    }

    /// OBJECT ENCODING's answer for a collection, None for other values.
    pub fn collection_encoding(&self) -> Option<&'static str> {
        match self {
            Value::List(list) => Some(collection_encoding::list_encoding(list)),
            Value::Set(set) => Some(set.encoding()),
            Value::ZSet(zset) => Some(zset.encoding()),
            Value::Hash(hash) => Some(hash.encoding()),
            _ => None,
        }
    }

    /// Whether this is a collection with nothing left in it, which must not stay a key.
    pub fn is_empty_collection(&self) -> bool {
        match self {
            Value::List(list) => list.is_empty(),
            Value::Set(set) => set.is_empty(),
            Value::ZSet(zset) => zset.is_empty(),
            Value::Hash(hash) => hash.is_empty(),
            _ => false,
        }
    }

    /// Bytes the value occupies, its own structures included.
    pub fn memory_bytes(&self) -> u64 {
        let own = std::mem::size_of::<Value>() as u64;
        match self {
            Value::String(bytes) => own + bytes.capacity() as u64,
            Value::Bloom(chain) => own + chain.memory_bytes(),
            Value::Counting(chain) => own + chain.memory_bytes(),
            Value::Cuckoo(filter) => own + filter.memory_bytes(),
            Value::Windowed(filter) => own + filter.memory_bytes(),
            Value::List(list) => own + collection_encoding::list_memory(list),
            Value::Set(set) => own + set.memory_bytes(),
            Value::ZSet(zset) => own + zset.memory_bytes(),
            Value::Hash(hash) => own + hash.memory_bytes(),
            Value::Frontier(frontier) => own + frontier.memory_bytes(),
            // RedisJSON's own estimate, which its MEMORY USAGE and JSON.DEBUG MEMORY report.
            Value::Json(document) => own + document.memory() as u64,
            Value::CountMin(sketch) => own + sketch.memory_usage(),
            Value::TopK(top_k) => own + top_k.sketch.memory_usage(),
            Value::TDigest(digest) => own + digest.memory_usage(),
        }
    }
}

/// How a value is stored in a snapshot: its kind, a header that describes it, and a payload
/// that can be copied out (and back in) in pieces, so that a large filter is never copied whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    String = 0,
    Bloom = 1,
    Counting = 2,
    List = 3,
    Set = 4,
    ZSet = 5,
    Hash = 6,
    Cuckoo = 7,
    Frontier = 8,
    Windowed = 9,
    Json = 10,
    CountMin = 11,
    TopK = 12,
    TDigest = 13,
}

impl ValueKind {
    pub fn from_tag(tag: u8) -> Option<ValueKind> {
        match tag {
            0 => Some(ValueKind::String),
            1 => Some(ValueKind::Bloom),
            2 => Some(ValueKind::Counting),
            3 => Some(ValueKind::List),
            4 => Some(ValueKind::Set),
            5 => Some(ValueKind::ZSet),
            6 => Some(ValueKind::Hash),
            7 => Some(ValueKind::Cuckoo),
            8 => Some(ValueKind::Frontier),
            9 => Some(ValueKind::Windowed),
            10 => Some(ValueKind::Json),
            11 => Some(ValueKind::CountMin),
            12 => Some(ValueKind::TopK),
            13 => Some(ValueKind::TDigest),
            _ => None,
        }
    }

    /// RedisBloom's Count-Min sketch, Top-K and t-digest: their snapshot header is their whole
    /// saved form.
    pub fn is_sketch(self) -> bool {
        matches!(
            self,
            ValueKind::CountMin | ValueKind::TopK | ValueKind::TDigest
        )
    }
}

impl Value {
    pub fn kind(&self) -> ValueKind {
        match self {
            Value::String(_) => ValueKind::String,
            Value::Bloom(_) => ValueKind::Bloom,
            Value::Counting(_) => ValueKind::Counting,
            Value::Cuckoo(_) => ValueKind::Cuckoo,
            Value::Windowed(_) => ValueKind::Windowed,
            Value::List(_) => ValueKind::List,
            Value::Set(_) => ValueKind::Set,
            Value::ZSet(_) => ValueKind::ZSet,
            Value::Hash(_) => ValueKind::Hash,
            Value::Frontier(_) => ValueKind::Frontier,
            Value::Json(_) => ValueKind::Json,
            Value::CountMin(_) => ValueKind::CountMin,
            Value::TopK(_) => ValueKind::TopK,
            Value::TDigest(_) => ValueKind::TDigest,
        }
    }

    /// A collection, a frontier, a JSON document (its compact text) and a sketch is its header
    /// whole: it is captured at one instant, as
    /// Redis's fork would, and has no payload.
    pub fn snapshot_header(&self) -> Vec<u8> {
        match self {
            Value::String(_) => Vec::new(),
            Value::Bloom(chain) => chain.dump_header(),
            Value::Counting(chain) => chain.dump_header(),
            Value::Cuckoo(filter) => filter.header().to_vec(),
            Value::Windowed(filter) => filter.dump_header(),
            Value::List(list) => collection_encoding::encode_list(list),
            Value::Set(set) => collection_encoding::encode_set(set),
            Value::ZSet(zset) => collection_encoding::encode_zset(zset),
            Value::Hash(hash) => collection_encoding::encode_hash(hash),
            Value::Frontier(frontier) => frontier.encode(),
            Value::Json(document) => json::to_text(document),
            Value::CountMin(sketch) => sketch::encode_count_min(sketch),
            Value::TopK(top_k) => sketch::encode_top_k(top_k),
            Value::TDigest(digest) => sketch::encode_t_digest(digest),
        }
    }

    pub fn payload_len(&self) -> u64 {
        match self {
            Value::String(bytes) => bytes.len() as u64,
            Value::Bloom(chain) => chain.payload_bytes(),
            Value::Counting(chain) => chain.payload_bytes(),
            Value::Cuckoo(filter) => filter.payload_bytes(),
            Value::Windowed(filter) => filter.payload_bytes(),
            Value::List(_)
            | Value::Set(_)
            | Value::ZSet(_)
            | Value::Hash(_)
            | Value::Frontier(_)
            | Value::Json(_)
            | Value::CountMin(_)
            | Value::TopK(_)
            | Value::TDigest(_) => 0,
        }
    }

    /// Appends payload bytes `offset..offset + len`; false if the value no longer has them.
    pub fn read_payload(&self, offset: u64, len: u64, out: &mut Vec<u8>) -> bool {
        match self {
            Value::String(bytes) => {
                let range = usize::try_from(offset)
                    .ok()
                    .zip(usize::try_from(offset.saturating_add(len)).ok())
                    .and_then(|(start, end)| bytes.get(start..end));
                range.map(|range| out.extend_from_slice(range)).is_some()
            }
            Value::Bloom(chain) => chain.read_payload(offset, len, out),
            Value::Counting(chain) => chain.read_payload(offset, len, out),
            Value::Cuckoo(filter) => filter.read_payload(offset, len, out),
            Value::Windowed(filter) => filter.read_payload(offset, len, out),
            Value::List(_)
            | Value::Set(_)
            | Value::ZSet(_)
            | Value::Hash(_)
            | Value::Frontier(_)
            | Value::Json(_)
            | Value::CountMin(_)
            | Value::TopK(_)
            | Value::TDigest(_) => offset == 0 && len == 0,
        }
    }

    /// Overwrites the whole payload, `len` bytes, in place: `fill` is handed the value's own
    /// memory piece by piece in payload order, and must fill each piece (a snapshot's payload is
    /// read straight into it, with no second copy). A string, which `from_snapshot_header` built
    /// empty, takes `len` bytes; any other value must be `len` bytes long already, or
    /// Err(BadOffset) comes back and `fill` is never called.
    pub fn fill_payload<E>(
        &mut self,
        len: u64,
        mut fill: impl FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<Result<(), E>, FilterError> {
        if let Value::String(bytes) = self {
            let len = usize::try_from(len).map_err(|_| FilterError::BadOffset)?;
            if !bytes.is_empty() || bytes.capacity() < len {
                return Err(FilterError::BadOffset);
            }
            bytes.resize(len, 0);
            return Ok(fill(bytes));
        }
        if len != self.payload_len() {
            return Err(FilterError::BadOffset);
        }
        Ok(match self {
            Value::Bloom(chain) => chain.fill_payload(&mut fill),
            Value::Counting(chain) => chain.fill_payload(&mut fill),
            Value::Cuckoo(filter) => filter.fill_payload(&mut fill),
            Value::Windowed(filter) => filter.fill_payload(&mut fill),
            Value::String(_)
            | Value::List(_)
            | Value::Set(_)
            | Value::ZSet(_)
            | Value::Hash(_)
            | Value::Frontier(_)
            | Value::Json(_)
            | Value::CountMin(_)
            | Value::TopK(_)
            | Value::TDigest(_) => Ok(()),
        })
    }

    /// An empty value of `kind` built from its snapshot header, with room for `payload_len`
    /// bytes; filters are checked against `limit_bytes` before anything is allocated.
    pub fn from_snapshot_header(
        kind: ValueKind,
        header: &[u8],
        payload_len: u64,
        limit_bytes: u64,
    ) -> Result<Value, FilterError> {
        let value = match kind {
            ValueKind::String if header.is_empty() => {
                let len = usize::try_from(payload_len).map_err(|_| FilterError::BadDump)?;
                let mut bytes = Vec::new();
                bytes
                    .try_reserve_exact(len)
                    .map_err(|_| FilterError::OutOfMemory)?;
                return Ok(Value::String(bytes));
            }
            ValueKind::String => return Err(FilterError::BadDump),
            ValueKind::Bloom => Value::Bloom(BloomChain::from_header(header, limit_bytes)?),
            ValueKind::Counting => {
                Value::Counting(Box::new(CountingChain::from_header(header, limit_bytes)?))
            }
            ValueKind::Cuckoo => {
                Value::Cuckoo(Box::new(CuckooFilter::from_header(header, limit_bytes)?))
            }
            ValueKind::Windowed => {
                Value::Windowed(Box::new(WindowedFilter::from_header(header, limit_bytes)?))
            }
            ValueKind::List => collection_encoding::decode_list(header)
                .map(|list| Value::List(Box::new(list)))
                .ok_or(FilterError::BadDump)?,
            ValueKind::Set => collection_encoding::decode_set(header)
                .map(|set| Value::Set(Box::new(set)))
                .ok_or(FilterError::BadDump)?,
            ValueKind::ZSet => collection_encoding::decode_zset(header)
                .map(|zset| Value::ZSet(Box::new(zset)))
                .ok_or(FilterError::BadDump)?,
            ValueKind::Hash => collection_encoding::decode_hash(header)
                .map(|hash| Value::Hash(Box::new(hash)))
                .ok_or(FilterError::BadDump)?,
            // Its seen-set's bits are in the header: the header's length bounds what it takes.
            ValueKind::Frontier => Value::Frontier(Box::new(Frontier::decode(header)?)),
            // sieved's own text, of any depth a document may have, read back exactly; the
            // header's length bounds what it takes.
            ValueKind::Json => std::str::from_utf8(header)
                .ok()
                .and_then(|text| json::parse(text, json::ParseLimits::own(usize::MAX)).ok())
                .map(|document| Value::Json(Box::new(document)))
                .ok_or(FilterError::BadDump)?,
            // A snapshot is sieved's own file, and RESTORE takes sketches only in RedisBloom's
            // encodings (checked against the limit there), so their form is trusted here as a
            // frontier's is: a digest's compression may ask for more than its header's bytes.
            ValueKind::CountMin => sketch::decode_count_min(header, u64::MAX)
                .map(|sketch| Value::CountMin(Box::new(sketch)))
                .map_err(|_| FilterError::BadDump)?,
            ValueKind::TopK => sketch::decode_top_k(header, u64::MAX)
                .map(|top_k| Value::TopK(Box::new(top_k)))
                .map_err(|_| FilterError::BadDump)?,
            ValueKind::TDigest => sketch::decode_t_digest(header, u64::MAX)
                .map(|digest| Value::TDigest(Box::new(digest)))
                .map_err(|_| FilterError::BadDump)?,
        };
        if value.payload_len() != payload_len {
            return Err(FilterError::BadDump);
        }
        Ok(value)
    }

    /// Writes the next payload bytes, which start at `offset`.
    pub fn write_payload(&mut self, offset: u64, data: &[u8]) -> Result<(), FilterError> {
        match self {
            Value::String(bytes) if offset == bytes.len() as u64 => {
                bytes.extend_from_slice(data);
                Ok(())
            }
            Value::String(_) => Err(FilterError::BadOffset),
            Value::Bloom(chain) => chain.write_payload(offset, data),
            Value::Counting(chain) => chain.write_payload(offset, data),
            Value::Cuckoo(filter) => filter.write_payload(offset, data),
            Value::Windowed(filter) => filter.write_payload(offset, data),
            Value::List(_)
            | Value::Set(_)
            | Value::ZSet(_)
            | Value::Hash(_)
            | Value::Frontier(_)
            | Value::Json(_)
            | Value::CountMin(_)
            | Value::TopK(_)
            | Value::TDigest(_) => Err(FilterError::BadOffset),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_type_does_not_grow_every_value() {
        assert_eq!(
            std::mem::size_of::<Value>(),
            std::mem::size_of::<BloomChain>()
        );
    }
}
