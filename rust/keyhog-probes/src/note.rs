//! The stapsdt note of a probe site and the symbols the probe ABI defines,
//! as macros that src/probes.rs and each architecture's file
//! (src/arch_x86_64.rs, src/arch_aarch64.rs) expand: the same bytes on
//! every architecture, in a file before them (macros are in scope only
//! after their definition).

/// The stapsdt note of the site at local label 990, which libbpf,
/// bpftrace, perf and khprof read: the layout of the C header's
/// `KH__SITE_END`, with `.stapsdt.base` for prelink adjustment (defined
/// once per object).  The note's `"?"` puts it in the section group of the
/// function, so a copy the linker drops as a duplicate takes its note
/// along.  One template for `probe!` and `clock_site`.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux", not(feature = "disabled")))]
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

/// The symbols of the probe ABI, which each architecture's file hands to
/// `global_asm!`.  The semaphore word and the session counter are defined
/// in assembly so that they get the C header's exact linkage:
/// `keyhog_semaphores` is one aligned 8-byte object in `.probes`, weak and
/// hidden (the kernel
/// counts attachments per mapped file, so each module -- executable or
/// cdylib -- must test its own); `kh_session_sequence` is weak with
/// default visibility, like the header's, so a C library and the Rust
/// program count sessions together.  Weak, so a C file of the same
/// module that includes the header merges with them.
///
/// The word starts a page of its own.  The kernel increments a
/// semaphore in the first writable mapping of its file offset, and
/// rust-lld (rustc's default linker from 1.90) starts the data segment
/// in the file page that ends the RELRO segment, so that page is mapped
/// twice, both writable at exec: with `.probes` in it the kernel set the
/// RELRO copy and the program never saw a tracer (tests/workloads-rs,
/// rustc 1.95).  Costs at most a page of zeros per module.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux", not(feature = "disabled")))]
macro_rules! symbol_definitions {
    () => {
        concat!(
            ".pushsection .probes, \"aw\", @progbits\n",
            ".balign 4096\n",
            ".weak keyhog_semaphores\n",
            ".hidden keyhog_semaphores\n",
            ".type keyhog_semaphores, @object\n",
            // Probe ABI 4: 8 bytes, the `monotonic` half-word at +4 after
            // the span and batch ones (each architecture's `clock_site`).
            ".size keyhog_semaphores, 8\n",
            "keyhog_semaphores: .8byte 0\n",
            ".popsection\n",
            ".pushsection .bss.kh_session_sequence, \"aw\", @nobits\n",
            ".balign 8\n",
            ".weak kh_session_sequence\n",
            ".type kh_session_sequence, @object\n",
            ".size kh_session_sequence, 8\n",
            "kh_session_sequence: .zero 8\n",
            ".popsection\n",
            // Probe ABI 3: the state of the process's session, 8
            // (KH_STATE_COUNT) while none is open, which a tracer attaching
            // mid-session reads.  Weak with default visibility and this
            // initial value, as the header's `kh_current_state`.
            ".pushsection .data.kh_current_state, \"aw\", @progbits\n",
            ".balign 4\n",
            ".weak kh_current_state\n",
            ".type kh_current_state, @object\n",
            ".size kh_current_state, 4\n",
            "kh_current_state: .4byte 8\n",
            ".popsection\n",
            // The open session's identity for a tracer that attaches later
            // (the header's `struct kh_identity_table`, 2,576 bytes): weak with
            // default visibility, one per process.
            ".pushsection .bss.kh_identity_table, \"aw\", @nobits\n",
            ".balign 8\n",
            ".weak kh_identity_table\n",
            ".type kh_identity_table, @object\n",
            ".size kh_identity_table, 2576\n",
            "kh_identity_table: .zero 2576\n",
            ".popsection\n",
        )
    };
}

/// The semaphore a site names in its note: none, or a half of the word.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux", not(feature = "disabled")))]
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

/// The note's argument string: `8@REG` per argument, registers only (on
/// x86-64 an %rsp-relative operand would be 128 bytes off inside the site).
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux", not(feature = "disabled")))]
macro_rules! probe_args {
    ($first:ident $(, $rest:ident)*) => {
        concat!("8@{", stringify!($first), "}" $(, " 8@{", stringify!($rest), "}")*)
    };
}
