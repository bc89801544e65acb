//! A connection's read buffer, counted in a server-wide total. Each client's unfinished request
//! is bounded by `client-query-buffer-limit`, but many clients sending large requests slowly
//! could together still hold any amount; `max-query-buffers-memory` bounds their sum. The buffer
//! grows only here, so the total counts what the buffers really hold: their capacity.

use std::sync::atomic::{AtomicU64, Ordering};

/// Buffers that grew past this for one large request are released once it is done.
const KEEP_BUFFER: usize = 256 * 1024;

pub(super) struct QueryBuffer<'a> {
    bytes: Vec<u8>,
    /// What this buffer adds to `total`: its capacity when last counted.
    counted: usize,
    total: &'a AtomicU64,
}

/// Growing the buffer would take the total past the ceiling; the total as it stands.
#[derive(Debug, PartialEq)]
pub(super) struct OverCeiling(pub u64);

impl<'a> QueryBuffer<'a> {
    /// The first buffer is counted but not held to the ceiling: every connection needs one.
    pub(super) fn new(initial: usize, total: &'a AtomicU64) -> QueryBuffer<'a> {
        let mut buffer = QueryBuffer {
            bytes: Vec::new(),
            counted: 0,
            total,
        };
        buffer.bytes.reserve_exact(initial);
        buffer.recount();
        buffer
    }

    /// What has been read and not consumed yet.
    pub(super) fn pending(&self) -> &[u8] {
        &self.bytes
    }

    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The buffer to read into; reads fill the room `make_room` made, and never grow it.
    pub(super) fn for_reading(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// Drops `n` bytes from the front: requests that have run.
    pub(super) fn consume(&mut self, n: usize) {
        self.bytes.drain(..n);
        if self.bytes.is_empty() && self.bytes.capacity() > KEEP_BUFFER {
            self.bytes = Vec::new();
            self.recount();
        }
    }

    /// Makes at least half of `room` free, growing geometrically (so that a large request is
    /// copied a few times, not once per read) but never past `client_limit` plus the room, nor
    /// past `ceiling` (0 for none) for all buffers together. The room is reserved before it is
    /// allocated, so concurrent connections cannot together overshoot the ceiling.
    pub(super) fn make_room(
        &mut self,
        room: usize,
        client_limit: usize,
        ceiling: u64,
    ) -> Result<(), OverCeiling> {
        let (len, capacity) = (self.bytes.len(), self.bytes.capacity());
        if capacity - len >= room / 2 {
            return Ok(());
        }
        let needed = len + room;
        let doubled = capacity
            .saturating_mul(2)
            .min(client_limit.saturating_add(room));
        let wanted = needed.max(doubled);
        let (least, most) = ((needed - capacity) as u64, (wanted - capacity) as u64);
        let granted = if ceiling == 0 {
            self.total.fetch_add(most, Ordering::Relaxed);
            most
        } else {
            let before = self
                .total
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |total| {
                    (total + least <= ceiling).then(|| total + most.min(ceiling - total))
                })
                .map_err(OverCeiling)?;
            most.min(ceiling - before)
        };
        self.counted += granted as usize;
        self.bytes.reserve_exact(capacity + granted as usize - len);
        // The allocator may hand out a little more than asked.
        self.recount();
        Ok(())
    }

    fn recount(&mut self) {
        let capacity = self.bytes.capacity();
        if capacity >= self.counted {
            self.total
                .fetch_add((capacity - self.counted) as u64, Ordering::Relaxed);
        } else {
            self.total
                .fetch_sub((self.counted - capacity) as u64, Ordering::Relaxed);
        }
        self.counted = capacity;
    }
}

impl Drop for QueryBuffer<'_> {
    fn drop(&mut self) {
        self.total.fetch_sub(self.counted as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(buffer: &mut QueryBuffer) {
        let capacity = buffer.bytes.capacity();
        buffer.for_reading().resize(capacity, b'x');
    }

    #[test]
    fn the_total_follows_capacity_and_holds_the_ceiling() {
        let total = AtomicU64::new(0);
        let held = || total.load(Ordering::Relaxed);
        let mut first = QueryBuffer::new(1024, &total);
        assert_eq!(held(), first.bytes.capacity() as u64);
        first.make_room(8192, usize::MAX, 0).unwrap();
        assert!(first.bytes.capacity() >= 8192);
        assert_eq!(held(), first.bytes.capacity() as u64);

        let ceiling = 64 * 1024;
        let mut second = QueryBuffer::new(1024, &total);
        fill(&mut second);
        second.make_room(32 * 1024, usize::MAX, ceiling).unwrap();
        assert!(held() <= ceiling);
        assert_eq!(
            held(),
            (first.bytes.capacity() + second.bytes.capacity()) as u64
        );
        fill(&mut second);
        let before = held();
        assert_eq!(
            second.make_room(64 * 1024, usize::MAX, ceiling),
            Err(OverCeiling(before))
        );
        assert_eq!(held(), before);
        second.consume(second.len());
        drop(second);
        drop(first);
        assert_eq!(held(), 0);
    }

    #[test]
    fn growth_stops_near_the_client_limit() {
        let total = AtomicU64::new(0);
        let mut buffer = QueryBuffer::new(1024, &total);
        fill(&mut buffer);
        buffer.make_room(1024, 1500, 0).unwrap();
        assert!(buffer.bytes.capacity() < 4096);
        assert_eq!(
            total.load(Ordering::Relaxed),
            buffer.bytes.capacity() as u64
        );
    }
}
