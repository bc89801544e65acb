//! Commands: one file per family, each declaring its commands in `spec.rs`'s terms (flags, keys,
//! categories, documentation, handler); here they become the one table that dispatch
//! (`dispatch.rs`), COMMAND and the transaction rules read. Each handler reads its arguments
//! from the request, acts on the store, and writes its reply; a handler that fails returns an
//! error before writing anything, and `execute` sends it.

mod admin;
mod args;
mod bitfield;
mod bits;
mod bloom;
mod client_info;
mod cms;
mod collection;
mod command;
mod connection;
mod context;
mod counters;
mod counting;
mod cuckoo;
mod diagnostics;
mod dispatch;
pub mod errors;
mod eviction;
mod filter_options;
mod filter_specs;
mod filters;
mod frontier;
mod frontier_requests;
mod hashes;
mod json;
mod key_specs;
mod keys;
mod lists;
mod long_double;
mod merge;
mod migration;
mod module;
mod module_list;
pub(crate) mod prefetch;
mod pubsub;
mod random;
#[cfg(test)]
mod reference;
mod replication;
mod runs;
mod script_engines;
mod script_replies;
mod scripting;
mod set_algebra;
mod sets;
mod sketches;
mod spec;
mod string_limits;
mod strings;
mod tdigest;
#[cfg(test)]
mod tests;
mod topk;
mod transaction;
mod windowed;
mod zset_ranges;
mod zsets;

pub use client_info::{ClientFilter, ClientInfo, ClientKind, ClientType};
pub use context::{
    After, BlockOn, Ctx, ExitSave, LogPosition, Outcome, Psync, PubSub, ReplicaHandshake,
    Replicating, RoleView, SaveError, Server, Session, SubscriptionKind, WaitForReplicas, WriteLog,
};
pub(crate) use dispatch::execute_found;
pub use dispatch::{execute, replay};
pub(crate) use prefetch::MAX_RUN;
pub(crate) use runs::{execute_run, Run};
pub use script_engines::{ScriptFigures, Scripts};
pub use spec::CommandSpec;
pub use transaction::runs_exclusively;

use spec::Flags;
use std::sync::OnceLock;

/// Every family's commands, in one table: dispatch, COMMAND and the transaction rules all read
/// it. A command's index in it is its number for per-command statistics.
const FAMILIES: &[&[CommandSpec]] = &[
    bloom::SPECS,
    counting::SPECS,
    cuckoo::SPECS,
    cms::SPECS,
    topk::SPECS,
    tdigest::SPECS,
    windowed::SPECS,
    frontier::SPECS,
    json::SPECS,
    connection::SPECS,
    command::SPECS,
    admin::SPECS,
    module::SPECS,
    transaction::SPECS,
    keys::SPECS,
    migration::SPECS,
    strings::SPECS,
    counters::SPECS,
    bits::SPECS,
    bitfield::SPECS,
    lists::SPECS,
    lists::MOVE_SPECS,
    sets::SPECS,
    set_algebra::SPECS,
    zsets::SPECS,
    hashes::SPECS,
    diagnostics::SPECS,
    pubsub::SPECS,
    replication::SPECS,
    scripting::SPECS,
];

pub static COMMANDS: [CommandSpec; spec::total(FAMILIES)] = spec::concat(FAMILIES);

/// The command names' index: open addressing over a multiplicative hash of the lower-cased name
/// read as four words, at most half full. Every request looks its name up here; SipHash and a
/// general map cost about 5% of a pipelined BF.ADD's time, and a byte-wise hash with a memcmp
/// still 4%; a probe here is a few multiplications and, almost always, one four-word compare.
struct NameIndex {
    /// Each slot holds a command's index in `COMMANDS` plus one; 0 is empty.
    slots: Box<[u16]>,
    /// Each command's name as `name_words` gives it, in `COMMANDS` order.
    names: Box<[NameWords]>,
}

/// A name of at most `MAX_NAME` bytes, lower-cased and zero-padded, as little-endian words,
/// with its length in the last byte (so that trailing NULs are no match).
type NameWords = [u64; 4];

const MAX_NAME: usize = 31;

/// The name's words, or None if it is empty or longer than any command's. Upper-case ASCII
/// letters become lower case eight bytes at a time, and nothing else changes.
fn name_words(name: &[u8]) -> Option<NameWords> {
    const LOW_BITS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    // Added to a byte's low seven bits, these set its high bit when it is at least 'A', and when
    // it is past 'Z'; no sum carries into the next byte.
    const FROM_A: u64 = 0x3f3f_3f3f_3f3f_3f3f;
    const PAST_Z: u64 = 0x2525_2525_2525_2525;
    if name.is_empty() || name.len() > MAX_NAME {
        return None;
    }
    let mut bytes = [0u8; MAX_NAME + 1];
    bytes[..name.len()].copy_from_slice(name);
    let mut words = [0u64; 4];
    for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
        let raw = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let low = raw & LOW_BITS;
        let upper = (low + FROM_A) & !(low + PAST_Z) & !raw & HIGH_BITS;
        *word = raw | (upper >> 2);
    }
    words[3] |= (name.len() as u64) << 56;
    Some(words)
}

impl NameIndex {
    fn build() -> NameIndex {
        let size = (COMMANDS.len() * 2).next_power_of_two();
        let mut slots = vec![0u16; size].into_boxed_slice();
        let mut names = Vec::with_capacity(COMMANDS.len());
        for (index, spec) in COMMANDS.iter().enumerate() {
            let words = name_words(spec.name.as_bytes()).expect("command names are short");
            let mut slot = slot_of(&words, size);
            while slots[slot] != 0 {
                slot = (slot + 1) & (size - 1);
            }
            slots[slot] = u16::try_from(index + 1).expect("fewer than 65535 commands");
            names.push(words);
        }
        NameIndex {
            slots,
            names: names.into_boxed_slice(),
        }
    }

    fn find(&self, name: &[u8]) -> Option<usize> {
        let words = name_words(name)?;
        let mask = self.slots.len() - 1;
        let mut slot = slot_of(&words, self.slots.len());
        loop {
            let index = usize::from(self.slots[slot]).checked_sub(1)?;
            if self.names[index] == words {
                return Some(index);
            }
            slot = (slot + 1) & mask;
        }
    }
}

/// The home slot of a name in a table of `size` (a power of two) slots.
fn slot_of(words: &NameWords, size: usize) -> usize {
    const K: [u64; 4] = [
        0x9e37_79b9_7f4a_7c15,
        0xc2b2_ae3d_27d4_eb4f,
        0x1656_67b1_9e37_79f9,
        0x85eb_ca77_c2b2_ae63,
    ];
    let mixed = words
        .iter()
        .zip(K)
        .fold(0u64, |acc, (&word, k)| acc ^ word.wrapping_mul(k));
    let mixed = (mixed ^ (mixed >> 29)).wrapping_mul(K[0]);
    (mixed >> (64 - size.trailing_zeros())) as usize
}

fn name_index() -> &'static NameIndex {
    static INDEX: OnceLock<NameIndex> = OnceLock::new();
    INDEX.get_or_init(NameIndex::build)
}

/// Finds a command by name, in any case, without allocating.
pub fn lookup(name: &[u8]) -> Option<usize> {
    name_index().find(name)
}
