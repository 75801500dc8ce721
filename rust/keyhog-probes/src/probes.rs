//! khprof's probe ABI, version 5 (docs/PROBES.md; the C twin is
//! include/keyhog_profile.h): the semaphore word, the probe sites and their
//! stapsdt notes, and the clocks the sites pass.
//!
//! Everything the ABI fixes lives in this file.  A probe is one line of the
//! table at the end (`probe!`), so an ABI bump that adds a probe adds a line
//! there, a call where it fires, and a new `ABI_VERSION`.

/// Version of the probe ABI this crate emits (`KH_PROBE_ABI_VERSION`),
/// passed by every `session_start` probe.
pub const ABI_VERSION: u64 = 5;

/// Completed spans a thread buffers in batch mode before one `batch` probe
/// hands them over (`KH_BATCH_CAPACITY`).
pub(crate) const BATCH_CAPACITY: usize = 64;

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

/// The stapsdt note of the site at local label 990, which libbpf,
/// bpftrace, perf and khprof read: the layout of the C header's
/// `KH__SITE_END`, with `.stapsdt.base` for prelink adjustment (defined
/// once per object).  The note's `"?"` puts it in the section group of the
/// function, so a copy the linker drops as a duplicate takes its note
/// along.  One template for `probe!` and `clock_site`.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(feature = "disabled")))]
macro_rules! probe_note {
    ($semaphore:expr, $name:expr, $args:expr) => {
        concat!(
            ".pushsection .note.stapsdt, \"?\", @note\n",
            ".balign 4\n",
            ".4byte 992f-991f, 994f-993f, 3\n",
            "991: .asciz \"stapsdt\"\n",
            "992: .balign 4\n",
            "993: .8byte 990b\n",
            ".8byte _.stapsdt.base\n",
            $semaphore, "\n",
            ".asciz \"keyhog\"\n",
            ".asciz \"", $name, "\"\n",
            ".asciz \"", $args, "\"\n",
            "994: .balign 4\n",
            ".popsection\n",
            ".ifndef _.stapsdt.base\n",
            ".pushsection .stapsdt.base, \"aG\", @progbits, .stapsdt.base, comdat\n",
            ".weak _.stapsdt.base\n",
            ".hidden _.stapsdt.base\n",
            "_.stapsdt.base: .space 1\n",
            ".size _.stapsdt.base, 1\n",
            ".popsection\n",
            ".endif"
        )
    };
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", not(feature = "disabled")))]
mod sites {
    // The semaphore word and the session counter, defined in assembly so
    // that they get the C header's exact linkage: `keyhog_semaphores` is
    // one aligned 32-bit word in `.probes`, weak and hidden (the kernel
    // counts attachments per mapped file, so each module -- executable or
    // cdylib -- must test its own); `kh_session_sequence` is weak with
    // default visibility, like the header's, so a C library and the Rust
    // program count sessions together.  Weak, so a C file of the same
    // module that includes the header merges with them.
    //
    // The word starts a page of its own.  The kernel increments a
    // semaphore in the first writable mapping of its file offset, and
    // rust-lld (rustc's default linker from 1.90) starts the data segment
    // in the file page that ends the RELRO segment, so that page is mapped
    // twice, both writable at exec: with `.probes` in it the kernel set the
    // RELRO copy and the program never saw a tracer (tests/workloads-rs,
    // rustc 1.95).  Costs at most a page of zeros per module.
    core::arch::global_asm!(
        ".pushsection .probes, \"aw\", @progbits",
        ".balign 4096",
        ".weak keyhog_semaphores",
        ".hidden keyhog_semaphores",
        ".type keyhog_semaphores, @object",
        // Probe ABI 4: 8 bytes, the `monotonic` half-word at +4 after
        // the span and batch ones (`clock_monotonic`, below).
        ".size keyhog_semaphores, 8",
        "keyhog_semaphores: .8byte 0",
        ".popsection",
        ".pushsection .bss.kh_session_sequence, \"aw\", @nobits",
        ".balign 8",
        ".weak kh_session_sequence",
        ".type kh_session_sequence, @object",
        ".size kh_session_sequence, 8",
        "kh_session_sequence: .zero 8",
        ".popsection",
        // Probe ABI 3: the state of the process's session, 8
        // (KH_STATE_COUNT) while none is open, which a tracer attaching
        // mid-session reads.  Weak with default visibility and this
        // initial value, as the header's `kh_current_state`.
        ".pushsection .data.kh_current_state, \"aw\", @progbits",
        ".balign 4",
        ".weak kh_current_state",
        ".type kh_current_state, @object",
        ".size kh_current_state, 4",
        "kh_current_state: .4byte 8",
        ".popsection",
        // The open session's identity for a tracer that attaches later
        // (the header's `struct kh_identity_table`, 2,576 bytes): weak with
        // default visibility, one per process.
        ".pushsection .bss.kh_identity_table, \"aw\", @nobits",
        ".balign 8",
        ".weak kh_identity_table",
        ".type kh_identity_table, @object",
        ".size kh_identity_table, 2576",
        "kh_identity_table: .zero 2576",
        ".popsection",
        options(att_syntax)
    );

    /// The address of `kh_identity_table`, through the GOT as the symbol
    /// has default visibility (a C module's copy wins).
    fn identity_table() -> *mut u8 {
        let address: *mut u8;
        // SAFETY: only takes the symbol's address.
        unsafe {
            core::arch::asm!(
                "movq kh_identity_table@GOTPCREL(%rip), {0}",
                out(reg) address,
                options(att_syntax, nostack, preserves_flags, pure, nomem)
            );
        }
        address
    }

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
        // SAFETY: the table is the 2,576 bytes defined above (or a C
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

    /// Sets `kh_current_state` (probe ABI 3).  Through the GOT, as the
    /// symbol has default visibility; a plain store, like the header's to
    /// its volatile word.  Rare path (session events).
    pub(crate) fn set_current_state(state: u32) {
        // SAFETY: kh_current_state is the 4-byte word defined above (or
        // the one a C module of the process defines, which wins).
        unsafe {
            core::arch::asm!(
                "movq kh_current_state@GOTPCREL(%rip), {address}",
                "movl {state:e}, ({address})",
                address = out(reg) _,
                state = in(reg) state,
                options(att_syntax, nostack, preserves_flags)
            );
        }
    }

    /// The value of `kh_current_state`.
    pub(crate) fn current_state() -> u32 {
        let state: u32;
        // SAFETY: as above, a plain load.
        unsafe {
            core::arch::asm!(
                "movq kh_current_state@GOTPCREL(%rip), {address}",
                "movl ({address}), {state:e}",
                address = out(reg) _,
                state = out(reg) state,
                options(att_syntax, nostack, preserves_flags, readonly)
            );
        }
        state
    }

    /// The whole semaphore word (span half at +0, batch half at +2): one
    /// load, so an untraced span edge is that load, a test and a branch.
    /// An asm block rather than a Rust static: a static named from another
    /// crate (the scanner's, where `span` is inlined) is reached through
    /// the GOT in a PIE, two loads; the hidden symbol is one rip-relative
    /// `mov`.  Not `pure`, so it is re-read at every edge like the C
    /// header's volatile load; `readonly`, so it orders no stores.
    #[inline(always)]
    pub(crate) fn semaphores() -> u32 {
        let word: u32;
        // SAFETY: reads the 4-byte semaphore word defined above.
        unsafe {
            core::arch::asm!(
                "movl keyhog_semaphores(%rip), {0:e}",
                out(reg) word,
                options(att_syntax, nostack, preserves_flags, readonly)
            );
        }
        word
    }

    /// Probe ABI 4: the `clock_monotonic` site, jumped over and never hit.
    /// Its note names the `monotonic` semaphore, so attaching it is how
    /// khprof asks this module for CLOCK_MONOTONIC (the kernel sets and
    /// clears the word, as for every semaphore).  Called where a thread
    /// registers its buffer, so it exists wherever batch mode can run.
    #[inline(always)]
    pub(crate) fn clock_site() {
        // SAFETY: a jump over a nop; the note goes to a non-allocated section.
        unsafe {
            core::arch::asm!(
                "jmp 995f",
                "990: nop",
                "995:",
                probe_note!(".8byte keyhog_semaphores+4", "clock_monotonic", ""),
                options(att_syntax, nostack, preserves_flags)
            );
        }
    }

    /// Sessions started by this process so far, then one more: the
    /// sequence of the session being started.  Rare path (session start).
    pub(crate) fn next_session_sequence() -> u64 {
        let previous: u64;
        // SAFETY: kh_session_sequence is the 8-byte word defined above.
        unsafe {
            core::arch::asm!(
                "movq $1, {0}",
                "lock xaddq {0}, kh_session_sequence(%rip)",
                out(reg) previous,
                options(att_syntax, nostack)
            );
        }
        previous
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

    /// The TSC with bit 63 set: ~10 ns here against ~24 for clock_gettime.
    pub(crate) fn tsc() -> u64 {
        // SAFETY: rdtsc exists on every x86-64 CPU.
        unsafe { core::arch::x86_64::_rdtsc() | super::TIME_TSC }
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(feature = "disabled"))))]
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

/// The start of a batched span: the TSC (~11 ns here), or CLOCK_MONOTONIC
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

/// The probed instruction.  Hot sites get a 5-byte nop, which the kernel
/// rewrites at the first hit into a call to its uprobe trampoline (~140 ns
/// cheaper per later hit than a trap, ~31 us once); rare sites keep the
/// 1-byte nop and its trap.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(feature = "disabled")))]
macro_rules! probe_nop {
    (hot) => {
        ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00"
    };
    (rare) => {
        "nop"
    };
}

/// The semaphore a site names in its note: none, or a half of the word.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(feature = "disabled")))]
macro_rules! probe_semaphore {
    (none) => {
        ".8byte 0"
    };
    (span) => {
        ".8byte keyhog_semaphores"
    };
    (batch) => {
        ".8byte keyhog_semaphores+2"
    };
}

/// The note's argument string: `8@REG` per argument, registers only (an
/// %rsp-relative operand would be 128 bytes off inside the site).
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(feature = "disabled")))]
macro_rules! probe_args {
    ($first:ident $(, $rest:ident)*) => {
        concat!("8@{", stringify!($first), "}" $(, " 8@{", stringify!($rest), "}")*)
    };
}

/// `probe!(function: nop, "name", semaphore; args...)` defines an inlined
/// function that is one probe site: `lea -128(%rsp),%rsp; nop; lea
/// 128(%rsp),%rsp` (the optimized uprobe's call writes below %rsp, where a
/// leaf function keeps its red-zone locals) and the stapsdt note that
/// libbpf, bpftrace, perf and khprof read, with `.stapsdt.base` for
/// prelink adjustment -- the layout of the C header's `KH__SITE_BEGIN`
/// (the note's `"?"` puts it in the section group of the function, so a
/// copy the linker drops as a duplicate takes its note along).
/// Every inlined call is a site of its own, as with the header's macros;
/// sites meant to exist once per module are called from `#[inline(never)]`
/// functions.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(feature = "disabled")))]
macro_rules! probe {
    ($function:ident: $nop:ident, $name:literal, $semaphore:ident; $($arg:ident),+) => {
        #[inline(always)]
        #[allow(dead_code)]
        pub(crate) fn $function($($arg: u64),+) {
            // SAFETY: the site only moves %rsp and back around a nop; the
            // note goes to a non-allocated section.  Not `nomem`: the
            // tracer reads memory the arguments point to (batch, identity).
            unsafe {
                core::arch::asm!(
                    "lea -128(%rsp), %rsp",
                    concat!("990: ", probe_nop!($nop)),
                    "lea 128(%rsp), %rsp",
                    probe_note!(probe_semaphore!($semaphore), $name, probe_args!($($arg),+)),
                    $($arg = in(reg) $arg,)+
                    options(att_syntax, nostack, preserves_flags)
                );
            }
        }
    };
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(feature = "disabled"))))]
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
    // knows this crate's 64-entry layout from the batch alone.
    probe!(batch: hot, "batch", batch; entries, count, input_bytes, input_units, flush_tsc, flushes, capacity);
    probe!(batch_register: rare, "batch_register", none; state, abi_version);
    probe!(input_bytes: hot, "input_bytes", none; bytes);
    probe!(input_units: hot, "input_units", none; units);
    probe!(session_start: rare, "session_start", none; sequence, abi_version);
    probe!(identity: rare, "identity", none; key, value);
    probe!(transition: rare, "transition", none; state);
    probe!(session_finish: rare, "session_finish", none; status);
}
