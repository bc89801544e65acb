//! The module list MODULE LIST and HELLO both answer with: RedisBloom's, whose commands sieved
//! has built in (see `module.rs`).

use crate::protocol::Reply;

/// The module RedisBloom registers, as Redis describes a loaded module.
pub(super) const BLOOM_MODULE: &str = "bf";

/// The loaded modules as MODULE LIST and HELLO describe them, in Redis's shape: one map per
/// module (a flat array in RESP2) of its name, version, the `path` it was loaded from and its
/// load arguments (none).
pub(super) fn write_module_list(reply: &mut Reply, path: &[u8]) {
    reply.array(1);
    reply.map(4);
    reply.bulk(b"name");
    reply.bulk(BLOOM_MODULE.as_bytes());
    reply.bulk(b"ver");
    reply.int(crate::BLOOM_MODULE_VERSION);
    reply.bulk(b"path");
    reply.bulk(path);
    reply.bulk(b"args");
    reply.array(0);
}
