//! What bounds a string a write makes or grows (SETRANGE, APPEND, SETBIT, BITFIELD, BITOP):
//! `proto-max-bulk-len` for its length, which also bounds a bit offset, and `maxmemory` for what
//! it allocates.

use super::args::parse_i64;
use super::errors::*;
use super::Ctx;
use crate::store::EvictionPolicy;

/// What bounds a string a write makes or grows: `proto-max-bulk-len` for its length and
/// `maxmemory` for what it allocates. A write replayed from the log obeys neither, as Redis
/// obeys its primary and its AOF: it was admitted when it first ran.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    pub(super) max_len: u64,
    max_memory: u64,
    /// An eviction policy is set: keys can go to make room, so only an allocation larger than
    /// `maxmemory` itself is refused up front.
    evicting: bool,
}

impl Limits {
    pub(super) fn of(ctx: &Ctx) -> Limits {
        if ctx.session.replaying {
            return Limits {
                max_len: u64::MAX,
                max_memory: 0,
                evicting: false,
            };
        }
        let settings = ctx.config().settings();
        Limits {
            max_len: settings.proto_max_bulk_len,
            max_memory: ctx.config().maxmemory(),
            evicting: settings.maxmemory_policy != EvictionPolicy::NoEviction,
        }
    }

    /// `ERR string exceeds maximum allowed size` unless `start + len` bytes fit.
    pub(super) fn check_len(self, start: u64, len: u64) -> CmdResult {
        match start.checked_add(len) {
            Some(total) if total <= self.max_len => Ok(()),
            _ => Err(STRING_TOO_LONG.into()),
        }
    }

    /// Refuses an allocation of `bytes` that would take the process past `maxmemory`. Redis
    /// checks only before a `denyoom` command runs, so one command can overshoot by a whole
    /// 512 MB string; this refuses that command instead. Under an eviction policy the next
    /// command's evictions make room, as in Redis, unless no eviction could.
    fn check_memory(self, bytes: usize) -> CmdResult {
        let mut after = bytes as u64;
        if !self.evicting {
            after = after.saturating_add(crate::memory::allocated() as u64);
        }
        if self.max_memory > 0 && after > self.max_memory {
            return Err(OOM.into());
        }
        Ok(())
    }

    /// A new string of `len` zero bytes, allocated only once the limits allow it.
    pub(super) fn zeroed(self, len: usize) -> Result<Vec<u8>, CmdError> {
        let mut bytes = Vec::new();
        self.grow_zeroed(&mut bytes, len)?;
        Ok(bytes)
    }

    /// Makes `bytes` at least `len` long, the new bytes zero. Small growth doubles the room
    /// (up to a megabyte at a time, as Redis's strings do), so a string built by appends is
    /// not copied at each; a jump far past the end gets exactly the room it needs.
    pub(super) fn grow_zeroed(self, bytes: &mut Vec<u8>, len: usize) -> CmdResult {
        if len <= bytes.len() {
            return Ok(());
        }
        if len > bytes.capacity() {
            let room = bytes.capacity();
            let capacity = len.max(room.saturating_mul(2).min(room + (1 << 20)));
            self.check_memory(capacity - room)?;
            bytes
                .try_reserve_exact(capacity - bytes.len())
                .map_err(|_| CmdError::from(OOM))?;
        }
        bytes.resize(len, 0);
        Ok(())
    }
}

/// A bit offset as Redis reads one: a non-negative integer (with `#`, when `width` is given,
/// a count of fields of that width) whose byte lies within `proto-max-bulk-len`.
pub(super) fn bit_offset(arg: &[u8], width: Option<u32>, limits: Limits) -> Result<u64, CmdError> {
    let (counted, digits) = match (arg, width) {
        ([b'#', rest @ ..], Some(width)) => (Some(width), rest),
        _ => (None, arg),
    };
    let offset = parse_i64(digits).ok_or(BIT_OFFSET)?;
    let offset = match counted {
        Some(width) => offset.checked_mul(i64::from(width)).ok_or(BIT_OFFSET)?,
        None => offset,
    };
    match u64::try_from(offset) {
        Ok(offset) if (offset >> 3) < limits.max_len => Ok(offset),
        _ => Err(BIT_OFFSET.into()),
    }
}

/// The length in bytes that holds bit `offset`, as a usize (offsets are below 2^63).
pub(super) fn bytes_for_bit(offset: u64) -> Result<usize, CmdError> {
    usize::try_from((offset >> 3) + 1).map_err(|_| CmdError::from(STRING_TOO_LONG))
}
