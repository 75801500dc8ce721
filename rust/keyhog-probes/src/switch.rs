//! The one word both switches share.  A span is timed when khprof traces
//! the module (the kernel's semaphores) or when the program profiles
//! itself (the seed's `set_enabled`, or a `Session`); the untraced,
//! disabled span must still cost one load, a test and a not-taken branch
//! per edge, as before the in-process side existed.  So the in-process
//! switch lives in the same 8-byte object as the semaphores,
//! `keyhog_semaphores` (docs/PROBES.md, "Semaphores"):
//!
//! | bytes | written by | meaning |
//! |-------|------------|---------|
//! | +0, +2 | the kernel | `span`, `batch`: khprof traces this module |
//! | +4 | the kernel | `monotonic`: batched spans use CLOCK_MONOTONIC |
//! | +6 | this crate | `local`: the in-process profile counts (`set_enabled`) |
//!
//! A span edge loads the whole 8 bytes once (`movq` where the probes-only
//! crate had `movl`: the same instruction count, measured in `make bench`
//! row 1) and takes the slow path when any of it is set.  The kernel
//! writes only its 2-byte counters and this crate only the last 2 bytes,
//! each with a 2-byte store, so neither ever overwrites the other; the
//! C header leaves +6 reserved and never reads it.  `monotonic` alone
//! (never set without `batch` but for an instant while khprof attaches)
//! sends a span down a slow path that then records nothing, as `batch`
//! would have been about to.
//!
//! Where there are no probe sites (other targets, the `disabled` feature)
//! the word is a plain atomic holding `local` at the same place.

/// Where `local` sits in the word.
const LOCAL_SHIFT: u32 = 48;

/// Whether khprof's span or batch probes are attached (`KH_TRACING()`).
#[inline(always)]
pub(crate) fn traced(word: u64) -> bool {
    word as u32 != 0
}

/// Whether the in-process profile counts.
#[inline(always)]
pub(crate) fn local(word: u64) -> bool {
    word >> LOCAL_SHIFT != 0
}

#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux", not(feature = "disabled")))]
mod imp {
    // The loads and the store are the architecture's (src/arch_x86_64.rs,
    // src/arch_aarch64.rs): asm blocks, so that the hidden symbol is one
    // pc-relative load from any crate `span` is inlined in, and not
    // `pure`, so that each edge re-reads it.

    /// The whole word, one load.
    #[inline(always)]
    pub(crate) fn word() -> u64 {
        crate::arch::switch_word()
    }

    /// `local` alone: the input counters' test (no span edge there).
    #[inline(always)]
    pub(crate) fn local_enabled() -> bool {
        crate::arch::switch_local() != 0
    }

    /// `monotonic` or `local`, the 4 bytes at +4 in one load: the clock
    /// a batched span's start reads (`probes::batch_start`), which is
    /// CLOCK_MONOTONIC for either, 3 instructions fewer per traced span
    /// than testing the two halves apart (callgrind).
    #[inline(always)]
    pub(crate) fn monotonic_or_local() -> bool {
        crate::arch::switch_upper() != 0
    }

    /// Sets `local` with a 2-byte store, leaving the kernel's bytes alone.
    pub(crate) fn set_local(on: bool) {
        crate::arch::set_switch_local(u16::from(on));
    }
}

#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux", not(feature = "disabled"))))]
mod imp {
    use core::sync::atomic::{AtomicU64, Ordering};

    static WORD: AtomicU64 = AtomicU64::new(0);

    #[inline(always)]
    pub(crate) fn word() -> u64 {
        WORD.load(Ordering::Relaxed)
    }

    #[inline(always)]
    pub(crate) fn local_enabled() -> bool {
        super::local(word())
    }

    pub(crate) fn set_local(on: bool) {
        WORD.store(u64::from(on) << super::LOCAL_SHIFT, Ordering::Relaxed);
    }

    pub(crate) fn monotonic_or_local() -> bool {
        local_enabled()
    }
}

pub(crate) use imp::{local_enabled, monotonic_or_local, set_local, word};
