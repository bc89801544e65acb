//! The memory under every filter: zeroed arrays that may fail instead of aborting, huge pages for
//! large ones, prefetch hints, and the little-endian byte view that dumps and snapshots use.

use super::FilterError;

/// Arrays smaller than this (1 MiB) are left to the caches; see `Link::worth_prefetching`.
pub(super) const PREFETCH_MIN_WORDS: usize = 1 << 17;

/// Asks the CPU to start loading the cache line that holds `items[index]`. Only a hint: it reads
/// nothing and cannot fault. Where no prefetch instruction is wired up it does nothing.
#[inline(always)]
pub(super) fn prefetch_at<T>(items: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: PREFETCHT0 never dereferences its operand in a way that can fault, whatever the
        // address, and SSE is part of the x86-64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(items.as_ptr().wrapping_add(index).cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, index);
}

/// Arrays from this size up are worth backing with huge pages.
const HUGE_PAGE_MIN_BYTES: usize = 8 << 20;

/// Asks Linux to back the array with 2 MiB pages. Every probe of a large filter lands on a random
/// page, so with 4 KiB pages nearly every probe also misses the TLB and walks the page tables;
/// with 2 MiB pages the walk is shorter and mostly cached. On a 1 GiB filter a look-up went from
/// 2.0 to 1.5 times the time fastbloom takes on small pages (benches/filters.rs). The kernel may
/// ignore the advice (transparent huge pages disabled); nothing changes then.
fn advise_huge_pages(words: &mut [u64]) {
    let bytes = std::mem::size_of_val(words);
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const HUGE_PAGE: usize = 2 << 20;
        let start = words.as_mut_ptr() as usize;
        // madvise wants a page-aligned start; the 2 MiB pieces at either end that the array only
        // partly covers stay on small pages.
        let aligned = start.next_multiple_of(HUGE_PAGE);
        let end = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
        if end > aligned {
            // SAFETY: the range lies inside the allocation that `words` owns; MADV_HUGEPAGE only
            // changes how the kernel backs those pages, never their contents.
            unsafe {
                libc::madvise(
                    aligned as *mut libc::c_void,
                    end - aligned,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
}

/// A zeroed word array, of exactly `len` words, that may fail instead of aborting. It comes from
/// `alloc_zeroed` with the words' own alignment, which is calloc: the kernel supplies zero pages
/// lazily, so reserving a large filter costs no time and no resident memory until bits are set.
/// (A larger alignment would make the allocator zero the pages itself, at once.) Large arrays are
/// advised onto huge pages before any is touched.
pub(super) fn zeroed_words(len: usize) -> Result<Vec<u64>, FilterError> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u64>(len).map_err(|_| FilterError::OutOfMemory)?;
    // SAFETY: the layout has non-zero size. The pointer, if not null, comes from the global
    // allocator with exactly the layout of a Vec<u64> of capacity `len`, and all-zero bytes are a
    // valid u64, so all `len` elements are initialised.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout) as *mut u64;
        if ptr.is_null() {
            return Err(FilterError::OutOfMemory);
        }
        let mut words = Vec::from_raw_parts(ptr, len, len);
        advise_huge_pages(&mut words);
        Ok(words)
    }
}

/// Appends `len` bytes of `words`, starting at byte `from`, each word little-endian: the byte view
/// that dumps use for every filter type, whatever its word layout.
///
/// A snapshot copies under the filter's read lock, so this must be as fast as a memory copy:
/// whole words go through a loop over fixed-size chunks that compiles to one, not a push of
/// eight bytes at a time.
pub(super) fn read_le_bytes(words: &[u64], from: u64, len: u64, out: &mut Vec<u8>) {
    let (from, end) = (from as usize, (from + len) as usize);
    let start = out.len();
    out.resize(start + (end - from), 0);
    let mut dst = &mut out[start..];
    let mut at = from;
    let head = (8 - at % 8) % 8;
    if head > 0 {
        let take = head.min(end - at);
        let word = words[at / 8].to_le_bytes();
        dst[..take].copy_from_slice(&word[at % 8..at % 8 + take]);
        dst = &mut dst[take..];
        at += take;
    }
    let whole = (end - at) / 8;
    let (body, tail) = dst.split_at_mut(whole * 8);
    for (chunk, word) in body.chunks_exact_mut(8).zip(&words[at / 8..at / 8 + whole]) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    at += whole * 8;
    if !tail.is_empty() {
        let word = words[at / 8].to_le_bytes();
        tail.copy_from_slice(&word[..tail.len()]);
    }
}

/// Hands `fill` the memory of `words` as their little-endian byte view, to overwrite wholly: a
/// snapshot's payload is read straight into the array this way, with no second copy. On a
/// big-endian machine the words are put back in native order afterwards.
pub(super) fn fill_le_bytes<E>(
    words: &mut [u64],
    fill: &mut impl FnMut(&mut [u8]) -> Result<(), E>,
) -> Result<(), E> {
    let len = std::mem::size_of_val(words);
    // SAFETY: the bytes are exactly the words' memory, borrowed mutably for no longer than
    // `words` is; u8 has no alignment requirement and any bytes make a valid u64.
    let bytes = unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) };
    let filled = fill(bytes);
    if cfg!(target_endian = "big") {
        for word in words.iter_mut() {
            *word = u64::from_le(*word);
        }
    }
    filled
}

/// Overwrites the bytes of `words` at `from` with `data`; the caller has checked the range.
pub(super) fn write_le_bytes(words: &mut [u64], from: u64, data: &[u8]) {
    let mut at = from as usize;
    let mut rest = data;
    while !rest.is_empty() {
        let offset = at % 8;
        let take = (8 - offset).min(rest.len());
        let mut word = words[at / 8].to_le_bytes();
        word[offset..offset + take].copy_from_slice(&rest[..take]);
        words[at / 8] = u64::from_le_bytes(word);
        at += take;
        rest = &rest[take..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filling_the_byte_view_sets_the_words_it_describes() {
        let expected: Vec<u64> = (0..5u64).map(|i| 0x0102_0304_0506_0708 << i).collect();
        let bytes: Vec<u8> = expected.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut words = vec![0u64; 5];
        fill_le_bytes(&mut words, &mut |into: &mut [u8]| {
            into.copy_from_slice(&bytes);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(words, expected);
        let refused = fill_le_bytes(&mut words, &mut |_: &mut [u8]| Err("stop"));
        assert_eq!(refused, Err("stop"));
    }

    #[test]
    fn byte_view_matches_the_words_for_every_range() {
        let words: Vec<u64> = (0..5u64)
            .map(|i| 0x0102_0304_0506_0708u64.wrapping_mul(i + 1))
            .collect();
        let expected: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        for from in 0..expected.len() {
            for end in from..=expected.len() {
                let mut out = vec![0xAA];
                read_le_bytes(&words, from as u64, (end - from) as u64, &mut out);
                assert_eq!(out[0], 0xAA);
                assert_eq!(&out[1..], &expected[from..end], "bytes {from}..{end}");
            }
        }
    }
}
