//! The replication state as INFO replication and ROLE report it: the replication ID that names
//! this server's history of writes, and how far into it the server is. Only the primary's side
//! exists so far: replicas, the backlog and PSYNC come with the replication link.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// Redis's size of an ID: 40 hexadecimal characters.
pub(crate) const ID_LEN: usize = 40;
/// The second ID of a server that never was a replica, as Redis prints it.
pub(crate) const NO_ID: &str = "0000000000000000000000000000000000000000";
/// Redis's default `repl-backlog-size`.
pub(crate) const BACKLOG_SIZE: u64 = 1024 * 1024;

/// 40 random hexadecimal characters, as Redis's run IDs and replication IDs. Each call draws new
/// keys from the operating system (through `RandomState`), so two servers started in the same
/// instant still differ.
pub(crate) fn random_id() -> String {
    let mut id = String::with_capacity(ID_LEN + 8);
    while id.len() < ID_LEN {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos()),
        );
        id.push_str(&format!("{:016x}", hasher.finish()));
    }
    id.truncate(ID_LEN);
    id
}

pub(crate) struct Replication {
    /// The history of writes this server continues.
    pub(crate) replid: String,
    /// The history it continued before a failover made it a primary; none yet.
    pub(crate) replid2: &'static str,
    /// Bytes of the replication stream so far; nothing is streamed until replicas exist.
    pub(crate) offset: u64,
    /// Where `replid2`'s history ended; -1 for none.
    pub(crate) second_offset: i64,
}

impl Replication {
    pub(crate) fn new() -> Replication {
        Replication {
            replid: random_id(),
            replid2: NO_ID,
            offset: 0,
            second_offset: -1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_forty_hex_characters_and_differ() {
        let (a, b) = (random_id(), random_id());
        for id in [&a, &b] {
            assert_eq!(id.len(), ID_LEN);
            assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        }
        assert_ne!(a, b);
    }
}
