//! The seed's in-process counters: per-stage ns, calls and decoded ns,
//! input totals, each once for the process (`take_stage_measurements`,
//! `take_input_totals`) and once for the open session (`Session::finish`),
//! with the seed's semantics (`../shared/seed/keyhog_profile_lib.rs`): a
//! span counts when the profile was enabled at its enter, for the session
//! too when one was open then; its decoded ns when its thread's
//! attribution is decoded at its exit; every counter a relaxed atomic, so
//! any thread may take them.
//!
//! Only the slow paths are here, reached once the shared word
//! (`switch.rs`) says `local`.  A span's guard carries what the seed's
//! carries (its start, whether it counts for the session) in the bits of
//! its stage above the stage number, so the guard stays two words and
//! its drop one test of the start, as in the probes-only crate.

use crate::{probes, switch, thread, Span};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub(crate) const STAGE_COUNT: usize = 25;

/// Span flags above the stage number (`Span::stage`).  A span without
/// `LOCAL` is the tracer's alone and its drop calls `thread::span_complete`
/// directly, as before; with `LOCAL` its start is CLOCK_MONOTONIC ns and
/// `span_exit` counts it here, and hands it to the tracer too if `TRACED`.
pub(crate) const LOCAL: u32 = 1 << 8;
const SESSION: u32 = 1 << 9;
const TRACED: u32 = 1 << 10;
const STAGE_MASK: u32 = LOCAL - 1;

// Rust 1.63 has no inline `const { }` in array repeats: a const item does it.
#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
type Counters = [AtomicU64; STAGE_COUNT];

/// One set of counters: the process's or the session's.
struct Set {
    elapsed_ns: Counters,
    calls: Counters,
    attributed_ns: Counters,
    input_bytes: AtomicU64,
    input_units: AtomicU64,
}

impl Set {
    const fn new() -> Self {
        Self {
            elapsed_ns: [ZERO; STAGE_COUNT],
            calls: [ZERO; STAGE_COUNT],
            attributed_ns: [ZERO; STAGE_COUNT],
            input_bytes: ZERO,
            input_units: ZERO,
        }
    }

    #[inline(always)]
    fn add_span(&self, index: usize, elapsed: u64, decoded: bool) {
        self.elapsed_ns[index].fetch_add(elapsed, Ordering::Relaxed);
        self.calls[index].fetch_add(1, Ordering::Relaxed);
        if decoded {
            self.attributed_ns[index].fetch_add(elapsed, Ordering::Relaxed);
        }
    }

    /// Reads and clears the stages, those with anything counted, in wire order.
    fn take_stages(&self) -> Vec<crate::StageMeasurement> {
        crate::Stage::ALL
            .iter()
            .filter_map(|&stage| {
                let index = stage as usize;
                let elapsed_ns = self.elapsed_ns[index].swap(0, Ordering::Relaxed);
                let calls = self.calls[index].swap(0, Ordering::Relaxed);
                let attributed_ns = self.attributed_ns[index].swap(0, Ordering::Relaxed);
                (elapsed_ns != 0 || calls != 0 || attributed_ns != 0)
                    .then_some(crate::StageMeasurement { stage, elapsed_ns, calls, attributed_ns })
            })
            .collect()
    }

    fn take_input(&self) -> (u64, u64) {
        (self.input_bytes.swap(0, Ordering::Relaxed), self.input_units.swap(0, Ordering::Relaxed))
    }

    fn clear(&self) {
        let _ = self.take_stages();
        self.input_bytes.store(0, Ordering::Relaxed);
        self.input_units.store(0, Ordering::Relaxed);
    }
}

static PROCESS: Set = Set::new();
static SESSION_SET: Set = Set::new();

/// A session is open (the seed's `SESSION_ACTIVE`): `Session::start` takes
/// it with a compare-exchange, which is how a second one is refused.
pub(crate) static SESSION_ACTIVE: AtomicBool = AtomicBool::new(false);

/// The in-process clock, CLOCK_MONOTONIC ns as the seed's `Instant` reads
/// it: the probes' own where there are probe sites, so one reading serves
/// both when a span is traced and counted.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux", not(feature = "disabled")))]
pub(crate) use probes::now_ns;

/// Elsewhere the probes' clock reads 0: ns since the first reading, plus
/// one, since a start of 0 means "not timed".
#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), target_os = "linux", not(feature = "disabled"))))]
pub(crate) fn now_ns() -> u64 {
    use std::sync::Once;
    use std::time::Instant;
    static FIRST: Once = Once::new();
    static mut BASE: Option<Instant> = None;
    // SAFETY: BASE is written once, inside call_once, before any read.
    FIRST.call_once(|| unsafe { BASE = Some(Instant::now()) });
    let base = unsafe { BASE }.expect("set by call_once");
    u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX - 1) + 1
}

/// A span's enter with `local` set in `word` (and maybe tracing): the
/// seed's `span` (a clock reading, the session flag), plus the tracer's
/// enter when it traces.  Traced and counted, one CLOCK_MONOTONIC start
/// serves both: `probes::batch_start` reads that clock while `local` is
/// set; should `local` have gone in between, the span is the tracer's
/// alone, as if it had been entered after the switch.
#[cold]
#[inline(never)]
pub(crate) fn span_enter(stage: u32, word: u64) -> Span {
    let mut flags = stage | LOCAL;
    if SESSION_ACTIVE.load(Ordering::Relaxed) {
        flags |= SESSION;
    }
    let start = if switch::traced(word) {
        let start = thread::span_start(stage);
        if start & probes::TIME_TSC != 0 {
            return Span { stage, start };
        }
        flags |= TRACED;
        start
    } else {
        now_ns()
    };
    Span { stage: flags, start }
}

/// The exit of a span `span_enter` timed: the tracer's exit first if it
/// traced the enter (its own clock reading, after this one), then the
/// seed's counting.
#[cold]
#[inline(never)]
pub(crate) fn span_exit(flags: u32, start: u64) {
    let end = now_ns();
    let stage = flags & STAGE_MASK;
    if flags & TRACED != 0 {
        thread::span_complete(stage, start);
    }
    let elapsed = end.saturating_sub(start);
    let decoded = thread::attribution() == crate::Attribution::Decoded as u32;
    let index = stage as usize;
    PROCESS.add_span(index, elapsed, decoded);
    if flags & SESSION != 0 {
        SESSION_SET.add_span(index, elapsed, decoded);
    }
}

/// The seed's input counting, inline and without a call, so that a leaf
/// function that counts input stays a leaf (its red zone is the probe
/// sites' concern, tests/workloads-rs `redzone`).
#[inline(always)]
fn add_input(process: &AtomicU64, session: &AtomicU64, amount: u64) {
    if switch::local_enabled() {
        process.fetch_add(amount, Ordering::Relaxed);
        if SESSION_ACTIVE.load(Ordering::Relaxed) {
            session.fetch_add(amount, Ordering::Relaxed);
        }
    }
}

#[inline(always)]
pub(crate) fn add_input_bytes(bytes: u64) {
    add_input(&PROCESS.input_bytes, &SESSION_SET.input_bytes, bytes);
}

#[inline(always)]
pub(crate) fn add_input_units(units: u64) {
    add_input(&PROCESS.input_units, &SESSION_SET.input_units, units);
}

pub(crate) fn take_stage_measurements() -> Vec<crate::StageMeasurement> {
    PROCESS.take_stages()
}

pub(crate) fn take_input_totals() -> (u64, u64) {
    PROCESS.take_input()
}

pub(crate) fn reset() {
    PROCESS.clear();
}

pub(crate) fn take_session_stage_measurements() -> Vec<crate::StageMeasurement> {
    SESSION_SET.take_stages()
}

pub(crate) fn take_session_input_totals() -> (u64, u64) {
    SESSION_SET.take_input()
}

pub(crate) fn reset_session() {
    SESSION_SET.clear();
}
