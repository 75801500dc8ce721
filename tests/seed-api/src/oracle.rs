//! What a profile must hold, whichever crate made it: counts the program
//! knows, times between the program's own clock readings around each call,
//! and the derived fields (per-state measurements, resource usage)
//! recomputed from the profile's own transitions and samples as the seed's
//! docs describe them.  The seed's run passing these checks is what makes
//! them a fair judge of the other crate's run.
//!
//! Also the transcript's description of a profile without its times and
//! the machine's figures, and renderings of hand-made records, which are
//! the same from both crates byte for byte.

use keyhog_profile::*;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

fn ns(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// Per stage: calls, and the sums of the program's readings just inside
/// and just outside each guard (a crate's time lies between them), for all
/// spans and for the decoded ones.
#[derive(Default)]
pub struct Clocks {
    stages: Vec<(Stage, u64, [u64; 4])>,
    /// The attribution the next span ends with.
    pub decoded: bool,
}

impl Clocks {
    pub fn add(&mut self, stage: Stage, inner: Duration, outer: Duration) {
        let decoded = self.decoded;
        let position = match self.stages.iter().position(|(s, _, _)| *s == stage) {
            Some(position) => position,
            None => {
                self.stages.push((stage, 0, [0; 4]));
                self.stages.len() - 1
            }
        };
        let entry = &mut self.stages[position];
        entry.1 += 1;
        entry.2[0] += ns(inner);
        entry.2[1] += ns(outer);
        if decoded {
            entry.2[2] += ns(inner);
            entry.2[3] += ns(outer);
        }
    }

    pub fn merge(&mut self, other: Clocks) {
        for (stage, calls, sums) in other.stages {
            self.add(stage, Duration::ZERO, Duration::ZERO);
            let entry = self.stages.iter_mut().find(|(s, _, _)| *s == stage).expect("just added");
            entry.1 += calls - 1;
            for (sum, add) in entry.2.iter_mut().zip(sums) {
                *sum += add;
            }
        }
    }
}

/// The stages taken must be the ones run, in wire order, with their calls,
/// their times between the program's readings.
pub fn check_stages(
    what: &str,
    stages: &[StageMeasurement],
    clocks: &Clocks,
    errors: &mut Vec<String>,
) {
    let mut run: Vec<&(Stage, u64, [u64; 4])> = clocks.stages.iter().collect();
    run.sort_by_key(|(stage, _, _)| Stage::ALL.iter().position(|s| s == stage));
    let got: Vec<(Stage, u64)> = stages.iter().map(|m| (m.stage, m.calls)).collect();
    let want: Vec<(Stage, u64)> = run.iter().map(|(stage, calls, _)| (*stage, *calls)).collect();
    if got != want {
        errors.push(format!("{what}: stages and calls {got:?}, not {want:?}"));
        return;
    }
    for (measurement, (_, _, sums)) in stages.iter().zip(run) {
        let name = measurement.stage.as_str();
        if measurement.elapsed_ns < sums[0] || measurement.elapsed_ns > sums[1] {
            errors.push(format!(
                "{what}: {name} elapsed_ns {} outside the program's own clocks [{}, {}]",
                measurement.elapsed_ns, sums[0], sums[1]
            ));
        }
        if measurement.attributed_ns < sums[2] || measurement.attributed_ns > sums[3] {
            errors.push(format!(
                "{what}: {name} attributed_ns {} outside the program's own clocks [{}, {}]",
                measurement.attributed_ns, sums[2], sums[3]
            ));
        }
    }
}

/// What the program knows of its profiled session.
#[derive(Default)]
pub struct Expected {
    pub clocks: Clocks,
    /// Each transition with the bounds of its elapsed_ns.
    pub transitions: Vec<(RunState, u64, u64)>,
    pub wall: (Duration, Duration),
    pub identity: Option<RunIdentity>,
    pub input: (u64, u64),
    pub sequence: String,
    /// The transition taken while the two workers were alive.
    pub threads_at: Option<usize>,
}

impl Expected {
    /// A transition between `before` and `after`, in a session started
    /// between `before_start` and `after_start`.
    pub fn transition(
        &mut self,
        state: RunState,
        before: Instant,
        after: Instant,
        after_start: Instant,
        before_start: Instant,
    ) {
        let low = ns(before.saturating_duration_since(after_start));
        let high = ns(after.saturating_duration_since(before_start));
        self.transitions.push((state, low, high));
    }
}

fn max_option(left: Option<u64>, right: Option<u64>) -> Option<u64> {
    match (left, right) {
        (Some(left), Some(right)) => Some(left.max(right)),
        (left, right) => left.or(right),
    }
}

/// The per-state measurements the seed's docs derive from transitions and
/// their samples: one per state left, its wall time, CPU time and average
/// CPU use (thousandths of a percent), memory and threads at both ends.
fn states_from(profile: &RunProfile) -> Vec<StateMeasurement> {
    let mut states = Vec::new();
    for (t, s) in profile.transitions.windows(2).zip(profile.resource_samples.windows(2)) {
        let elapsed_ns = match t[1].elapsed_ns.checked_sub(t[0].elapsed_ns) {
            Some(elapsed) => elapsed,
            None => continue,
        };
        let (start, finish) = (s[0].snapshot, s[1].snapshot);
        let cpu = start.cpu_time_ms.zip(finish.cpu_time_ms).filter(|(a, b)| b >= a);
        states.push(StateMeasurement {
            state: t[0].state,
            elapsed_ns,
            cpu_time_ms: cpu.map(|(a, b)| b - a),
            aggregate_cpu_milli_percent: cpu.filter(|_| elapsed_ns != 0).map(|(a, b)| {
                u64::try_from(u128::from(b - a) * 100_000_000_000 / u128::from(elapsed_ns))
                    .unwrap_or(u64::MAX)
            }),
            resident_start_bytes: start.resident_bytes,
            resident_end_bytes: finish.resident_bytes,
            threads_start: start.thread_count,
            threads_end: finish.thread_count,
        });
    }
    states
}

/// The session's resource usage the seed's docs describe: start and finish
/// snapshots, peaks over every sample, CPU use over the wall time.
fn resources_from(profile: &RunProfile) -> Option<ResourceUsage> {
    let start = profile.resource_samples.first()?.snapshot;
    let finish = profile.resource_samples.last()?.snapshot;
    let peak = |value: fn(&ResourceSnapshot) -> Option<u64>| {
        profile
            .resource_samples
            .iter()
            .fold(max_option(value(&start), value(&finish)), |max, sample| {
                max_option(max, value(&sample.snapshot))
            })
    };
    let wall_ms = profile.wall_time_ns as f64 / 1_000_000.0;
    Some(ResourceUsage {
        start,
        finish,
        max_observed_resident_bytes: peak(|s| s.resident_bytes),
        max_observed_threads: peak(|s| s.thread_count),
        aggregate_cpu_percent: start
            .cpu_time_ms
            .zip(finish.cpu_time_ms)
            .filter(|(a, b)| b >= a && wall_ms > 0.0)
            .map(|(a, b)| (b - a) as f64 * 100.0 / wall_ms),
    })
}

pub fn check_profile(profile: &RunProfile, expected: &Expected, errors: &mut Vec<String>) {
    let mut fail = |what: String| errors.push(format!("profile: {what}"));
    if profile.schema != PROFILE_SCHEMA {
        fail(format!("schema {}", profile.schema));
    }
    if Some(&profile.identity) != expected.identity.as_ref() {
        fail(format!("identity {:?}, not {:?}", profile.identity, expected.identity));
    }
    if profile.status != RunState::Completed {
        fail(format!("status {:?}", profile.status));
    }
    let (low, high) = (ns(expected.wall.0), ns(expected.wall.1));
    if profile.wall_time_ns < low || profile.wall_time_ns > high {
        fail(format!("wall_time_ns {} outside [{low}, {high}]", profile.wall_time_ns));
    }
    if (profile.input_bytes, profile.input_units) != expected.input {
        fail(format!(
            "input {:?}, not {:?}",
            (profile.input_bytes, profile.input_units),
            expected.input
        ));
    }
    let states: Vec<RunState> = profile.transitions.iter().map(|t| t.state).collect();
    let want: Vec<RunState> = expected.transitions.iter().map(|t| t.0).collect();
    if states != want {
        fail(format!("transitions {states:?}, not {want:?}"));
    }
    for (transition, (_, low, high)) in profile.transitions.iter().zip(&expected.transitions) {
        if transition.elapsed_ns < *low || transition.elapsed_ns > *high {
            fail(format!(
                "transition {:?} at {} outside [{low}, {high}]",
                transition.state, transition.elapsed_ns
            ));
        }
    }
    let sampled: Vec<(RunState, u64)> =
        profile.resource_samples.iter().map(|s| (s.state, s.elapsed_ns)).collect();
    let transitions: Vec<(RunState, u64)> =
        profile.transitions.iter().map(|t| (t.state, t.elapsed_ns)).collect();
    if sampled != transitions {
        fail(format!("resource samples at {sampled:?}, transitions at {transitions:?}"));
    }
    if cfg!(target_os = "linux") {
        for sample in &profile.resource_samples {
            let s = sample.snapshot;
            if s.cpu_time_ms.is_none()
                || s.resident_bytes.is_none()
                || s.virtual_bytes.is_none()
                || s.thread_count.is_none()
            {
                fail(format!("sample in {:?} misses /proc figures: {s:?}", sample.state));
            }
        }
        let threads = expected
            .threads_at
            .and_then(|i| profile.resource_samples.get(i))
            .and_then(|s| s.snapshot.thread_count);
        if !matches!(threads, Some(n) if n >= 3) {
            fail(format!("{threads:?} threads sampled while two workers ran"));
        }
    }
    if profile.states != states_from(profile) {
        fail(format!("states {:?}, not {:?}", profile.states, states_from(profile)));
    }
    if Some(&profile.resources) != resources_from(profile).as_ref() {
        fail(format!("resources {:?}, not {:?}", profile.resources, resources_from(profile)));
    }
    if profile.identity.run_id.rsplit('-').next() != Some(expected.sequence.as_str()) {
        fail(format!("run_id {} does not end in -{}", profile.identity.run_id, expected.sequence));
    }
    check_stages("profile", &profile.stages, &expected.clocks, errors);
}

fn shape(value: Option<u64>) -> &'static str {
    if value.is_some() {
        "some"
    } else {
        "none"
    }
}

fn snapshot_shape(s: &ResourceSnapshot) -> String {
    format!(
        "cpu={} rss={} vm={} threads={}",
        shape(s.cpu_time_ms),
        shape(s.resident_bytes),
        shape(s.virtual_bytes),
        shape(s.thread_count)
    )
}

/// The profile without its times and the machine's figures.
pub fn describe(profile: &RunProfile, t: &mut String) {
    let mut identity = profile.identity.clone();
    identity.run_id = "-".to_owned();
    writeln!(t, "profile schema={} status={:?}", profile.schema, profile.status).unwrap();
    writeln!(t, "profile identity {identity:?}").unwrap();
    writeln!(t, "profile input {} {}", profile.input_bytes, profile.input_units).unwrap();
    for m in &profile.stages {
        let decoded = if m.attributed_ns == 0 {
            "none"
        } else if m.attributed_ns == m.elapsed_ns {
            "all"
        } else {
            "some"
        };
        writeln!(t, "profile stage {} calls={} decoded={decoded}", m.stage.as_str(), m.calls)
            .unwrap();
    }
    let transitions: Vec<String> =
        profile.transitions.iter().map(|x| format!("{:?}", x.state)).collect();
    writeln!(t, "profile transitions {}", transitions.join(" ")).unwrap();
    for s in &profile.states {
        writeln!(
            t,
            "profile state {:?} cpu={} milli_percent={} rss={}/{} threads={}/{}",
            s.state,
            shape(s.cpu_time_ms),
            shape(s.aggregate_cpu_milli_percent),
            shape(s.resident_start_bytes),
            shape(s.resident_end_bytes),
            shape(s.threads_start),
            shape(s.threads_end)
        )
        .unwrap();
    }
    for s in &profile.resource_samples {
        writeln!(t, "profile sample {:?} {}", s.state, snapshot_shape(&s.snapshot)).unwrap();
    }
    let r = &profile.resources;
    writeln!(
        t,
        "profile resources start {} finish {} max_rss={} max_threads={} cpu_percent={}",
        snapshot_shape(&r.start),
        snapshot_shape(&r.finish),
        shape(r.max_observed_resident_bytes),
        shape(r.max_observed_threads),
        if r.aggregate_cpu_percent.is_some() { "some" } else { "none" }
    )
    .unwrap();
}

/// Hand-made records covering the report's every branch: each one's
/// text, JSON and Debug form, its JSON read back, and its JSON without the
/// `#[serde(default)]` fields read back.
pub fn crafted(t: &mut String, errors: &mut Vec<String>) {
    let mut identity = RunIdentity::new("crafted 2.0", "det", "cfg", "git", "repo", "simd");
    identity.run_id = "42-1700000000000000000-7".to_owned();
    let snapshot = |cpu: u64, rss: Option<u64>, threads: u64| ResourceSnapshot {
        cpu_time_ms: Some(cpu),
        resident_bytes: rss,
        virtual_bytes: Some(1 << 30),
        thread_count: Some(threads),
    };
    let full = RunProfile {
        schema: PROFILE_SCHEMA.to_owned(),
        identity: RunIdentity {
            backend_selected: Some("hyperscan".to_owned()),
            cache_state: CacheState::Warm,
            daemon_state: DaemonState::Worker,
            scanner_threads: 8,
            reader_threads: Some(3),
            logical_cpus: 16,
            ..identity.clone()
        },
        status: RunState::Failed,
        wall_time_ns: 1_234_567_891,
        input_bytes: 987_654_321,
        input_units: 1234,
        stages: vec![
            StageMeasurement {
                stage: Stage::SourceRead,
                elapsed_ns: 333_333_333,
                calls: 7,
                attributed_ns: 0,
            },
            StageMeasurement {
                stage: Stage::BackendDispatch,
                elapsed_ns: 900_000_000,
                calls: 1,
                attributed_ns: 5,
            },
            StageMeasurement {
                stage: Stage::Decode,
                elapsed_ns: 333_333_333,
                calls: 0,
                attributed_ns: 333_333_333,
            },
        ],
        transitions: vec![
            StateTransition { state: RunState::Created, elapsed_ns: 0 },
            StateTransition { state: RunState::Verifying, elapsed_ns: 500_000_001 },
            StateTransition { state: RunState::Failed, elapsed_ns: 1_000_000_002 },
        ],
        states: vec![
            StateMeasurement {
                state: RunState::Created,
                elapsed_ns: 500_000_001,
                cpu_time_ms: Some(250),
                aggregate_cpu_milli_percent: Some(49_999),
                resident_start_bytes: Some(4096),
                resident_end_bytes: None,
                threads_start: Some(1),
                threads_end: Some(9),
            },
            StateMeasurement {
                state: RunState::Verifying,
                elapsed_ns: 500_000_001,
                cpu_time_ms: None,
                aggregate_cpu_milli_percent: None,
                resident_start_bytes: None,
                resident_end_bytes: None,
                threads_start: None,
                threads_end: Some(2),
            },
        ],
        resource_samples: vec![ResourceSample {
            state: RunState::Created,
            elapsed_ns: 0,
            snapshot: snapshot(10, Some(4096), 1),
        }],
        resources: ResourceUsage {
            start: snapshot(10, Some(4096), 1),
            finish: snapshot(270, None, 2),
            max_observed_resident_bytes: Some(8192),
            max_observed_threads: Some(9),
            aggregate_cpu_percent: Some(100.0 / 3.0),
        },
    };
    let empty = RunProfile {
        schema: PROFILE_SCHEMA.to_owned(),
        identity,
        status: RunState::Created,
        wall_time_ns: 0,
        input_bytes: 5,
        input_units: 0,
        stages: Vec::new(),
        transitions: Vec::new(),
        states: Vec::new(),
        resource_samples: Vec::new(),
        resources: ResourceUsage::default(),
    };
    for (name, profile) in [("full", &full), ("empty", &empty)] {
        let json = match profile.to_json_pretty() {
            Ok(json) => json,
            Err(e) => {
                errors.push(format!("crafted {name}: to_json_pretty: {e}"));
                continue;
            }
        };
        writeln!(t, "crafted {name} text:\n{}", profile.render_text()).unwrap();
        writeln!(t, "crafted {name} json:\n{json}").unwrap();
        writeln!(t, "crafted {name} debug: {profile:?}").unwrap();
        match serde_json::from_str::<RunProfile>(&json) {
            Ok(back) if &back == profile => {}
            other => errors.push(format!("crafted {name}: JSON read back as {other:?}")),
        }
        for (ty, field) in crate::seed_api::SERDE_DEFAULT_FIELDS {
            if *ty != "RunProfile" {
                errors
                    .push(format!("no {ty} at hand to check its #[serde(default)] field {field}"));
                continue;
            }
            let mut value: serde_json::Value = serde_json::from_str(&json).expect("own JSON");
            value.as_object_mut().expect("an object").remove(*field);
            match serde_json::from_value::<RunProfile>(value) {
                Ok(back) => {
                    let back = serde_json::to_value(&back).expect("serializable");
                    writeln!(t, "crafted {name} without {field}: {}", back[*field]).unwrap();
                }
                Err(e) => errors.push(format!("crafted {name} without {field}: {e}")),
            }
        }
    }
}
