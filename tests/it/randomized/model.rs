//! The replies the test reads and the model of what the server acknowledged.

use super::DATABASES;
use crate::support::escape;
use std::collections::{BTreeMap, BTreeSet};

/// A RESP2 reply, read from a frame that RawClient cut with redis-protocol's decoder.
#[derive(Debug)]
pub(crate) enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    pub(crate) fn parse(bytes: &[u8]) -> Reply {
        let (reply, used) = Self::parse_at(bytes, 0);
        assert_eq!(used, bytes.len(), "one reply per frame");
        reply
    }

    fn parse_at(bytes: &[u8], at: usize) -> (Reply, usize) {
        let end = at
            + 1
            + bytes[at + 1..]
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("a framed reply ends its lines");
        let line = String::from_utf8_lossy(&bytes[at + 1..end]).into_owned();
        let next = end + 2;
        let number = || line.parse::<i64>().expect("a number");
        match bytes[at] {
            b'+' => (Reply::Simple(line), next),
            b'-' => (Reply::Error(line), next),
            b':' => (Reply::Int(number()), next),
            b'$' if number() < 0 => (Reply::Bulk(None), next),
            b'$' => {
                let len = number() as usize;
                (
                    Reply::Bulk(Some(bytes[next..next + len].to_vec())),
                    next + len + 2,
                )
            }
            b'*' if number() < 0 => (Reply::Array(None), next),
            b'*' => {
                let mut items = Vec::new();
                let mut cursor = next;
                for _ in 0..number() {
                    let (item, after) = Self::parse_at(bytes, cursor);
                    items.push(item);
                    cursor = after;
                }
                (Reply::Array(Some(items)), cursor)
            }
            other => panic!("unexpected RESP2 type byte {other:#x}"),
        }
    }

    pub(crate) fn is_error(&self) -> bool {
        match self {
            Reply::Error(_) => true,
            Reply::Array(Some(items)) => items.iter().any(Reply::is_error),
            _ => false,
        }
    }

    /// Per-item replies: an array's elements, or the reply itself for a one-item command.
    pub(crate) fn per_item(&self) -> Vec<&Reply> {
        match self {
            Reply::Array(Some(items)) => items.iter().collect(),
            single => vec![single],
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Bloom,
    Counting,
    Text,
}

#[derive(Clone, Debug)]
pub(crate) enum Value {
    /// Items acknowledged with 1 or 0: each must answer 1 from then on.
    Bloom(BTreeSet<Vec<u8>>),
    /// Items with their acknowledged adds minus deletes; only counts of 1 or more are kept.
    Counting(BTreeMap<Vec<u8>, u64>),
    Text(Vec<u8>),
}

impl Value {
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Value::Bloom(_) => Kind::Bloom,
            Value::Counting(_) => Kind::Counting,
            Value::Text(_) => Kind::Text,
        }
    }

    pub(crate) fn empty(kind: Kind) -> Value {
        match kind {
            Kind::Bloom => Value::Bloom(BTreeSet::new()),
            Kind::Counting => Value::Counting(BTreeMap::new()),
            Kind::Text => Value::Text(Vec::new()),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Expiry {
    None,
    /// Far in the future: the key must be there, with a TTL.
    Long,
    /// Soon: the key may be gone at any moment. Writers never touch such a key again, so when it
    /// is there it must hold exactly what the model says.
    Short,
    /// Written in a pipeline cut short by kill -9, its reply never read: it may or may not have
    /// been applied; the first restart that finds it makes it certain.
    Unacknowledged,
}

#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) value: Value,
    pub(crate) expiry: Expiry,
}

/// What the server acknowledged, per database (indexed like `DATABASES`).
#[derive(Default)]
pub(crate) struct Model {
    pub(crate) dbs: [BTreeMap<Vec<u8>, Entry>; DATABASES.len()],
}

/// One write and what its reply means for the model.
pub(crate) struct Planned {
    pub(crate) args: Vec<Vec<u8>>,
    pub(crate) effect: Effect,
}

pub(crate) enum Effect {
    BloomItems {
        key: Vec<u8>,
        items: Vec<Vec<u8>>,
    },
    CountingItems {
        key: Vec<u8>,
        items: Vec<Vec<u8>>,
    },
    CountingDeletes {
        key: Vec<u8>,
        items: Vec<Vec<u8>>,
    },
    Reserve {
        key: Vec<u8>,
        kind: Kind,
    },
    Set {
        key: Vec<u8>,
        value: Vec<u8>,
        expiry: Expiry,
    },
    Delete {
        keys: Vec<Vec<u8>>,
    },
    Rename {
        from: Vec<u8>,
        to: Vec<u8>,
    },
    Copy {
        from: Vec<u8>,
        to_db: usize,
        to: Vec<u8>,
        replace: bool,
    },
    Expire {
        key: Vec<u8>,
        to: Expiry,
    },
    Persist {
        key: Vec<u8>,
    },
}

impl Model {
    /// Applies an acknowledged write. Returns the filter key to look up afterwards when an error
    /// reply leaves it unknown whether the key was created (a filter created, then full).
    pub(crate) fn apply(
        &mut self,
        db: usize,
        effect: Effect,
        reply: &Reply,
    ) -> Result<Option<(Vec<u8>, Kind)>, String> {
        let map = &mut self.dbs[db];
        match effect {
            Effect::BloomItems { key, items } => {
                // A reply shorter than the items (or one error) stopped at the first failure.
                for (item, answer) in items.into_iter().zip(reply.per_item()) {
                    if let Reply::Int(_) = answer {
                        let entry = map.entry(key.clone()).or_insert(Entry {
                            value: Value::empty(Kind::Bloom),
                            expiry: Expiry::None,
                        });
                        let Value::Bloom(set) = &mut entry.value else {
                            return Err(format!("an add to {} answered {answer:?}", escape(&key)));
                        };
                        set.insert(item);
                    }
                }
                Ok(reply.is_error().then_some((key, Kind::Bloom)))
            }
            Effect::CountingItems { key, items } => {
                let replies = reply.per_item();
                for (item, answer) in items.iter().zip(replies.iter()) {
                    if let Reply::Int(_) = answer {
                        let entry = map.entry(key.clone()).or_insert(Entry {
                            value: Value::empty(Kind::Counting),
                            expiry: Expiry::None,
                        });
                        let Value::Counting(counts) = &mut entry.value else {
                            return Err(format!("an add to {} answered {answer:?}", escape(&key)));
                        };
                        *counts.entry(item.clone()).or_insert(0) += 1;
                    }
                }
                Ok(reply.is_error().then_some((key, Kind::Counting)))
            }
            Effect::CountingDeletes { key, items } => {
                let Some(Entry {
                    value: Value::Counting(counts),
                    ..
                }) = map.get_mut(&key)
                else {
                    return Err(format!(
                        "deletes planned on {} which the model lacks",
                        escape(&key)
                    ));
                };
                let replies = reply.per_item();
                for (item, answer) in items.iter().zip(replies.iter()) {
                    match answer {
                        Reply::Int(1) => {
                            let count = counts.get_mut(item).expect("only held items are deleted");
                            *count -= 1;
                            if *count == 0 {
                                counts.remove(item);
                            }
                        }
                        other => {
                            return Err(format!(
                                "CBF.DEL of {} in {} (held {} times) answered {other:?}",
                                escape(item),
                                escape(&key),
                                counts.get(item).copied().unwrap_or(0)
                            ))
                        }
                    }
                }
                Ok(None)
            }
            Effect::Reserve { key, kind } => match (map.contains_key(&key), reply) {
                (false, Reply::Simple(_)) => {
                    map.insert(
                        key,
                        Entry {
                            value: Value::empty(kind),
                            expiry: Expiry::None,
                        },
                    );
                    Ok(None)
                }
                // Refused: the key exists, or the filter would be over max-filter-memory.
                (_, Reply::Error(_)) => Ok(None),
                (held, other) => Err(format!(
                    "a reserve of {} (held: {held}) answered {other:?}",
                    escape(&key)
                )),
            },
            Effect::Set { key, value, expiry } => {
                if !matches!(reply, Reply::Simple(_)) {
                    return Err(format!("SET {} answered {reply:?}", escape(&key)));
                }
                map.insert(
                    key,
                    Entry {
                        value: Value::Text(value),
                        expiry,
                    },
                );
                Ok(None)
            }
            Effect::Delete { keys } => {
                let held = keys.iter().filter(|k| map.contains_key(*k)).count() as i64;
                for key in &keys {
                    map.remove(key);
                }
                match reply {
                    Reply::Int(n) if *n == held => Ok(None),
                    other => Err(format!("a delete of {held} held keys answered {other:?}")),
                }
            }
            Effect::Rename { from, to } => match (map.remove(&from), reply) {
                (Some(entry), Reply::Simple(_)) => {
                    map.insert(to, entry);
                    Ok(None)
                }
                (None, Reply::Error(_)) => Ok(None),
                (held, other) => Err(format!(
                    "RENAME of {} (held: {}) answered {other:?}",
                    escape(&from),
                    held.is_some()
                )),
            },
            Effect::Copy {
                from,
                to_db,
                to,
                replace,
            } => {
                let source = map.get(&from).cloned();
                let target = &mut self.dbs[to_db];
                let expected = source.is_some() && (replace || !target.contains_key(&to));
                match reply {
                    Reply::Int(1) if expected => {
                        target.insert(to, source.expect("copied"));
                        Ok(None)
                    }
                    Reply::Int(0) if !expected => Ok(None),
                    other => Err(format!(
                        "COPY {} answered {other:?}, expected {expected}",
                        escape(&from)
                    )),
                }
            }
            Effect::Expire { key, to } => match (map.get_mut(&key), reply) {
                (Some(entry), Reply::Int(1)) => {
                    entry.expiry = to;
                    Ok(None)
                }
                (None, Reply::Int(0)) => Ok(None),
                (held, other) => Err(format!(
                    "an expire of {} (held: {}) answered {other:?}",
                    escape(&key),
                    held.is_some()
                )),
            },
            Effect::Persist { key } => {
                let had_ttl = map.get(&key).is_some_and(|e| e.expiry == Expiry::Long);
                match reply {
                    Reply::Int(n) if (*n == 1) == had_ttl => {
                        if let Some(entry) = map.get_mut(&key) {
                            entry.expiry = Expiry::None;
                        }
                        Ok(None)
                    }
                    other => Err(format!(
                        "PERSIST {} (had a TTL: {had_ttl}) answered {other:?}",
                        escape(&key)
                    )),
                }
            }
        }
    }
}
