//! The lock around the model under multi-threaded TCG.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};

/// A test-and-test-and-set lock: one atomic exchange to take it, a plain store to release it
/// (std's Mutex pays a second exchange on unlock, a measurable cost at one lock per access).
pub(super) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: `value` is only reached through a `SpinGuard`, which exists while `locked` is held.
unsafe impl<T: Send> Sync for SpinLock<T> {}

pub(super) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> SpinLock<T> {
    pub(super) fn new(value: T) -> Self {
        SpinLock { locked: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    /// # Safety
    /// No other thread may use the value meanwhile (single-threaded TCG).
    #[allow(clippy::mut_from_ref)]
    #[inline]
    pub(super) unsafe fn get_unsynchronized(&self) -> &mut T {
        unsafe { &mut *self.value.get() }
    }

    #[inline]
    pub(super) fn lock(&self) -> SpinGuard<'_, T> {
        while self.locked.swap(true, Acquire) {
            let mut spins = 0u32;
            while self.locked.load(Relaxed) {
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        SpinGuard { lock: self }
    }
}

impl<T> std::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> std::ops::DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock exclusively.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Release);
    }
}
