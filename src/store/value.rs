use crate::filter::{BloomChain, CountingChain};

/// What a key holds.
#[derive(Debug, Clone)]
pub enum Value {
    String(Vec<u8>),
    Bloom(BloomChain),
    /// Boxed so that adding the type leaves every value, and so MEMORY USAGE of every other
    /// type, as small as it was.
    Counting(Box<CountingChain>),
}

impl Value {
    /// The name TYPE reports: RedisBloom's module type name for Bloom filters, and one in the same
    /// style for counting Bloom filters, which RedisBloom does not have.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::Bloom(_) => "MBbloom--",
            Value::Counting(_) => "MBbloomCBF",
        }
    }

    /// Bytes the value occupies, its own structures included.
    pub fn memory_bytes(&self) -> u64 {
        let own = std::mem::size_of::<Value>() as u64;
        match self {
            Value::String(bytes) => own + bytes.capacity() as u64,
            Value::Bloom(chain) => own + chain.memory_bytes(),
            Value::Counting(chain) => own + chain.memory_bytes(),
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
