//! RedisJSON's RDB encoding of a document (module type `ReJSON-RL`), as DUMP, RESTORE, RDB
//! files and replication carry it. The caller frames it as a module value (the type ID from
//! `module_type_id`, each field's opcode, the end opcode); this module says which fields a
//! document is written as and builds a document from the fields read.
//!
//! RedisJSON 2.8 writes encoding version 3: one string field, the document's compact JSON
//! text. It reads 3, 2 (the text, then an unsigned count and, when it is not zero, two more
//! strings, left from RediSearch's use) and 0 (RedisJSON 1.x's tree: an unsigned type tag per
//! node, then its content), and loads the text with no depth limit (sieved stops at
//! `MAX_NESTING`).

use super::text::{parse, ParseLimits};
use super::value::{Array, Number, Object, Value, MAX_NESTING};
use super::write::to_text;
use std::fmt;

/// The module type's name.
pub const TYPE_NAME: &str = "ReJSON-RL";
/// The encoding version RedisJSON 2.8 writes.
pub const ENCODING_VERSION: u32 = 3;

/// Redis's 64-bit ID of a module type: each of the name's nine characters as its index in
/// Redis's charset (6 bits, first character highest), then the encoding version (10 bits).
pub fn module_type_id(encoding_version: u32) -> u64 {
    const CHARSET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let id = TYPE_NAME.bytes().fold(0u64, |id, c| {
        let index = CHARSET
            .iter()
            .position(|&known| known == c)
            .expect("the name is in the charset");
        id << 6 | index as u64
    });
    id << 10 | u64::from(encoding_version & 1023)
}

/// One field of a module value, after its opcode.
#[derive(Debug, Clone, PartialEq)]
pub enum ModuleField {
    Signed(i64),
    Unsigned(u64),
    Float(f32),
    Double(f64),
    String(Vec<u8>),
}

/// A stored document that cannot be loaded; RedisJSON fails the load too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdbError(pub String);

impl fmt::Display for RdbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RdbError {}

fn invalid(message: impl Into<String>) -> RdbError {
    RdbError(message.into())
}

/// The fields RedisJSON 2.8 writes for a document (encoding version 3).
pub fn save(document: &Value) -> Vec<ModuleField> {
    vec![ModuleField::String(to_text(document))]
}

/// Builds a document from the fields of a value written with `encoding_version`; `max_bytes`
/// bounds what it may take (see `ParseLimits`).
pub fn load(
    encoding_version: u32,
    fields: &[ModuleField],
    max_bytes: usize,
) -> Result<Value, RdbError> {
    let mut fields = Fields { fields, at: 0 };
    let text = match encoding_version {
        0 => {
            let tree = fields.legacy_node(0)?;
            fields.end()?;
            to_text(&tree)
        }
        2 => {
            let text = fields.string()?;
            if fields.unsigned()? > 0 {
                fields.string()?;
                fields.string()?;
            }
            fields.end()?;
            text
        }
        3 => {
            let text = fields.string()?;
            fields.end()?;
            text
        }
        v => return Err(invalid(format!("Can't load old RedisJSON RDB: {v}"))),
    };
    let text = std::str::from_utf8(&text).map_err(|_| invalid("Couldn't parse as UTF-8 string"))?;
    parse(text, ParseLimits::stored(max_bytes)).map_err(|e| invalid(e.to_string()))
}

struct Fields<'a> {
    fields: &'a [ModuleField],
    at: usize,
}

/// RedisJSON 1.x's node tags.
const NODE_NULL: u64 = 0x1;
const NODE_STRING: u64 = 0x2;
const NODE_NUMBER: u64 = 0x4;
const NODE_INTEGER: u64 = 0x8;
const NODE_BOOLEAN: u64 = 0x10;
const NODE_DICT: u64 = 0x20;
const NODE_ARRAY: u64 = 0x40;
const NODE_KEY_VALUE: u64 = 0x80;

impl Fields<'_> {
    fn next(&mut self) -> Result<&ModuleField, RdbError> {
        let field = self
            .fields
            .get(self.at)
            .ok_or_else(|| invalid("a ReJSON-RL value ends early"))?;
        self.at += 1;
        Ok(field)
    }

    fn end(&self) -> Result<(), RdbError> {
        if self.at == self.fields.len() {
            Ok(())
        } else {
            Err(invalid("a ReJSON-RL value has more fields than expected"))
        }
    }

    fn unsigned(&mut self) -> Result<u64, RdbError> {
        match self.next()? {
            ModuleField::Unsigned(u) => Ok(*u),
            _ => Err(invalid("a ReJSON-RL field is not an unsigned integer")),
        }
    }

    fn string(&mut self) -> Result<Vec<u8>, RdbError> {
        match self.next()? {
            ModuleField::String(s) => Ok(s.clone()),
            _ => Err(invalid("a ReJSON-RL field is not a string")),
        }
    }

    fn utf8(&mut self) -> Result<String, RdbError> {
        String::from_utf8(self.string()?).map_err(|_| invalid("Couldn't parse as UTF-8 string"))
    }

    /// A node of RedisJSON 1.x's tree; objects keep their first key's place and last value,
    /// as the map it was loaded into did.
    fn legacy_node(&mut self, depth: usize) -> Result<Value, RdbError> {
        if depth > MAX_NESTING {
            return Err(invalid("a ReJSON-RL value nests too deeply"));
        }
        Ok(match self.unsigned()? {
            NODE_NULL => Value::Null,
            NODE_BOOLEAN => Value::Bool(self.string()?.first() == Some(&b'1')),
            NODE_INTEGER => match self.next()? {
                ModuleField::Signed(i) => Value::Number(Number::Int(*i)),
                _ => return Err(invalid("a ReJSON-RL field is not a signed integer")),
            },
            NODE_NUMBER => match self.next()? {
                ModuleField::Double(d) if d.is_finite() => Value::Number(Number::Float(*d)),
                ModuleField::Double(_) => return Err(invalid("Can't load as float")),
                _ => return Err(invalid("a ReJSON-RL field is not a double")),
            },
            NODE_STRING => Value::String(self.utf8()?.into_boxed_str()),
            NODE_DICT => {
                let len = self.unsigned()?;
                let mut object = Object::default();
                for _ in 0..len {
                    if self.unsigned()? != NODE_KEY_VALUE {
                        return Err(invalid("Can't load old RedisJSON RDB"));
                    }
                    let key = self.utf8()?;
                    let value = self.legacy_node(depth + 1)?;
                    object.insert(&key, value);
                }
                Value::Object(Box::new(object))
            }
            NODE_ARRAY => {
                let len = self.unsigned()?;
                let mut array = Array::default();
                for _ in 0..len {
                    array.push(self.legacy_node(depth + 1)?);
                }
                Value::Array(Box::new(array))
            }
            NODE_KEY_VALUE => return Err(invalid("Can't load old RedisJSON RDB")),
            _ => return Err(invalid("Can't load old RedisJSON RDB1")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Value {
        parse(text, ParseLimits::command(usize::MAX)).unwrap()
    }

    #[test]
    fn version_3_is_the_compact_text() {
        let d = doc(r#"{ "a" : [1, 2.0, "x"], "b": null }"#);
        let fields = save(&d);
        assert_eq!(
            fields,
            vec![ModuleField::String(
                br#"{"a":[1,2.0,"x"],"b":null}"#.to_vec()
            )]
        );
        assert_eq!(load(3, &fields, usize::MAX), Ok(d.clone()));
        let old = [
            fields[0].clone(),
            ModuleField::Unsigned(1),
            ModuleField::String(b"idx".to_vec()),
            ModuleField::String(b"x".to_vec()),
        ];
        assert_eq!(load(2, &old, usize::MAX), Ok(d));
        assert!(load(4, &fields, usize::MAX).is_err());
        assert!(load(3, &[ModuleField::String(b"[".to_vec())], usize::MAX).is_err());
    }

    #[test]
    fn version_0_trees_load() {
        use ModuleField::*;
        let fields = [
            Unsigned(NODE_DICT),
            Unsigned(2),
            Unsigned(NODE_KEY_VALUE),
            String(b"n".to_vec()),
            Unsigned(NODE_ARRAY),
            Unsigned(3),
            Unsigned(NODE_INTEGER),
            Signed(-5),
            Unsigned(NODE_NUMBER),
            Double(1.5),
            Unsigned(NODE_BOOLEAN),
            String(b"1".to_vec()),
            Unsigned(NODE_KEY_VALUE),
            String(b"s".to_vec()),
            Unsigned(NODE_STRING),
            String(b"hi".to_vec()),
        ];
        assert_eq!(
            load(0, &fields, usize::MAX),
            Ok(doc(r#"{"n":[-5,1.5,true],"s":"hi"}"#))
        );
    }

    #[test]
    fn the_type_id_is_redis_module_id() {
        // "ReJSON-RL": R=17 e=30 J=9 S=18 O=14 N=13 -=62 R=17 L=11.
        let expected = [17u64, 30, 9, 18, 14, 13, 62, 17, 11]
            .iter()
            .fold(0u64, |id, &c| id << 6 | c)
            << 10
            | 3;
        assert_eq!(module_type_id(ENCODING_VERSION), expected);
    }
}
