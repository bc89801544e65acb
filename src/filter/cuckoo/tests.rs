use super::*;

fn reserve(capacity: u64, bucket_size: u16, expansion: u16) -> CuckooFilter {
    let options = CuckooOptions {
        capacity,
        bucket_size,
        max_iterations: 20,
        expansion,
    };
    CuckooFilter::new(options, u64::MAX).unwrap()
}

/// RedisBloom 8.8: `CF.RESERVE cff 4 BUCKETSIZE 2 EXPANSION 0` then CF.INSERT of q0..q19 takes
/// the first four and refuses the rest; CF.INFO Size 60, 2 buckets.
#[test]
fn a_full_filter_refuses_where_redisbloom_does() {
    let mut filter = reserve(4, 2, 0);
    let results: Vec<Insertion> = (0..20)
        .map(|i| filter.insert(format!("q{i}").as_bytes(), u64::MAX))
        .collect();
    assert!(results[..4].iter().all(|r| *r == Insertion::Inserted));
    assert!(results[4..].iter().all(|r| *r == Insertion::NoSpace));
    assert_eq!(filter.reported_size(), 60);
    assert_eq!(filter.buckets(), 2);
    assert_eq!(filter.items(), 4);
}

/// The shapes RedisBloom reports: capacity 1000 → 512 buckets, Size 1080; capacity 100 → 64
/// buckets, Size 184; BUCKETSIZE 4 → 256 buckets.
#[test]
fn prefetching_asks_only_for_buckets_inside_every_sub_filter() {
    // Two sub-filters past the size that prefetches. `prefetch_at` does no bounds check (a hint
    // cannot fault), so the addresses it is given are checked here.
    let mut filter = reserve(1 << 21, 2, 1);
    let items: Vec<Vec<u8>> = (0..(1u32 << 22))
        .map(|i| i.to_le_bytes().to_vec())
        .collect();
    for item in &items {
        assert_eq!(filter.insert(item, u64::MAX), Insertion::Inserted);
    }
    assert!(filter.filter_count() > 1);
    for item in items.iter().step_by(97) {
        filter.prefetch(item);
        let lookup = Lookup::of(item);
        for sub in &filter.filters {
            for start in sub.candidates(&lookup, filter.bucket_size) {
                assert!(start + usize::from(filter.bucket_size) <= sub.slots.len());
            }
        }
    }
    assert!(items.iter().all(|item| filter.contains(item)));
}

#[test]
fn sizes_match_redisbloom() {
    assert_eq!(reserve(1000, 2, 1).reported_size(), 1080);
    assert_eq!(reserve(1000, 2, 1).buckets(), 512);
    assert_eq!(reserve(100, 2, 1).reported_size(), 184);
    assert_eq!(reserve(1000, 4, 2).buckets(), 256);
    assert_eq!(reserve(1000, 2, 3).expansion(), 4);
    assert_eq!(reserve(1000, 2, 0).expansion(), 0);
}

/// RedisBloom's dump of `CF.RESERVE cf 1000` after the CF basics sequence: one item, two
/// deletes.
#[test]
fn header_bytes_match_redisbloom() {
    let mut filter = reserve(1000, 2, 1);
    filter.insert(b"a", u64::MAX);
    filter.insert(b"a", u64::MAX);
    assert_eq!(filter.count(b"a"), 2);
    assert_eq!(filter.insert_unique(b"a", u64::MAX), Insertion::Exists);
    assert_eq!(filter.insert_unique(b"b", u64::MAX), Insertion::Inserted);
    assert!(filter.delete(b"a"));
    assert!(filter.delete(b"a"));
    assert!(!filter.delete(b"a"));
    filter.compact();
    let expected: &[u8] = b"\x01\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\
        \x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x14\x00\x01\x00";
    assert_eq!(&filter.header()[..], expected);
    assert_eq!(
        filter.dump_chunk(1).map(|(next, data)| (next, data.len())),
        Some((1025, 1024))
    );
    assert_eq!(filter.dump_chunk(1025), None);
}

#[test]
fn growth_and_compaction_keep_every_item() {
    let mut filter = reserve(8, 2, 2);
    let items: Vec<String> = (0..200).map(|i| format!("item-{i}")).collect();
    for item in &items {
        assert_eq!(
            filter.insert(item.as_bytes(), u64::MAX),
            Insertion::Inserted
        );
    }
    assert!(filter.filter_count() > 1);
    for item in &items {
        assert!(filter.contains(item.as_bytes()));
    }
    for item in &items[..150] {
        assert!(filter.delete(item.as_bytes()));
    }
    filter.compact();
    for item in &items[150..] {
        assert!(filter.contains(item.as_bytes()));
    }
    assert_eq!(filter.items(), 50);
}

#[test]
fn growth_stops_at_the_memory_limit() {
    let mut filter = reserve(4, 2, 1);
    let refused =
        (0..100).any(|i| filter.insert(format!("x{i}").as_bytes(), 4) == Insertion::NoMemory);
    assert!(refused);
    assert_eq!(filter.payload_bytes(), 4);
}

#[test]
fn a_dump_loads_back_identical() {
    let mut filter = reserve(64, 4, 2);
    for i in 0..300 {
        filter.insert(format!("k{i}").as_bytes(), u64::MAX);
    }
    let mut copy = CuckooFilter::from_header(&filter.header(), u64::MAX).unwrap();
    let mut iterator = 1;
    while let Some((next, data)) = filter.dump_chunk(iterator) {
        copy.load_chunk(next, data).unwrap();
        iterator = next;
    }
    assert_eq!(copy.header(), filter.header());
    let (mut a, mut b) = (Vec::new(), Vec::new());
    assert!(filter.read_payload(0, filter.payload_bytes(), &mut a));
    assert!(copy.read_payload(0, copy.payload_bytes(), &mut b));
    assert_eq!(a, b);
    let mut third = CuckooFilter::from_header(&filter.header(), u64::MAX).unwrap();
    for (offset, piece) in a.chunks(7).enumerate() {
        third.write_payload(offset as u64 * 7, piece).unwrap();
    }
    let mut c = Vec::new();
    assert!(third.read_payload(0, third.payload_bytes(), &mut c));
    assert_eq!(a, c);
}

#[test]
fn headers_are_checked_before_allocating() {
    let good = reserve(1000, 2, 1).header();
    assert!(CuckooFilter::from_header(&good[..37], u64::MAX).is_err());
    assert!(matches!(
        CuckooFilter::from_header(&good, 100),
        Err(FilterError::TooLarge { .. })
    ));
    let mut huge = good;
    huge[8..16].copy_from_slice(&(1u64 << 55).to_le_bytes());
    assert!(CuckooFilter::from_header(&huge, 1 << 30).is_err());
    let mut not_power = good;
    not_power[8..16].copy_from_slice(&3u64.to_le_bytes());
    assert!(CuckooFilter::from_header(&not_power, u64::MAX).is_err());
}

mod properties {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever the shape, an item added and not yet deleted (only added items are deleted)
        /// is present and counted, across evictions, growth, automatic compaction and
        /// CF.COMPACT.
        #[test]
        fn held_items_stay_present(
            ops in prop::collection::vec((0u8..8, 0u16..200), 1..500),
            bucket_size in 1u16..5,
            expansion in 0u16..4,
            max_iterations in 1u16..30,
        ) {
            let options = CuckooOptions { capacity: 8, bucket_size, max_iterations, expansion };
            let mut filter = CuckooFilter::new(options, u64::MAX).unwrap();
            let mut held: HashMap<u16, u64> = HashMap::new();
            for (op, item) in ops {
                let key = format!("i{item}");
                match op {
                    0..=4 => {
                        if filter.insert(key.as_bytes(), 1 << 16) == Insertion::Inserted {
                            *held.entry(item).or_default() += 1;
                        }
                    }
                    5 | 6 => {
                        let copies = held.entry(item).or_default();
                        if *copies > 0 {
                            prop_assert!(filter.delete(key.as_bytes()));
                            *copies -= 1;
                        }
                    }
                    _ => filter.compact(),
                }
                for (&item, &copies) in &held {
                    let key = format!("i{item}");
                    prop_assert!(copies == 0 || filter.contains(key.as_bytes()));
                    prop_assert!(filter.count(key.as_bytes()) >= copies);
                }
                prop_assert_eq!(filter.items(), held.values().sum::<u64>());
            }
        }

        /// Any header and any chunks: loading answers Ok or an error, never panics, never
        /// allocates past the limit, and the filter it makes can be used.
        #[test]
        fn any_header_and_chunks_are_safe(
            header in prop::collection::vec(any::<u8>(), CUCKOO_HEADER_LEN),
            small in prop::array::uniform4(0u8..4),
            chunks in prop::collection::vec(
                (-10i64..5000, prop::collection::vec(any::<u8>(), 0..64)), 0..20),
        ) {
            let mut header = header;
            // Small values in the shape fields, often enough to pass the checks.
            header[9..16].fill(0);
            header[8] = 1 << small[0];
            header[25..32].fill(0);
            header[24] = small[1];
            header[33] = 0;
            header[37] = 0;
            header[36] = small[2];
            if small[3] > 0 {
                header[32] = small[3];
            }
            let limit = 4096;
            if let Ok(mut filter) = CuckooFilter::from_header(&header, limit) {
                prop_assert!(filter.payload_bytes() <= limit);
                for (iterator, data) in chunks {
                    let _ = filter.load_chunk(iterator, &data);
                    let _ = filter.dump_chunk(iterator);
                }
                filter.insert(b"x", limit);
                filter.insert_unique(b"y", limit);
                filter.delete(b"x");
                filter.delete(b"never");
                filter.count(b"y");
                filter.compact();
                prop_assert!(filter.payload_bytes() <= limit);
            }
        }
    }
}
