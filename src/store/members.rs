//! What the collection types share: how a member is held, and Redis's thresholds for its
//! compact encodings.
//!
//! Members held apart are boxed slices rather than vectors: a member never grows, and eight
//! bytes fewer per member matters for collections of millions of small strings.

pub type Bytes = Box<[u8]>;

/// Redis's thresholds for its compact encodings (`*-max-listpack-entries`/`-value`), which
/// OBJECT ENCODING reports.
pub(super) const LISTPACK_ENTRIES: usize = 128;
pub(super) const LISTPACK_VALUE: usize = 64;
