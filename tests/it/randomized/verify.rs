//! After a restart: the server against the model, key by key and item by item.

use super::model::{Entry, Expiry, Kind, Reply, Value};
use super::{Checked, Dump, Run, DATABASES};
use crate::support::{encode_command, escape};
use std::collections::{BTreeMap, BTreeSet};

/// One question asked of the server after a restart, and what the answer must be.
enum Check {
    Type(Kind),
    BloomItems(Vec<Vec<u8>>),
    CountingItems(Vec<Vec<u8>>),
    Count(Vec<u8>, u64),
    Text(Vec<u8>),
    Ttl(Expiry),
}

impl Run {
    pub(super) fn keys_of(&mut self) -> BTreeSet<Vec<u8>> {
        let mut keys = BTreeSet::new();
        let mut cursor = b"0".to_vec();
        loop {
            let reply = self.call(&[
                b"SCAN".to_vec(),
                cursor,
                b"COUNT".to_vec(),
                b"1000".to_vec(),
            ]);
            let Reply::Array(Some(parts)) = reply else {
                self.fail(&format!("SCAN answered {reply:?}"))
            };
            let [Reply::Bulk(Some(next)), Reply::Array(Some(found))] = parts.as_slice() else {
                self.fail(&format!("SCAN answered {parts:?}"))
            };
            for key in found {
                if let Reply::Bulk(Some(key)) = key {
                    keys.insert(key.clone());
                }
            }
            if next.as_slice() == b"0" {
                return keys;
            }
            cursor = next.clone();
        }
    }

    /// A filter's dump, read without a line in the transcript per chunk (the fingerprints read
    /// every filter at every stop).
    pub(super) fn scandump(&mut self, kind: Kind, key: &[u8]) -> Dump {
        let name: &[u8] = if kind == Kind::Bloom {
            b"BF.SCANDUMP"
        } else {
            b"CBF.SCANDUMP"
        };
        let mut chunks = Vec::new();
        let mut iterator = 0i64;
        loop {
            let at = iterator.to_string();
            let reply = Reply::parse(&self.client().command(&[name, key, at.as_bytes()]));
            let Reply::Array(Some(parts)) = reply else {
                self.fail(&format!("SCANDUMP {} answered {reply:?}", escape(key)))
            };
            let [Reply::Int(next), Reply::Bulk(data)] = parts.as_slice() else {
                self.fail(&format!("SCANDUMP {} answered {parts:?}", escape(key)))
            };
            if *next == 0 {
                return chunks;
            }
            if chunks.len() > 10_000 {
                self.fail("SCANDUMP does not end");
            }
            chunks.push((*next, data.clone().unwrap_or_default()));
            iterator = *next;
        }
    }

    /// The dump of every filter that must survive the coming kill as it is: a restart replays
    /// each acknowledged write exactly once, so the filters come back bit for bit (a write
    /// replayed twice would show here, which the checks by item cannot see).
    pub(super) fn take_fingerprints(&mut self) {
        let mut fingerprints = BTreeMap::new();
        for (db, index) in DATABASES.iter().enumerate() {
            let filters: Vec<(Vec<u8>, Kind)> = self.model.dbs[db]
                .iter()
                .filter(|(_, entry)| matches!(entry.expiry, Expiry::None | Expiry::Long))
                .filter(|(_, entry)| entry.value.kind() != Kind::Text)
                .map(|(key, entry)| (key.clone(), entry.value.kind()))
                .collect();
            self.call_str(&["SELECT", &index.to_string()]);
            for (key, kind) in filters {
                let dump = self.scandump(kind, &key);
                fingerprints.insert((db, key), dump);
            }
        }
        let index = DATABASES[self.db].to_string();
        self.call_str(&["SELECT", &index]);
        self.note(format!("{} filters fingerprinted", fingerprints.len()));
        self.fingerprints = fingerprints;
    }

    /// Compares the server with the model: every acknowledged key, item, count, string and TTL.
    pub(super) fn verify(&mut self, round: u64) {
        let mut checked = Checked::default();
        let mut problems = Vec::new();
        for (db, index) in DATABASES.iter().enumerate() {
            self.db = db;
            let index = index.to_string();
            self.call_str(&["SELECT", &index]);
            let on_server = self.keys_of();
            for key in &on_server {
                if !self.model.dbs[db].contains_key(key) {
                    problems.push(format!(
                        "db {index}: key {} is back (deleted or never written)",
                        escape(key)
                    ));
                }
            }
            let entries: Vec<(Vec<u8>, Entry)> = self.model.dbs[db]
                .iter()
                .map(|(k, e)| (k.clone(), e.clone()))
                .collect();
            let mut questions: Vec<(Vec<u8>, Vec<Vec<u8>>, Check)> = Vec::new();
            for (key, entry) in entries {
                if !on_server.contains(&key) {
                    if matches!(entry.expiry, Expiry::Short | Expiry::Unacknowledged) {
                        checked.maybe_gone += 1;
                        self.model.dbs[db].remove(&key);
                    } else {
                        problems.push(format!(
                            "db {index}: key {} ({:?}) is missing",
                            escape(&key),
                            entry.value.kind()
                        ));
                    }
                    continue;
                }
                checked.keys += 1;
                let ask = |name: &[u8], rest: &[Vec<u8>]| {
                    let mut args = vec![name.to_vec(), key.clone()];
                    args.extend(rest.iter().cloned());
                    args
                };
                questions.push((
                    key.clone(),
                    ask(b"TYPE", &[]),
                    Check::Type(entry.value.kind()),
                ));
                questions.push((key.clone(), ask(b"PTTL", &[]), Check::Ttl(entry.expiry)));
                checked.ttls += 1;
                match &entry.value {
                    Value::Bloom(items) => {
                        let items: Vec<Vec<u8>> = items.iter().cloned().collect();
                        for chunk in items.chunks(100) {
                            checked.bloom_items += chunk.len() as u64;
                            questions.push((
                                key.clone(),
                                ask(b"BF.MEXISTS", chunk),
                                Check::BloomItems(chunk.to_vec()),
                            ));
                        }
                    }
                    Value::Counting(counts) => {
                        let items: Vec<Vec<u8>> = counts.keys().cloned().collect();
                        for chunk in items.chunks(100) {
                            questions.push((
                                key.clone(),
                                ask(b"CBF.MEXISTS", chunk),
                                Check::CountingItems(chunk.to_vec()),
                            ));
                        }
                        for (item, count) in counts {
                            checked.counting_items += 1;
                            questions.push((
                                key.clone(),
                                ask(b"CBF.COUNT", std::slice::from_ref(item)),
                                Check::Count(item.clone(), *count),
                            ));
                        }
                    }
                    Value::Text(value) => {
                        checked.strings += 1;
                        questions.push((key.clone(), ask(b"GET", &[]), Check::Text(value.clone())));
                    }
                }
            }
            // Pipelined: thousands of questions would otherwise cost a round trip each.
            let mut batch = Vec::new();
            for (_, args, _) in &questions {
                let borrowed: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                batch.extend(encode_command(&borrowed));
            }
            self.note(format!("[db {index}] {} pipelined checks", questions.len()));
            self.client().send(&batch);
            let mut gone = BTreeSet::new();
            // Problems of keys that may expire: real only if the key is still there afterwards.
            let mut suspect: BTreeMap<Vec<u8>, Vec<String>> = BTreeMap::new();
            for (key, _, check) in questions {
                let reply = Reply::parse(&self.client().read_reply());
                let Some(problem) = judge(&check, &reply) else {
                    continue;
                };
                let problem = format!("db {index}: key {}: {problem}", escape(&key));
                if self.model.dbs[db][&key].expiry == Expiry::Short {
                    suspect.entry(key).or_default().push(problem);
                } else {
                    problems.push(problem);
                }
            }
            for (key, found) in suspect {
                match self.call(&[b"EXISTS".to_vec(), key.clone()]) {
                    Reply::Int(0) => {
                        gone.insert(key);
                    }
                    _ => problems.extend(found),
                }
            }
            let fingerprinted: Vec<(Vec<u8>, Kind)> = self.model.dbs[db]
                .iter()
                .filter(|(key, _)| self.fingerprints.contains_key(&(db, (*key).clone())))
                .map(|(key, entry)| (key.clone(), entry.value.kind()))
                .collect();
            for (key, kind) in fingerprinted {
                checked.fingerprints += 1;
                let dump = self.scandump(kind, &key);
                if self.fingerprints[&(db, key.clone())] != dump {
                    problems.push(format!(
                        "db {index}: key {}: the filter differs from what it was before the stop",
                        escape(&key)
                    ));
                }
            }
            for key in gone {
                checked.maybe_gone += 1;
                self.model.dbs[db].remove(&key);
            }
        }
        self.db = 0;
        self.call_str(&["SELECT", "0"]);
        self.fingerprints.clear();
        for db in &mut self.model.dbs {
            for entry in db.values_mut() {
                if entry.expiry == Expiry::Unacknowledged {
                    entry.expiry = Expiry::None;
                }
            }
        }
        // The log is replayed in order: of writes sent one after another, those that survived
        // are the first ones.
        let survived: Vec<bool> = std::mem::take(&mut self.in_flight)
            .into_iter()
            .map(|(db, key)| self.model.dbs[db].contains_key(&key))
            .collect();
        let kept = survived.iter().filter(|&&kept| kept).count() as u64;
        self.tally.in_flight_kept += kept;
        self.tally.in_flight_lost += survived.len() as u64 - kept;
        if survived.windows(2).any(|pair| !pair[0] && pair[1]) {
            problems.push(format!(
                "pipelined writes survived out of order: {survived:?}"
            ));
        }
        let whole: Vec<bool> = std::mem::take(&mut self.in_flight_transaction)
            .into_iter()
            .map(|(db, key)| self.model.dbs[db].contains_key(&key))
            .collect();
        if whole.windows(2).any(|pair| pair[0] != pair[1]) {
            problems.push(format!("a transaction survived in part: {whole:?}"));
        }
        println!(
            "round {round}: checked {} keys, {} Bloom items, {} counting items, {} strings, {} TTLs, \
             {} filter dumps; {} short-TTL keys gone; {} missing or wrong",
            checked.keys,
            checked.bloom_items,
            checked.counting_items,
            checked.strings,
            checked.ttls,
            checked.fingerprints,
            checked.maybe_gone,
            problems.len()
        );
        self.total.keys += checked.keys;
        self.total.bloom_items += checked.bloom_items;
        self.total.counting_items += checked.counting_items;
        self.total.strings += checked.strings;
        self.total.ttls += checked.ttls;
        self.total.maybe_gone += checked.maybe_gone;
        self.total.fingerprints += checked.fingerprints;
        if !problems.is_empty() {
            let shown = problems.len().min(40);
            self.fail(&format!(
                "after restart {round}, {} problems:\n{}",
                problems.len(),
                problems[..shown].join("\n")
            ));
        }
    }
}

fn judge(check: &Check, reply: &Reply) -> Option<String> {
    match (check, reply) {
        (Check::Type(kind), Reply::Simple(name)) => {
            let expected = match kind {
                Kind::Bloom => "MBbloom--",
                Kind::Counting => "MBbloomCBF",
                Kind::Text => "string",
            };
            (name != expected).then(|| format!("TYPE is {name}, not {expected}"))
        }
        (Check::BloomItems(items) | Check::CountingItems(items), Reply::Array(Some(answers))) => {
            let missing: Vec<String> = items
                .iter()
                .zip(answers)
                .filter(|(_, answer)| !matches!(answer, Reply::Int(1)))
                .map(|(item, _)| escape(item))
                .collect();
            (!missing.is_empty() || answers.len() != items.len())
                .then(|| format!("{} acknowledged items missing: {missing:?}", missing.len()))
        }
        (Check::Count(item, count), Reply::Int(n)) => (*n < *count as i64).then(|| {
            format!(
                "CBF.COUNT {} is {n}, below the {count} acknowledged",
                escape(item)
            )
        }),
        (Check::Text(value), Reply::Bulk(Some(found))) => {
            (found != value).then(|| format!("holds {}, not {}", escape(found), escape(value)))
        }
        (Check::Ttl(Expiry::None | Expiry::Unacknowledged), Reply::Int(n)) => {
            (*n != -1).then(|| format!("PTTL {n}, expected none"))
        }
        (Check::Ttl(Expiry::Long), Reply::Int(n)) => {
            (*n <= 0).then(|| format!("PTTL {n}, expected a long TTL"))
        }
        (Check::Ttl(Expiry::Short), Reply::Int(_)) => None,
        (_, other) => Some(format!("answered {other:?}")),
    }
}
