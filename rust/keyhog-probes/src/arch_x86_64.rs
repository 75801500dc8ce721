//! x86-64's part of the probe ABI (the C header's keyhog_profile_x86_64.h;
//! src/arch_aarch64.rs is aarch64's, beside it): the symbols' definitions
//! in its assembler, the probed instruction, the loads and stores of the
//! switch word, the module's other words reached through the GOT, and the
//! TSC.  Everything else about the ABI is src/probes.rs.

// The symbols of the probe ABI (src/note.rs's `symbol_definitions!`).
core::arch::global_asm!(symbol_definitions!(), options(att_syntax));

/// The probed instruction of a site at local label 990.  Hot sites get a
/// 5-byte nop, which the kernel rewrites at the first hit into a call to
/// its uprobe trampoline (~140 ns cheaper per later hit than a trap, ~31 us
/// once); rare sites keep the 1-byte nop and its trap.  The call writes
/// below %rsp, where a leaf function keeps its red-zone locals, so the site
/// moves %rsp below the red zone and back: `lea -128(%rsp),%rsp; nop; lea
/// 128(%rsp),%rsp`, the C header's `KH__SITE_INSN`.
macro_rules! probe_site {
    ($nop:ident, $note:expr, $($arg:ident),+) => {
        // SAFETY (the caller's): the site only moves %rsp and back around
        // a nop; the note goes to a non-allocated section.  Not `nomem`:
        // the tracer reads memory the arguments point to (batch, identity).
        core::arch::asm!(
            "lea -128(%rsp), %rsp",
            concat!("990: ", probe_nop!($nop)),
            "lea 128(%rsp), %rsp",
            $note,
            $($arg = in(reg) $arg,)+
            options(att_syntax, nostack, preserves_flags)
        )
    };
}

macro_rules! probe_nop {
    (hot) => {
        ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00"
    };
    (rare) => {
        "nop"
    };
}

/// Probe ABI 4: the `clock_monotonic` site, jumped over and never hit (a
/// site of src/probes.rs's `clock_site`).
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

/// One load of part of `keyhog_semaphores` (src/note.rs): one rip-relative
/// load of the hidden symbol (a Rust static named from another crate, the
/// scanner's, where `span` is inlined, is reached through the GOT in a
/// PIE: two loads).  Not `pure`, so it is re-read at every edge like the C
/// header's volatile load; `readonly`, so it orders no stores.
macro_rules! semaphore_load {
    ($(#[$doc:meta])* $name:ident -> $ty:ty: $insn:literal) => {
        $(#[$doc])*
        #[inline(always)]
        pub(crate) fn $name() -> $ty {
            let value: $ty;
            // SAFETY: reads bytes of the 8-byte object src/note.rs defines.
            unsafe {
                core::arch::asm!($insn, value = out(reg) value,
                                 options(att_syntax, nostack, preserves_flags, readonly));
            }
            value
        }
    };
}

semaphore_load!(
    /// The 4 bytes at +0, the kernel's span and batch halves.
    semaphores -> u32: "movl keyhog_semaphores(%rip), {value:e}");
semaphore_load!(
    /// The whole 8-byte object (src/switch.rs).
    switch_word -> u64: "movq keyhog_semaphores(%rip), {value}");
semaphore_load!(
    /// The 2 bytes at +6, the in-process switch (src/switch.rs's `local`).
    switch_local -> u32: "movzwl keyhog_semaphores+6(%rip), {value:e}");
semaphore_load!(
    /// The 4 bytes at +4, `monotonic` and `local` in one load.
    switch_upper -> u32: "movl keyhog_semaphores+4(%rip), {value:e}");

/// Stores the 2 bytes at +6, leaving the kernel's bytes alone.
pub(crate) fn set_switch_local(value: u16) {
    // SAFETY: writes the last 2 bytes of the same object (writable, in
    // `.probes`), which nothing but src/switch.rs writes.
    unsafe {
        core::arch::asm!(
            "movw {0:x}, keyhog_semaphores+6(%rip)",
            in(reg) value,
            options(att_syntax, nostack, preserves_flags)
        );
    }
}

/// The address of a symbol of default visibility (a C module's copy
/// wins), through the GOT.
macro_rules! got_address {
    ($symbol:literal) => {{
        let address: usize;
        // SAFETY: only takes the symbol's address.
        unsafe {
            core::arch::asm!(
                concat!("movq ", $symbol, "@GOTPCREL(%rip), {0}"),
                out(reg) address,
                options(att_syntax, nostack, preserves_flags, pure, nomem)
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
/// of the session being started.  Rare path (session start).
pub(crate) fn next_session_sequence() -> u64 {
    let previous: u64;
    // SAFETY: kh_session_sequence is the 8-byte word src/note.rs defines.
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

/// The TSC with bit 63 set: ~10 ns here against ~24 for clock_gettime.
pub(crate) fn tsc() -> u64 {
    // SAFETY: rdtsc exists on every x86-64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() | crate::probes::TIME_TSC }
}
