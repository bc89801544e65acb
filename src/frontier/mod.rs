//! The crawl frontier (FQ.*): a seen-set (a scalable Bloom filter) and the items pushed through
//! it, each at every moment exactly one of queued, leased, done or dead.
//!
//! - queued: in its politeness group's queue of its priority, or held back until a time (AT, or
//!   a NACK's DELAY) in `held`;
//! - leased: handed out by a pop until a deadline, in `leases`;
//! - done: acknowledged; only counted, its URL stays seen;
//! - dead: leased `retries` times without an acknowledgement, in `dead` until requeued.
//!
//! Popping takes the best head among the groups that may be leased from now (`ready`, keyed by
//! each group's head: highest priority, then lowest id), so a pop costs O(log groups) whatever
//! waits elsewhere. A group that must wait (its DELAY since its last lease, a PAUSE) sits in
//! `timers` until then; one at its INFLIGHT limit sits in neither until a lease of it ends.
//!
//! Time only moves in `advance`: it sets the frontier's clock (never backwards), expires leases,
//! releases held items and groups whose time has come. Everything else reads the clock, never
//! the wall: where each group sits is a function of the state and the clock, so a frontier
//! rebuilt from a snapshot or replayed from the log sits exactly as it did. The commands log
//! every advance with its time (FQ.LEASE), which makes replay exact.

mod encoding;
mod url_group;
mod url_queue;

#[cfg(test)]
mod tests;

pub use url_group::group_of;

use crate::filter::{BloomChain, ChainOptions, FilterError, HashScheme, Layout};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use url_queue::UrlQueue;

/// The longest URL a frontier takes: longer ones are refused rather than queued.
pub const MAX_URL_LEN: usize = 64 * 1024;

/// How a frontier treats its items and groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// How long a pop leases an item unless it says otherwise.
    pub lease_ms: u64,
    /// Deliveries an item gets in all before it is dead-lettered; 0 never dead-letters.
    pub retries: u32,
    /// Least time between two leases from one group.
    pub delay_ms: u64,
    /// Most items of one group leased at once; 0 for no limit.
    pub inflight: u32,
}

#[derive(Debug, Clone, Copy)]
pub struct FrontierOptions {
    pub error_rate: f64,
    pub capacity: u64,
    pub rules: Rules,
}

/// What an item carries wherever it is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Item {
    url: Box<[u8]>,
    priority: i64,
    /// Leases it has had.
    deliveries: u32,
}

#[derive(Debug, Clone)]
struct Held {
    host: u32,
    item: Item,
}

#[derive(Debug, Clone)]
struct Lease {
    host: u32,
    deadline: u64,
    item: Item,
}

/// Where a group is among the structures a pop looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Nothing to lease, or at its INFLIGHT limit.
    Idle,
    /// In `ready`, under its head's priority and id.
    Ready(i64, u64),
    /// In `timers`, until then.
    Timer(u64),
}

/// A group's items of one priority: `fresh` in id order, packed; `returned` those that came
/// back (an expired lease, a NACK, a held item now due) with an id below `fresh`'s last.
#[derive(Debug, Clone)]
struct PriorityQueue {
    priority: i64,
    fresh: UrlQueue,
    returned: BTreeMap<u64, Item>,
}

impl PriorityQueue {
    fn head_id(&self) -> Option<u64> {
        let returned = self.returned.keys().next().copied();
        match (self.fresh.front_id(), returned) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn is_empty(&self) -> bool {
        self.fresh.is_empty() && self.returned.is_empty()
    }

    fn len(&self) -> usize {
        self.fresh.len() + self.returned.len()
    }
}

/// A politeness group.
#[derive(Debug, Clone)]
struct Host {
    group: Box<[u8]>,
    /// Rules of its own (FQ.HOST), over the frontier's.
    delay: Option<u64>,
    inflight: Option<u32>,
    paused_until: u64,
    last_lease: Option<u64>,
    leased: u32,
    /// Its items in `held`.
    held: u32,
    /// Highest priority first; none empty.
    queues: Vec<PriorityQueue>,
    place: Place,
}

impl Host {
    fn new(group: &[u8]) -> Host {
        Host {
            group: group.into(),
            delay: None,
            inflight: None,
            paused_until: 0,
            last_lease: None,
            leased: 0,
            held: 0,
            queues: Vec::new(),
            place: Place::Idle,
        }
    }

    fn blocked_until(&self, rules: &Rules) -> u64 {
        let delay = self.delay.unwrap_or(rules.delay_ms);
        let polite = match self.last_lease {
            Some(at) if delay > 0 => at.saturating_add(delay),
            _ => 0,
        };
        polite.max(self.paused_until)
    }

    /// Where the group belongs at `clock`; None when nothing keeps it any more.
    fn placement(&self, clock: u64, rules: &Rules) -> Option<Place> {
        let blocked_until = self.blocked_until(rules);
        let limit = self.inflight.unwrap_or(rules.inflight);
        let at_limit = limit > 0 && self.leased >= limit;
        if let Some(head) = self.queues.first().filter(|_| !at_limit) {
            let id = head.head_id().expect("a queue kept is not empty");
            return Some(match blocked_until <= clock {
                true => Place::Ready(head.priority, id),
                false => Place::Timer(blocked_until),
            });
        }
        let kept = !self.queues.is_empty()
            || self.leased > 0
            || self.held > 0
            || self.delay.is_some()
            || self.inflight.is_some();
        match (kept, blocked_until > clock) {
            (true, _) => Some(Place::Idle),
            // Its politeness window outlives its items.
            (false, true) => Some(Place::Timer(blocked_until)),
            (false, false) => None,
        }
    }

    fn queued(&self) -> usize {
        self.queues.iter().map(PriorityQueue::len).sum()
    }
}

/// One item a pop leased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leased {
    pub id: u64,
    pub url: Vec<u8>,
    pub group: Vec<u8>,
    pub deadline: u64,
}

/// What a NACK did with a leased item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nacked {
    Requeued,
    Dead,
}

/// FQ.INFO's counters at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrontierInfo {
    pub capacity: u64,
    pub error_rate: f64,
    pub seen: u64,
    pub queued: u64,
    pub due: u64,
    pub leased: u64,
    pub done: u64,
    pub dead: u64,
    pub hosts: u64,
    pub memory: u64,
}

/// One group's rules as they apply (its own, or the frontier's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostRules {
    pub delay_ms: u64,
    pub inflight: u32,
    pub paused_until: u64,
    pub queued: u64,
    pub leased: u64,
}

/// Leases that ran out by some time but were not yet expired by an advance.
#[derive(Debug, Default)]
struct Lapsed {
    /// Going back to the queue.
    back: u64,
    /// Going to the dead letters: their last delivery.
    dying: u64,
}

/// A changed group's rules (FQ.HOST).
#[derive(Debug, Clone, Copy, Default)]
pub struct HostChange {
    pub delay_ms: Option<u64>,
    pub inflight: Option<u32>,
    pub paused_until: Option<u64>,
}

/// What a map entry of an item costs beyond the URL's bytes: the entry, the map's node share
/// and the allocation's header, roughly.
const ENTRY_COST: u64 = 80;
/// A group's fixed cost: the struct, its index entry and set entries, its name twice.
const HOST_COST: u64 = std::mem::size_of::<Host>() as u64 + 96;

#[derive(Debug, Clone)]
pub struct Frontier {
    seen: BloomChain,
    rules: Rules,
    /// The next item's id: ids are never reused, across restarts too (it is saved).
    next_id: u64,
    clock: u64,
    done: u64,
    /// Items in groups' queues (not held).
    queued: u64,
    hosts: Vec<Option<Host>>,
    free_slots: Vec<u32>,
    by_group: HashMap<Box<[u8]>, u32>,
    ready: BTreeMap<(Reverse<i64>, u64), u32>,
    timers: BTreeSet<(u64, u32)>,
    held: BTreeMap<(u64, u64), Held>,
    leases: HashMap<u64, Lease>,
    deadlines: BTreeSet<(u64, u64)>,
    dead: BTreeMap<u64, Item>,
    /// Heap bytes of everything but the seen-set, kept as things come and go.
    heap: u64,
    /// A group name being worked out, kept to spare an allocation per URL.
    scratch: Vec<u8>,
}

/// The URL as a queue stores it: what follows the group's name when it starts with it.
fn stored_form<'a>(group: &[u8], url: &'a [u8]) -> (bool, &'a [u8]) {
    match url.strip_prefix(group) {
        Some(rest) if !group.is_empty() => (true, rest),
        _ => (false, url),
    }
}

fn item_cost(url_len: usize) -> u64 {
    ENTRY_COST + url_len as u64
}

impl Frontier {
    /// A seen-set in the blocked layout: a frontier owes RedisBloom no bit-for-bit
    /// compatibility, and large crawls gain from one cache line per check.
    pub fn new(options: FrontierOptions, limit_bytes: u64) -> Result<Frontier, FilterError> {
        let seen = BloomChain::new(
            ChainOptions {
                error_rate: options.error_rate,
                capacity: options.capacity,
                expansion: 2,
                non_scaling: false,
                layout: Layout::Blocked,
                hash: HashScheme::Xxh3,
            },
            limit_bytes,
        )?;
        Ok(Frontier::with_seen(seen, options.rules))
    }

    fn with_seen(seen: BloomChain, rules: Rules) -> Frontier {
        Frontier {
            seen,
            rules,
            next_id: 1,
            clock: 0,
            done: 0,
            queued: 0,
            hosts: Vec::new(),
            free_slots: Vec::new(),
            by_group: HashMap::new(),
            ready: BTreeMap::new(),
            timers: BTreeSet::new(),
            held: BTreeMap::new(),
            leases: HashMap::new(),
            deadlines: BTreeSet::new(),
            dead: BTreeMap::new(),
            heap: 0,
            scratch: Vec::new(),
        }
    }

    pub fn rules(&self) -> Rules {
        self.rules
    }

    pub fn error_rate(&self) -> f64 {
        self.seen.error_rate()
    }

    /// The seen-set's capacity, its growth included.
    pub fn capacity(&self) -> u64 {
        self.seen.capacity()
    }

    /// The capacity the frontier was created with.
    pub fn initial_capacity(&self) -> u64 {
        self.seen.links().first().map_or(0, |link| link.capacity())
    }

    /// The frontier's clock: the latest time it advanced to.
    pub fn clock(&self) -> u64 {
        self.clock
    }

    pub fn memory_bytes(&self) -> u64 {
        std::mem::size_of::<Frontier>() as u64 + self.seen.memory_bytes() + self.heap
    }

    fn host(&mut self, slot: u32) -> &mut Host {
        self.hosts[slot as usize]
            .as_mut()
            .expect("a slot in use holds a group")
    }

    /// The slot of `group`, made if it has none.
    fn host_slot(&mut self, group: &[u8]) -> u32 {
        if let Some(&slot) = self.by_group.get(group) {
            return slot;
        }
        let host = Host::new(group);
        let slot = match self.free_slots.pop() {
            Some(slot) => {
                self.hosts[slot as usize] = Some(host);
                slot
            }
            None => {
                self.hosts.push(Some(host));
                (self.hosts.len() - 1) as u32
            }
        };
        self.by_group.insert(group.into(), slot);
        self.heap += HOST_COST + 2 * group.len() as u64;
        slot
    }

    /// Puts the group where it now belongs, dropping it if nothing keeps it.
    fn refresh(&mut self, slot: u32) {
        let (clock, rules) = (self.clock, self.rules);
        let Some(host) = self.hosts[slot as usize].as_mut() else {
            return;
        };
        let placement = host.placement(clock, &rules);
        if placement == Some(host.place) {
            return;
        }
        match host.place {
            Place::Idle => {}
            Place::Ready(priority, id) => {
                self.ready.remove(&(Reverse(priority), id));
            }
            Place::Timer(at) => {
                self.timers.remove(&(at, slot));
            }
        }
        match placement {
            Some(place) => {
                host.place = place;
                match place {
                    Place::Idle => {}
                    Place::Ready(priority, id) => {
                        self.ready.insert((Reverse(priority), id), slot);
                    }
                    Place::Timer(at) => {
                        self.timers.insert((at, slot));
                    }
                }
            }
            None => {
                let host = self.hosts[slot as usize].take().expect("checked above");
                self.by_group.remove(&host.group);
                self.heap = self
                    .heap
                    .saturating_sub(HOST_COST + 2 * host.group.len() as u64);
                self.free_slots.push(slot);
            }
        }
    }

    /// Queues an item in its group, packed when its id follows the queue's last.
    fn enqueue(&mut self, slot: u32, id: u64, item: Item) {
        let host = self.hosts[slot as usize]
            .as_mut()
            .expect("a slot in use holds a group");
        let at = match host
            .queues
            .iter()
            .position(|queue| queue.priority <= item.priority)
        {
            Some(at) if host.queues[at].priority == item.priority => at,
            found => {
                let at = found.unwrap_or(host.queues.len());
                // Most groups have one priority: no room for more until it is needed.
                host.queues.reserve_exact(1);
                host.queues.insert(
                    at,
                    PriorityQueue {
                        priority: item.priority,
                        fresh: UrlQueue::default(),
                        returned: BTreeMap::new(),
                    },
                );
                at
            }
        };
        let queue = &mut host.queues[at];
        if id > queue.fresh.tail_id() {
            let before = queue.fresh.heap_bytes();
            let (after_group, bytes) = stored_form(&host.group, &item.url);
            queue.fresh.push(id, item.deliveries, after_group, bytes);
            self.heap = self.heap + queue.fresh.heap_bytes() - before;
        } else {
            self.heap += item_cost(item.url.len());
            queue.returned.insert(id, item);
        }
        self.queued += 1;
    }

    /// Takes the head of the group's queue at `index`.
    fn take_head(&mut self, slot: u32, index: usize) -> Option<(u64, Item)> {
        let host = self.hosts[slot as usize].as_mut()?;
        let queue = host.queues.get_mut(index)?;
        let from_returned = match (queue.fresh.front_id(), queue.returned.keys().next()) {
            (Some(fresh), Some(&returned)) => returned < fresh,
            (None, Some(_)) => true,
            (_, None) => false,
        };
        let priority = queue.priority;
        let taken = if from_returned {
            let (id, item) = queue.returned.pop_first()?;
            self.heap = self.heap.saturating_sub(item_cost(item.url.len()));
            (id, item)
        } else {
            let before = queue.fresh.heap_bytes();
            let group = &host.group;
            let taken = queue.fresh.pop_front(|record| {
                let mut url = Vec::with_capacity(record.bytes.len() + group.len());
                if record.after_group {
                    url.extend_from_slice(group);
                }
                url.extend_from_slice(record.bytes);
                let item = Item {
                    url: url.into_boxed_slice(),
                    priority,
                    deliveries: record.deliveries,
                };
                (record.id, item)
            })?;
            self.heap = self.heap + queue.fresh.heap_bytes() - before;
            taken
        };
        if queue.is_empty() {
            host.queues.remove(index);
        }
        self.queued -= 1;
        Some(taken)
    }

    /// Whether `advance(now)` would change anything but the clock, or a pop could lease: when
    /// neither, a pop answers nothing and changes nothing (so it need not be logged).
    pub fn has_work(&self, now: u64) -> bool {
        let now = now.max(self.clock);
        !self.ready.is_empty()
            || self.timers.first().is_some_and(|&(at, _)| at <= now)
            || self.held.keys().next().is_some_and(|&(due, _)| due <= now)
            || self.deadlines.first().is_some_and(|&(at, _)| at <= now)
    }

    /// The earliest time after the clock at which something may become due without any
    /// command: a group's wait ends, a held item's time comes, a lease runs out.
    pub fn next_event(&self) -> Option<u64> {
        [
            self.timers.first().map(|&(at, _)| at),
            self.held.keys().next().map(|&(due, _)| due),
            self.deadlines.first().map(|&(at, _)| at),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Moves the clock to `now` (never back), expiring leases, releasing held items and groups
    /// whose time has come, in that order.
    pub fn advance(&mut self, now: u64) {
        self.clock = self.clock.max(now);
        let clock = self.clock;
        while let Some(&(deadline, id)) = self.deadlines.first() {
            if deadline > clock {
                break;
            }
            self.deadlines.pop_first();
            if let Some(lease) = self.leases.remove(&id) {
                self.heap = self.heap.saturating_sub(item_cost(lease.item.url.len()));
                self.host(lease.host).leased -= 1;
                self.end_delivery(lease.host, id, lease.item, clock);
                self.refresh(lease.host);
            }
        }
        while let Some(entry) = self.held.first_entry() {
            if entry.key().0 > clock {
                break;
            }
            let ((_, id), held) = entry.remove_entry();
            self.heap = self.heap.saturating_sub(item_cost(held.item.url.len()));
            self.host(held.host).held -= 1;
            self.enqueue(held.host, id, held.item);
            self.refresh(held.host);
        }
        while let Some(&(at, slot)) = self.timers.first() {
            if at > clock {
                break;
            }
            self.timers.pop_first();
            if let Some(host) = self.hosts[slot as usize].as_mut() {
                host.place = Place::Idle;
            }
            self.refresh(slot);
        }
    }

    /// An item whose lease ended without an acknowledgement: dead once it had its deliveries,
    /// else queued again (held until `due` if that is still to come).
    fn end_delivery(&mut self, slot: u32, id: u64, item: Item, due: u64) -> Nacked {
        if self.rules.retries > 0 && item.deliveries >= self.rules.retries {
            self.heap += item_cost(item.url.len());
            self.dead.insert(id, item);
            return Nacked::Dead;
        }
        if due > self.clock {
            self.heap += item_cost(item.url.len());
            self.host(slot).held += 1;
            self.held.insert((due, id), Held { host: slot, item });
        } else {
            self.enqueue(slot, id, item);
        }
        Nacked::Requeued
    }

    /// Adds `url` to the seen-set and queues it, unless it was seen (a Bloom false positive
    /// counts as seen) and not `force`d. Held until `at` if that is after the clock. Nothing is
    /// changed when the frontier would go over `limit_bytes`.
    pub fn push(
        &mut self,
        url: &[u8],
        priority: i64,
        at: Option<u64>,
        force: bool,
        limit_bytes: u64,
    ) -> Result<bool, FilterError> {
        let mut group = std::mem::take(&mut self.scratch);
        group_of(url, &mut group);
        let pushed = self.push_in(url, &group, priority, at, force, limit_bytes);
        self.scratch = group;
        pushed
    }

    fn push_in(
        &mut self,
        url: &[u8],
        group: &[u8],
        priority: i64,
        at: Option<u64>,
        force: bool,
        limit_bytes: u64,
    ) -> Result<bool, FilterError> {
        let others = self.memory_bytes() - self.seen.memory_bytes();
        let needed = others + item_cost(url.len()) + HOST_COST + 2 * group.len() as u64;
        if needed > limit_bytes {
            return Err(FilterError::TooLarge {
                bytes: needed + self.seen.memory_bytes(),
                limit: limit_bytes,
            });
        }
        let added = self.seen.add(url, limit_bytes - needed)?;
        if !added && !force {
            return Ok(false);
        }
        let slot = self.host_slot(group);
        let id = self.next_id;
        self.next_id += 1;
        let item = Item {
            url: url.into(),
            priority,
            deliveries: 0,
        };
        match at {
            Some(at) if at > self.clock => {
                self.heap += item_cost(url.len());
                self.host(slot).held += 1;
                self.held.insert((at, id), Held { host: slot, item });
            }
            _ => self.enqueue(slot, id, item),
        }
        self.refresh(slot);
        Ok(true)
    }

    pub fn seen(&self, url: &[u8]) -> bool {
        self.seen.contains(url)
    }

    /// Leases up to `count` items, best first, until the clock plus `lease_ms`; the caller
    /// advanced the clock first.
    pub fn pop(&mut self, count: usize, lease_ms: u64, out: &mut Vec<Leased>) {
        let deadline = self.clock.saturating_add(lease_ms);
        for _ in 0..count {
            let Some((_, &slot)) = self.ready.first_key_value() else {
                break;
            };
            let Some(leased) = self.lease_head(slot, 0, deadline) else {
                break;
            };
            out.push(leased);
        }
    }

    fn lease_head(&mut self, slot: u32, index: usize, deadline: u64) -> Option<Leased> {
        let (id, mut item) = self.take_head(slot, index)?;
        item.deliveries = item.deliveries.saturating_add(1);
        let clock = self.clock;
        let host = self.host(slot);
        host.leased += 1;
        host.last_lease = Some(clock);
        let group = host.group.to_vec();
        let url = item.url.to_vec();
        self.heap += item_cost(item.url.len());
        self.leases.insert(
            id,
            Lease {
                host: slot,
                deadline,
                item,
            },
        );
        self.deadlines.insert((deadline, id));
        self.refresh(slot);
        Some(Leased {
            id,
            url,
            group,
            deadline,
        })
    }

    /// Leases the item `id`, at the head of one of `group`'s queues, until `deadline`: a pop
    /// as the log recorded it. False if it is not there.
    pub fn lease_logged(&mut self, group: &[u8], id: u64, deadline: u64) -> bool {
        let Some(&slot) = self.by_group.get(group) else {
            return false;
        };
        let Some(host) = self.hosts[slot as usize].as_ref() else {
            return false;
        };
        let Some(index) = host
            .queues
            .iter()
            .position(|queue| queue.head_id() == Some(id))
        else {
            return false;
        };
        self.lease_head(slot, index, deadline).is_some()
    }

    /// The lease of `id`, if it is one still running at `now` (any time, for None).
    fn running_lease(&self, id: u64, now: Option<u64>) -> bool {
        self.leases.get(&id).is_some_and(|lease| match now {
            Some(now) => lease.deadline > now.max(self.clock),
            None => true,
        })
    }

    fn end_lease(&mut self, id: u64) -> Option<Lease> {
        let lease = self.leases.remove(&id)?;
        self.deadlines.remove(&(lease.deadline, id));
        self.heap = self.heap.saturating_sub(item_cost(lease.item.url.len()));
        self.host(lease.host).leased -= 1;
        Some(lease)
    }

    /// Completes the leased item `id` if its lease runs at `now` (None: whenever it ends, as
    /// replay applies an acknowledgement that was in time).
    pub fn ack(&mut self, id: u64, now: Option<u64>) -> bool {
        if !self.running_lease(id, now) {
            return false;
        }
        let Some(lease) = self.end_lease(id) else {
            return false;
        };
        self.done += 1;
        self.refresh(lease.host);
        true
    }

    /// Gives back the leased item `id`, queued again from `due` on (or dead, past its retries).
    pub fn nack(&mut self, id: u64, now: Option<u64>, due: u64) -> Option<Nacked> {
        if !self.running_lease(id, now) {
            return None;
        }
        let lease = self.end_lease(id)?;
        let nacked = self.end_delivery(lease.host, id, lease.item, due);
        self.refresh(lease.host);
        Some(nacked)
    }

    /// Queues the dead item `id` again, with its deliveries counted from 0.
    pub fn requeue(&mut self, id: u64) -> bool {
        let Some(mut item) = self.dead.remove(&id) else {
            return false;
        };
        self.heap = self.heap.saturating_sub(item_cost(item.url.len()));
        item.deliveries = 0;
        let mut group = std::mem::take(&mut self.scratch);
        group_of(&item.url, &mut group);
        let slot = self.host_slot(&group);
        self.scratch = group;
        self.enqueue(slot, id, item);
        self.refresh(slot);
        true
    }

    /// Sets a group's own rules; `group` as `group_of` writes it.
    pub fn set_host(&mut self, group: &[u8], change: HostChange) {
        let slot = self.host_slot(group);
        let host = self.host(slot);
        if let Some(delay) = change.delay_ms {
            host.delay = Some(delay);
        }
        if let Some(inflight) = change.inflight {
            host.inflight = Some(inflight);
        }
        if let Some(until) = change.paused_until {
            host.paused_until = until;
        }
        self.refresh(slot);
    }

    /// A group's rules as they apply, its own or the frontier's, and its items as of `now`,
    /// counted as `info` counts them (leases that ran out where they are going).
    pub fn host_rules(&self, group: &[u8], now: u64) -> HostRules {
        let slot = self.by_group.get(group).copied();
        let host = slot.and_then(|slot| self.hosts[slot as usize].as_ref());
        let Lapsed { back, dying } = self.lapsed_counts(now, slot);
        let (queued, leased) = host.map_or((0, 0), |h| {
            ((h.queued() + h.held as usize) as u64, u64::from(h.leased))
        });
        HostRules {
            delay_ms: host.and_then(|h| h.delay).unwrap_or(self.rules.delay_ms),
            inflight: host.and_then(|h| h.inflight).unwrap_or(self.rules.inflight),
            paused_until: host.map_or(0, |h| h.paused_until),
            queued: queued + back,
            leased: leased - back - dying,
        }
    }

    /// How many leases have run out by `now` without an advance (of the group in `slot`, or of
    /// every group): those going back to the queue, and those going to the dead letters. FQ.INFO
    /// and FQ.HOST both count with it, so that they agree.
    fn lapsed_counts(&self, now: u64, slot: Option<u32>) -> Lapsed {
        let mut lapsed = Lapsed::default();
        for (_, lease) in self.lapsed(now) {
            if slot.is_some_and(|slot| slot != lease.host) {
                continue;
            }
            match self.would_die(&lease.item) {
                true => lapsed.dying += 1,
                false => lapsed.back += 1,
            }
        }
        lapsed
    }

    /// Leases that have ended by `now` but were not yet expired by an advance.
    fn lapsed(&self, now: u64) -> impl Iterator<Item = (u64, &Lease)> + '_ {
        let now = now.max(self.clock);
        self.deadlines
            .range(..(now.saturating_add(1), 0))
            .filter_map(|&(_, id)| self.leases.get(&id).map(|lease| (id, lease)))
    }

    fn would_die(&self, item: &Item) -> bool {
        self.rules.retries > 0 && item.deliveries >= self.rules.retries
    }

    /// The dead items as of `now` (a lease that ran out on its last delivery counts), lowest id
    /// first: (id, url, deliveries).
    pub fn dead_items(&self, now: u64, count: usize) -> Vec<(u64, Vec<u8>, u32)> {
        let mut lapsed: Vec<(u64, &Item)> = self
            .lapsed(now)
            .filter(|(_, lease)| self.would_die(&lease.item))
            .map(|(id, lease)| (id, &lease.item))
            .collect();
        lapsed.sort_unstable_by_key(|(id, _)| *id);
        let mut dead = self.dead.iter().map(|(&id, item)| (id, item)).peekable();
        let mut lapsed = lapsed.into_iter().peekable();
        let mut out = Vec::new();
        while out.len() < count {
            let next = match (dead.peek(), lapsed.peek()) {
                (Some(a), Some(b)) if a.0 < b.0 => dead.next(),
                (Some(_), Some(_)) | (None, Some(_)) => lapsed.next(),
                (Some(_), None) => dead.next(),
                (None, None) => None,
            };
            let Some((id, item)) = next else { break };
            out.push((id, item.url.to_vec(), item.deliveries));
        }
        out
    }

    /// The counters as of `now`, leases that ran out counted where they are going.
    pub fn info(&self, now: u64) -> FrontierInfo {
        let now = now.max(self.clock);
        let Lapsed { back, dying } = self.lapsed_counts(now, None);
        let held_due = self.held.range(..(now.saturating_add(1), 0)).count() as u64;
        FrontierInfo {
            capacity: self.capacity(),
            error_rate: self.error_rate(),
            seen: self.seen.items(),
            queued: self.queued + self.held.len() as u64 + back,
            due: self.queued + held_due + back,
            leased: self.leases.len() as u64 - back - dying,
            done: self.done,
            dead: self.dead.len() as u64 + dying,
            hosts: self.by_group.len() as u64,
            memory: self.memory_bytes(),
        }
    }
}
