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
