//! Memory accounting: the process's allocator wrapped in a counter, so `used_memory` in INFO is
//! exact rather than estimated.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct CountingAllocator;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the counter only observes.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller keeps `alloc`'s contract (a layout of non-zero size), which is the
        // system allocator's.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`: the caller's contract is the system allocator's.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller passes a block this allocator gave, with its layout; every block it
        // gives is the system allocator's, unchanged.
        unsafe { System.dealloc(ptr, layout) };
        ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as in `dealloc`, `ptr` and `layout` are the system allocator's block, and the
        // caller keeps `realloc`'s contract for `new_size`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
            ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        new
    }
}

/// Bytes currently allocated by the process.
pub fn allocated() -> usize {
    ALLOCATED.load(Ordering::Relaxed)
}

/// The highest `allocated()` seen by `note_peak`, which the server calls periodically.
pub fn peak() -> usize {
    note_peak();
    PEAK.load(Ordering::Relaxed)
}

pub fn note_peak() {
    PEAK.fetch_max(allocated(), Ordering::Relaxed);
}

/// Resident set size, from /proc; 0 where that is not available.
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// The machine's physical memory in bytes, asked once; 2 GiB where the system cannot say.
pub fn physical_bytes() -> u64 {
    static PHYSICAL: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *PHYSICAL.get_or_init(|| {
        // SAFETY: sysconf only reads a system parameter; a failure is -1, handled below.
        let (pages, page_size) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        match (u64::try_from(pages), u64::try_from(page_size)) {
            (Ok(pages), Ok(page_size)) if pages > 0 && page_size > 0 => {
                pages.saturating_mul(page_size)
            }
            _ => 2 << 30,
        }
    })
}
