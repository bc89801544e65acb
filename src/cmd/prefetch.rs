//! Looking ahead in a pipeline: the Bloom, counting and cuckoo filters' ADD and EXISTS touch a
//! few random cache lines of a filter that is usually far larger than the CPU's caches, so one
//! such command at a time spends most of its time waiting for memory. BF.MADD overlaps its items'
//! misses (`HashedChain::add_all`); here the connection does the same across the single-item
//! commands it has already received: before it runs them, their items are hashed and their
//! cache lines requested, so that by each one's turn its memory is on the way.
//!
//! Only a hint: nothing is changed or counted (no access is recorded on the key), and each
//! command then runs exactly as it would have, save that a Bloom or counting filter command
//! whose item the look hashed takes that hash (`HashedAhead`) instead of hashing it again.

use crate::filter::{HashScheme, HashedChain, ItemHash};
use crate::protocol::peek_request;
use crate::store::{Db, Value};
use std::collections::VecDeque;

/// How many hashes `HashedAhead` keeps: two looks' worth, as the next look is taken when
/// parsing reaches the start of the previous one, and a run's worth (`cmd::runs`), which is
/// parsed before any of it runs.
const HASHED_AHEAD: usize = 2 * LOOKAHEAD_REQUESTS + MAX_RUN;

/// The hashes the looks of one batch computed, in the order of the items in the input, each
/// with the item's place in the input and the scheme it was hashed under.
///
/// An entry names its item by address, so it holds only while the input it was taken from is
/// the one being run: the connection clears it once a batch is done. Within one batch the input
/// does not change, so the same address and length are the same bytes, and under the same
/// scheme the same hash; a key replaced between the look and the command (by a filter of
/// another scheme) shows as a different scheme and the item is hashed again.
#[derive(Default)]
pub(crate) struct HashedAhead(VecDeque<(usize, usize, Hashed)>);

impl HashedAhead {
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    fn push(&mut self, item: &[u8], hashed: Hashed) {
        if self.0.len() == HASHED_AHEAD {
            self.0.pop_front();
        }
        self.0
            .push_back((item.as_ptr() as usize, item.len(), hashed));
    }

    /// What the look computed for `item`, a slice of the batch's input. Entries before it,
    /// whose commands are past, are dropped on the way.
    pub(crate) fn take(&mut self, item: &[u8]) -> Option<Hashed> {
        let at = item.as_ptr() as usize;
        while let Some(&(start, len, hashed)) = self.0.front() {
            if start > at {
                return None;
            }
            self.0.pop_front();
            if start == at {
                return (len == item.len()).then_some(hashed);
            }
        }
        None
    }
}

/// An item's hash as a look computed it, and the scheme it was computed under.
#[derive(Clone, Copy)]
pub(crate) struct Hashed {
    scheme: HashScheme,
    hash: ItemHash,
}

impl Hashed {
    /// The hash, if `filter` hashes items the same way.
    pub(crate) fn for_filter(self, filter: &impl HashedChain) -> Option<ItemHash> {
        (filter.hash_scheme() == self.scheme).then_some(self.hash)
    }
}

/// How many requests one look covers. The connection takes the next look when execution reaches
/// the start of the last one, so an item's memory is requested 16 to 32 commands before its
/// turn: enough for a miss to memory to arrive, as `HashedChain::add_all` keeps eight items
/// ahead within one BF.MADD, where less work separates the items.
pub(crate) const LOOKAHEAD_REQUESTS: usize = 16;

/// The most requests one run (`cmd::runs`) takes. The key stays read-locked while a run goes on,
/// so a writer waits for at most this many look-ups. Written here, beside the look's own bound,
/// as both bound how far the connection parses ahead of what it runs.
pub(crate) const MAX_RUN: usize = 32;

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
pub(crate) fn look_ahead(
    db: &Db,
    now: u64,
    input: &[u8],
    skip: usize,
    hashed: &mut HashedAhead,
) -> Look {
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
                prefetch(db, now, kind, key, &items[..queued], hashed);
            }
            run = Some((kind, key));
            queued = 0;
        }
        items[queued] = args[2];
        queued += 1;
        look.hinted += 1;
    }
    if let Some((kind, key)) = run {
        prefetch(db, now, kind, key, &items[..queued], hashed);
    }
    look
}

fn prefetch(db: &Db, now: u64, kind: Kind, key: &[u8], items: &[&[u8]], hashed: &mut HashedAhead) {
    db.peek(key, now, |value| match (kind, value) {
        (Kind::Bloom, Some(Value::Bloom(chain))) => prefetch_items(chain, items, hashed),
        (Kind::Counting, Some(Value::Counting(chain))) => prefetch_items(&**chain, items, hashed),
        (Kind::Cuckoo, Some(Value::Cuckoo(filter))) => {
            items.iter().for_each(|item| filter.prefetch(item))
        }
        _ => {}
    });
}

fn prefetch_items(filter: &impl HashedChain, items: &[&[u8]], hashed: &mut HashedAhead) {
    let scheme = filter.hash_scheme();
    for item in items {
        let hash = filter.hash(item);
        filter.prefetch(hash);
        hashed.push(item, Hashed { scheme, hash });
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
        let look = look_ahead(&db, 0, &whole, 0, &mut HashedAhead::default());
        assert_eq!(look.covered, input.len());
        assert_eq!(look.hinted, 3);
        let look = look_ahead(&db, 0, &whole, 1, &mut HashedAhead::default());
        assert_eq!(look.covered, input.len());
        assert_eq!(look.hinted, 2);
    }

    /// The item slices of the requests in `input`, where they lie in it.
    fn items_in(input: &[u8]) -> Vec<&[u8]> {
        let mut items = Vec::new();
        let mut at = 0;
        let mut args = [&[][..]; 3];
        while let Some((_, len)) = peek_request(&input[at..], &mut args) {
            items.push(args[2]);
            at += len;
        }
        items
    }

    #[test]
    fn a_command_takes_the_hash_of_its_own_item_under_its_filters_scheme_only() {
        let db = Db::new(4);
        let options = |hash| ChainOptions {
            error_rate: 0.01,
            capacity: 1000,
            expansion: 2,
            non_scaling: false,
            layout: Layout::Classic,
            hash,
        };
        let filter = BloomChain::new(options(HashScheme::Murmur), u64::MAX).unwrap();
        let other_scheme = BloomChain::new(options(HashScheme::Xxh3), u64::MAX).unwrap();
        db.insert(b"f", Value::Bloom(filter.clone()), 0);
        let input = requests(&[
            &[b"BF.ADD", b"f", b"a"],
            &[b"BF.EXISTS", b"f", b"b"],
            &[b"BF.ADD", b"f", b"c"],
        ]);
        let items = items_in(&input);
        let mut hashed = HashedAhead::default();
        look_ahead(&db, 0, &input, 0, &mut hashed);
        // "b" comes back as the filter hashes it; "a", which no command took, is dropped.
        let b = hashed.take(items[1]).expect("b was hashed");
        let expected = filter.hash(b"b");
        let taken = b.for_filter(&filter).expect("same scheme");
        assert_eq!(format!("{taken:?}"), format!("{expected:?}"));
        assert!(
            b.for_filter(&other_scheme).is_none(),
            "another scheme hashes again"
        );
        assert!(hashed.take(items[0]).is_none(), "a past item is gone");
        // The same bytes elsewhere are another item.
        assert!(hashed.take(b"c").is_none());
        look_ahead(&db, 0, &input, 0, &mut hashed);
        hashed.clear();
        assert!(
            hashed.take(items[2]).is_none(),
            "nothing outlives its batch"
        );
    }

    #[test]
    fn stops_at_the_lookahead_or_at_anything_else() {
        let db = Db::new(4);
        let one = requests(&[&[b"BF.ADD", b"f", b"a"]]);
        let many = one.repeat(LOOKAHEAD_REQUESTS + 3);
        let look = look_ahead(&db, 0, &many, 0, &mut HashedAhead::default());
        assert_eq!(look.covered, one.len() * LOOKAHEAD_REQUESTS);
        let look = look_ahead(&db, 0, &many, 1, &mut HashedAhead::default());
        assert_eq!(look.covered, one.len() * (LOOKAHEAD_REQUESTS + 1));
        assert_eq!(look.hinted, LOOKAHEAD_REQUESTS);
        assert_eq!(
            look_ahead(&db, 0, &one, 1, &mut HashedAhead::default()).hinted,
            0
        );
        let mut inline = one.clone();
        inline.extend_from_slice(b"BF.ADD f b\r\n");
        inline.extend_from_slice(&one);
        assert_eq!(
            look_ahead(&db, 0, &inline, 0, &mut HashedAhead::default()).covered,
            one.len()
        );
    }
}
