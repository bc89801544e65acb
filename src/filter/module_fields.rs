//! The fields of a module value as Redis's module API saves them (`RedisModule_SaveUnsigned`,
//! `SaveSigned`, `SaveDouble`, `SaveStringBuffer`): in an RDB file or a DUMP payload each is
//! led by its opcode (2 unsigned, 4 double, 5 string; `store/rdb/module.rs` writes them), and
//! a type's saved form is the sequence its `rdb_save` writes. The three sketches' shapes turn
//! into and out of such a sequence, so that the order lives in one place.
//!
//! `SaveSigned` has no field of its own: Redis saves the value's two's-complement bits as an
//! unsigned field (opcode 2, not the signed opcode 1, which nothing writes), and `LoadSigned`
//! reads one back.

use super::SketchError;

/// One saved field.
#[derive(Debug, Clone)]
pub enum ModuleField {
    /// Also what `SaveSigned` writes, as the bits of the signed value.
    Unsigned(u64),
    Double(f64),
    Buffer(Vec<u8>),
}

/// Fields are equal when their bytes are: doubles compare by bit pattern, so that a NaN
/// equals itself and -0 differs from 0, as in the payload.
impl PartialEq for ModuleField {
    fn eq(&self, other: &ModuleField) -> bool {
        match (self, other) {
            (ModuleField::Unsigned(a), ModuleField::Unsigned(b)) => a == b,
            (ModuleField::Double(a), ModuleField::Double(b)) => a.to_bits() == b.to_bits(),
            (ModuleField::Buffer(a), ModuleField::Buffer(b)) => a == b,
            _ => false,
        }
    }
}

/// Reads fields in order, each of the kind expected; any other kind, or a missing field, is
/// a bad saved form.
pub(crate) struct FieldReader<I> {
    fields: I,
}

impl<I: Iterator<Item = ModuleField>> FieldReader<I> {
    pub(crate) fn new(fields: impl IntoIterator<IntoIter = I>) -> Self {
        FieldReader {
            fields: fields.into_iter(),
        }
    }

    pub(crate) fn unsigned(&mut self) -> Result<u64, SketchError> {
        match self.fields.next() {
            Some(ModuleField::Unsigned(value)) => Ok(value),
            _ => Err(SketchError::BadSavedForm),
        }
    }

    /// A field `SaveSigned` wrote.
    pub(crate) fn signed(&mut self) -> Result<i64, SketchError> {
        self.unsigned().map(|bits| bits as i64)
    }

    pub(crate) fn double(&mut self) -> Result<f64, SketchError> {
        match self.fields.next() {
            Some(ModuleField::Double(value)) => Ok(value),
            _ => Err(SketchError::BadSavedForm),
        }
    }

    pub(crate) fn buffer(&mut self) -> Result<Vec<u8>, SketchError> {
        match self.fields.next() {
            Some(ModuleField::Buffer(value)) => Ok(value),
            _ => Err(SketchError::BadSavedForm),
        }
    }

    /// Succeeds only if every field was read.
    pub(crate) fn finish(mut self) -> Result<(), SketchError> {
        match self.fields.next() {
            None => Ok(()),
            Some(_) => Err(SketchError::BadSavedForm),
        }
    }
}

/// The snapshot form of a field sequence: sieved's own file, so a plain one (a tag byte, then a
/// little-endian u64, an f64's bits, or a u64 length and the bytes). DUMP and RDB files carry
/// the same fields in Redis's module opcodes instead (`rdb/module_values.rs`).
pub fn encode_fields(fields: &[ModuleField]) -> Vec<u8> {
    let mut out = Vec::new();
    for field in fields {
        match field {
            ModuleField::Unsigned(value) => {
                out.push(0);
                out.extend(value.to_le_bytes());
            }
            ModuleField::Double(value) => {
                out.push(1);
                out.extend(value.to_bits().to_le_bytes());
            }
            ModuleField::Buffer(bytes) => {
                out.push(2);
                out.extend((bytes.len() as u64).to_le_bytes());
                out.extend(bytes);
            }
        }
    }
    out
}

/// Fields `encode_fields` wrote, all of `encoded`; a bad saved form if it is anything else.
pub fn decode_fields(mut encoded: &[u8]) -> Result<Vec<ModuleField>, SketchError> {
    fn word(input: &mut &[u8]) -> Result<u64, SketchError> {
        let (head, rest) = input
            .split_first_chunk::<8>()
            .ok_or(SketchError::BadSavedForm)?;
        *input = rest;
        Ok(u64::from_le_bytes(*head))
    }
    let mut fields = Vec::new();
    while let Some((&tag, rest)) = encoded.split_first() {
        encoded = rest;
        fields.push(match tag {
            0 => ModuleField::Unsigned(word(&mut encoded)?),
            1 => ModuleField::Double(f64::from_bits(word(&mut encoded)?)),
            2 => {
                let len =
                    usize::try_from(word(&mut encoded)?).map_err(|_| SketchError::BadSavedForm)?;
                if len > encoded.len() {
                    return Err(SketchError::BadSavedForm);
                }
                let (bytes, rest) = encoded.split_at(len);
                encoded = rest;
                ModuleField::Buffer(bytes.to_vec())
            }
            _ => return Err(SketchError::BadSavedForm),
        });
    }
    Ok(fields)
}
