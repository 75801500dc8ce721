//! The workload: every behaviour of the seed's API a scanner relies on, in
//! process.  The process counters alone (KeyHog's `--perf-trace`:
//! `set_enabled`, `take_stage_measurements`, `take_input_totals`,
//! `reset`), a session refused while one is open and one dropped
//! unfinished, then a whole session over three threads whose `RunProfile`
//! is written out.  Every span is timed by the program's own clock too, just
//! inside and just outside its guard (`oracle::Clocks`): a time the crate
//! measured must lie between the two, on any machine.

use crate::oracle::{self, Clocks, Expected};
use keyhog_profile::*;
use std::fmt::Write as _;
use std::path::Path;
use std::ptr::{read_volatile, write_volatile};
use std::sync::mpsc;
use std::time::Instant;

/// Busy work the compiler cannot remove, so that every span lasts.
fn burn(iterations: u64) -> u64 {
    let mut x: u64 = 1;
    for i in 0..iterations {
        // SAFETY: a local.
        unsafe {
            write_volatile(
                &mut x,
                read_volatile(&x).wrapping_mul(6364136223846793005).wrapping_add(i),
            )
        };
    }
    x
}

/// The process's CPU time in clock ticks (utime + stime, /proc/self/stat).
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_command = stat.rfind(')').map_or("", |end| &stat[end + 2..]);
    after_command
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|field| field.parse::<u64>().ok())
        .sum()
}

/// Works until the process's CPU time has grown by two ticks, so that the
/// state around it has CPU time to report and its percentages something
/// to compute (elsewhere than Linux, a fixed amount of work).
fn burn_cpu_ticks() {
    let start = cpu_ticks();
    let mut rounds = 0;
    while (cfg!(target_os = "linux") && cpu_ticks() < start + 2) || rounds < 10 {
        let _ = burn(100_000);
        rounds += 1;
    }
}

/// One span of `stage`, doing `work` units, on the program's clocks too.
fn timed(clocks: &mut Clocks, stage: Stage, work: u64) -> bool {
    let outer = Instant::now();
    let guard = span(stage);
    let inner = Instant::now();
    let _ = burn(work);
    let inner = inner.elapsed();
    let recording = guard.is_recording();
    drop(guard);
    clocks.add(stage, inner, outer.elapsed());
    recording
}

/// Decoded work: the attribution is set around the span, as a scanner
/// rescanning decoded input does.
fn timed_decoded(clocks: &mut Clocks, stage: Stage, work: u64) {
    let previous = set_attribution(Attribution::Decoded);
    clocks.decoded = true;
    timed(clocks, stage, work);
    clocks.decoded = false;
    set_attribution(previous);
}

fn stage_line(measurement: &StageMeasurement) -> String {
    let decoded = match measurement.attributed_ns {
        0 => "none",
        n if n == measurement.elapsed_ns => "all",
        _ => "some",
    };
    format!("{} calls={} decoded={decoded}", measurement.stage.as_str(), measurement.calls)
}

fn taken_line(measurements: &[StageMeasurement]) -> String {
    let lines: Vec<String> = measurements.iter().map(stage_line).collect();
    format!("[{}]", lines.join(", "))
}

// Lines that start "~ " say what enabled() and is_recording() report
// outside any session, true while khprof traces the program (the crate's
// superset of the seed): `check --traced` leaves them out.

/// The process counters without a session.
fn counters_alone(t: &mut String, errors: &mut Vec<String>) {
    let mut clocks = Clocks::default();
    writeln!(t, "~ enabled at start: {}", enabled()).unwrap();
    set_enabled(true);
    writeln!(t, "enabled after set_enabled(true): {}", enabled()).unwrap();
    writeln!(t, "set_attribution(Decoded) was {:?}", set_attribution(Attribution::Decoded))
        .unwrap();
    writeln!(t, "set_attribution(Root) was {:?}", set_attribution(Attribution::Root)).unwrap();
    for _ in 0..3 {
        add_input_bytes(100);
        add_input_units(1);
        writeln!(t, "span is_recording: {}", timed(&mut clocks, Stage::SourceRead, 2000)).unwrap();
        timed_decoded(&mut clocks, Stage::Decode, 1000);
    }
    // Nested: the outer span covers the inner one.
    {
        let outer = Instant::now();
        let guard = span(Stage::HotPatterns);
        let inner = Instant::now();
        timed(&mut clocks, Stage::Entropy, 500);
        let inner = inner.elapsed();
        drop(guard);
        clocks.add(Stage::HotPatterns, inner, outer.elapsed());
    }
    let taken = take_stage_measurements();
    oracle::check_stages("process counters", &taken, &clocks, errors);
    writeln!(t, "take_stage_measurements: {}", taken_line(&taken)).unwrap();
    writeln!(t, "take_stage_measurements again: {}", taken_line(&take_stage_measurements()))
        .unwrap();
    writeln!(t, "take_input_totals: {:?}", take_input_totals()).unwrap();
    writeln!(t, "take_input_totals again: {:?}", take_input_totals()).unwrap();

    timed(&mut Clocks::default(), Stage::Preprocess, 100);
    add_input_bytes(7);
    reset();
    writeln!(
        t,
        "after reset: {} {:?}",
        taken_line(&take_stage_measurements()),
        take_input_totals()
    )
    .unwrap();

    set_enabled(false);
    writeln!(t, "~ enabled after set_enabled(false): {}", enabled()).unwrap();
    writeln!(
        t,
        "~ disabled span is_recording: {}",
        timed(&mut Clocks::default(), Stage::Preprocess, 100)
    )
    .unwrap();
    add_input_bytes(7);
    writeln!(t, "disabled: {} {:?}", taken_line(&take_stage_measurements()), take_input_totals())
        .unwrap();
}

fn identity(version: &str) -> RunIdentity {
    RunIdentity::new(version, "det-seedapi", "cfg-seedapi", "filesystem", "seed-api", "auto")
}

/// The run id's last part: the number of identities made before this one.
fn run_id_sequence(identity: &RunIdentity, errors: &mut Vec<String>) -> String {
    let parts: Vec<&str> = identity.run_id.split('-').collect();
    let pid = std::process::id().to_string();
    if parts.len() != 3 || parts[0] != pid || parts[1].parse::<u128>().is_err() {
        errors
            .push(format!("run_id '{}' is not {{pid}}-{{unix ns}}-{{sequence}}", identity.run_id));
    }
    parts.last().copied().unwrap_or("").to_owned()
}

/// A refused start and a session dropped unfinished.
fn refused_and_dropped(t: &mut String, errors: &mut Vec<String>) {
    let first = identity("seed-api dropped");
    writeln!(t, "first identity sequence: {}", run_id_sequence(&first, errors)).unwrap();
    let mut session = Session::start(first).expect("no session is open");
    match Session::start(identity("seed-api refused")) {
        Ok(_) => writeln!(t, "second start: accepted").unwrap(),
        Err(error) => {
            let boxed: Box<dyn std::error::Error> = Box::new(error);
            writeln!(t, "second start: Err({error:?}) '{boxed}'").unwrap();
        }
    }
    writeln!(t, "enabled in a session: {}", enabled()).unwrap();
    session.transition(RunState::Scanning);
    add_input_bytes(5);
    timed(&mut Clocks::default(), Stage::Suppression, 100);
    drop(session);
    writeln!(t, "~ enabled after a dropped session: {}", enabled()).unwrap();
    writeln!(
        t,
        "after a dropped session: {} {:?}",
        taken_line(&take_stage_measurements()),
        take_input_totals()
    )
    .unwrap();
}

/// A worker's share of the scan: spans, nested and decoded, and input.
fn worker(stage: Stage, chunks: u64, started: mpsc::Sender<()>, go: mpsc::Receiver<()>) -> Clocks {
    let mut clocks = Clocks::default();
    started.send(()).expect("main waits");
    go.recv().expect("main releases");
    for _ in 0..chunks {
        add_input_bytes(4096);
        add_input_units(1);
        timed(&mut clocks, stage, 300);
        timed_decoded(&mut clocks, Stage::Decode, 200);
    }
    clocks
}

/// The session whose `RunProfile` the program writes.
fn profiled_session(
    t: &mut String,
    expected: &mut Expected,
    errors: &mut Vec<String>,
) -> RunProfile {
    const CHUNKS: u64 = 40;
    let mut identity = identity("seed-api 1.0");
    identity.scanner_threads = 2;
    identity.cache_state = CacheState::Cold;
    expected.sequence = run_id_sequence(&identity, errors);
    writeln!(t, "profiled identity sequence: {}", expected.sequence).unwrap();
    // Counted for the process before the session: the start clears it.
    set_enabled(true);
    timed(&mut Clocks::default(), Stage::SourceAcquire, 100);
    add_input_bytes(3);
    // Entered before the session, left in it: counted for the process
    // (after the start's reset), not for the session (nor by khprof).
    let straddling = span(Stage::IncrementalLookup);
    let before_start = Instant::now();
    let mut session = Session::start(identity).expect("no session is open");
    let after_start = Instant::now();
    drop(straddling);
    writeln!(
        t,
        "process counters in the session: {} {:?}",
        taken_line(&take_stage_measurements()),
        take_input_totals()
    )
    .unwrap();
    expected.transition(RunState::Created, before_start, after_start, after_start, before_start);

    let transition = |session: &mut Session, state: RunState, expected: &mut Expected| {
        let before = Instant::now();
        session.transition(state);
        expected.transition(state, before, Instant::now(), after_start, before_start);
    };
    transition(&mut session, RunState::Acquiring, expected);
    timed(&mut expected.clocks, Stage::SourceWalk, 5000);
    burn_cpu_ticks();
    add_input_units(2);
    session.identity_mut().backend_selected = Some("pcre2-jit".to_owned());
    session.identity_mut().reader_threads = Some(1);
    transition(&mut session, RunState::Scanning, expected);

    // Two workers, started and waiting: the next sample sees three threads.
    let mut handles = Vec::new();
    let mut releases = Vec::new();
    for stage in [Stage::HotPatterns, Stage::GenericDetection] {
        let (started_tx, started_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel();
        handles.push(std::thread::spawn(move || worker(stage, CHUNKS, started_tx, go_rx)));
        started_rx.recv().expect("worker started");
        releases.push(go_tx);
    }
    transition(&mut session, RunState::Resolving, expected);
    expected.threads_at = Some(expected.transitions.len() - 1);
    for go in releases {
        go.send(()).expect("worker waits");
    }
    for handle in handles {
        expected.clocks.merge(handle.join().expect("worker ran"));
    }
    transition(&mut session, RunState::Reporting, expected);
    timed(&mut expected.clocks, Stage::Reporting, 3000);
    // A stage the seed leaves out of the report's bottleneck.
    timed(&mut expected.clocks, Stage::BackendDispatch, 20000);

    expected.identity = Some(session.identity_mut().clone());
    expected.input = (2 * CHUNKS * 4096, 2 * CHUNKS + 2);
    // Entered in the session, left after it: the seed counts it once the
    // finish has taken the session's counts (it shows in the process's).
    let late = span(Stage::LiveVerification);
    let before_finish = Instant::now();
    let profile = session.finish(RunState::Completed);
    let after_finish = Instant::now();
    drop(late);
    expected.transition(
        RunState::Completed,
        before_finish,
        after_finish,
        after_start,
        before_start,
    );
    expected.wall = (before_finish - after_start, after_finish - before_start);
    profile
}

pub fn run(dir: &Path) -> Result<(), Vec<String>> {
    let mut errors = crate::seed_api::runtime_checks();
    let mut t = String::new();
    writeln!(t, "seed items: {}", crate::seed_api::SEED_ITEMS.join(" ")).unwrap();
    writeln!(t, "not on the seed's docs page: {}", crate::seed_api::UNDOCUMENTED_ITEMS.join(" "))
        .unwrap();
    writeln!(t, "PROFILE_SCHEMA: {PROFILE_SCHEMA}").unwrap();
    let stages: Vec<&str> = Stage::ALL.iter().map(|stage| stage.as_str()).collect();
    writeln!(t, "Stage::ALL: {}", stages.join(" ")).unwrap();

    counters_alone(&mut t, &mut errors);
    refused_and_dropped(&mut t, &mut errors);
    let mut expected = Expected::default();
    let profile = profiled_session(&mut t, &mut expected, &mut errors);
    oracle::check_profile(&profile, &expected, &mut errors);
    writeln!(t, "~ enabled after finish: {}", enabled()).unwrap();
    writeln!(
        t,
        "after finish: {} {:?}",
        taken_line(&take_stage_measurements()),
        take_input_totals()
    )
    .unwrap();
    // The span left after the finish counted for that session too, too
    // late: the next session starts without it.
    let again = Session::start(identity("seed-api again")).expect("no session is open");
    let again = again.finish(RunState::Completed);
    writeln!(
        t,
        "next session: {} {} {}",
        taken_line(&again.stages),
        again.input_bytes,
        again.transitions.len()
    )
    .unwrap();
    oracle::describe(&profile, &mut t);
    oracle::crafted(&mut t, &mut errors);

    let json = profile.to_json_pretty().map_err(|e| vec![format!("to_json_pretty: {e}")])?;
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text)
            .map_err(|e| vec![format!("cannot write '{name}' in '{}': {e}", dir.display())])
    };
    write("profile.json", &json)?;
    write("profile.txt", &profile.render_text())?;
    write("transcript.txt", &t)?;
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}
