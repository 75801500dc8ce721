//! Per-thread state behind the probe sites: the thread's attribution and
//! its batch buffer, touched only while a tracer has set a semaphore
//! (attribution excepted, which the program sets itself).  The slow paths
//! here are `#[inline(never)]` and non-generic, so each exists once per
//! module, as the header's one-per-module functions do: the first hit of a
//! hot site costs the program ~30 us while the kernel rewrites it.
//!
//! Unlike the C header's `kh_thread_state`, which C modules share per
//! thread, this state is the crate's own: a thread that runs Rust spans and
//! C spans keeps two attributions and two buffers (both flushed).  Its
//! layout is the header's, field for field, all the same: probe ABI 3's
//! `batch_register` probe passes its address, and the tracer reads the
//! buffer from it when the thread dies or execs, or after a detach
//! (`KH_TS_*_OFF` in include/khprof_shared.h).
//!
//! Probe ABI 5: every traced span is on this state's span stack (`depth`,
//! `stage`, `start_ns`) from its enter to its exit, and the thread
//! registers the state at its first traced span in every mode, so that
//! `khprof --sample` reads the innermost open stage there without a kernel
//! entry (`KH_TS_DEPTH_OFF`, `KH_TS_STAGE_OFF` in include/khprof_sample.h).
//! The guard keeps its start as well, as the header's scoped spans do.
//!
//! Probe ABI 7 (the header's, 256 entries): `flushed_spans` numbers the
//! spans, so that khprof proves it saw every span a thread completed, and
//! the session events hand the buffer over even when it is empty, so that
//! khprof can take the other threads' buffers at a session's start and end
//! by a fresh clock reading.  A thread's last batch is flushed by a
//! thread-local destructor, which runs after `std::thread::scope` (and a
//! pool that only waits for its jobs) has let the session go on: before
//! ABI 7 its spans went to no session when the session finished first, 40
//! of 1,000 in 7 of 25 runs of issue 29's program.  khprof now takes such
//! a buffer itself when the session finishes (docs/PROBES.md).

use crate::probes::{self, site, BatchEntry, BATCH_CAPACITY};
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{compiler_fence, Ordering};
use std::sync::Once;

/// Depth of the header's span stack (`KH_USER_SPAN_DEPTH`): spans nested
/// deeper are counted in `depth` without a frame, as in the header.
const USER_SPAN_DEPTH: usize = 32;

/// `struct kh_thread_state` of include/keyhog_profile.h (`Cell<T>` has
/// `T`'s layout).
#[repr(C)]
pub(crate) struct ThreadState {
    depth: Cell<u32>,
    attribution: Cell<u32>,
    batch_count: Cell<u32>,
    /// Set once this thread's buffer is flushed at its exit: from then on
    /// its input counters ride its batches instead of firing their sites.
    registered: Cell<u32>,
    stage: Cell<[u32; USER_SPAN_DEPTH]>,
    start_ns: Cell<[u64; USER_SPAN_DEPTH]>,
    input_bytes: Cell<u64>,
    input_units: Cell<u64>,
    batch: UnsafeCell<[BatchEntry; BATCH_CAPACITY]>,
    /// Probe ABI 3: batches handed over so far; the tracer tells by it a
    /// buffer it has counted from one it has not.
    flushes: Cell<u64>,
    /// Probe ABI 7: spans handed over before `batch[0]` (its sequence number).
    flushed_spans: Cell<u64>,
}

// The offsets the tracer reads (include/khprof_shared.h: KH_TS_BATCH_COUNT_OFF
// 8, KH_TS_INPUT_OFF 400, KH_TS_BATCH_OFF 416, KH_TS_FLUSHES_OFF 6560,
// KH_TS_FLUSHED_SPANS_OFF 6568): with repr(C) and the header's field order,
// the size pins them.
const _: () = assert!(core::mem::size_of::<ThreadState>() == 6576);
const _: () = assert!(core::mem::align_of::<ThreadState>() == 8);

const EMPTY_ENTRY: BatchEntry = BatchEntry { start_ns: 0, end_ns: 0, stage: 0, attribution: 0 };

thread_local! {
    // Const-initialised and without Drop: every access is a plain
    // thread-pointer-relative address, with no lazy-init check.
    static STATE: ThreadState = const {
        ThreadState {
            depth: Cell::new(0),
            attribution: Cell::new(0),
            batch_count: Cell::new(0),
            registered: Cell::new(0),
            stage: Cell::new([0; USER_SPAN_DEPTH]),
            start_ns: Cell::new([0; USER_SPAN_DEPTH]),
            input_bytes: Cell::new(0),
            input_units: Cell::new(0),
            batch: UnsafeCell::new([EMPTY_ENTRY; BATCH_CAPACITY]),
            flushes: Cell::new(0),
            flushed_spans: Cell::new(0),
        }
    };
    // Its destructor flushes the thread's buffer at thread exit (the
    // header's pthread key destructor).  Apart from STATE so that STATE
    // needs no destructor and its accesses no state check.
    static FLUSH_AT_THREAD_EXIT: ThreadExit = const { ThreadExit };
}

struct ThreadExit;

impl Drop for ThreadExit {
    fn drop(&mut self) {
        flush(false);
    }
}

/// Sets this thread's attribution (0 root, 1 decoded); returns the previous one.
pub(crate) fn replace_attribution(attribution: u32) -> u32 {
    STATE.with(|t| t.attribution.replace(attribution))
}

/// Hands this thread's buffer over before a session event (session.rs):
/// probe ABI 7, even when empty while batch mode is attached, so that
/// khprof places the spans it takes from the other threads' buffers at the
/// session's start and end by this flush's clock reading.
pub(crate) fn batch_flush() {
    flush(true);
}

/// This thread's state on the span paths, without a closure (hook of the
/// in-process side, for cost): `STATE.with` with a large closure is
/// inlined or not as rustc happens to split the crate into codegen units,
/// and out of line it also reaches the key through a function pointer.
/// Adding the seed's serde derives to the crate moved both span paths' out
/// of line: 163 instructions per traced span against 112 (callgrind, the
/// batch path with its sites as nops), 120 with this.
#[inline(always)]
fn state<'a>() -> &'a ThreadState {
    // SAFETY: STATE has no destructor and lives as long as its thread; the
    // reference is used only by the calling function, on that thread.
    STATE.with(|t| unsafe { &*(t as *const ThreadState) })
}

/// This thread's attribution (hook of the in-process counters, which read
/// it at a span's exit: src/counters.rs).
pub(crate) fn attribution() -> u32 {
    STATE.with(|t| t.attribution.get())
}

/// Hands this thread's buffered spans and counted input to the tracer.
/// The probe fires even with no tracer left, so a detaching tracer loses
/// nothing it saw.
#[inline(never)]
fn flush(session_event: bool) {
    STATE.with(|t| {
        let count = t.batch_count.get();
        if count == 0
            && t.input_bytes.get() == 0
            && t.input_units.get() == 0
            && !(session_event && probes::batch_mode(probes::semaphores()))
        {
            return;
        }
        site::batch(
            t.batch.get() as u64,
            u64::from(count),
            t.input_bytes.get(),
            t.input_units.get(),
            probes::tsc(),
            t.flushes.get(),
            BATCH_CAPACITY as u64,
            t.flushed_spans.get(),
        );
        t.flushed_spans.set(t.flushed_spans.get().wrapping_add(u64::from(count)));
        t.batch_count.set(0);
        t.input_bytes.set(0);
        t.input_units.set(0);
        // Last: until here the tracer takes the buffer as the one it was handed.
        compiler_fence(Ordering::SeqCst);
        t.flushes.set(t.flushes.get().wrapping_add(1));
    });
}

extern "C" {
    // The C library's, which std links anyway.
    fn atexit(callback: extern "C" fn()) -> i32;
}

/// exit() runs the exiting thread's TLS destructors in glibc, but not every
/// C library does; as in the header, the exiting thread also flushes here.
extern "C" fn flush_at_process_exit() {
    flush(false);
}

#[cold]
#[inline(never)]
fn batch_register(t: &ThreadState) {
    static AT_EXIT: Once = Once::new();

    // Probe ABI 3: where this thread's buffer is, so that the tracer can
    // read what is left in it when the thread dies, execs or it detaches.
    site::batch_register(t as *const ThreadState as u64, probes::ABI_VERSION);
    probes::clock_site();
    t.registered.set(1);
    // try_with: a span completed by another thread-local destructor, after
    // this one has run, must not panic; its spans wait for process exit.
    let _ = FLUSH_AT_THREAD_EXIT.try_with(|_| {});
    AT_EXIT.call_once(|| {
        // SAFETY: registers a plain extern "C" function.
        unsafe { atexit(flush_at_process_exit) };
    });
}

/// A span's enter edge with tracing on: the pair-mode probe and its start.
/// Span mode compares the start with the kernel's clock, so it gets
/// CLOCK_MONOTONIC; batch mode alone only needs lengths, so it gets the TSC
/// where khprof trusts it (`probes::batch_start`).  Probe ABI 5: the span
/// goes on the thread's stack, registered at its first traced span in any
/// mode, for the sampler (the header's `kh__span_start`).
#[cold]
#[inline(never)]
pub(crate) fn span_start(stage: u32) -> u64 {
    let t = state();
    {
        if t.registered.get() == 0 {
            batch_register(t);
        }
        let start = if probes::span_mode(probes::semaphores()) {
            site::span_enter(u64::from(stage));
            probes::now_ns()
        } else {
            probes::batch_start()
        };
        let depth = t.depth.get();
        if (depth as usize) < USER_SPAN_DEPTH {
            let stages: &Cell<[u32]> = &t.stage;
            let starts: &Cell<[u64]> = &t.start_ns;
            stages.as_slice_of_cells()[depth as usize].set(stage);
            starts.as_slice_of_cells()[depth as usize].set(start);
        }
        // A sample taken in between sees the frame whole or not at all.
        compiler_fence(Ordering::SeqCst);
        t.depth.set(depth.wrapping_add(1));
        start
    }
}

/// Takes the innermost frame off the stack if it is stage's (the header's
/// `kh__span_pop`): a span entered before the tracer attached has no
/// frame, and its exit leaves the outer ones alone.
#[inline(always)]
fn span_pop(t: &ThreadState, stage: u32) {
    let depth = t.depth.get();
    if depth == 0 {
        return;
    }
    let top = (depth - 1) as usize;
    let stages: &Cell<[u32]> = &t.stage;
    if top >= USER_SPAN_DEPTH || stages.as_slice_of_cells()[top].get() == stage {
        t.depth.set(depth - 1);
    }
}

/// A span's exit edge when its enter was timed (start != 0).
#[cold]
#[inline(never)]
pub(crate) fn span_complete(stage: u32, start: u64) {
    let word = probes::semaphores();
    let t = state();
    {
        span_pop(t, stage);
        let attribution = t.attribution.get();
        if probes::batch_mode(word) {
            // Registered at the span's enter, unless a tracer attached
            // between the enter and this exit.
            if t.registered.get() == 0 {
                batch_register(t);
            }
            let count = t.batch_count.get();
            let end = if start & probes::TIME_TSC != 0 { probes::tsc() } else { probes::now_ns() };
            // SAFETY: count < BATCH_CAPACITY (flushed when it gets there),
            // and only this thread touches its own buffer.
            unsafe {
                (*t.batch.get())[count as usize] =
                    BatchEntry { start_ns: start, end_ns: end, stage, attribution };
            }
            // Probe ABI 7: the entry before the count that covers it, so that
            // khprof reading this buffer from another thread at a session's
            // end never takes a half-written entry.
            compiler_fence(Ordering::SeqCst);
            t.batch_count.set(count + 1);
            if count + 1 == BATCH_CAPACITY as u32 {
                flush(false);
            }
        }
        if probes::span_mode(word) {
            site::span(u64::from(stage), start, u64::from(attribution));
            site::span_exit(u64::from(stage), u64::from(attribution));
        }
    }
}

/// Input counters fire per chunk or file, never per byte.  In batch mode a
/// thread whose buffer is flushed at its exit adds them to its next batch
/// instead of entering the kernel; otherwise they are plain sites, live for
/// any tracer.  No function call on either path, so a leaf function that
/// counts input stays a leaf and its red zone stays safe.
#[inline(always)]
pub(crate) fn add_input_bytes(bytes: u64) {
    STATE.with(|t| {
        // Semaphores count attached sites: test, don't mask.
        if (t.registered.get() != 0) & probes::batch_mode(probes::semaphores()) {
            t.input_bytes.set(t.input_bytes.get().wrapping_add(bytes));
        } else {
            site::input_bytes(bytes);
        }
    });
}

#[inline(always)]
pub(crate) fn add_input_units(units: u64) {
    STATE.with(|t| {
        if (t.registered.get() != 0) & probes::batch_mode(probes::semaphores()) {
            t.input_units.set(t.input_units.get().wrapping_add(units));
        } else {
            site::input_units(units);
        }
    });
}
