//! The module list MODULE LIST and HELLO both answer with: RedisBloom's and RedisJSON's, whose
//! commands sieved has built in (see `module.rs`).

use crate::protocol::Reply;

/// The module RedisBloom registers, as Redis describes a loaded module.
pub(super) const BLOOM_MODULE: &str = "bf";
/// The module RedisJSON registers.
pub(super) const JSON_MODULE: &str = "ReJSON";

/// The loaded modules as MODULE LIST and HELLO describe them, in Redis's shape: one map per
/// module (a flat array in RESP2) of its name, version, the `path` it was loaded from and its
/// load arguments (none).
pub(super) fn write_module_list(reply: &mut Reply, path: &[u8]) {
    let modules = [
        (BLOOM_MODULE, crate::BLOOM_MODULE_VERSION),
        (JSON_MODULE, crate::JSON_MODULE_VERSION),
    ];
    reply.array(modules.len());
    for (name, version) in modules {
        reply.map(4);
        reply.bulk(b"name");
        reply.bulk(name.as_bytes());
        reply.bulk(b"ver");
        reply.int(version);
        reply.bulk(b"path");
        reply.bulk(path);
        reply.bulk(b"args");
        reply.array(0);
    }
}
