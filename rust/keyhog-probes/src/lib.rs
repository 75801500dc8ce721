//! KeyHog's profiling API (the `keyhog_profile` seed crate's surface) on
//! khprof's USDT probes, so that a Rust scanner is profiled from outside
//! the process by `khprof record -- scanner ...` or `khprof attach -p PID`.
//!
//! Untraced, a span costs what the C header's does: one load of the
//! module's semaphore word, a test and a not-taken branch at its enter, a
//! test of a register at its exit; no clock read, no atomic
//! read-modify-write, no build flag.  While khprof is attached the spans go
//! to it in the mode it chose (batch, span or pair) and khprof writes the
//! seed's `keyhog-profile-v1` record.  The probe ABI is docs/PROBES.md of
//! the khprof repository (version [`ABI_VERSION`]).
//!
//! Moving a scanner from the seed: depend on this crate under the seed's
//! name (`keyhog_profile = { package = "keyhog-probes", path = "..." }`)
//! or change `keyhog_profile::` to `keyhog_probes::`; `span`,
//! `set_attribution`, `add_input_bytes`, `add_input_units`, `enabled`,
//! `Session::start`, `transition`, `identity_mut` and `finish` keep their
//! call sites.  What differs, because the record is now khprof's:
//!
//! - [`Session::finish`] returns a [`FinishedRun`] (identity, status,
//!   sequence) instead of the seed's `RunProfile`; the record is written by
//!   `khprof record -o PATH`, its text printed by `khprof report PATH`.
//! - [`enabled`] is true while a tracer has span or batch probes attached,
//!   not while a session is active.
//! - Not provided, since the process holds no profile: `set_enabled`
//!   (attaching khprof enables), `reset`, `take_stage_measurements`,
//!   `take_input_totals`, `RunProfile`, `StageMeasurement` and the other
//!   record types (khprof's record; `khprof report --format json`), and the
//!   serde derives.  A call left behind fails to compile rather than do
//!   nothing quietly.
//! - `RunIdentity::run_id` is not sent: the record's run id is khprof's,
//!   in the same `{pid}-{unix ns}-{sequence}` format.
//! - Input counted outside any session is not dropped by the program:
//!   khprof attributes it to the session open at the time, if any.
//!
//! Probe sites exist on x86-64 Linux; elsewhere, or with the `disabled`
//! feature, every function keeps its signature and does nothing.

mod probes;
mod session;
mod thread;

pub use probes::ABI_VERSION;
pub use session::{
    CacheState, DaemonState, FinishedRun, RunIdentity, RunState, Session, SessionActive,
};

/// Stable wire schema of the records khprof writes for this crate's probes.
pub const PROFILE_SCHEMA: &str = "keyhog-profile-v1";

/// Fixed measurement stages shared by scanner, source, verifier, and
/// reporter paths: the seed's variants in its wire order, which is the
/// `stage` argument of the probes (`KH_STAGE_*`).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[repr(usize)]
pub enum Stage {
    SourceAcquire = 0,
    SourceWalk,
    SourceRead,
    Preprocess,
    Phase1Triggers,
    BackendDispatch,
    HotPatterns,
    ConfirmedPatterns,
    Phase2Prefilter,
    Phase2KeywordAc,
    Phase2SharedAc,
    Phase2AnchoredVerify,
    Phase2WholeChunk,
    GenericDetection,
    Entropy,
    MachineLearning,
    Decode,
    Suppression,
    LiveVerification,
    Reporting,
    SourceQueueWait,
    IncrementalLookup,
    BackendSelect,
    ResultMerge,
    ScannerQueueWait,
}

impl Stage {
    /// Every stage in stable wire order.
    pub const ALL: [Self; 25] = [
        Self::SourceAcquire,
        Self::SourceWalk,
        Self::SourceRead,
        Self::Preprocess,
        Self::Phase1Triggers,
        Self::BackendDispatch,
        Self::HotPatterns,
        Self::ConfirmedPatterns,
        Self::Phase2Prefilter,
        Self::Phase2KeywordAc,
        Self::Phase2SharedAc,
        Self::Phase2AnchoredVerify,
        Self::Phase2WholeChunk,
        Self::GenericDetection,
        Self::Entropy,
        Self::MachineLearning,
        Self::Decode,
        Self::Suppression,
        Self::LiveVerification,
        Self::Reporting,
        Self::SourceQueueWait,
        Self::IncrementalLookup,
        Self::BackendSelect,
        Self::ResultMerge,
        Self::ScannerQueueWait,
    ];

    /// Stable text label used by human reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::SourceAcquire => "source-acquire",
            Self::SourceWalk => "source-walk",
            Self::SourceRead => "source-read",
            Self::Preprocess => "preprocess",
            Self::Phase1Triggers => "phase1-triggers",
            Self::BackendDispatch => "backend-dispatch",
            Self::HotPatterns => "hot-patterns",
            Self::ConfirmedPatterns => "confirmed-patterns",
            Self::Phase2Prefilter => "phase2-prefilter",
            Self::Phase2KeywordAc => "phase2-keyword-ac",
            Self::Phase2SharedAc => "phase2-shared-ac",
            Self::Phase2AnchoredVerify => "phase2-anchored-verify",
            Self::Phase2WholeChunk => "phase2-whole-chunk",
            Self::GenericDetection => "generic-detection",
            Self::Entropy => "entropy",
            Self::MachineLearning => "machine-learning",
            Self::Decode => "decode",
            Self::Suppression => "suppression",
            Self::LiveVerification => "live-verification",
            Self::Reporting => "reporting",
            Self::SourceQueueWait => "source-queue-wait",
            Self::IncrementalLookup => "incremental-lookup",
            Self::BackendSelect => "backend-select",
            Self::ResultMerge => "result-merge",
            Self::ScannerQueueWait => "scanner-queue-wait",
        }
    }
}

/// Optional attribution for work performed inside a derived input
/// (the probes' `attribution` argument: 0 root, 1 decoded).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[repr(u8)]
pub enum Attribution {
    #[default]
    Root = 0,
    Decoded = 1,
}

/// Replace this thread's attribution and return its previous value.  Spans
/// take the attribution their thread has at their exit.
pub fn set_attribution(attribution: Attribution) -> Attribution {
    match thread::replace_attribution(attribution as u32) {
        1 => Attribution::Decoded,
        _ => Attribution::Root,
    }
}

/// Whether a tracer has span or batch probes attached to this module (the
/// header's `KH_TRACING()`): spans are timed only then.  Use it to skip
/// work done only for the profile.
#[inline(always)]
pub fn enabled() -> bool {
    probes::semaphores() != 0
}

/// Allocation-free stage guard, closed when dropped.  Untraced it holds no
/// start time and its drop is a test of a register.
#[must_use]
pub struct Span {
    stage: u32,
    /// Time at the enter (CLOCK_MONOTONIC ns, or TSC with bit 63 set),
    /// 0 when the enter was not timed.
    start: u64,
}

impl Span {
    /// Whether this span read a clock and will be handed to the tracer.
    pub fn is_recording(&self) -> bool {
        self.start != 0
    }
}

/// Start one fixed-stage measurement.
#[inline(always)]
pub fn span(stage: Stage) -> Span {
    let stage = stage as u32;
    let start = if probes::semaphores() != 0 { thread::span_start(stage) } else { 0 };
    Span { stage, start }
}

impl Drop for Span {
    /// Tests the start kept in the guard rather than reloading the
    /// semaphore: a span not timed at its enter is not counted, as in the
    /// seed, and the untraced span pays one load instead of two.
    #[inline(always)]
    fn drop(&mut self) {
        if self.start != 0 {
            thread::span_complete(self.stage, self.start);
        }
    }
}

/// Add source bytes processed (per chunk, never per byte): an
/// `input_bytes` probe, or in batch mode the thread's next batch.
#[inline(always)]
pub fn add_input_bytes(bytes: u64) {
    thread::add_input_bytes(bytes);
}

/// Add source units such as files, objects, responses, or chunks.
#[inline(always)]
pub fn add_input_units(units: u64) {
    thread::add_input_units(units);
}
