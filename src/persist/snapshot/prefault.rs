//! Faulting in a large value's fresh memory ahead of the reads that fill it.
//!
//! A filter built from a snapshot header is zero pages the kernel has not supplied yet: the
//! first write to each page faults, and the kernel zeroes it (a 2 MiB page for a large filter)
//! before the file's bytes land in it. Done by the reading thread, that zeroing runs serially
//! with the reads, and while it runs the disk runs out of read-ahead and waits. A helper thread
//! asks the kernel to populate the pages ahead of the reads (MADV_POPULATE_WRITE, Linux 5.14),
//! so that the zeroing runs on another core while the reader waits for the disk and copies.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Values smaller than this are filled without a helper: starting a thread costs more than the
/// faults it would take over.
const PREFAULT_MIN_BYTES: usize = 8 << 20;
/// The helper populates this much at a time, one 2 MiB page or a few hundred small ones, so
/// that it notices soon when the reader has overtaken it or the load has stopped.
const POPULATE_STEP: usize = 2 << 20;

/// Fills `memory` in pieces of `piece_len` bytes, in order, with `fill`; for a large `memory`
/// a helper thread faults its pages in ahead of the piece being filled. Where the kernel cannot
/// populate pages on request, the helper gives up at once and the fills fault as they go.
pub(super) fn fill_faulting_ahead<E>(
    memory: &mut [u8],
    piece_len: usize,
    mut fill: impl FnMut(&mut [u8]) -> Result<(), E>,
) -> Result<(), E> {
    if memory.len() < PREFAULT_MIN_BYTES || !cfg!(target_os = "linux") {
        return memory.chunks_mut(piece_len).try_for_each(fill);
    }
    let (start, len) = (memory.as_mut_ptr() as usize, memory.len());
    // The end of the piece being filled: the helper skips to there when it falls behind, as
    // the reader's own writes fault those pages in already.
    let reader_at = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        // Should the thread not start, the fills fault as they go.
        let _ = std::thread::Builder::new()
            .name("sieved-prefault".into())
            .spawn_scoped(scope, || populate_ahead(start, len, &reader_at, &stop));
        let mut filled = 0;
        let result = memory.chunks_mut(piece_len).try_for_each(|piece| {
            filled += piece.len();
            reader_at.store(filled, Ordering::Relaxed);
            fill(piece)
        });
        // The scope waits for the helper before `memory` can be freed (after a failed load,
        // say): it must not populate pages that no longer belong to the value.
        stop.store(true, Ordering::Relaxed);
        result
    })
}

/// Populates bytes `start..start + len` of this process's memory, `POPULATE_STEP` at a time,
/// each time from wherever is further on: where it stopped, or the end of the reader's piece.
/// Stops at the end, when `stop` is set, or at the first request the kernel refuses.
fn populate_ahead(start: usize, len: usize, reader_at: &AtomicUsize, stop: &AtomicBool) {
    let mut at = 0;
    while at < len && !stop.load(Ordering::Relaxed) {
        at = at.max(reader_at.load(Ordering::Relaxed));
        let step = POPULATE_STEP.min(len.saturating_sub(at));
        if step == 0 || !populate_for_writing(start + at, step) {
            return;
        }
        at += step;
    }
}

/// Asks the kernel to supply the pages under `addr..addr + len` now, as writes to them would,
/// without changing what they hold; false if it will not (a kernel before 5.14 says EINVAL).
fn populate_for_writing(addr: usize, len: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let aligned = addr / PAGE * PAGE;
        // SAFETY: the range is inside the value's memory (widened to the page that holds its
        // first byte, which the same allocation maps), which `fill_faulting_ahead` keeps alive
        // until this thread has stopped. MADV_POPULATE_WRITE faults pages in as a write would
        // but writes nothing, so the reader filling the same pages at the same time sees no
        // change.
        unsafe {
            libc::madvise(
                aligned as *mut libc::c_void,
                addr + len - aligned,
                libc::MADV_POPULATE_WRITE,
            ) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (addr, len);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces come in order and cover the memory once, with or without the helper; a failed
    /// fill stops the rest, and the helper with it.
    #[test]
    fn fills_every_piece_in_order_and_stops_at_a_failure() {
        for len in [PREFAULT_MIN_BYTES - 1, 3 * PREFAULT_MIN_BYTES + 5] {
            let mut memory = vec![0u8; len];
            let mut next = 0u8;
            fill_faulting_ahead(&mut memory, 1 << 20, |piece| {
                piece.fill(next);
                next += 1;
                Ok::<(), ()>(())
            })
            .expect("filled");
            for (index, piece) in memory.chunks(1 << 20).enumerate() {
                assert!(piece.iter().all(|&b| b == index as u8), "{len}: {index}");
            }
            let mut pieces = 0;
            let failed = fill_faulting_ahead(&mut memory, 1 << 20, |_| {
                pieces += 1;
                if pieces == 2 {
                    Err("stop")
                } else {
                    Ok(())
                }
            });
            assert_eq!((failed, pieces), (Err("stop"), 2), "{len}");
        }
    }
}
