//! Looking ahead in a pipeline: the Bloom, counting and cuckoo filters' ADD and EXISTS touch a
//! few random cache lines of a filter that is usually far larger than the CPU's caches, so one
//! such command at a time spends most of its time waiting for memory. BF.MADD overlaps its items'
//! misses (`HashedChain::add_all`); here the connection does the same across the single-item
//! commands it has already received: before it runs them, their items are hashed and their
//! cache lines requested, so that by each one's turn its memory is on the way.
//!
//! Only a hint: nothing is changed or counted (no access is recorded on the key), and each
//! command then runs exactly as it would have.

use crate::filter::HashedChain;
use crate::protocol::peek_request;
use crate::store::{Db, Value};

/// How many requests one look covers. The connection takes the next look when execution reaches
/// the start of the last one, so an item's memory is requested 16 to 32 commands before its
/// turn: enough for a miss to memory to arrive, as `HashedChain::add_all` keeps eight items
/// ahead within one BF.MADD, where less work separates the items.
pub(crate) const LOOKAHEAD_REQUESTS: usize = 16;

/// What one `look_ahead` did.
pub(crate) struct Look {
    /// Bytes of whole requests looked at, from the start of the input.
    pub(crate) covered: usize,
    /// How many of them were commands whose memory was requested.
    pub(crate) hinted: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bloom,
    Counting,
    Cuckoo,
}

/// The single-item commands on a filter that a look prepares for.
fn kind_of(name: &[u8]) -> Option<Kind> {
    const NAMES: [(&[u8], Kind); 7] = [
        (b"BF.ADD", Kind::Bloom),
        (b"BF.EXISTS", Kind::Bloom),
        (b"CBF.ADD", Kind::Counting),
        (b"CBF.EXISTS", Kind::Counting),
        (b"CF.ADD", Kind::Cuckoo),
        (b"CF.ADDNX", Kind::Cuckoo),
        (b"CF.EXISTS", Kind::Cuckoo),
    ];
    NAMES
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(name))
        .map(|&(_, kind)| kind)
}

/// Requests the memory the filter commands among the next `LOOKAHEAD_REQUESTS` complete
/// requests at the start of `input` will read, in database `db` at time `now`, passing over the
/// first `skip` of them (the request about to run gains nothing from a prefetch issued just
/// before it: its own run prefetches, and with one request per round trip the look would be
/// all cost). Consecutive commands on one key share a single look-up of it. Stops early at
/// anything `peek_request` does not take for a request.
pub(crate) fn look_ahead(db: &Db, now: u64, input: &[u8], skip: usize) -> Look {
    let mut look = Look {
        covered: 0,
        hinted: 0,
    };
    let mut run: Option<(Kind, &[u8])> = None;
    let mut items = [&[][..]; LOOKAHEAD_REQUESTS];
    let mut queued = 0;
    for index in 0..LOOKAHEAD_REQUESTS + skip {
        let mut args = [&[][..]; 3];
        let Some((count, len)) = peek_request(&input[look.covered..], &mut args) else {
            break;
        };
        look.covered += len;
        let Some(kind) = kind_of(args[0]).filter(|_| count == 3 && index >= skip) else {
            continue;
        };
        let key = args[1];
        if run != Some((kind, key)) {
            if let Some((kind, key)) = run {
                prefetch(db, now, kind, key, &items[..queued]);
            }
            run = Some((kind, key));
            queued = 0;
        }
        items[queued] = args[2];
        queued += 1;
        look.hinted += 1;
    }
    if let Some((kind, key)) = run {
        prefetch(db, now, kind, key, &items[..queued]);
    }
    look
}

fn prefetch(db: &Db, now: u64, kind: Kind, key: &[u8], items: &[&[u8]]) {
    db.peek(key, now, |value| match (kind, value) {
        (Kind::Bloom, Some(Value::Bloom(chain))) => prefetch_items(chain, items),
        (Kind::Counting, Some(Value::Counting(chain))) => prefetch_items(&**chain, items),
        (Kind::Cuckoo, Some(Value::Cuckoo(filter))) => {
            items.iter().for_each(|item| filter.prefetch(item))
        }
        _ => {}
    });
}

fn prefetch_items(filter: &impl HashedChain, items: &[&[u8]]) {
    for item in items {
        filter.prefetch(filter.hash(item));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{BloomChain, ChainOptions, HashScheme, Layout};
    use crate::protocol::encode_request;

    fn requests(list: &[&[&[u8]]]) -> Vec<u8> {
        let mut out = Vec::new();
        for args in list {
            encode_request(&mut out, args);
        }
        out
    }

    #[test]
    fn covers_whole_requests_and_counts_the_filter_commands() {
        let db = Db::new(4);
        let options = ChainOptions {
            error_rate: 0.01,
            capacity: 1000,
            expansion: 2,
            non_scaling: false,
            layout: Layout::Classic,
            hash: HashScheme::Murmur,
        };
        let filter = BloomChain::new(options, u64::MAX).unwrap();
        db.insert(b"f", Value::Bloom(filter), 0);
        let input = requests(&[
            &[b"bf.add", b"f", b"a"],
            &[b"BF.EXISTS", b"f", b"b"],
            &[b"GET", b"f"],
            &[b"CBF.ADD", b"missing", b"c"],
            &[b"BF.ADD", b"f"],
        ]);
        let partial = b"*3\r\n$6\r\nBF.ADD\r\n";
        let mut whole = input.clone();
        whole.extend_from_slice(partial);
        let look = look_ahead(&db, 0, &whole, 0);
        assert_eq!(look.covered, input.len());
        assert_eq!(look.hinted, 3);
        let look = look_ahead(&db, 0, &whole, 1);
        assert_eq!(look.covered, input.len());
        assert_eq!(look.hinted, 2);
    }

    #[test]
    fn stops_at_the_lookahead_or_at_anything_else() {
        let db = Db::new(4);
        let one = requests(&[&[b"BF.ADD", b"f", b"a"]]);
        let many = one.repeat(LOOKAHEAD_REQUESTS + 3);
        let look = look_ahead(&db, 0, &many, 0);
        assert_eq!(look.covered, one.len() * LOOKAHEAD_REQUESTS);
        let look = look_ahead(&db, 0, &many, 1);
        assert_eq!(look.covered, one.len() * (LOOKAHEAD_REQUESTS + 1));
        assert_eq!(look.hinted, LOOKAHEAD_REQUESTS);
        assert_eq!(look_ahead(&db, 0, &one, 1).hinted, 0);
        let mut inline = one.clone();
        inline.extend_from_slice(b"BF.ADD f b\r\n");
        inline.extend_from_slice(&one);
        assert_eq!(look_ahead(&db, 0, &inline, 0).covered, one.len());
    }
}
