//! What the Count-Min sketch, Top-K and t-digest refuse, with the text RedisBloom 8.8 answers
//! for each (taken from its recorded replies).
//!
//! The texts sit here, below the commands, because the sketches' own transcript tests compare
//! them with RedisBloom's replies; `src/cmd/errors.rs` re-exports the ones commands name and
//! turns a `SketchError` into a command's error.

use std::fmt;

pub const CMS_INVALID_WIDTH: &str = "CMS: invalid width";
pub const CMS_INVALID_DEPTH: &str = "CMS: invalid depth";
pub const CMS_INVALID_OVERESTIMATION: &str = "CMS: invalid overestimation value";
pub const CMS_INVALID_PROBABILITY: &str = "CMS: invalid prob value";
pub const CMS_INVALID_INIT: &str = "CMS: invalid init arguments";
pub const CMS_NO_MEMORY: &str = "CMS: Insufficient memory to create the key";
pub const CMS_DIMENSIONS_DIFFER: &str = "CMS: width/depth is not equal";
pub const CMS_MERGE_OVERFLOW: &str = "CMS: MERGE overflow";
pub const CMS_INCRBY_OVERFLOW: &str = "CMS: INCRBY overflow";

pub const TOPK_INVALID_K: &str = "TopK: invalid k";
pub const TOPK_INVALID_WIDTH: &str = "TopK: invalid width";
pub const TOPK_INVALID_DEPTH: &str = "TopK: invalid depth";
pub const TOPK_INVALID_DECAY: &str = "TopK: invalid decay value. must be '<= 1' & '> 0'";
pub const TOPK_NO_MEMORY: &str = "ERR Insufficient memory to create topk data structure";
/// The spaces come from a line continuation inside RedisBloom's C string.
pub const TOPK_INVALID_INCREMENT: &str = concat!(
    "TopK: increment must be an integer greater or equal to 0",
    "                            ",
    "and smaller or equal to 100,000"
);

pub const TDIGEST_COMPRESSION_NOT_POSITIVE: &str =
    "ERR T-Digest: compression parameter needs to be a positive integer";
pub const TDIGEST_NO_MEMORY: &str = "ERR T-Digest: allocation failed";
pub const TDIGEST_MERGE_NO_MEMORY: &str = "ERR T-Digest: allocation of destination digest failed";
pub const TDIGEST_OVERFLOW: &str = "ERR T-Digest: overflow detected";

/// Redis's answer to a RESTORE whose module value does not load.
pub const BAD_SAVED_FORM: &str = "ERR Bad data format";

/// Everything the three sketches refuse. `TooLarge` variants carry the size a value would
/// take (as MEMORY USAGE reports it) and the limit it is over; the client sees RedisBloom's
/// answer to a failed allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SketchError {
    CmsInvalidWidth,
    CmsInvalidDepth,
    CmsInvalidOverestimation,
    CmsInvalidProbability,
    /// Dimensions below 1, or whose product overflows a signed 64-bit integer.
    CmsInvalidInit,
    CmsTooLarge {
        bytes: u64,
        limit: u64,
    },
    CmsDimensionsDiffer,
    /// A merged counter or count outside its range, or an overflow on the way.
    CmsMergeOverflow,
    /// An item's smallest counter saturated (the increment still took effect).
    CmsIncrByOverflow,
    TopKInvalidK,
    TopKInvalidWidth,
    TopKInvalidDepth,
    TopKInvalidDecay,
    TopKTooLarge {
        bytes: u64,
        limit: u64,
    },
    TopKInvalidIncrement,
    TDigestCompressionNotPositive,
    /// TDIGEST.CREATE's digest would be too large.
    TDigestTooLarge {
        bytes: u64,
        limit: u64,
    },
    /// TDIGEST.MERGE's destination would be too large.
    TDigestMergeTooLarge {
        bytes: u64,
        limit: u64,
    },
    /// A weight sum past the signed 64-bit range, or a full node buffer.
    TDigestOverflow,
    /// A saved form (RDB, DUMP) that does not describe a value this build holds.
    BadSavedForm,
}

impl SketchError {
    /// The text RedisBloom answers (without the leading `-`).
    pub fn text(self) -> &'static str {
        match self {
            SketchError::CmsInvalidWidth => CMS_INVALID_WIDTH,
            SketchError::CmsInvalidDepth => CMS_INVALID_DEPTH,
            SketchError::CmsInvalidOverestimation => CMS_INVALID_OVERESTIMATION,
            SketchError::CmsInvalidProbability => CMS_INVALID_PROBABILITY,
            SketchError::CmsInvalidInit => CMS_INVALID_INIT,
            SketchError::CmsTooLarge { .. } => CMS_NO_MEMORY,
            SketchError::CmsDimensionsDiffer => CMS_DIMENSIONS_DIFFER,
            SketchError::CmsMergeOverflow => CMS_MERGE_OVERFLOW,
            SketchError::CmsIncrByOverflow => CMS_INCRBY_OVERFLOW,
            SketchError::TopKInvalidK => TOPK_INVALID_K,
            SketchError::TopKInvalidWidth => TOPK_INVALID_WIDTH,
            SketchError::TopKInvalidDepth => TOPK_INVALID_DEPTH,
            SketchError::TopKInvalidDecay => TOPK_INVALID_DECAY,
            SketchError::TopKTooLarge { .. } => TOPK_NO_MEMORY,
            SketchError::TopKInvalidIncrement => TOPK_INVALID_INCREMENT,
            SketchError::TDigestCompressionNotPositive => TDIGEST_COMPRESSION_NOT_POSITIVE,
            SketchError::TDigestTooLarge { .. } => TDIGEST_NO_MEMORY,
            SketchError::TDigestMergeTooLarge { .. } => TDIGEST_MERGE_NO_MEMORY,
            SketchError::TDigestOverflow => TDIGEST_OVERFLOW,
            SketchError::BadSavedForm => BAD_SAVED_FORM,
        }
    }
}

impl fmt::Display for SketchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl std::error::Error for SketchError {}

/// The bytes a value of `bytes` would take, refused by `too_large` if over `limit`.
pub(crate) fn check_limit(
    bytes: u64,
    limit: u64,
    too_large: fn(u64, u64) -> SketchError,
) -> Result<(), SketchError> {
    if bytes > limit {
        Err(too_large(bytes, limit))
    } else {
        Ok(())
    }
}
