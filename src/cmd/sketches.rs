//! What the sketch families (CMS.*, TOPK.*, TDIGEST.*) share: finding a key's sketch with
//! RedisBloom's error when it is missing; a double is read with `filter::module_double`. No
//! family imports another; they all import this.

use super::errors::{CmdError, WRONGTYPE};
use super::Ctx;
pub(super) use crate::filter::module_double;
use crate::store::Value;

/// A sketch type as its family finds it in the keyspace.
pub(super) trait Sketch: Sized {
    /// RedisBloom's answer for a missing key.
    const MISSING: &'static str;
    fn of(value: &Value) -> Option<&Self>;
    fn of_mut(value: &mut Value) -> Option<&mut Self>;
}

/// Reads the sketch at `key`: `S::MISSING` if there is none, WRONGTYPE if it holds another value.
pub(super) fn read_sketch<S: Sketch, R>(
    ctx: &Ctx,
    key: &[u8],
    read: impl FnOnce(&S) -> R,
) -> Result<R, CmdError> {
    ctx.db().get(key, ctx.now, |value| match value {
        None => Err(S::MISSING.into()),
        Some(value) => S::of(value).map(read).ok_or(WRONGTYPE.into()),
    })
}

/// Changes the sketch at `key`, with `read_sketch`'s errors.
pub(super) fn write_sketch<S: Sketch, R>(
    ctx: &Ctx,
    key: &[u8],
    write: impl FnOnce(&mut S) -> R,
) -> Result<R, CmdError> {
    ctx.db().get_mut(key, ctx.now, |value| match value {
        None => Err(S::MISSING.into()),
        Some(value) => S::of_mut(value).map(write).ok_or(WRONGTYPE.into()),
    })
}
