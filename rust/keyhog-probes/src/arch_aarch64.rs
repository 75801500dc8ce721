//! aarch64's part of the probe ABI (the C header's keyhog_profile_arm64.h;
//! src/arch_x86_64.rs is x86-64's, beside it): the symbols' definitions,
//! the probed instruction, the loads and stores of the switch word, the
//! module's other words reached through the GOT, and the counter.
//! Everything else about the ABI is src/probes.rs.
//!
//! A site is one NOP: the kernel's aarch64 uprobes replace it with a BRK,
//! whose exception saves the registers on the kernel's stack, and AAPCS64
//! keeps nothing below sp (no red zone), so nothing moves sp around it.
//! The hidden `keyhog_semaphores` is one `adrp` (of its page, kept across
//! a loop) and one `ldr` away; the words of default visibility (a C
//! module's copy wins) go through the GOT, which a shared library needs
//! for them.

// The symbols of the probe ABI (src/note.rs's `symbol_definitions!`), in GNU as syntax.
core::arch::global_asm!(symbol_definitions!());

/// The probed instruction of a site at local label 990: a NOP, hot or rare.
macro_rules! probe_site {
    ($nop:ident, $note:expr, $($arg:ident),+) => {
        // SAFETY (the caller's): a nop; the note goes to a non-allocated
        // section.  Not `nomem`: the tracer reads memory the arguments
        // point to (batch, identity).
        core::arch::asm!(
            "990: nop",
            $note,
            $($arg = in(reg) $arg,)+
            options(nostack, preserves_flags)
        )
    };
}

/// Probe ABI 4: the `clock_monotonic` site, branched over and never hit (a
/// site of src/probes.rs's `clock_site`).
#[inline(always)]
pub(crate) fn clock_site() {
    // SAFETY: a branch over a nop; the note goes to a non-allocated section.
    unsafe {
        core::arch::asm!(
            "b 995f",
            "990: nop",
            "995:",
            probe_note!(".8byte keyhog_semaphores+4", "clock_monotonic", ""),
            options(nostack, preserves_flags)
        );
    }
}

/// The page of `keyhog_semaphores`, which starts a page of its own
/// (src/note.rs): `pure`, so the compiler keeps it in a register across a
/// loop, and each edge is the `ldr` and its branch alone, as GCC compiles
/// the C header's volatile load.
#[inline(always)]
fn page() -> u64 {
    let page: u64;
    // SAFETY: only forms the address of the symbol's page.
    unsafe {
        core::arch::asm!("adrp {0}, keyhog_semaphores", out(reg) page,
                         options(pure, nomem, nostack, preserves_flags));
    }
    page
}

/// One load of part of `keyhog_semaphores` (src/note.rs), one `ldr` from
/// the page above.  Not `pure`, so it is re-read at every edge;
/// `readonly`, so it orders no stores.
macro_rules! semaphore_load {
    ($(#[$doc:meta])* $name:ident -> $ty:ty: $insn:literal) => {
        $(#[$doc])*
        #[inline(always)]
        pub(crate) fn $name() -> $ty {
            let value: $ty;
            // SAFETY: reads bytes of the 8-byte object src/note.rs defines.
            unsafe {
                core::arch::asm!($insn, page = in(reg) page(), value = lateout(reg) value,
                                 options(nostack, preserves_flags, readonly));
            }
            value
        }
    };
}

semaphore_load!(
    /// The 4 bytes at +0, the kernel's span and batch halves.
    semaphores -> u32: "ldr {value:w}, [{page}, :lo12:keyhog_semaphores]");
semaphore_load!(
    /// The whole 8-byte object (src/switch.rs).
    switch_word -> u64: "ldr {value}, [{page}, :lo12:keyhog_semaphores]");
semaphore_load!(
    /// The 2 bytes at +6, the in-process switch (src/switch.rs's `local`).
    switch_local -> u32: "ldrh {value:w}, [{page}, :lo12:keyhog_semaphores+6]");
semaphore_load!(
    /// The 4 bytes at +4, `monotonic` and `local` in one load.
    switch_upper -> u32: "ldr {value:w}, [{page}, :lo12:keyhog_semaphores+4]");

/// Stores the 2 bytes at +6, leaving the kernel's bytes alone.
pub(crate) fn set_switch_local(value: u16) {
    // SAFETY: writes the last 2 bytes of the same object (writable, in
    // `.probes`), which nothing but src/switch.rs writes.
    unsafe {
        core::arch::asm!(
            "strh {value:w}, [{page}, :lo12:keyhog_semaphores+6]",
            page = in(reg) page(),
            value = in(reg) u32::from(value),
            options(nostack, preserves_flags)
        );
    }
}

/// The address of a symbol of default visibility, through the GOT.
macro_rules! got_address {
    ($symbol:literal) => {{
        let address: usize;
        // SAFETY: only takes the symbol's address.
        unsafe {
            core::arch::asm!(
                concat!("adrp {0}, :got:", $symbol),
                concat!("ldr {0}, [{0}, :got_lo12:", $symbol, "]"),
                out(reg) address,
                options(nostack, preserves_flags, pure, readonly)
            );
        }
        address
    }};
}

/// The address of `kh_identity_table`.
pub(crate) fn identity_table() -> *mut u8 {
    got_address!("kh_identity_table") as *mut u8
}

/// The address of `kh_current_state`.
pub(crate) fn current_state_word() -> *mut u32 {
    got_address!("kh_current_state") as *mut u32
}

/// Sessions started by this process so far, then one more: the sequence
/// of the session being started.  Rare path (session start).  An atomic
/// add on the word the GOT names (LL/SC or LSE, as the target allows).
pub(crate) fn next_session_sequence() -> u64 {
    let address = got_address!("kh_session_sequence") as *const core::sync::atomic::AtomicU64;
    // SAFETY: kh_session_sequence is an aligned 8-byte word src/note.rs
    // defines (or a C module's identical one), only ever used atomically.
    let sequence = unsafe { &*address };
    sequence.fetch_add(1, core::sync::atomic::Ordering::SeqCst)
}

/// CNTVCT_EL0 with bit 63 set: the generic timer's count, which Linux lets
/// user space read, at CNTFRQ_EL0 (62.5 MHz under QEMU, 25 MHz to 1 GHz on
/// hardware); khprof decides from evidence whether to use it, as for the
/// TSC (docs/PROBES.md).
pub(crate) fn tsc() -> u64 {
    let count: u64;
    // SAFETY: reads a system register EL0 may read on Linux.
    unsafe {
        core::arch::asm!("mrs {0}, cntvct_el0", out(reg) count,
                         options(nomem, nostack, preserves_flags));
    }
    count | crate::probes::TIME_TSC
}
