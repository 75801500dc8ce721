//! The seed's session API (`RunIdentity`, `Session`, `RunState`...) in two
//! halves: khprof's session probes (`session_start`, `identity`,
//! `transition`, `session_finish`), from which khprof assembles its record
//! -- run id, transitions, wall times and /proc samples at each boundary --
//! and the seed's in-process session (`profile::LocalSession`), whose
//! `finish` returns the seed's `RunProfile`.

use crate::counters::SESSION_ACTIVE;
use crate::probes::{self, site};
use crate::profile::{LocalSession, RunProfile};
use crate::thread;
use std::ffi::CString;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Cache state that materially changes run cost.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize), serde(rename_all = "kebab-case"))]
pub enum CacheState {
    #[default]
    Unknown,
    Disabled,
    Cold,
    Warm,
}

impl CacheState {
    /// The seed's wire name, which is also the `identity` probe's value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Disabled => "disabled",
            Self::Cold => "cold",
            Self::Warm => "warm",
        }
    }
}

/// Daemon state that materially changes startup and resident work.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize), serde(rename_all = "kebab-case"))]
pub enum DaemonState {
    #[default]
    Off,
    Client,
    Worker,
    Mass,
}

impl DaemonState {
    /// The seed's wire name, which is also the `identity` probe's value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Client => "client",
            Self::Worker => "worker",
            Self::Mass => "mass",
        }
    }
}

/// Coarse causal state of a profiling run, in the seed's order, which is
/// the wire order of `KH_STATE_*` (`transition` and `session_finish`).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize), serde(rename_all = "kebab-case"))]
#[repr(u32)]
pub enum RunState {
    Created = 0,
    Acquiring = 1,
    Scanning = 2,
    Resolving = 3,
    Verifying = 4,
    Reporting = 5,
    Completed = 6,
    Failed = 7,
}

/// Identity and execution choices required to compare two run records
/// honestly: the seed's fields.  `run_id` is not sent: khprof makes the
/// record's own, `{pid}-{unix ns at session start}-{sequence}`, the format
/// `new` uses here (with the seed's sequence: `new` calls so far).
#[derive(Clone, Debug, Eq, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct RunIdentity {
    pub run_id: String,
    pub binary_version: String,
    pub detector_digest: String,
    pub config_digest: String,
    pub source_kind: String,
    pub workload_class: String,
    pub backend_requested: String,
    pub backend_selected: Option<String>,
    pub cache_state: CacheState,
    pub daemon_state: DaemonState,
    pub scanner_threads: usize,
    pub reader_threads: Option<usize>,
    pub logical_cpus: usize,
}

impl RunIdentity {
    /// Construct a run identity with a process-unique identifier and
    /// explicit state (the seed's constructor and defaults).
    pub fn new(
        binary_version: impl Into<String>,
        detector_digest: impl Into<String>,
        config_digest: impl Into<String>,
        source_kind: impl Into<String>,
        workload_class: impl Into<String>,
        backend_requested: impl Into<String>,
    ) -> Self {
        // The seed's own counter: an identifier unique in the process
        // however many identities are made before a session starts.
        static RUN_SEQUENCE: AtomicU64 = AtomicU64::new(0);
        let sequence = RUN_SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let unix_ns = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
        Self {
            run_id: format!("{}-{unix_ns}-{sequence}", std::process::id()),
            binary_version: binary_version.into(),
            detector_digest: detector_digest.into(),
            config_digest: config_digest.into(),
            source_kind: source_kind.into(),
            workload_class: workload_class.into(),
            backend_requested: backend_requested.into(),
            backend_selected: None,
            cache_state: CacheState::Unknown,
            daemon_state: DaemonState::Off,
            scanner_threads: 0,
            reader_threads: None,
            logical_cpus: std::thread::available_parallelism().map_or(1, usize::from),
        }
    }

    /// The `identity` probe's key/value pairs (docs/PROBES.md), keys
    /// NUL-terminated.  Unset options are not sent: khprof's record then
    /// has the seed's null for them.
    fn wire(&self) -> [(&'static [u8], Option<String>); 12] {
        [
            (b"binary_version\0", Some(self.binary_version.clone())),
            (b"detector_digest\0", Some(self.detector_digest.clone())),
            (b"config_digest\0", Some(self.config_digest.clone())),
            (b"source_kind\0", Some(self.source_kind.clone())),
            (b"workload_class\0", Some(self.workload_class.clone())),
            (b"backend_requested\0", Some(self.backend_requested.clone())),
            (b"backend_selected\0", self.backend_selected.clone()),
            (b"cache_state\0", Some(self.cache_state.as_str().to_owned())),
            (b"daemon_state\0", Some(self.daemon_state.as_str().to_owned())),
            (b"scanner_threads\0", Some(self.scanner_threads.to_string())),
            (b"reader_threads\0", self.reader_threads.map(|n| n.to_string())),
            (b"logical_cpus\0", Some(self.logical_cpus.to_string())),
        ]
    }
}

/// Error returned when a process-global profile session is already active.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct SessionActive;

impl fmt::Display for SessionActive {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a KeyHog profile session is already active in this process")
    }
}

impl std::error::Error for SessionActive {}

/// One causal profiling session, process-global as in the seed.
///
/// In process, the seed's session: `start` clears and enables the
/// counters, each transition samples `/proc/self`, `finish` returns the
/// `RunProfile`, and a session dropped unfinished discards its counts.
/// For khprof, `start` fires `session_start` and the identity,
/// `transition` and `finish` their probes; identity changed through
/// `identity_mut` is sent again at the next transition or at the finish,
/// the latest value of a key winning.  Every session event first flushes
/// the calling thread's span buffer, so the tracer sees its spans before
/// the boundary.  A session dropped unfinished ends as `RunState::Failed`
/// in khprof's record.
pub struct Session {
    identity: Option<RunIdentity>,
    sent: Vec<Option<String>>,
    /// `None` once finished (or dropped).
    local: Option<LocalSession>,
}

// One copy per module, like the header's functions: each is a probe site
// that costs the program a trap per hit only while traced.
#[inline(never)]
fn fire_session_start() {
    let sequence = probes::next_session_sequence();
    thread::batch_flush();
    // As the header: a C session of the process already open keeps its state.
    if probes::current_state() == probes::STATE_COUNT {
        probes::set_current_state(RunState::Created as u32);
        probes::clear_identity();
    }
    site::session_start(sequence, probes::ABI_VERSION);
}

#[inline(never)]
fn fire_transition(state: RunState) {
    thread::batch_flush();
    probes::set_current_state(state as u32);
    site::transition(state as u64);
}

#[inline(never)]
fn fire_session_finish(status: RunState) {
    thread::batch_flush();
    probes::set_current_state(probes::STATE_COUNT);
    site::session_finish(status as u64);
}

#[inline(never)]
fn fire_identity(key: &'static [u8], value: &str) {
    // A value with a NUL is cut there, as C would read it.
    let value = CString::new(value.split('\0').next().unwrap_or("")).unwrap_or_default();
    site::identity(key.as_ptr() as u64, value.as_ptr() as u64);
    // For a tracer that attaches later (docs/PROBES.md, kh_identity_table).
    probes::keep_identity(key, value.as_bytes());
}

impl Session {
    /// Start a fresh session and reset all fixed-stage counters (the
    /// seed's); fires `session_start` (khprof's sequence counts sessions
    /// of the process from 0) and the identity.
    pub fn start(identity: RunIdentity) -> Result<Self, SessionActive> {
        SESSION_ACTIVE
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| SessionActive)?;
        fire_session_start();
        let local = LocalSession::start();
        let mut session =
            Self { identity: Some(identity), sent: vec![None; 12], local: Some(local) };
        session.send_identity();
        Ok(session)
    }

    /// Mutate run identity before the session is finalized; changes are
    /// sent at the next transition or at the finish.
    pub fn identity_mut(&mut self) -> &mut RunIdentity {
        self.identity.as_mut().expect("unfinished profile owns identity")
    }

    /// Record an explicit macro state transition.
    pub fn transition(&mut self, state: RunState) {
        if let Some(local) = self.local.as_mut() {
            local.transition(state);
        }
        self.send_identity();
        fire_transition(state);
    }

    /// Finish the session and return its complete structured record: the
    /// seed's `RunProfile`, counted in process.  khprof, when it traces,
    /// writes its own record of the same session.
    pub fn finish(mut self, status: RunState) -> RunProfile {
        let local = self.local.take().expect("unfinished profile owns its local half");
        self.send_identity();
        let identity = self.identity.take().expect("unfinished profile owns identity");
        let profile = local.finish(identity, status);
        fire_session_finish(status);
        SESSION_ACTIVE.store(false, Ordering::Release);
        profile
    }

    /// Fires an `identity` probe for every key whose value changed since
    /// it was last sent.
    fn send_identity(&mut self) {
        let identity = match self.identity.as_ref() {
            Some(identity) => identity,
            None => return,
        };
        for (slot, (key, value)) in self.sent.iter_mut().zip(identity.wire()) {
            if value.is_some() && *slot != value {
                fire_identity(key, value.as_deref().unwrap_or(""));
                *slot = value;
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.local.take().is_some() {
            LocalSession::abandon();
            self.send_identity();
            fire_session_finish(RunState::Failed);
            SESSION_ACTIVE.store(false, Ordering::Release);
        }
    }
}
