//! A global allocator that counts, per thread, the allocations a piece of
//! code makes: for tests that show a steady state allocates nothing.
//!
//! A test binary installs it once and asks [`allocations`]:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: tickpack_testkit::alloc::Counting = tickpack_testkit::alloc::Counting;
//! let (_, n) = tickpack_testkit::alloc::allocations(|| work());
//! assert_eq!(n, 0);
//! ```
//!
//! Per thread, so other tests running at the same time do not disturb the
//! count; reallocations count, frees do not.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

/// Forwards to the system allocator, counting allocations per thread.
pub struct Counting;

// SAFETY: every call forwards to the system allocator unchanged; the
// counter is only a statistic (a const-initialised thread-local Cell,
// which does not allocate).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations (and reallocations) `f` makes on this thread: 0 unless
/// [`Counting`] is the test binary's global allocator.
pub fn allocations<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCS.with(Cell::get);
    let out = f();
    (out, ALLOCS.with(Cell::get) - before)
}
