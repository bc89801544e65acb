//! RedisBloom's three sketches as values: the Count-Min sketch, Top-K and t-digest, and their
//! snapshot form, which is RedisBloom's saved fields (the fields a DUMP holds, in the snapshot's
//! plain field codec, `filter::encode_fields`), so that one field order of each type serves
//! snapshots, DUMP/RESTORE and RDB files.
//!
//! A Top-K carries its own decay generator. RedisBloom draws its decay from the process-wide
//! `rand()`, which no replica or replay could follow; here each Top-K starts glibc's generator
//! as an unseeded C program's (`srand(1)`) when it is created, restored or imported, and its
//! state is part of the value: what the key's adds draw depends only on the key's own history,
//! so the log (the commands as sent), a replica and a snapshot (which saves the state after
//! RedisBloom's fields) all reproduce the primary's counts exactly. The draws are glibc's, so
//! the decay is RedisBloom's statistically; no two RedisBloom servers agree on it either.

use crate::filter::{
    decode_fields, encode_fields, CountMinShape, CountMinSketch, GlibcRandom, GlibcRandomState,
    ModuleField, SketchError, TDigest, TDigestShape, TopK, TopKShape,
};

/// The seed of every Top-K's decay generator: glibc's own default.
const DECAY_SEED: u32 = 1;

/// A Top-K and the generator its adds draw decay from.
#[derive(Debug, Clone)]
pub struct TopKValue {
    pub sketch: TopK,
    pub draws: GlibcRandom,
}

impl TopKValue {
    /// A Top-K new to the keyspace (reserved, restored or imported): a fresh generator.
    pub fn new(sketch: TopK) -> TopKValue {
        TopKValue {
            sketch,
            draws: GlibcRandom::new(DECAY_SEED),
        }
    }
}

/// The snapshot form of a Count-Min sketch: its saved fields.
pub(super) fn encode_count_min(sketch: &CountMinSketch) -> Vec<u8> {
    encode_fields(&sketch.to_shape().to_fields())
}

/// The snapshot form of a Top-K: its saved fields, then whether its decay table is
/// TOPK.RESERVE's (1) or a load's (0), and the generator's state (its front tap and its
/// words, little-endian u32s) as one more string field: what RedisBloom's form leaves out
/// and an exact replay needs.
pub(super) fn encode_top_k(value: &TopKValue) -> Vec<u8> {
    let state = value.draws.state();
    let mut words = state.front.to_le_bytes().to_vec();
    words.extend(state.words.iter().flat_map(|word| word.to_le_bytes()));
    let mut fields = value.sketch.to_shape().to_fields();
    let reserved = value.sketch.has_reserved_decay_table();
    fields.push(ModuleField::Unsigned(u64::from(reserved)));
    fields.push(ModuleField::Buffer(words));
    encode_fields(&fields)
}

/// The snapshot form of a t-digest: the saved fields of a compressed copy, as a forked save
/// writes it (the live digest is left as it is).
pub(super) fn encode_t_digest(digest: &TDigest) -> Vec<u8> {
    encode_fields(&digest.clone().to_shape().to_fields())
}

fn fields(encoded: &[u8]) -> Result<Vec<ModuleField>, SketchError> {
    decode_fields(encoded)
}

pub(super) fn decode_count_min(encoded: &[u8], limit: u64) -> Result<CountMinSketch, SketchError> {
    CountMinSketch::from_shape(&CountMinShape::from_fields(fields(encoded)?)?, limit)
}

pub(super) fn decode_top_k(encoded: &[u8], limit: u64) -> Result<TopKValue, SketchError> {
    let mut fields = fields(encoded)?;
    let Some(ModuleField::Buffer(words)) = fields.pop() else {
        return Err(SketchError::BadSavedForm);
    };
    let mut numbers = words
        .chunks_exact(4)
        .map(|word| u32::from_le_bytes(word.try_into().expect("chunks of 4")));
    let front = numbers.next().ok_or(SketchError::BadSavedForm)?;
    let words: Vec<u32> = numbers.collect();
    let state = GlibcRandomState {
        front,
        words: words.try_into().map_err(|_| SketchError::BadSavedForm)?,
    };
    let draws = GlibcRandom::from_state(&state).ok_or(SketchError::BadSavedForm)?;
    let reserved = match fields.pop() {
        Some(ModuleField::Unsigned(flag @ (0 | 1))) => flag == 1,
        _ => return Err(SketchError::BadSavedForm),
    };
    let mut sketch = TopK::from_shape(&TopKShape::from_fields(fields)?, limit)?;
    if reserved {
        sketch.use_reserved_decay_table();
    }
    Ok(TopKValue { sketch, draws })
}

pub(super) fn decode_t_digest(encoded: &[u8], limit: u64) -> Result<TDigest, SketchError> {
    TDigest::from_shape(&TDigestShape::from_fields(fields(encoded)?)?, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_forms_round_trip() {
        let mut count_min = CountMinSketch::by_dimensions(10, 3, 1 << 20).unwrap();
        count_min.increment(b"a", 7);
        let back = decode_count_min(&encode_count_min(&count_min), 1 << 20).unwrap();
        assert_eq!(back.query(b"a"), 7);

        let mut top_k = TopKValue::new(TopK::new(3, 8, 7, 0.9, 1 << 20).unwrap());
        for item in [&b"x"[..], b"y", b"x", b"z", b"w"] {
            top_k.sketch.add(item, 1, &mut top_k.draws);
        }
        let back = decode_top_k(&encode_top_k(&top_k), 1 << 20).unwrap();
        assert_eq!(back.sketch, top_k.sketch);
        assert_eq!(back.draws, top_k.draws);

        let mut digest = TDigest::new(100, 1 << 20).unwrap();
        for value in 0..50 {
            digest.add(f64::from(value)).unwrap();
        }
        let back = decode_t_digest(&encode_t_digest(&digest), 1 << 20).unwrap();
        assert_eq!(back.info().observations, 50);
        assert!(decode_t_digest(b"junk", 1 << 20).is_err());
    }
}
