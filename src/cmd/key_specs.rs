//! The key specifications Redis 7 gives its commands (COMMAND INFO's `key_specs`) that several
//! families share, each named by its flags: one key, the first argument, unless the name says
//! otherwise. A specification only one command has is written beside its table.

use super::spec::{bits, KeySpec};

pub(super) const RO: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RO], 1, 0, 1)];
pub(super) const RO_ACCESS: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, 0, 1)];
pub(super) const RW_INSERT: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RW, INSERT], 1, 0, 1)];
pub(super) const RW_UPDATE: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RW, UPDATE], 1, 0, 1)];
pub(super) const RW_DELETE: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RW, DELETE], 1, 0, 1)];
pub(super) const RW_ACCESS_DELETE: &[KeySpec] =
    &[KeySpec::range(bits![KeyFlags: RW, ACCESS, DELETE], 1, 0, 1)];
pub(super) const RW_ACCESS_UPDATE: &[KeySpec] =
    &[KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE], 1, 0, 1)];
pub(super) const OW_INSERT: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: OW, INSERT], 1, 0, 1)];
pub(super) const OW_UPDATE: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: OW, UPDATE], 1, 0, 1)];

/// Every argument is a key.
pub(super) const RO_ACCESS_KEYS: &[KeySpec] =
    &[KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, -1, 1)];
/// Every argument but the last (a blocking pop's timeout) is a key.
pub(super) const RW_ACCESS_DELETE_ALL_BUT_LAST: &[KeySpec] = &[KeySpec::range(
    bits![KeyFlags: RW, ACCESS, DELETE],
    1,
    -2,
    1,
)];
/// Keys and values alternate: MSET and MSETNX.
pub(super) const OW_UPDATE_PAIRS: &[KeySpec] =
    &[KeySpec::range(bits![KeyFlags: OW, UPDATE], 1, -1, 2)];
pub(super) const OW_INSERT_PAIRS: &[KeySpec] =
    &[KeySpec::range(bits![KeyFlags: OW, INSERT], 1, -1, 2)];
/// A destination overwritten from every key after it: SINTERSTORE, SUNIONSTORE, SDIFFSTORE.
pub(super) const OW_UPDATE_FROM_RO_KEYS: &[KeySpec] = &[
    KeySpec::range(bits![KeyFlags: OW, UPDATE], 1, 0, 1),
    KeySpec::range(bits![KeyFlags: RO, ACCESS], 2, -1, 1),
];
/// `numkeys key [key ...]` and options after: Redis finds the keys by `numkeys`, which
/// sieved's key specifications cannot say; every word from the first key on is taken as one.
pub(super) const RO_ACCESS_NUMKEYS: &[KeySpec] =
    &[KeySpec::range(bits![KeyFlags: RO, ACCESS], 2, -1, 1)];
