//! The seed's record, computed in process: `RunProfile` and its parts with
//! the seed's fields, derives and serde form, the `/proc` samples taken at
//! each macro boundary, the per-state measurements and resource usage
//! derived from them, `render_text` and `to_json_pretty`.  Every
//! computation follows `../shared/seed/keyhog_profile_lib.rs` step for
//! step, since `Session::finish` must return what the seed's returns for
//! the same run (tests/seed-api compares the two field by field).
//!
//! `LocalSession` is the in-process half of a `Session` (session.rs holds
//! the half that fires khprof's probes).

use crate::counters;
use crate::session::{CacheState, DaemonState, RunIdentity, RunState};
use crate::Stage;
use std::time::{Duration, Instant};

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Stable wire schema for persisted profiling records.
pub const PROFILE_SCHEMA: &str = "keyhog-profile-v1";

/// One aggregate fixed-stage measurement.
#[derive(Clone, Debug, Eq, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct StageMeasurement {
    pub stage: Stage,
    pub elapsed_ns: u64,
    pub calls: u64,
    pub attributed_ns: u64,
}

/// One run-state transition relative to session start.
#[derive(Clone, Debug, Eq, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct StateTransition {
    pub state: RunState,
    pub elapsed_ns: u64,
}

/// Process resource observation associated with a run-state boundary.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct ResourceSample {
    pub state: RunState,
    pub elapsed_ns: u64,
    pub snapshot: ResourceSnapshot,
}

/// Process resource observation at a macro boundary.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct ResourceSnapshot {
    pub cpu_time_ms: Option<u64>,
    pub resident_bytes: Option<u64>,
    pub virtual_bytes: Option<u64>,
    pub thread_count: Option<u64>,
}

/// One completed macro state with its wall time and boundary resource deltas.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct StateMeasurement {
    pub state: RunState,
    pub elapsed_ns: u64,
    pub cpu_time_ms: Option<u64>,
    pub aggregate_cpu_milli_percent: Option<u64>,
    pub resident_start_bytes: Option<u64>,
    pub resident_end_bytes: Option<u64>,
    pub threads_start: Option<u64>,
    pub threads_end: Option<u64>,
}

/// Resource change across a completed profile session.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct ResourceUsage {
    pub start: ResourceSnapshot,
    pub finish: ResourceSnapshot,
    pub max_observed_resident_bytes: Option<u64>,
    pub max_observed_threads: Option<u64>,
    pub aggregate_cpu_percent: Option<f64>,
}

/// Complete replayable profile record.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct RunProfile {
    pub schema: String,
    pub identity: RunIdentity,
    pub status: RunState,
    pub wall_time_ns: u64,
    pub input_bytes: u64,
    pub input_units: u64,
    pub stages: Vec<StageMeasurement>,
    pub transitions: Vec<StateTransition>,
    #[cfg_attr(feature = "serde", serde(default))]
    pub states: Vec<StateMeasurement>,
    pub resource_samples: Vec<ResourceSample>,
    pub resources: ResourceUsage,
}

/// The process's CPU time, memory and threads from `/proc/self`, as the
/// seed reads them on Linux.
#[cfg(target_os = "linux")]
fn process_resources() -> ResourceSnapshot {
    fn status_value(status: &str, field: &str, scale: u64) -> Option<u64> {
        status.lines().find_map(|line| {
            let value = line.strip_prefix(field)?.split_whitespace().next()?;
            value.parse::<u64>().ok()?.checked_mul(scale)
        })
    }

    extern "C" {
        // The C library's, which std links anyway (the seed takes it from
        // the libc crate; this crate takes no dependency for one call).
        fn sysconf(name: std::os::raw::c_int) -> std::os::raw::c_long;
    }
    // _SC_CLK_TCK in every Linux C library (glibc, musl, bionic).
    const SC_CLK_TCK: std::os::raw::c_int = 2;

    fn cpu_time_ms() -> Option<u64> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let command_end = stat.rfind(')')?;
        let mut fields = stat.get(command_end + 2..)?.split_whitespace();
        // utime and stime, fields 14 and 15 of proc(5), 12th and 13th after the command.
        let user_ticks = fields.nth(11)?.parse::<u64>().ok()?;
        let system_ticks = fields.next()?.parse::<u64>().ok()?;
        // SAFETY: sysconf reads a process constant and receives no pointer.
        let ticks_per_second = unsafe { sysconf(SC_CLK_TCK) };
        if ticks_per_second <= 0 {
            return None;
        }
        let milliseconds =
            (u128::from(user_ticks) + u128::from(system_ticks)) * 1_000 / ticks_per_second as u128;
        u64::try_from(milliseconds).ok()
    }

    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let cpu_time_ms = cpu_time_ms();
    ResourceSnapshot {
        cpu_time_ms,
        resident_bytes: status_value(&status, "VmRSS:", 1024),
        virtual_bytes: status_value(&status, "VmSize:", 1024),
        thread_count: status_value(&status, "Threads:", 1),
    }
}

/// Elsewhere the seed asks the `sysinfo` crate; this crate takes no
/// dependency for it, so every resource is unavailable (`None`), which the
/// record and the text report already allow.
#[cfg(not(target_os = "linux"))]
fn process_resources() -> ResourceSnapshot {
    ResourceSnapshot::default()
}

fn max_option(left: Option<u64>, right: Option<u64>) -> Option<u64> {
    match (left, right) {
        (Some(left), Some(right)) => Some(left.max(right)),
        (left, right) => left.or(right),
    }
}

/// CPU time over wall time in percent, when CPU time did not go backwards.
fn cpu_percent(
    start_cpu_ms: Option<u64>,
    finish_cpu_ms: Option<u64>,
    elapsed_ns: u64,
) -> Option<f64> {
    start_cpu_ms.zip(finish_cpu_ms).filter(|(start, finish)| finish >= start).and_then(
        |(start, finish)| {
            let wall_ms = elapsed_ns as f64 / 1_000_000.0;
            (wall_ms > 0.0).then_some((finish - start) as f64 * 100.0 / wall_ms)
        },
    )
}

/// The same in thousandths of a percent, in integers.
fn cpu_milli_percent(
    start_cpu_ms: Option<u64>,
    finish_cpu_ms: Option<u64>,
    elapsed_ns: u64,
) -> Option<u64> {
    if elapsed_ns == 0 {
        return None;
    }
    let (start, finish) =
        start_cpu_ms.zip(finish_cpu_ms).filter(|(start, finish)| finish >= start)?;
    let numerator = u128::from(finish - start) * 100_000_000_000_u128;
    Some(u64::try_from(numerator / u128::from(elapsed_ns)).unwrap_or(u64::MAX))
}

/// The maximum of a resource over the start, the finish and every sample.
fn max_observed(
    start: Option<u64>,
    finish: Option<u64>,
    samples: &[ResourceSample],
    value: fn(&ResourceSnapshot) -> Option<u64>,
) -> Option<u64> {
    samples
        .iter()
        .filter_map(|sample| value(&sample.snapshot))
        .fold(max_option(start, finish), |maximum, value| max_option(maximum, Some(value)))
}

fn resource_usage(
    start: ResourceSnapshot,
    finish: ResourceSnapshot,
    wall: Duration,
    samples: &[ResourceSample],
) -> ResourceUsage {
    let aggregate_cpu_percent = cpu_percent(
        start.cpu_time_ms,
        finish.cpu_time_ms,
        u64::try_from(wall.as_nanos()).unwrap_or(u64::MAX),
    );
    ResourceUsage {
        max_observed_resident_bytes: max_observed(
            start.resident_bytes,
            finish.resident_bytes,
            samples,
            |snapshot| snapshot.resident_bytes,
        ),
        max_observed_threads: max_observed(
            start.thread_count,
            finish.thread_count,
            samples,
            |snapshot| snapshot.thread_count,
        ),
        start,
        finish,
        aggregate_cpu_percent,
    }
}

/// One measurement per state left: between each transition and the next,
/// with the samples taken at both.
fn state_measurements(
    transitions: &[StateTransition],
    samples: &[ResourceSample],
) -> Vec<StateMeasurement> {
    transitions
        .windows(2)
        .zip(samples.windows(2))
        .filter_map(|(transition, sample)| {
            let elapsed_ns = transition[1].elapsed_ns.checked_sub(transition[0].elapsed_ns)?;
            let start = sample[0].snapshot;
            let finish = sample[1].snapshot;
            let cpu_time_ms = start
                .cpu_time_ms
                .zip(finish.cpu_time_ms)
                .filter(|(start, finish)| finish >= start)
                .map(|(start, finish)| finish - start);
            Some(StateMeasurement {
                state: transition[0].state,
                elapsed_ns,
                cpu_time_ms,
                aggregate_cpu_milli_percent: cpu_milli_percent(
                    start.cpu_time_ms,
                    finish.cpu_time_ms,
                    elapsed_ns,
                ),
                resident_start_bytes: start.resident_bytes,
                resident_end_bytes: finish.resident_bytes,
                threads_start: start.thread_count,
                threads_end: finish.thread_count,
            })
        })
        .collect()
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// The in-process half of a session: its clock, the transitions and the
/// resource samples at each, and the seed's switching of the counters.
pub(crate) struct LocalSession {
    started: Instant,
    resources_at_start: ResourceSnapshot,
    transitions: Vec<StateTransition>,
    resource_samples: Vec<ResourceSample>,
}

impl LocalSession {
    /// The seed's start, once `SESSION_ACTIVE` is taken: clears every
    /// counter, enables them, and samples the process in `created`.
    pub(crate) fn start() -> Self {
        counters::reset();
        counters::reset_session();
        crate::set_enabled(true);
        let started = Instant::now();
        let resources_at_start = process_resources();
        Self {
            started,
            resources_at_start,
            transitions: vec![StateTransition { state: RunState::Created, elapsed_ns: 0 }],
            resource_samples: vec![ResourceSample {
                state: RunState::Created,
                elapsed_ns: 0,
                snapshot: resources_at_start,
            }],
        }
    }

    pub(crate) fn transition(&mut self, state: RunState) {
        let elapsed_ns = nanos(self.started.elapsed());
        self.transitions.push(StateTransition { state, elapsed_ns });
        self.resource_samples.push(ResourceSample {
            state,
            elapsed_ns,
            snapshot: process_resources(),
        });
    }

    /// The seed's finish: the last transition, the counters disabled and
    /// taken, the record assembled.  `SESSION_ACTIVE` is the caller's.
    pub(crate) fn finish(mut self, identity: RunIdentity, status: RunState) -> RunProfile {
        self.transition(status);
        crate::set_enabled(false);
        let wall = self.started.elapsed();
        let finish_resources =
            self.resource_samples.last().map_or(self.resources_at_start, |sample| sample.snapshot);
        let (input_bytes, input_units) = counters::take_session_input_totals();
        let stages = counters::take_session_stage_measurements();
        counters::reset();
        let states = state_measurements(&self.transitions, &self.resource_samples);
        let resources =
            resource_usage(self.resources_at_start, finish_resources, wall, &self.resource_samples);
        RunProfile {
            schema: PROFILE_SCHEMA.to_string(),
            identity,
            status,
            wall_time_ns: nanos(wall),
            input_bytes,
            input_units,
            stages,
            transitions: self.transitions,
            states,
            resource_samples: self.resource_samples,
            resources,
        }
    }

    /// A session dropped unfinished: the seed discards what it counted.
    pub(crate) fn abandon() {
        crate::set_enabled(false);
        counters::reset();
        counters::reset_session();
    }
}

fn state_name(state: RunState) -> &'static str {
    match state {
        RunState::Created => "created",
        RunState::Acquiring => "acquiring",
        RunState::Scanning => "scanning",
        RunState::Resolving => "resolving",
        RunState::Verifying => "verifying",
        RunState::Reporting => "reporting",
        RunState::Completed => "completed",
        RunState::Failed => "failed",
    }
}

fn cache_name(state: CacheState) -> &'static str {
    state.as_str()
}

fn daemon_name(state: DaemonState) -> &'static str {
    state.as_str()
}

impl RunProfile {
    /// Serialize the stable record as pretty JSON.
    #[cfg(feature = "serde")]
    pub fn to_json_pretty(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }

    /// Render a compact operator report without secrets or source content:
    /// the seed's text, which `khprof report --format seed` also prints.
    pub fn render_text(&self) -> String {
        let reader_threads = self
            .identity
            .reader_threads
            .map_or_else(|| "auto".to_owned(), |threads| threads.to_string());
        let throughput_mib_s = if self.wall_time_ns == 0 {
            0.0
        } else {
            self.input_bytes as f64 * 1_000_000_000.0 / self.wall_time_ns as f64 / (1024.0 * 1024.0)
        };
        let mut output = format!(
            "KeyHog profile {}\n\
             state={} source={} workload={} backend_requested={} backend_selected={} cache={} daemon={} wall_ms={:.3}\n\
             version={} detector_digest={} config_digest={}\n\
             input_bytes={} input_units={} throughput_mib_s={throughput_mib_s:.3} scanner_threads={} reader_threads={} logical_cpus={}\n",
            self.identity.run_id,
            state_name(self.status),
            self.identity.source_kind,
            self.identity.workload_class,
            self.identity.backend_requested,
            self.identity.backend_selected.as_deref().unwrap_or("unselected"),
            cache_name(self.identity.cache_state),
            daemon_name(self.identity.daemon_state),
            self.wall_time_ns as f64 / 1_000_000.0,
            self.identity.binary_version,
            self.identity.detector_digest,
            self.identity.config_digest,
            self.input_bytes,
            self.input_units,
            self.identity.scanner_threads,
            reader_threads,
            self.identity.logical_cpus,
        );
        for state in &self.states {
            output.push_str(&format!(
                "macro {:<12} wall_ms={:.3}",
                state_name(state.state),
                state.elapsed_ns as f64 / 1_000_000.0,
            ));
            if let Some(cpu) = state.aggregate_cpu_milli_percent {
                output.push_str(&format!(" cpu={:.1}%", cpu as f64 / 1_000.0));
            } else {
                output.push_str(" cpu=unavailable");
            }
            if let (Some(start), Some(finish)) =
                (state.resident_start_bytes, state.resident_end_bytes)
            {
                output.push_str(&format!(" rss_bytes={start}->{finish}"));
            }
            if let (Some(start), Some(finish)) = (state.threads_start, state.threads_end) {
                output.push_str(&format!(" threads={start}->{finish}"));
            }
            output.push('\n');
        }
        for stage in &self.stages {
            let per_call_us = if stage.calls == 0 {
                0.0
            } else {
                stage.elapsed_ns as f64 / stage.calls as f64 / 1_000.0
            };
            output.push_str(&format!(
                "  {:<24} {:>10.3} ms calls={} per_call_us={per_call_us:.3} attributed_ms={:.3}\n",
                stage.stage.as_str(),
                stage.elapsed_ns as f64 / 1_000_000.0,
                stage.calls,
                stage.attributed_ns as f64 / 1_000_000.0,
            ));
        }
        if let Some(state) = self.states.iter().max_by_key(|state| state.elapsed_ns) {
            output.push_str(&format!(
                "bottleneck macro={} wall_ms={:.3}",
                state_name(state.state),
                state.elapsed_ns as f64 / 1_000_000.0,
            ));
        }
        if let Some(stage) = self
            .stages
            .iter()
            .filter(|stage| stage.stage != Stage::BackendDispatch)
            .max_by_key(|stage| stage.elapsed_ns)
        {
            output.push_str(&format!(
                " summed_stage={} summed_ms={:.3}",
                stage.stage.as_str(),
                stage.elapsed_ns as f64 / 1_000_000.0,
            ));
        }
        if !self.states.is_empty() || !self.stages.is_empty() {
            output.push('\n');
        }
        if let Some(cpu) = self.resources.aggregate_cpu_percent {
            output.push_str(&format!("resources aggregate_cpu={cpu:.1}%"));
        } else {
            output.push_str("resources aggregate_cpu=unavailable");
        }
        if let Some(rss) = self.resources.max_observed_resident_bytes {
            output.push_str(&format!(" max_observed_rss_bytes={rss}"));
        }
        if let Some(threads) = self.resources.max_observed_threads {
            output.push_str(&format!(" max_observed_threads={threads}"));
        }
        output.push('\n');
        output
    }
}
