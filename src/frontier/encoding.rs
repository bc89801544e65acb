//! A frontier's snapshot encoding: the whole of it, captured at one instant (as a collection
//! is), so that no URL can be saved as seen without its item. All integers little-endian.
//!
//! ```text
//! u8   version, 1
//! u64  lease ms, u32 retries, u64 delay ms, u32 inflight     the frontier's rules
//! u64  next id, u64 clock, u64 done
//! u32  seen-set header length, its dump header (filter/dump.rs)
//! u64  seen-set payload length, its bits
//! u64  groups, then each, in byte order of its name:
//!        u32 name length, name
//!        u8 flags (1: own delay, 2: own inflight, 4: leased before), u64 delay, u32 inflight,
//!        u64 paused until, u64 last lease
//!        u32 queues, each highest priority first: i64 priority, u64 items, each by id:
//!          u64 id, u32 deliveries, u8 1 if the bytes follow the group's name, u32 length, bytes
//! u64  held items, by due time then id: u64 due, u64 id, i64 priority, u32 deliveries, url
//! u64  leased items, by id: u64 id, u64 deadline, i64 priority, u32 deliveries, url
//! u64  dead items, by id: u64 id, i64 priority, u32 deliveries, url
//! ```
//!
//! A url is a u32 length and its bytes. Everything is in one canonical order, so equal
//! frontiers encode alike (SIEVED.DIGEST compares nodes by it). Loading checks every length
//! against the bytes left and every id for uniqueness, so a damaged encoding is refused rather
//! than loaded into a frontier that breaks its own rules.

use super::{stored_form, Frontier, Held, Item, Lease, Rules};
use crate::filter::{BloomChain, FilterError};
use std::collections::BTreeMap;

const VERSION: u8 = 1;
const OWN_DELAY: u8 = 1;
const OWN_INFLIGHT: u8 = 2;
const LEASED_BEFORE: u8 = 4;

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, v: &[u8]) {
        self.u32(v.len() as u32);
        self.0.extend_from_slice(v);
    }
    fn item(&mut self, item: &Item) {
        self.i64(item.priority);
        self.u32(item.deliveries);
        self.bytes(&item.url);
    }
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FilterError> {
        let end = self.at.checked_add(n).ok_or(FilterError::BadDump)?;
        let out = self.data.get(self.at..end).ok_or(FilterError::BadDump)?;
        self.at = end;
        Ok(out)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], FilterError> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }
    fn u8(&mut self) -> Result<u8, FilterError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, FilterError> {
        self.array().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Result<u64, FilterError> {
        self.array().map(u64::from_le_bytes)
    }
    fn i64(&mut self) -> Result<i64, FilterError> {
        self.array().map(i64::from_le_bytes)
    }
    fn bytes(&mut self) -> Result<&'a [u8], FilterError> {
        let len = self.u32()? as usize;
        self.take(len)
    }
    fn left(&self) -> usize {
        self.data.len() - self.at
    }
    /// A count of things each at least `min_size` bytes long, checked against what is left.
    fn count(&mut self, min_size: usize) -> Result<u64, FilterError> {
        let count = self.u64()?;
        if count > (self.left() / min_size) as u64 {
            return Err(FilterError::BadDump);
        }
        Ok(count)
    }
    fn item(&mut self) -> Result<Item, FilterError> {
        Ok(Item {
            priority: self.i64()?,
            deliveries: self.u32()?,
            url: self.bytes()?.into(),
        })
    }
}

impl Frontier {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Writer(Vec::new());
        out.u8(VERSION);
        out.u64(self.rules.lease_ms);
        out.u32(self.rules.retries);
        out.u64(self.rules.delay_ms);
        out.u32(self.rules.inflight);
        out.u64(self.next_id);
        out.u64(self.clock);
        out.u64(self.done);
        out.bytes(&self.seen.dump_header());
        let payload = self.seen.payload_bytes();
        out.u64(payload);
        self.seen.read_payload(0, payload, &mut out.0);
        let mut groups: Vec<(&[u8], u32)> = self
            .by_group
            .iter()
            .map(|(group, &slot)| (&group[..], slot))
            .collect();
        groups.sort_unstable();
        out.u64(groups.len() as u64);
        for (group, slot) in groups {
            let host = self.hosts[slot as usize]
                .as_ref()
                .expect("an indexed group");
            out.bytes(group);
            let flags = (host.delay.is_some() as u8 * OWN_DELAY)
                | (host.inflight.is_some() as u8 * OWN_INFLIGHT)
                | (host.last_lease.is_some() as u8 * LEASED_BEFORE);
            out.u8(flags);
            out.u64(host.delay.unwrap_or(0));
            out.u32(host.inflight.unwrap_or(0));
            out.u64(host.paused_until);
            out.u64(host.last_lease.unwrap_or(0));
            out.u32(host.queues.len() as u32);
            for queue in &host.queues {
                out.i64(queue.priority);
                out.u64(queue.len() as u64);
                let mut fresh = queue.fresh.iter().peekable();
                let mut returned = queue.returned.iter().peekable();
                loop {
                    let take_fresh = match (fresh.peek(), returned.peek()) {
                        (Some(f), Some((&r, _))) => f.id < r,
                        (Some(_), None) => true,
                        (None, Some(_)) => false,
                        (None, None) => break,
                    };
                    if take_fresh {
                        let record = fresh.next().expect("peeked");
                        out.u64(record.id);
                        out.u32(record.deliveries);
                        out.u8(record.after_group as u8);
                        out.bytes(record.bytes);
                    } else {
                        let (&id, item) = returned.next().expect("peeked");
                        let (after_group, bytes) = stored_form(group, &item.url);
                        out.u64(id);
                        out.u32(item.deliveries);
                        out.u8(after_group as u8);
                        out.bytes(bytes);
                    }
                }
            }
        }
        out.u64(self.held.len() as u64);
        for (&(due, id), held) in &self.held {
            out.u64(due);
            out.u64(id);
            out.item(&held.item);
        }
        let mut leases: Vec<(&u64, &Lease)> = self.leases.iter().collect();
        leases.sort_unstable_by_key(|(id, _)| **id);
        out.u64(leases.len() as u64);
        for (&id, lease) in leases {
            out.u64(id);
            out.u64(lease.deadline);
            out.item(&lease.item);
        }
        out.u64(self.dead.len() as u64);
        for (&id, item) in &self.dead {
            out.u64(id);
            out.item(item);
        }
        out.0
    }

    /// A frontier from `encode`'s bytes; allocates in proportion to them only.
    pub fn decode(data: &[u8]) -> Result<Frontier, FilterError> {
        let mut input = Reader { data, at: 0 };
        if input.u8()? != VERSION {
            return Err(FilterError::BadDump);
        }
        let rules = Rules {
            lease_ms: input.u64()?,
            retries: input.u32()?,
            delay_ms: input.u64()?,
            inflight: input.u32()?,
        };
        let (next_id, clock, done) = (input.u64()?, input.u64()?, input.u64()?);
        let header = input.bytes()?;
        let payload_len = input.u64()?;
        if payload_len > input.left() as u64 {
            return Err(FilterError::BadDump);
        }
        let mut seen = BloomChain::from_header(header, payload_len)?;
        if seen.payload_bytes() != payload_len {
            return Err(FilterError::BadDump);
        }
        seen.write_payload(0, input.take(payload_len as usize)?)?;
        let mut frontier = Frontier::with_seen(seen, rules);
        frontier.next_id = next_id;
        frontier.clock = clock;
        frontier.done = done;
        let mut ids = Vec::new();
        let mut id_in_range = |id: u64| match id < next_id {
            true => {
                ids.push(id);
                Ok(())
            }
            false => Err(FilterError::BadDump),
        };
        let mut previous_group: Option<&[u8]> = None;
        for _ in 0..input.count(4 + 1 + 8 + 4 + 8 + 8 + 4)? {
            let group = input.bytes()?;
            if previous_group.is_some_and(|previous| previous >= group) {
                return Err(FilterError::BadDump);
            }
            previous_group = Some(group);
            let slot = frontier.host_slot(group);
            let flags = input.u8()?;
            let (delay, inflight) = (input.u64()?, input.u32()?);
            let (paused_until, last_lease) = (input.u64()?, input.u64()?);
            let host = frontier.host(slot);
            host.delay = (flags & OWN_DELAY != 0).then_some(delay);
            host.inflight = (flags & OWN_INFLIGHT != 0).then_some(inflight);
            host.paused_until = paused_until;
            host.last_lease = (flags & LEASED_BEFORE != 0).then_some(last_lease);
            let mut previous_priority = None;
            for _ in 0..input.u32()? {
                let priority = input.i64()?;
                if previous_priority.is_some_and(|previous| previous <= priority) {
                    return Err(FilterError::BadDump);
                }
                previous_priority = Some(priority);
                let count = input.count(8 + 4 + 1 + 4)?;
                if count == 0 {
                    return Err(FilterError::BadDump);
                }
                let mut previous_id = 0;
                for _ in 0..count {
                    let id = input.u64()?;
                    let deliveries = input.u32()?;
                    let after_group = match input.u8()? {
                        0 => false,
                        1 => true,
                        _ => return Err(FilterError::BadDump),
                    };
                    let bytes = input.bytes()?;
                    if id <= previous_id || (after_group && group.is_empty()) {
                        return Err(FilterError::BadDump);
                    }
                    previous_id = id;
                    id_in_range(id)?;
                    let mut url = Vec::with_capacity(group.len() + bytes.len());
                    if after_group {
                        url.extend_from_slice(group);
                    }
                    url.extend_from_slice(bytes);
                    let item = Item {
                        url: url.into(),
                        priority,
                        deliveries,
                    };
                    frontier.enqueue(slot, id, item);
                }
            }
        }
        let mut group = Vec::new();
        for _ in 0..input.count(8 + 8 + 8 + 4 + 4)? {
            let (due, id) = (input.u64()?, input.u64()?);
            let item = input.item()?;
            id_in_range(id)?;
            super::group_of(&item.url, &mut group);
            let slot = frontier.host_slot(&group);
            frontier.heap += super::item_cost(item.url.len());
            frontier.host(slot).held += 1;
            frontier.held.insert((due, id), Held { host: slot, item });
        }
        for _ in 0..input.count(8 + 8 + 8 + 4 + 4)? {
            let (id, deadline) = (input.u64()?, input.u64()?);
            let item = input.item()?;
            id_in_range(id)?;
            super::group_of(&item.url, &mut group);
            let slot = frontier.host_slot(&group);
            frontier.heap += super::item_cost(item.url.len());
            frontier.host(slot).leased += 1;
            frontier.deadlines.insert((deadline, id));
            let lease = Lease {
                host: slot,
                deadline,
                item,
            };
            frontier.leases.insert(id, lease);
        }
        let mut dead = BTreeMap::new();
        for _ in 0..input.count(8 + 8 + 4 + 4)? {
            let id = input.u64()?;
            let item = input.item()?;
            id_in_range(id)?;
            frontier.heap += super::item_cost(item.url.len());
            dead.insert(id, item);
        }
        frontier.dead = dead;
        if input.left() != 0 {
            return Err(FilterError::BadDump);
        }
        ids.sort_unstable();
        if ids.windows(2).any(|pair| pair[0] == pair[1]) {
            return Err(FilterError::BadDump);
        }
        let slots: Vec<u32> = frontier.by_group.values().copied().collect();
        for slot in slots {
            frontier.refresh(slot);
        }
        Ok(frontier)
    }
}
