//! The replication stream: every write record in order, as the append-only file holds them,
//! numbered by byte offset. The backlog keeps its most recent `repl-backlog-size` bytes so that a
//! replica that lost its link continues from where it was; each replica reads from it at its own
//! position, and while one lags (a full sync still transferring the snapshot, a slow network)
//! the stream keeps what it has yet to read, up to `LAG_LIMIT` more.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use tokio::sync::watch;

/// How far past the backlog a replica may lag before it is dropped: Redis's default hard
/// `client-output-buffer-limit` for replicas.
pub(crate) const LAG_LIMIT: u64 = 256 * 1024 * 1024;

struct Held {
    bytes: VecDeque<u8>,
    /// The offset of `bytes[0]`.
    start: u64,
    /// Each reader's next offset, by client id.
    readers: BTreeMap<u64, u64>,
    backlog_size: u64,
    /// Whether any reader exists now or the backlog was ever filled: a primary without replicas
    /// keeps no backlog (and records nothing), as Redis.
    active: bool,
}

impl Held {
    fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    /// Drops what neither the backlog nor a reader still needs; readers lagging past the limit
    /// lose their place (their next read says so). Memory a lag made the stream take is given
    /// back once the lag is over.
    fn trim(&mut self) {
        let end = self.end();
        let limit_start = end.saturating_sub(self.backlog_size + LAG_LIMIT);
        self.readers.retain(|_, at| *at >= limit_start);
        let needed = self.readers.values().copied().min().unwrap_or(end);
        let keep_from = needed.min(end.saturating_sub(self.backlog_size));
        if keep_from > self.start {
            let drop = (keep_from - self.start) as usize;
            self.bytes.drain(..drop);
            self.start = keep_from;
        }
        let needed = self.bytes.len().max(self.backlog_size as usize);
        if self.bytes.capacity() > needed.saturating_mul(4) {
            self.bytes.shrink_to(needed);
        }
    }

    /// The bytes the stream holds beyond its backlog's size, for readers that lag.
    fn beyond_backlog(&self) -> u64 {
        (self.bytes.capacity() as u64).saturating_sub(self.backlog_size)
    }
}

/// Why a reader cannot read on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Behind;

pub(crate) struct Stream {
    held: Mutex<Held>,
    /// The offset the stream has reached; readers wait on it.
    end: watch::Sender<u64>,
    /// Mirrors `Held::active`, read by every write command.
    active: AtomicBool,
    /// Mirrors `Held::beyond_backlog`, read by every command under `maxmemory`.
    beyond_backlog: AtomicU64,
}

impl Stream {
    pub(crate) fn new(backlog_size: u64) -> Stream {
        Stream {
            held: Mutex::new(Held {
                bytes: VecDeque::new(),
                start: 0,
                readers: BTreeMap::new(),
                backlog_size,
                active: false,
            }),
            end: watch::channel(0).0,
            active: AtomicBool::new(false),
            beyond_backlog: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Memory the stream holds beyond the backlog for lagging replicas, which eviction leaves
    /// out, as Redis leaves out its replicas' output buffers: otherwise a replica falling behind
    /// would make its primary evict every key and then refuse writes, and to no purpose, as
    /// evicting does not make the replica catch up.
    pub(crate) fn beyond_backlog(&self) -> u64 {
        self.beyond_backlog.load(Ordering::Relaxed)
    }

    /// `Held::trim`, and what it leaves held beyond the backlog noted for `beyond_backlog`.
    fn trim(&self, held: &mut Held) {
        held.trim();
        self.beyond_backlog
            .store(held.beyond_backlog(), Ordering::Relaxed);
    }

    /// Whether writes are being recorded.
    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Starts recording writes from the current offset on. The caller keeps writes out
    /// meanwhile, so that none is recorded half-way.
    pub(crate) fn activate(&self) {
        let mut held = self.lock();
        held.active = true;
        self.active.store(true, Ordering::Release);
    }

    /// Stops recording and frees what is held; the offset stays.
    pub(crate) fn deactivate(&self) {
        let mut held = self.lock();
        held.start = held.end();
        held.bytes = VecDeque::new();
        held.readers.clear();
        held.active = false;
        self.active.store(false, Ordering::Release);
        self.trim(&mut held);
    }

    /// The offset of the next byte: Redis's `master_repl_offset`.
    pub(crate) fn offset(&self) -> u64 {
        *self.end.borrow()
    }

    /// (first offset held, bytes held), for INFO's `repl_backlog_*`.
    pub(crate) fn held(&self) -> (u64, u64) {
        let held = self.lock();
        (held.start, held.bytes.len() as u64)
    }

    pub(crate) fn set_backlog_size(&self, size: u64) {
        let mut held = self.lock();
        held.backlog_size = size;
        self.trim(&mut held);
    }

    /// Appends a record (or records) to the stream; returns the offset after them.
    pub(crate) fn append(&self, record: &[u8]) -> u64 {
        let mut held = self.lock();
        held.bytes.extend(record);
        self.trim(&mut held);
        let end = held.end();
        drop(held);
        self.end.send_replace(end);
        end
    }

    /// Forgets everything and continues at `offset`: a replica after a full sync, whose
    /// history is now its primary's. Readers lose their place.
    pub(crate) fn restart_at(&self, offset: u64) {
        let mut held = self.lock();
        held.bytes.clear();
        held.start = offset;
        held.readers.clear();
        self.trim(&mut held);
        held.active = true;
        self.active.store(true, Ordering::Release);
        drop(held);
        self.end.send_replace(offset);
    }

    /// Adds a reader at `offset`, if the stream still holds it (or it is the end).
    pub(crate) fn add_reader(&self, id: u64, offset: u64) -> Result<(), Behind> {
        let mut held = self.lock();
        if !held.active || offset < held.start || offset > held.end() {
            return Err(Behind);
        }
        held.readers.insert(id, offset);
        Ok(())
    }

    /// Adds a reader at the end: the caller holds writes back, so that the reader's first byte
    /// is the first write after what it copies now.
    pub(crate) fn add_reader_at_end(&self, id: u64) -> u64 {
        let mut held = self.lock();
        let end = held.end();
        held.readers.insert(id, end);
        end
    }

    pub(crate) fn remove_reader(&self, id: u64) {
        self.lock().readers.remove(&id);
    }

    /// Moves up to `max` bytes past the reader's position into `out`; Err when the reader lost
    /// its place (lagged too far, or the stream restarted).
    pub(crate) fn read(&self, id: u64, max: usize, out: &mut Vec<u8>) -> Result<(), Behind> {
        let mut held = self.lock();
        let start = held.start;
        let end = held.end();
        let at = *held.readers.get(&id).ok_or(Behind)?;
        let from = (at - start) as usize;
        let to = (end - start).min(at - start + max as u64) as usize;
        let (front, back) = held.bytes.as_slices();
        for (slice, base) in [(front, 0), (back, front.len())] {
            let lo = from.max(base).min(base + slice.len()) - base;
            let hi = to.max(base).min(base + slice.len()) - base;
            out.extend_from_slice(&slice[lo..hi]);
        }
        held.readers.insert(id, (to - from) as u64 + at);
        self.trim(&mut held);
        Ok(())
    }

    /// Resolves once the stream has grown past `offset`.
    pub(crate) async fn grown_past(&self, offset: u64) {
        let mut end = self.end.subscribe();
        let _ = end.wait_for(|&end| end > offset).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_get_every_byte_in_order_and_lose_their_place_only_past_the_limit() {
        let stream = Stream::new(16);
        stream.activate();
        stream.append(b"0123456789");
        stream.add_reader(1, 4).unwrap();
        stream.append(b"abcdefghij");
        let mut out = Vec::new();
        stream.read(1, 3, &mut out).unwrap();
        stream.read(1, 100, &mut out).unwrap();
        assert_eq!(out, b"456789abcdefghij");
        assert_eq!(stream.offset(), 20);
        // The backlog keeps the last 16 bytes for a reconnecting reader.
        assert_eq!(stream.add_reader(2, 3), Err(Behind));
        stream.add_reader(2, 4).unwrap();
        assert_eq!(stream.held(), (4, 16));
    }

    #[test]
    fn a_lagging_reader_pins_the_stream_beyond_the_backlog() {
        let stream = Stream::new(16);
        stream.activate();
        let at = stream.add_reader_at_end(7);
        let chunk = vec![b'x'; 1000];
        for _ in 0..10 {
            stream.append(&chunk);
        }
        assert_eq!(stream.held(), (at, 10_000));
        let mut out = Vec::new();
        stream.read(7, usize::MAX, &mut out).unwrap();
        assert_eq!(out.len(), 10_000);
        assert_eq!(stream.held(), (10_000 - 16, 16));
    }

    #[test]
    fn an_inactive_stream_refuses_readers() {
        let stream = Stream::new(16);
        assert_eq!(stream.add_reader(1, 0), Err(Behind));
        stream.restart_at(500);
        assert_eq!(stream.offset(), 500);
        assert_eq!(stream.add_reader(1, 500), Ok(()));
    }
}
