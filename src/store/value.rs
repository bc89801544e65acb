use crate::filter::BloomChain;

/// What a key holds.
#[derive(Debug, Clone)]
pub enum Value {
    String(Vec<u8>),
    Bloom(BloomChain),
}

impl Value {
    /// The name TYPE reports; RedisBloom's module type name for Bloom filters.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::Bloom(_) => "MBbloom--",
        }
    }

    /// Bytes the value occupies, its own structures included.
    pub fn memory_bytes(&self) -> u64 {
        let own = std::mem::size_of::<Value>() as u64;
        match self {
            Value::String(bytes) => own + bytes.capacity() as u64,
            Value::Bloom(chain) => own + chain.memory_bytes(),
        }
    }
}
