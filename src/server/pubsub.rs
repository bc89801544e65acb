//! Pub/Sub's registry: which connection listens to which channel and pattern, and each
//! connection's inbox of messages not yet written to it.
//!
//! PUBLISH never writes to a socket: it queues the message in each receiver's inbox and wakes
//! its connection, which writes it while it waits for input. The registry's lock is held only
//! to find the receivers. An inbox is capped (`INBOX_LIMIT`, Redis's `client-output-buffer-limit
//! pubsub` in a simple form): a subscriber that falls that far behind is cut off, so a client
//! that never reads costs the server a bounded amount of memory.

use crate::cmd::{self, SubscriptionKind};
use crate::protocol::Reply;
use crate::store::glob_match;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// Most a subscriber's undelivered messages may take before it is cut off.
pub(crate) const INBOX_LIMIT: usize = 32 * 1024 * 1024;
/// What one queued message costs beyond its bytes (its entry and reference counts), so that a
/// flood of empty messages is bounded too.
const DELIVERY_OVERHEAD: usize = 64;

/// One message on its way to one subscriber; the bytes are shared by all its receivers.
struct Delivery {
    pattern: Option<Arc<[u8]>>,
    channel: Arc<[u8]>,
    message: Arc<[u8]>,
}

impl Delivery {
    fn cost(&self) -> usize {
        self.pattern.as_ref().map_or(0, |p| p.len())
            + self.channel.len()
            + self.message.len()
            + DELIVERY_OVERHEAD
    }
}

#[derive(Default)]
struct Queue {
    deliveries: Vec<Delivery>,
    bytes: usize,
}

/// A connection's undelivered messages.
#[derive(Default)]
pub(crate) struct Inbox {
    queue: Mutex<Queue>,
    /// Set when a message is queued, so that the connection loop, which drains the inbox after
    /// every batch, takes the lock only when there is something to take: most clients never
    /// subscribe.
    waiting: AtomicBool,
    /// Wakes the connection when a message arrives.
    arrived: Notify,
    /// Set once the inbox went over `INBOX_LIMIT`: the connection is to be closed.
    overflowed: AtomicBool,
    /// Wakes a connection stuck writing to a client that does not read, to close it.
    cut: Notify,
}

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, delivery: Delivery) {
        if self.overflowed.load(Ordering::Relaxed) {
            return;
        }
        let mut queue = self.lock();
        queue.bytes += delivery.cost();
        if queue.bytes > INBOX_LIMIT {
            // Released at once: the connection is closing and will not send them.
            *queue = Queue::default();
            drop(queue);
            self.overflowed.store(true, Ordering::Relaxed);
            self.cut.notify_one();
            self.arrived.notify_one();
            return;
        }
        queue.deliveries.push(delivery);
        self.waiting.store(true, Ordering::Release);
        drop(queue);
        self.arrived.notify_one();
    }

    /// Resolves when a message may have arrived.
    pub(crate) async fn arrived(&self) {
        self.arrived.notified().await
    }

    /// Resolves once the inbox overflowed.
    pub(crate) async fn cut_off(&self) {
        while !self.overflowed() {
            self.cut.notified().await;
        }
    }

    pub(crate) fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Relaxed)
    }

    /// Writes every queued message to `reply`, as RESP2 arrays or RESP3 pushes, whichever
    /// the connection speaks now.
    pub(crate) fn drain_into(&self, reply: &mut Reply) {
        if !self.waiting.swap(false, Ordering::AcqRel) {
            return;
        }
        let deliveries = std::mem::take(&mut *self.lock()).deliveries;
        for delivery in deliveries {
            match &delivery.pattern {
                Some(pattern) => {
                    reply.push(4);
                    reply.bulk(b"pmessage");
                    reply.bulk(pattern);
                }
                None => {
                    reply.push(3);
                    reply.bulk(b"message");
                }
            }
            reply.bulk(&delivery.channel);
            reply.bulk(&delivery.message);
        }
    }
}

/// One connection's subscriptions, kept sorted so that UNSUBSCRIBE without arguments answers
/// in a stable order.
struct Subscriber {
    inbox: Arc<Inbox>,
    channels: BTreeSet<Vec<u8>>,
    patterns: BTreeSet<Vec<u8>>,
}

impl Subscriber {
    fn names(&mut self, kind: SubscriptionKind) -> &mut BTreeSet<Vec<u8>> {
        match kind {
            SubscriptionKind::Channel => &mut self.channels,
            SubscriptionKind::Pattern => &mut self.patterns,
        }
    }

    fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }
}

type Listeners = HashMap<Vec<u8>, HashMap<u64, Arc<Inbox>>>;

#[derive(Default)]
struct Registry {
    subscribers: HashMap<u64, Subscriber>,
    channels: Listeners,
    patterns: Listeners,
}

impl Registry {
    fn listeners(&mut self, kind: SubscriptionKind) -> &mut Listeners {
        match kind {
            SubscriptionKind::Channel => &mut self.channels,
            SubscriptionKind::Pattern => &mut self.patterns,
        }
    }

    fn remove(&mut self, client: u64, kind: SubscriptionKind, name: &[u8]) -> usize {
        let Some(subscriber) = self.subscribers.get_mut(&client) else {
            return 0;
        };
        if subscriber.names(kind).remove(name) {
            let listeners = self.listeners(kind);
            if let Some(clients) = listeners.get_mut(name) {
                clients.remove(&client);
                if clients.is_empty() {
                    listeners.remove(name);
                }
            }
        }
        self.subscribers.get(&client).map_or(0, Subscriber::count)
    }
}

#[derive(Default)]
pub(crate) struct PubSub {
    registry: Mutex<Registry>,
}

/// Takes a connection's subscriptions away when it ends, however it ends.
pub(crate) struct Membership<'a> {
    pubsub: &'a PubSub,
    client: u64,
    pub(crate) inbox: Arc<Inbox>,
}

impl Drop for Membership<'_> {
    fn drop(&mut self) {
        let mut registry = self.pubsub.lock();
        for kind in [SubscriptionKind::Channel, SubscriptionKind::Pattern] {
            let names: Vec<Vec<u8>> = registry
                .subscribers
                .get_mut(&self.client)
                .map(|s| s.names(kind).iter().cloned().collect())
                .unwrap_or_default();
            for name in names {
                registry.remove(self.client, kind, &name);
            }
        }
        registry.subscribers.remove(&self.client);
    }
}

impl PubSub {
    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Gives a new connection its inbox; subscriptions last as long as the returned value.
    pub(crate) fn join(&self, client: u64) -> Membership<'_> {
        let inbox = Arc::new(Inbox::default());
        self.lock().subscribers.insert(
            client,
            Subscriber {
                inbox: inbox.clone(),
                channels: BTreeSet::new(),
                patterns: BTreeSet::new(),
            },
        );
        Membership {
            pubsub: self,
            client,
            inbox,
        }
    }

    /// INFO's `pubsub_clients`: connections subscribed to at least one channel or pattern.
    pub(crate) fn subscribed_clients(&self) -> usize {
        let registry = self.lock();
        registry
            .subscribers
            .values()
            .filter(|subscriber| subscriber.count() > 0)
            .count()
    }

    /// INFO's `pubsub_channels` and `pubsub_patterns`.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let registry = self.lock();
        (registry.channels.len(), registry.patterns.len())
    }
}

impl cmd::PubSub for PubSub {
    fn subscribe(&self, client: u64, kind: SubscriptionKind, name: &[u8]) -> usize {
        let mut registry = self.lock();
        let Some(subscriber) = registry.subscribers.get_mut(&client) else {
            return 0;
        };
        let inbox = subscriber.inbox.clone();
        if subscriber.names(kind).insert(name.to_vec()) {
            registry
                .listeners(kind)
                .entry(name.to_vec())
                .or_default()
                .insert(client, inbox);
        }
        registry
            .subscribers
            .get(&client)
            .map_or(0, Subscriber::count)
    }

    fn unsubscribe(&self, client: u64, kind: SubscriptionKind, name: &[u8]) -> usize {
        self.lock().remove(client, kind, name)
    }

    fn subscription_counts(&self, client: u64) -> (usize, usize) {
        self.lock()
            .subscribers
            .get(&client)
            .map_or((0, 0), |s| (s.channels.len(), s.patterns.len()))
    }

    fn subscriptions(&self, client: u64, kind: SubscriptionKind) -> Vec<Vec<u8>> {
        self.lock()
            .subscribers
            .get_mut(&client)
            .map(|s| s.names(kind).iter().cloned().collect())
            .unwrap_or_default()
    }

    fn publish(&self, channel: &[u8], message: &[u8]) -> usize {
        let channel: Arc<[u8]> = channel.into();
        let message: Arc<[u8]> = message.into();
        let mut receivers = Vec::new();
        {
            let registry = self.lock();
            if let Some(clients) = registry.channels.get(&*channel) {
                receivers.extend(clients.values().map(|inbox| (None, inbox.clone())));
            }
            for (pattern, clients) in &registry.patterns {
                if glob_match(pattern, &channel, false) {
                    let pattern: Arc<[u8]> = pattern.as_slice().into();
                    receivers.extend(
                        clients
                            .values()
                            .map(|inbox| (Some(pattern.clone()), inbox.clone())),
                    );
                }
            }
        }
        let count = receivers.len();
        for (pattern, inbox) in receivers {
            inbox.push(Delivery {
                pattern,
                channel: channel.clone(),
                message: message.clone(),
            });
        }
        count
    }

    fn deliver_pending(&self, client: u64, reply: &mut Reply) {
        let inbox = self
            .lock()
            .subscribers
            .get(&client)
            .map(|s| s.inbox.clone());
        if let Some(inbox) = inbox {
            inbox.drain_into(reply);
        }
    }

    fn channels(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        self.lock()
            .channels
            .keys()
            .filter(|channel| pattern.is_none_or(|p| glob_match(p, channel, false)))
            .cloned()
            .collect()
    }

    fn subscribers(&self, channel: &[u8]) -> usize {
        self.lock().channels.get(channel).map_or(0, HashMap::len)
    }

    fn patterns(&self) -> usize {
        self.lock().patterns.len()
    }
}
