//! Random writes, each planned against the model so that its reply can be checked.

use super::model::{Effect, Expiry, Kind, Planned, Value};
use super::{Run, DATABASES, IN_FLIGHT_PREFIX, LONG_TTL_SECONDS};
use std::collections::BTreeSet;

impl Run {
    pub(super) fn fresh_key(&mut self) -> Vec<u8> {
        self.next_key += 1;
        // Now and then a key with bytes a text protocol would trip over.
        if self.rng.one_in(8) {
            format!("k {}\r\n\x00{}", self.next_key, self.next_key).into_bytes()
        } else {
            format!("k{}", self.next_key).into_bytes()
        }
    }

    /// A key of `kind` (any kind for `None`) in `db` that writers may touch: not one that may be
    /// gone, and not one a transaction being built already touches.
    pub(super) fn existing(
        &mut self,
        db: usize,
        kind: Option<Kind>,
        busy: &BTreeSet<(usize, Vec<u8>)>,
    ) -> Option<Vec<u8>> {
        let candidates: Vec<&Vec<u8>> = self.model.dbs[db]
            .iter()
            .filter(|(key, entry)| {
                matches!(entry.expiry, Expiry::None | Expiry::Long)
                    && !key.starts_with(IN_FLIGHT_PREFIX)
                    && kind.is_none_or(|k| entry.value.kind() == k)
                    && !busy.contains(&(db, (*key).clone()))
            })
            .map(|(key, _)| key)
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let index = self.rng.below(candidates.len() as u64) as usize;
        Some(candidates[index].clone())
    }

    pub(super) fn existing_or_fresh(
        &mut self,
        kind: Kind,
        busy: &BTreeSet<(usize, Vec<u8>)>,
    ) -> Vec<u8> {
        if self.rng.one_in(5) {
            return self.fresh_key();
        }
        let db = self.db;
        self.existing(db, Some(kind), busy)
            .unwrap_or_else(|| self.fresh_key())
    }

    pub(super) fn bloom_item(&mut self) -> Vec<u8> {
        let n = self.rng.below(400);
        if n % 17 == 0 {
            format!("b {n}\r\n\x00").into_bytes()
        } else {
            format!("b{n}").into_bytes()
        }
    }

    /// Few distinct items per counting filter, so that items are added more than once and
    /// deletes find them held.
    pub(super) fn counting_item(&mut self) -> Vec<u8> {
        format!("c{}", self.rng.below(40)).into_bytes()
    }

    pub(super) fn items(&mut self, kind: Kind, most: u64) -> Vec<Vec<u8>> {
        let n = 1 + self.rng.below(most);
        (0..n)
            .map(|_| match kind {
                Kind::Bloom => self.bloom_item(),
                _ => self.counting_item(),
            })
            .collect()
    }

    pub(super) fn filter_options(&mut self, args: &mut Vec<Vec<u8>>, counting: bool) {
        if self.rng.one_in(3) {
            let expansion = self.rng.pick(&["1", "2", "3"]);
            args.extend([b"EXPANSION".to_vec(), expansion.as_bytes().to_vec()]);
        } else if self.rng.one_in(3) {
            args.push(b"NONSCALING".to_vec());
        }
        if counting && self.rng.one_in(4) {
            args.extend([b"COUNTERBITS".to_vec(), b"8".to_vec()]);
        }
    }

    pub(super) fn error_rate(&mut self) -> &'static str {
        const RATES: [&str; 4] = ["0.01", "0.001", "0.1", "0.25"];
        RATES[self.rng.below(4) as usize]
    }

    /// Now and then a filter of several hundred KB, so that snapshots copy it in many pieces.
    pub(super) fn capacity(&mut self) -> &'static str {
        const CAPACITIES: [&str; 4] = ["5", "20", "100", "1000"];
        if self.rng.one_in(40) {
            return "50000";
        }
        CAPACITIES[self.rng.below(4) as usize]
    }

    /// One write against the model as it is; `busy` keeps a transaction's writes on distinct keys
    /// so that their effects do not depend on one another.
    pub(super) fn plan(&mut self, busy: &mut BTreeSet<(usize, Vec<u8>)>) -> Option<Planned> {
        match self.rng.below(100) {
            0..=24 => self.plan_filter_add(Kind::Bloom, busy),
            25..=29 => self.plan_reserve(busy),
            30..=46 => self.plan_filter_add(Kind::Counting, busy),
            47..=55 => self.plan_counting_delete(busy),
            56..=65 => self.plan_set(busy),
            66..=71 => self.plan_delete(busy),
            72..=76 => self.plan_rename(busy),
            77..=81 => self.plan_copy(busy),
            _ => self.plan_expiry(busy),
        }
    }

    /// BF.ADD / CBF.ADD, MADD or INSERT with options.
    fn plan_filter_add(
        &mut self,
        kind: Kind,
        busy: &mut BTreeSet<(usize, Vec<u8>)>,
    ) -> Option<Planned> {
        let counting = kind == Kind::Counting;
        let family = if counting { "CBF" } else { "BF" };
        let command = |name: &str| format!("{family}.{name}").into_bytes();
        let db = self.db;
        let key = self.existing_or_fresh(kind, busy);
        let items = self.items(kind, if counting { 5 } else { 6 });
        let mut args = Vec::new();
        let form = self.rng.below(3);
        match form {
            0 => args.extend([command("ADD"), key.clone(), items[0].clone()]),
            1 => {
                args.extend([command("MADD"), key.clone()]);
                args.extend(items.iter().cloned());
            }
            _ => {
                args.extend([command("INSERT"), key.clone()]);
                if self.rng.one_in(2) {
                    let capacity = self.capacity();
                    args.extend([b"CAPACITY".to_vec(), capacity.into()]);
                }
                if self.rng.one_in(2) {
                    let rate = self.error_rate();
                    args.extend([b"ERROR".to_vec(), rate.into()]);
                }
                self.filter_options(&mut args, counting);
                if !counting && self.rng.one_in(10) {
                    args.push(b"NOCREATE".to_vec());
                }
                args.push(b"ITEMS".to_vec());
                args.extend(items.iter().cloned());
            }
        }
        let items = if form == 0 {
            vec![items[0].clone()]
        } else {
            items
        };
        busy.insert((db, key.clone()));
        let effect = if counting {
            Effect::CountingItems { key, items }
        } else {
            Effect::BloomItems { key, items }
        };
        Some(Planned { args, effect })
    }

    /// BF.RESERVE or CBF.RESERVE, now and then of a key that exists (refused).
    fn plan_reserve(&mut self, busy: &mut BTreeSet<(usize, Vec<u8>)>) -> Option<Planned> {
        let db = self.db;
        let counting = self.rng.one_in(2);
        let key = if self.rng.one_in(6) {
            // Reserving a key that exists is refused; the model must agree.
            self.existing(db, None, busy)
                .unwrap_or_else(|| self.fresh_key())
        } else {
            self.fresh_key()
        };
        let name: &[u8] = if counting {
            b"CBF.RESERVE"
        } else {
            b"BF.RESERVE"
        };
        let rate = self.error_rate();
        let capacity = self.capacity();
        let mut args = vec![name.to_vec(), key.clone(), rate.into(), capacity.into()];
        self.filter_options(&mut args, counting);
        let kind = if counting {
            Kind::Counting
        } else {
            Kind::Bloom
        };
        busy.insert((db, key.clone()));
        Some(Planned {
            args,
            effect: Effect::Reserve { key, kind },
        })
    }

    fn plan_counting_delete(&mut self, busy: &mut BTreeSet<(usize, Vec<u8>)>) -> Option<Planned> {
        let db = self.db;
        // Only items the model holds are deleted: deleting one never added would take
        // other items' counters down, which a counting filter cannot tell apart.
        let key = self.existing(db, Some(Kind::Counting), busy)?;
        let Value::Counting(counts) = &self.model.dbs[db][&key].value else {
            unreachable!("picked by kind")
        };
        let held: Vec<Vec<u8>> = counts.keys().cloned().collect();
        if held.is_empty() {
            return None;
        }
        let mut items = Vec::new();
        for _ in 0..1 + self.rng.below(3) {
            let item = held[self.rng.index(held.len())].clone();
            if !items.contains(&item) {
                items.push(item);
            }
        }
        let mut args = if items.len() == 1 && self.rng.one_in(2) {
            vec![b"CBF.DEL".to_vec(), key.clone()]
        } else {
            vec![b"CBF.MDEL".to_vec(), key.clone()]
        };
        args.extend(items.iter().cloned());
        busy.insert((db, key.clone()));
        Some(Planned {
            args,
            effect: Effect::CountingDeletes { key, items },
        })
    }

    /// SET, some with a long TTL.
    fn plan_set(&mut self, busy: &mut BTreeSet<(usize, Vec<u8>)>) -> Option<Planned> {
        let db = self.db;
        let key = self.existing_or_fresh(Kind::Text, busy);
        let len = self.rng.below(40) as usize;
        let value: Vec<u8> = (0..len).map(|_| self.rng.next() as u8).collect();
        let mut args = vec![b"SET".to_vec(), key.clone(), value.clone()];
        let expiry = if self.rng.one_in(4) {
            args.extend([b"EX".to_vec(), LONG_TTL_SECONDS.to_string().into_bytes()]);
            Expiry::Long
        } else {
            Expiry::None
        };
        busy.insert((db, key.clone()));
        Some(Planned {
            args,
            effect: Effect::Set { key, value, expiry },
        })
    }

    /// DEL or UNLINK of held keys and of keys never written.
    fn plan_delete(&mut self, busy: &mut BTreeSet<(usize, Vec<u8>)>) -> Option<Planned> {
        let db = self.db;
        let mut keys = Vec::new();
        for _ in 0..1 + self.rng.below(3) {
            let key = if self.rng.one_in(4) {
                self.fresh_key()
            } else {
                self.existing(db, None, busy)
                    .unwrap_or_else(|| self.fresh_key())
            };
            busy.insert((db, key.clone()));
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let name: &[u8] = if self.rng.one_in(2) {
            b"DEL"
        } else {
            b"UNLINK"
        };
        let mut args = vec![name.to_vec()];
        args.extend(keys.iter().cloned());
        Some(Planned {
            args,
            effect: Effect::Delete { keys },
        })
    }

    /// RENAME onto a held key or a fresh one; now and then of a key never written.
    fn plan_rename(&mut self, busy: &mut BTreeSet<(usize, Vec<u8>)>) -> Option<Planned> {
        let db = self.db;
        let from = self
            .existing(db, None, busy)
            .unwrap_or_else(|| self.fresh_key());
        busy.insert((db, from.clone()));
        let to = if self.rng.one_in(2) {
            self.existing(db, None, busy)
                .unwrap_or_else(|| self.fresh_key())
        } else {
            self.fresh_key()
        };
        busy.insert((db, to.clone()));
        Some(Planned {
            args: vec![b"RENAME".to_vec(), from.clone(), to.clone()],
            effect: Effect::Rename { from, to },
        })
    }

    /// COPY within the database or to another, with or without REPLACE.
    fn plan_copy(&mut self, busy: &mut BTreeSet<(usize, Vec<u8>)>) -> Option<Planned> {
        let db = self.db;
        let from = self.existing(db, None, busy)?;
        busy.insert((db, from.clone()));
        let to_db = self.rng.below(DATABASES.len() as u64) as usize;
        let to = if self.rng.one_in(2) {
            self.existing(to_db, None, busy)
                .unwrap_or_else(|| self.fresh_key())
        } else {
            self.fresh_key()
        };
        if to_db == db && to == from {
            return None;
        }
        busy.insert((to_db, to.clone()));
        let replace = self.rng.one_in(2);
        let mut args = vec![b"COPY".to_vec(), from.clone(), to.clone()];
        if to_db != db || self.rng.one_in(3) {
            args.extend([b"DB".to_vec(), DATABASES[to_db].to_string().into_bytes()]);
        }
        if replace {
            args.push(b"REPLACE".to_vec());
        }
        Some(Planned {
            args,
            effect: Effect::Copy {
                from,
                to_db,
                to,
                replace,
            },
        })
    }

    /// EXPIRE, PEXPIRE (long or short), EXPIREAT, PEXPIREAT in the past, or PERSIST.
    fn plan_expiry(&mut self, busy: &mut BTreeSet<(usize, Vec<u8>)>) -> Option<Planned> {
        let db = self.db;
        let key = self.existing(db, None, busy)?;
        busy.insert((db, key.clone()));
        let planned = match self.rng.below(8) {
            // A time in the past deletes the key; replay must delete it too, not keep it for
            // lack of a TTL to wait for.
            6 => Planned {
                args: vec![b"PEXPIREAT".to_vec(), key.clone(), b"1".to_vec()],
                effect: Effect::Delete { keys: vec![key] },
            },
            7 => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .expect("clock")
                    .as_secs();
                Planned {
                    args: vec![
                        b"EXPIREAT".to_vec(),
                        key.clone(),
                        (now + LONG_TTL_SECONDS).to_string().into_bytes(),
                    ],
                    effect: Effect::Expire {
                        key,
                        to: Expiry::Long,
                    },
                }
            }
            0 => Planned {
                args: vec![
                    b"EXPIRE".to_vec(),
                    key.clone(),
                    LONG_TTL_SECONDS.to_string().into_bytes(),
                ],
                effect: Effect::Expire {
                    key,
                    to: Expiry::Long,
                },
            },
            1 => Planned {
                args: vec![
                    b"PEXPIRE".to_vec(),
                    key.clone(),
                    (LONG_TTL_SECONDS * 1000).to_string().into_bytes(),
                ],
                effect: Effect::Expire {
                    key,
                    to: Expiry::Long,
                },
            },
            2 | 3 => Planned {
                args: vec![b"PERSIST".to_vec(), key.clone()],
                effect: Effect::Persist { key },
            },
            _ => {
                // Short enough that some expire before the next restart, some after.
                let ms = 100 + self.rng.below(3000);
                Planned {
                    args: vec![
                        b"PEXPIRE".to_vec(),
                        key.clone(),
                        ms.to_string().into_bytes(),
                    ],
                    effect: Effect::Expire {
                        key,
                        to: Expiry::Short,
                    },
                }
            }
        };
        Some(planned)
    }
}
