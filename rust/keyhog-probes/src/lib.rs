//! KeyHog's profiling API -- the whole of the `keyhog_profile` seed crate
//! -- that is also profiled from outside by khprof's USDT probes
//! (`khprof record -- scanner ...`, `khprof attach -p PID`).
//!
//! In process it is the seed: `set_enabled(true)` or a [`Session`] turns
//! the counters on, spans count per-stage ns, calls and decoded ns,
//! [`take_stage_measurements`] and [`take_input_totals`] read them, and
//! [`Session::finish`] returns the seed's [`RunProfile`] (`render_text`,
//! `to_json_pretty`), equal to the seed's for the same run.  Traced, the
//! spans also go to khprof in the mode it chose (batch, span or pair) and
//! khprof writes its own `keyhog-profile-v1` record of each session, whose
//! counts agree with the in-process one.  The probe ABI is docs/PROBES.md
//! of the khprof repository (version [`ABI_VERSION`]).
//!
//! Untraced and disabled, a span costs what the C header's does: one load
//! of the module's switch word (src/switch.rs: the kernel's semaphores
//! and the in-process switch in one 8-byte object), a test and a
//! not-taken branch at its enter, a test of a register at its exit; no
//! clock read, no atomic read-modify-write, no build flag.
//!
//! Moving a scanner from the seed: depend on this crate under the seed's
//! name (`keyhog_profile = { package = "keyhog-probes", path = "..." }`);
//! every call site stays.  What this crate adds or says differently:
//!
//! - [`enabled`] is true while the in-process profile counts (as in the
//!   seed) and also while a tracer has span or batch probes attached.
//! - `Span::is_recording` likewise: the span read a clock, for either.
//! - Resources come from `/proc/self` on Linux as in the seed; elsewhere
//!   they are unavailable (`None`) where the seed asks the `sysinfo` crate.
//! - The serde derives and `RunProfile::to_json_pretty` are the default
//!   feature `serde` (serde and serde_json, as the seed); with
//!   `default-features = false` the crate has no dependency and keeps
//!   everything else, `render_text` included.
//!
//! Probe sites exist on x86-64 and aarch64 Linux (what differs is in
//! src/arch_x86_64.rs and src/arch_aarch64.rs); elsewhere, or with the
//! `disabled` feature, every probe does nothing and the in-process profile
//! still counts.

// The note and symbols first, then the architecture's file, whose macros
// probes.rs expands: macros are in scope after their definition.
#[macro_use]
mod note;
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(feature = "disabled")))]
#[macro_use]
#[path = "arch_x86_64.rs"]
mod arch;
#[cfg(all(target_arch = "aarch64", target_os = "linux", not(feature = "disabled")))]
#[macro_use]
#[path = "arch_aarch64.rs"]
mod arch;
mod counters;
mod probes;
mod profile;
mod session;
mod switch;
mod thread;

pub use probes::ABI_VERSION;
pub use profile::{
    ResourceSample, ResourceSnapshot, ResourceUsage, RunProfile, StageMeasurement,
    StateMeasurement, StateTransition, PROFILE_SCHEMA,
};
pub use session::{CacheState, DaemonState, RunIdentity, RunState, Session, SessionActive};

/// Fixed measurement stages shared by scanner, source, verifier, and
/// reporter paths: the seed's variants in its wire order, which is the
/// `stage` argument of the probes (`KH_STAGE_*`).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
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

/// Return whether fixed-stage profiling is active: in process (the
/// seed's switch, `set_enabled` or a session) or by a tracer with span or
/// batch probes attached to this module (the header's `KH_TRACING()`).
/// Spans are timed only then.  Use it to skip work done only for the profile.
#[inline(always)]
pub fn enabled() -> bool {
    switch::word() != 0
}

/// Enable or disable fixed-stage profiling in process.
///
/// Prefer [`Session::start`] for operator runs because it also captures
/// identity, resources, and state transitions.  This switch remains
/// available to libraries and microbenchmarks that only need stage
/// counters.  It does not touch tracing: khprof's probes stay live while
/// khprof has them attached.
pub fn set_enabled(enabled: bool) {
    switch::set_local(enabled);
}

/// Atomically read and clear all fixed-stage counters (the process's,
/// not the open session's): the stages with anything counted, in wire order.
pub fn take_stage_measurements() -> Vec<StageMeasurement> {
    counters::take_stage_measurements()
}

/// Atomically read and clear aggregate input bytes and units.
pub fn take_input_totals() -> (u64, u64) {
    counters::take_input_totals()
}

/// Discard fixed-stage counters and input totals.
pub fn reset() {
    counters::reset();
}

/// Allocation-free stage guard, closed when dropped.  Disabled and
/// untraced it holds no start time and its drop is a test of a register.
#[must_use]
pub struct Span {
    /// The stage number, and above it the in-process flags
    /// (`counters::LOCAL`...), none for a span only the tracer times.
    stage: u32,
    /// Time at the enter (CLOCK_MONOTONIC ns, or TSC with bit 63 set for
    /// a span only the tracer times), 0 when the enter was not timed.
    start: u64,
}

impl Span {
    /// Whether this span reads and will record a clock measurement (in
    /// process, for the tracer, or both).
    pub fn is_recording(&self) -> bool {
        self.start != 0
    }
}

/// Start one fixed-stage measurement.
#[inline(always)]
pub fn span(stage: Stage) -> Span {
    let stage = stage as u32;
    // One load for both switches (src/switch.rs).
    let word = switch::word();
    if word == 0 {
        Span { stage, start: 0 }
    } else if switch::local(word) {
        counters::span_enter(stage, word)
    } else {
        Span { stage, start: thread::span_start(stage) }
    }
}

impl Drop for Span {
    /// Tests the start kept in the guard rather than reloading the word:
    /// a span not timed at its enter is not counted, as in the seed, and
    /// the untraced span pays one load instead of two.
    #[inline(always)]
    fn drop(&mut self) {
        if self.start != 0 {
            if self.stage < counters::LOCAL {
                thread::span_complete(self.stage, self.start);
            } else {
                counters::span_exit(self.stage, self.start);
            }
        }
    }
}

/// Add source bytes processed by the current profile (per chunk, never
/// per byte): in process while enabled, as in the seed, and for khprof an
/// `input_bytes` probe, or in batch mode the thread's next batch.
#[inline(always)]
pub fn add_input_bytes(bytes: u64) {
    counters::add_input_bytes(bytes);
    thread::add_input_bytes(bytes);
}

/// Add source units such as files, objects, responses, or chunks.
#[inline(always)]
pub fn add_input_units(units: u64) {
    counters::add_input_units(units);
    thread::add_input_units(units);
}
