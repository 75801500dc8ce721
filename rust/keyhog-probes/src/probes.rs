//! khprof's probe ABI, version 7 (docs/PROBES.md; the C twin is
//! include/keyhog_profile.h): the semaphore word, the probe sites and their
//! stapsdt notes, and the clocks the sites pass.
//!
//! Everything the ABI fixes lives in this file, but what only one
//! architecture spells (its instructions, its assembler's syntax: the
//! files src/arch_x86_64.rs and src/arch_aarch64.rs) and the note and
//! symbols every site and module carries (src/note.rs).  A probe is one
//! line of the table at the end (`probe!`), so an ABI bump that adds a
//! probe adds a line there, a call where it fires, and a new `ABI_VERSION`.

/// Version of the probe ABI this crate emits (`KH_PROBE_ABI_VERSION`),
/// passed by every `session_start` probe.
pub const ABI_VERSION: u64 = 7;

/// Completed spans a thread buffers in batch mode before one `batch` probe
/// hands them over (`KH_BATCH_CAPACITY`; 64 before probe ABI 7 here, the
/// header's ABI 5 layout).
pub(crate) const BATCH_CAPACITY: usize = 256;

/// Batched times are CLOCK_MONOTONIC nanoseconds or TSC ticks with this
/// bit set (`KH_TIME_TSC`).
pub(crate) const TIME_TSC: u64 = 1 << 63;

/// One completed span as the `batch` probe hands it over
/// (`struct kh_batch_entry`, 24 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct BatchEntry {
    pub start_ns: u64,
    pub end_ns: u64,
    pub stage: u32,
    pub attribution: u32,
}

const _: () = assert!(core::mem::size_of::<BatchEntry>() == 24);

#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux", not(feature = "disabled")))]
mod sites {
    // What only one architecture spells: src/arch_x86_64.rs, src/arch_aarch64.rs.
    pub(crate) use crate::arch::{clock_site, next_session_sequence, semaphores, tsc};
    use crate::arch::identity_table;

    /// Bumps the table's generation: odd while an entry is being written.
    ///
    /// SAFETY: table is kh_identity_table.
    unsafe fn bump_generation(table: *mut u8) {
        let generation = table.add(super::IDENTITY_GENERATION) as *mut u64;
        let next = core::ptr::read_volatile(generation).wrapping_add(1);
        core::sync::atomic::fence(core::sync::atomic::Ordering::Release);
        core::ptr::write_volatile(generation, next);
        core::sync::atomic::fence(core::sync::atomic::Ordering::Release);
    }

    /// Empties the table at a session's start, as the header does.
    pub(crate) fn clear_identity() {
        let table = identity_table();
        // SAFETY: the table is the 2,576 bytes src/note.rs defines (or a C
        // module's identical one); session events come from one thread.
        unsafe {
            bump_generation(table);
            core::ptr::write_volatile(table.add(super::IDENTITY_COUNT) as *mut u32, 0);
            bump_generation(table);
        }
    }

    /// Keeps key = value (both NUL-free, key with its NUL) in the table:
    /// the latest value of a key in its entry, 16 keys at most.
    pub(crate) fn keep_identity(key: &[u8], value: &[u8]) {
        use super::{IDENTITY_ENTRY, IDENTITY_KEY, IDENTITY_SLOTS, IDENTITY_VALUE};
        let table = identity_table();
        let key = key.split(|&b| b == 0).next().unwrap_or(&[]);
        if key.len() >= IDENTITY_KEY || value.len() >= IDENTITY_VALUE {
            return; // longer than the tracer reads from the probe, too
        }
        // SAFETY: as in clear_identity; every offset is inside the table.
        unsafe {
            let count_at = table.add(super::IDENTITY_COUNT) as *mut u32;
            let count = (core::ptr::read_volatile(count_at) as usize).min(IDENTITY_SLOTS);
            let entries = table.add(super::IDENTITY_ENTRIES);
            let mut slot = 0;
            while slot < count {
                let stored = core::slice::from_raw_parts(entries.add(slot * IDENTITY_ENTRY),
                                                         IDENTITY_KEY);
                if stored.split(|&b| b == 0).next() == Some(key) {
                    break;
                }
                slot += 1;
            }
            if slot >= IDENTITY_SLOTS {
                return;
            }
            let entry = entries.add(slot * IDENTITY_ENTRY);
            bump_generation(table);
            core::ptr::write_bytes(entry, 0, IDENTITY_ENTRY);
            core::ptr::copy_nonoverlapping(key.as_ptr(), entry, key.len());
            core::ptr::copy_nonoverlapping(value.as_ptr(), entry.add(IDENTITY_KEY), value.len());
            if slot == count {
                core::ptr::write_volatile(count_at, (slot + 1) as u32);
            }
            core::ptr::write_volatile(table as *mut u32, super::IDENTITY_TABLE_VERSION);
            bump_generation(table);
        }
    }

    /// Sets `kh_current_state` (probe ABI 3), found through the GOT as
    /// the symbol has default visibility; a plain store, like the header's
    /// to its volatile word.  Rare path (session events).
    pub(crate) fn set_current_state(state: u32) {
        // SAFETY: kh_current_state is the 4-byte word src/note.rs defines
        // (or the one a C module of the process defines, which wins).
        unsafe { core::ptr::write_volatile(crate::arch::current_state_word(), state) }
    }

    /// The value of `kh_current_state`.
    pub(crate) fn current_state() -> u32 {
        // SAFETY: as above, a plain load.
        unsafe { core::ptr::read_volatile(crate::arch::current_state_word()) }
    }

    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }

    extern "C" {
        // From the C library std links anyway; declared here because the
        // crate takes no dependencies.
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }

    const CLOCK_MONOTONIC: i32 = 1;

    /// CLOCK_MONOTONIC in ns, the clock BPF's bpf_ktime_get_ns() reads.
    pub(crate) fn now_ns() -> u64 {
        let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: ts is a valid timespec; CLOCK_MONOTONIC always exists.
        unsafe { clock_gettime(CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
    }
}

#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux", not(feature = "disabled"))))]
mod sites {
    // No probe sites on this target (the header's `KH_PROBES_ENABLED 0`):
    // the API stays, every probe is a no-op and nothing is ever traced.
    pub(crate) fn semaphores() -> u32 {
        0
    }
    pub(crate) fn next_session_sequence() -> u64 {
        use core::sync::atomic::{AtomicU64, Ordering};
        static SEQUENCE: AtomicU64 = AtomicU64::new(0);
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    }
    pub(crate) fn now_ns() -> u64 {
        0
    }
    pub(crate) fn tsc() -> u64 {
        super::TIME_TSC
    }
    pub(crate) fn clock_site() {}
    pub(crate) fn set_current_state(_state: u32) {}
    pub(crate) fn current_state() -> u32 {
        super::STATE_COUNT
    }
    pub(crate) fn clear_identity() {}
    pub(crate) fn keep_identity(_key: &[u8], _value: &[u8]) {}
}

pub(crate) use sites::{
    clear_identity, clock_site, current_state, keep_identity, next_session_sequence, now_ns,
    semaphores, set_current_state, tsc,
};

/// The start of a batched span: the CPU's counter (`tsc`: the TSC, ~11 ns
/// here, or aarch64's CNTVCT_EL0), or CLOCK_MONOTONIC
/// (vDSO, ~26 ns) where khprof asked for it (probe ABI 4: the `monotonic`
/// semaphore at +4, set while khprof has the `clock_monotonic` site
/// attached because it does not trust the TSC here) or while the
/// in-process profile counts too, so that one reading serves both (hook of
/// src/counters.rs: both tested in one load, src/switch.rs); the exit reads
/// the clock its start did.
#[inline(always)]
pub(crate) fn batch_start() -> u64 {
    if crate::switch::monotonic_or_local() {
        now_ns()
    } else {
        tsc()
    }
}

// `struct kh_identity_table` (keyhog_profile.h): version u32, count u32,
// generation u64, then 16 entries of a 32-byte key and a 128-byte value.
const IDENTITY_TABLE_VERSION: u32 = 1;
const IDENTITY_COUNT: usize = 4;
const IDENTITY_GENERATION: usize = 8;
const IDENTITY_ENTRIES: usize = 16;
const IDENTITY_SLOTS: usize = 16;
const IDENTITY_KEY: usize = 32;
const IDENTITY_VALUE: usize = 128;
const IDENTITY_ENTRY: usize = IDENTITY_KEY + IDENTITY_VALUE;
const _: () = assert!(IDENTITY_ENTRIES + IDENTITY_SLOTS * IDENTITY_ENTRY == 2576);

/// `kh_current_state` while no session is open (`KH_STATE_COUNT`).
pub(crate) const STATE_COUNT: u32 = 8;

/// The span half of the semaphore word: span or pair mode is attached.
#[inline(always)]
pub(crate) fn span_mode(word: u32) -> bool {
    word & 0xffff != 0
}

/// The batch half: batch mode is attached.
#[inline(always)]
pub(crate) fn batch_mode(word: u32) -> bool {
    word >> 16 != 0
}

/// `probe!(function: nop, "name", semaphore; args...)` defines an inlined
/// function that is one probe site: the architecture's probed instruction
/// at local label 990 (`probe_site!`: on x86-64 a nop between `lea
/// -128(%rsp),%rsp` and `lea 128(%rsp),%rsp`, since the optimized uprobe's
/// call writes below %rsp, where a leaf function keeps its red-zone
/// locals; on aarch64 a NOP alone) and the stapsdt note that libbpf,
/// bpftrace, perf and khprof read, with `.stapsdt.base` for prelink
/// adjustment -- the layout of the C header's `KH__SITE_BEGIN` (the note's
/// `"?"` puts it in the section group of the function, so a copy the
/// linker drops as a duplicate takes its note along).  Every inlined call
/// is a site of its own, as with the header's macros; sites meant to exist
/// once per module are called from `#[inline(never)]` functions.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux", not(feature = "disabled")))]
macro_rules! probe {
    ($function:ident: $nop:ident, $name:literal, $semaphore:ident; $($arg:ident),+) => {
        #[inline(always)]
        #[allow(dead_code)]
        pub(crate) fn $function($($arg: u64),+) {
            // SAFETY: probe_site!'s, a nop and its note.
            unsafe {
                probe_site!($nop,
                            probe_note!(probe_semaphore!($semaphore), $name,
                                        probe_args!($($arg),+)),
                            $($arg),+)
            }
        }
    };
}

#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux", not(feature = "disabled"))))]
macro_rules! probe {
    ($function:ident: $nop:ident, $name:literal, $semaphore:ident; $($arg:ident),+) => {
        #[inline(always)]
        #[allow(dead_code)]
        pub(crate) fn $function($($arg: u64),+) {
            $(let _ = $arg;)+
        }
    };
}

/// The probes of docs/PROBES.md: function, nop, probe name, semaphore, arguments.
pub(crate) mod site {
    probe!(span_enter: hot, "span_enter", span; stage);
    probe!(span_exit: hot, "span_exit", span; stage, attribution);
    probe!(span: hot, "span", span; stage, start_ns, attribution);
    // The seventh argument (probe ABI 6) is the buffer's capacity, so khprof
    // knows the layout from the batch alone; the eighth (ABI 7) the
    // sequence number of the batch's first span (`flushed_spans`).
    probe!(batch: hot, "batch", batch; entries, count, input_bytes, input_units, flush_tsc, flushes, capacity, flushed_spans);
    probe!(batch_register: rare, "batch_register", none; state, abi_version);
    probe!(input_bytes: hot, "input_bytes", none; bytes);
    probe!(input_units: hot, "input_units", none; units);
    probe!(session_start: rare, "session_start", none; sequence, abi_version);
    probe!(identity: rare, "identity", none; key, value);
    probe!(transition: rare, "transition", none; state);
    probe!(session_finish: rare, "session_finish", none; status);
}
