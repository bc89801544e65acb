//! Model-based property tests of the counting Bloom filter: random sequences of adds, deletes,
//! lookups and counts, checked after every step against a map of true counts.
//!
//! Filters here are tiny (capacity 1 to 16) with loose error rates (5% to 25%), so that false
//! positives, counters shared between items, several links and saturated 4-bit counters all
//! happen within a few hundred operations.

use proptest::prelude::*;
use sieved::filter::{CounterBits, CountingChain, CountingOptions, FilterError};
use std::collections::HashMap;

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    Delete(u8),
    Exists(u8),
    Count(u8),
    /// Adds the same item many times in a row, to drive its counters to saturation.
    Burst(u8, u8),
}

fn op(universe: u8) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..universe).prop_map(Op::Add),
        4 => (0..universe).prop_map(Op::Delete),
        2 => (0..universe).prop_map(Op::Exists),
        2 => (0..universe).prop_map(Op::Count),
        1 => ((0..universe), 1..40u8).prop_map(|(item, times)| Op::Burst(item, times)),
    ]
}

fn shape() -> impl Strategy<Value = CountingOptions> {
    (
        1..=16u64,
        prop::sample::select(vec![0.05, 0.1, 0.25]),
        0..=3u32,
        prop::bool::ANY,
    )
        .prop_map(|(capacity, error_rate, expansion, wide)| CountingOptions {
            error_rate,
            capacity,
            expansion,
            counter_bits: if wide {
                CounterBits::Eight
            } else {
                CounterBits::Four
            },
        })
}

fn item(id: u8) -> Vec<u8> {
    format!("item-{id}").into_bytes()
}

struct Model {
    chain: CountingChain,
    counts: HashMap<u8, u64>,
    max: u64,
}

impl Model {
    fn new(options: CountingOptions) -> Model {
        Model {
            chain: CountingChain::new(options, u64::MAX).expect("small filter"),
            counts: HashMap::new(),
            max: u64::from(options.counter_bits.max()),
        }
    }

    fn held(&self, id: u8) -> u64 {
        self.counts.get(&id).copied().unwrap_or(0)
    }

    fn add(&mut self, id: u8) -> Result<(), TestCaseError> {
        let held = self.held(id);
        match self.chain.add(&item(id), u64::MAX) {
            Ok(was_new) => {
                prop_assert!(!(was_new && held > 0), "held item {id} reported new");
                *self.counts.entry(id).or_default() += 1;
            }
            Err(FilterError::Full) => {
                prop_assert!(!self.chain.is_scaling(), "a scaling filter reported full");
                prop_assert_eq!(held, 0, "add of held item {} refused", id);
            }
            Err(other) => return Err(TestCaseError::fail(format!("add failed: {other}"))),
        }
        Ok(())
    }

    /// Deleting an item more often than it was added is the documented way to break the
    /// guarantee, so such a delete is only tried when the filter says the item is absent.
    fn delete(&mut self, id: u8) -> Result<(), TestCaseError> {
        let held = self.held(id);
        if held > 0 {
            prop_assert!(self.chain.delete(&item(id)), "held item {} not deleted", id);
            self.counts.insert(id, held - 1);
        } else if !self.chain.contains(&item(id)) {
            prop_assert!(!self.chain.delete(&item(id)));
        }
        Ok(())
    }

    fn check_count(&self, id: u8) -> Result<(), TestCaseError> {
        let held = self.held(id);
        let count = self.chain.count(&item(id));
        if held > 0 {
            // An upper bound, except that a saturated counter caps it at the maximum.
            prop_assert!(
                count >= held.min(self.max),
                "item {id}: count {count} < held {held}"
            );
        } else if !self.chain.contains(&item(id)) {
            prop_assert_eq!(count, 0);
        }
        Ok(())
    }

    /// The guarantees that must hold after every step.
    fn check_all(&self) -> Result<(), TestCaseError> {
        for (&id, &held) in &self.counts {
            if held > 0 {
                prop_assert!(
                    self.chain.contains(&item(id)),
                    "false negative: item {id} held {held} times"
                );
            }
        }
        prop_assert_eq!(self.chain.items(), self.counts.values().sum::<u64>());
        Ok(())
    }
}

fn dumped_and_loaded(chain: &CountingChain) -> CountingChain {
    let mut iterator = 0;
    let mut copy: Option<CountingChain> = None;
    loop {
        let step = chain.dump_chunk(iterator);
        if step.next == 0 {
            break;
        }
        match copy.as_mut() {
            None => copy = Some(CountingChain::from_header(&step.data, u64::MAX).expect("header")),
            Some(copy) => copy.load_chunk(step.next, &step.data).expect("chunk"),
        }
        iterator = step.next;
    }
    copy.expect("a dump has a header")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_false_negatives_against_a_model(
        options in shape(),
        ops in (2..=40u8).prop_flat_map(|universe| prop::collection::vec(op(universe), 1..300)),
    ) {
        let mut model = Model::new(options);
        for op in ops {
            match op {
                Op::Add(id) => model.add(id)?,
                Op::Delete(id) => model.delete(id)?,
                Op::Exists(id) => {
                    let found = model.chain.contains(&item(id));
                    prop_assert!(found || model.held(id) == 0);
                }
                Op::Count(id) => model.check_count(id)?,
                Op::Burst(id, times) => {
                    for _ in 0..times {
                        model.add(id)?;
                    }
                }
            }
            model.check_all()?;
        }

        // A dump and load carries everything over, and the copy keeps every guarantee as the
        // remaining copies are deleted one by one.
        let mut copy = Model {
            chain: dumped_and_loaded(&model.chain),
            counts: model.counts.clone(),
            max: model.max,
        };
        prop_assert_eq!(copy.chain.dump_header(), model.chain.dump_header());
        prop_assert_eq!(copy.chain.saturated_counters(), model.chain.saturated_counters());
        for id in 0..=40u8 {
            prop_assert_eq!(copy.chain.count(&item(id)), model.chain.count(&item(id)));
        }
        copy.check_all()?;
        let held: Vec<u8> = copy.counts.iter().filter(|(_, &n)| n > 0).map(|(&id, _)| id).collect();
        for id in held {
            while copy.held(id) > 0 {
                copy.delete(id)?;
                copy.check_all()?;
            }
        }
        prop_assert_eq!(copy.chain.items(), 0);
    }

    /// Without saturation and without false positives in the way, deleting everything that was
    /// added leaves every counter at zero.
    #[test]
    fn deleting_everything_empties_an_unsaturated_filter(
        ids in prop::collection::vec(0..50u8, 1..200),
    ) {
        let options = CountingOptions {
            error_rate: 0.01,
            capacity: 10,
            expansion: 2,
            counter_bits: CounterBits::Eight,
        };
        let mut model = Model::new(options);
        for &id in &ids {
            model.add(id)?;
        }
        prop_assume!(model.chain.saturated_counters() == 0);
        for &id in &ids {
            model.delete(id)?;
            model.check_all()?;
        }
        prop_assert_eq!(model.chain.items(), 0);
        for id in 0..50u8 {
            prop_assert!(!model.chain.contains(&item(id)), "item {} left behind", id);
        }
    }
}
