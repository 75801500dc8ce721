//! Traced workload for tests/integration/tracing/test_rust.c, written against the
//! seed's API through the keyhog-probes crate (imported under the seed's
//! name, see Cargo.toml): the Rust twin of tests/workloads/workload.c.
//! Each scenario prints what the program itself knows so the tests can
//! compare khprof's record with it.
//!
//!   workload-rs nested N     N x (hot-patterns { entropy x2 }), decode attributed
//!   workload-rs threads N    two threads, N spans each, input bytes/units
//!   workload-rs sessions K   K sessions; odd ones dropped unfinished (failed)
//!   workload-rs stages       i+1 spans of the i-th stage, every run state in order
//!   workload-rs timed US N   N spans of US microseconds each (own clock)
//!   workload-rs nosession N  spans without any session (flushed at process exit)
//!   workload-rs redzone N    leaf function with red-zone locals around probe sites
//!   workload-rs serve        for attach: "ready", then one session per "session" line;
//!                            "open" starts a session in scanning, "close" runs 10
//!                            decode spans and finishes it
//!   workload-rs abort N      N decode spans (10 input bytes each), then abort() inside the session
//!   workload-rs exit N       a second thread runs the N spans and waits; the main
//!                            thread calls std::process::exit(3) inside the session
//!   workload-rs stacks N     N rounds of tests/workloads/stackwork.c's shape, for
//!                            --sample (tests/integration/tracing/test_stacks.c):
//!                            phase1-triggers in rs_work_alpha and rs_work_beta 3:1,
//!                            decode (decoded) in rs_work_gamma, rs_work_delta between
//!   workload-rs waves S W T N threads that end in waves with partly filled buffers
//!                            (src/waves.rs; tests/integration/tracing/test_soak.c)
//!   workload-rs names N      N rounds of generic code behind a trait, for the names
//!                            --sample reports (test_stacks.c): hot-patterns in
//!                            <Needle<T> as Scan>::scan, decode (decoded) in
//!                            Haystack::sift::<S>, 3:2; mangled symbols (legacy, or v0
//!                            in build/workloads/workload-rs-v0) that khprof demangles

use keyhog_profile::{
    add_input_bytes, add_input_units, enabled, set_attribution, span, Attribution, CacheState,
    RunIdentity, RunState, Session, Stage,
};
use std::io::{BufRead, Write};
use std::ptr::{read_volatile, write_volatile};

mod waves;

/// Busy work the compiler cannot remove (libkhwork.c's khwork_burn).
fn burn(iterations: u64) -> u64 {
    let mut x: u64 = 0;
    for i in 0..iterations {
        // SAFETY: a local.
        unsafe { write_volatile(&mut x, read_volatile(&x).wrapping_mul(6364136223846793005).wrapping_add(i)) };
    }
    x
}

fn identity() -> RunIdentity {
    let mut identity =
        RunIdentity::new("workload-rs 1.0", "det-test", "cfg-test", "synthetic", "integration", "auto");
    identity.backend_selected = Some("cpu".to_owned());
    identity.cache_state = CacheState::Cold;
    identity.scanner_threads = 2;
    identity.reader_threads = Some(1);
    identity
}

fn nested(n: u64) {
    let mut session = Session::start(identity()).expect("no session active");
    println!("logical_cpus={}", session.identity_mut().logical_cpus);
    println!("second_start={}", if Session::start(identity()).is_err() { "refused" } else { "accepted" });
    session.transition(RunState::Acquiring);
    {
        let _walk = span(Stage::SourceWalk);
        burn(1000);
    }
    // Sent again at the next transition: the latest value wins.
    session.identity_mut().scanner_threads = 4;
    session.transition(RunState::Scanning);
    for _ in 0..n {
        add_input_bytes(4096);
        add_input_units(1);
        {
            let _hot = span(Stage::HotPatterns);
            for _ in 0..2 {
                let _entropy = span(Stage::Entropy);
                burn(200);
            }
        }
        let previous = set_attribution(Attribution::Decoded);
        {
            let _decode = span(Stage::Decode);
            burn(100);
        }
        set_attribution(previous);
    }
    session.transition(RunState::Reporting);
    {
        let _report = span(Stage::Reporting);
        burn(1000);
    }
    // The seed's in-process record, which the crate keeps while traced.
    let profile = session.finish(RunState::Completed);
    let calls: u64 = profile.stages.iter().map(|stage| stage.calls).sum();
    println!("nested n={n} in_process_calls={calls} traced={}", enabled());
}

fn thread_main(stage: Stage, n: u64) {
    for _ in 0..n {
        let _span = span(stage);
        add_input_bytes(10);
        burn(50);
    }
    add_input_units(1);
}

fn threads(n: u64) {
    let mut session = Session::start(identity()).expect("no session active");
    session.transition(RunState::Scanning);
    let a = std::thread::spawn(move || thread_main(Stage::HotPatterns, n));
    let b = std::thread::spawn(move || thread_main(Stage::GenericDetection, n));
    a.join().expect("thread a");
    b.join().expect("thread b");
    session.finish(RunState::Completed);
}

fn sessions(k: u64) {
    for s in 0..k {
        let mut identity = identity();
        identity.binary_version = format!("session-{s}");
        let mut session = Session::start(identity).expect("no session active");
        session.transition(RunState::Scanning);
        for _ in 0..=s {
            let _span = span(Stage::Preprocess);
            burn(100);
        }
        if s % 2 == 1 {
            drop(session); // ends as failed, as in the seed
        } else {
            session.finish(RunState::Completed);
        }
    }
}

/// Every stage and run state, so the test checks the whole wire order.
fn stages() {
    let mut session = Session::start(identity()).expect("no session active");
    for state in [
        RunState::Acquiring,
        RunState::Scanning,
        RunState::Resolving,
        RunState::Verifying,
        RunState::Reporting,
    ] {
        session.transition(state);
    }
    for (i, stage) in Stage::ALL.iter().enumerate() {
        for _ in 0..=i {
            let _span = span(*stage);
        }
        println!("{i} {}", stage.as_str());
    }
    session.finish(RunState::Completed);
}

/// Spans whose length the program measures itself, inside the span
/// (own_total_ns) and outside its probes (outer_total_ns): a span khprof
/// measured lies between the two.
fn timed(us: u64, n: u64) {
    let mut session = Session::start(identity()).expect("no session active");
    session.transition(RunState::Scanning);
    let mut own_total: u128 = 0;
    let mut outer_total: u128 = 0;
    for _ in 0..n {
        let outer = std::time::Instant::now();
        {
            let _span = span(Stage::ConfirmedPatterns);
            let start = std::time::Instant::now();
            while start.elapsed().as_micros() < u128::from(us) {}
            own_total += start.elapsed().as_nanos();
        }
        outer_total += outer.elapsed().as_nanos();
    }
    session.finish(RunState::Completed);
    println!("own_total_ns={own_total}");
    println!("outer_total_ns={outer_total}");
}

fn nosession(n: u64) {
    for _ in 0..n {
        let _span = span(Stage::Suppression);
        burn(10);
    }
}

/// A leaf function keeping locals in the red zone below %rsp, with probe
/// sites between their stores and loads: were a traced site to write
/// below %rsp, the result would change.
#[inline(never)]
fn leaf(a: i64, b: i64) -> i64 {
    let mut x: i64 = 0;
    let mut y: i64 = 0;
    // SAFETY: locals.
    unsafe {
        write_volatile(&mut x, a * 3);
        write_volatile(&mut y, b + 7);
        add_input_bytes(1);
        write_volatile(&mut x, read_volatile(&x) + read_volatile(&y));
        add_input_units(1);
        read_volatile(&x) - read_volatile(&y) + b
    }
}

fn redzone(n: i64) -> i32 {
    let session = Session::start(identity()).expect("no session active");
    let mut wrong = 0;
    for i in 0..n {
        if leaf(i, i ^ 0x5a5a) != i * 3 + (i ^ 0x5a5a) {
            wrong += 1;
        }
    }
    session.finish(RunState::Completed);
    println!("wrong={wrong} of {n}");
    i32::from(wrong != 0)
}

/// N decode spans of the calling thread, 10 input bytes each.
fn decode_spans(n: u64) {
    for _ in 0..n {
        {
            let _decode = span(Stage::Decode);
            burn(50);
        }
        add_input_bytes(10);
    }
}

/// Ends inside the session with spans still buffered (batch mode: N % 64
/// of them): abort() runs no exit handler, so only khprof's drain at the
/// thread's end can count them.
fn abort_in_session(n: u64) -> ! {
    let mut session = Session::start(identity()).expect("no session active");
    session.transition(RunState::Scanning);
    decode_spans(n);
    println!("abort n={n}");
    std::io::stdout().lock().flush().ok();
    std::process::abort();
}

/// exit() flushes the calling thread only: the worker's buffer is left to
/// khprof's drain when exit_group ends it.
fn exit_from_main(n: u64) -> ! {
    let mut session = Session::start(identity()).expect("no session active");
    session.transition(RunState::Scanning);
    let (done, spans_done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        decode_spans(n);
        done.send(()).expect("main waits");
        loop {
            std::thread::park();
        }
    });
    spans_done.recv().expect("worker ran");
    println!("exit n={n}");
    std::io::stdout().lock().flush().ok();
    std::process::exit(3);
}

/// A loop of n rounds with its own constant, in the function that uses it.
macro_rules! spin {
    ($n:expr, $k:expr) => {{
        let mut x: u64 = 0;
        for i in 0..$n {
            // SAFETY: a local.
            unsafe { write_volatile(&mut x, read_volatile(&x).wrapping_mul($k).wrapping_add(i)) };
        }
    }};
}

/// Own loops with different constants, unmangled and never inlined, so
/// that the samples name them (tests/workloads/stackwork.c's work_*).
macro_rules! work_fn {
    ($name:ident, $k:expr) => {
        #[no_mangle]
        #[inline(never)]
        pub extern "C" fn $name(n: u64) {
            spin!(n, $k);
        }
    };
}
work_fn!(rs_work_alpha, 6364136223846793005);
work_fn!(rs_work_beta, 2862933555777941757);
work_fn!(rs_work_gamma, 3202034522624059733);
work_fn!(rs_work_delta, 1181783497276652981);

fn stacks(rounds: u64) {
    const UNIT: u64 = 200_000;
    let mut session = Session::start(identity()).expect("no session active");
    session.transition(RunState::Scanning);
    for _ in 0..rounds {
        {
            let _phase1 = span(Stage::Phase1Triggers);
            rs_work_alpha(3 * UNIT);
            rs_work_beta(UNIT);
        }
        // Decoded around the whole span: every decode sample is decoded.
        let prev = set_attribution(Attribution::Decoded);
        {
            let _decode = span(Stage::Decode);
            rs_work_gamma(2 * UNIT);
        }
        set_attribution(prev);
        rs_work_delta(UNIT);
    }
    session.finish(RunState::Completed);
}

/// A trait, a generic type implementing it and a generic method: the
/// kinds of names a Rust scanner's samples have (`names`).
trait Scan {
    fn scan(&self, n: u64);
}

struct Needle<T>(std::marker::PhantomData<T>);

impl<T> Scan for Needle<T> {
    #[inline(never)]
    fn scan(&self, n: u64) {
        spin!(n, 6364136223846793005);
    }
}

struct Haystack;

impl Haystack {
    #[inline(never)]
    fn sift<S: Scan>(&self, _with: &S, n: u64) {
        spin!(n, 3202034522624059733);
    }
}

#[inline(never)]
fn names(rounds: u64) {
    const UNIT: u64 = 200_000;
    // A long generic argument, which v0 names spell out.
    let needle: Needle<std::collections::HashMap<String, Vec<u8>>> = Needle(std::marker::PhantomData);
    let mut session = Session::start(identity()).expect("no session active");
    session.transition(RunState::Scanning);
    for _ in 0..rounds {
        {
            let _hot = span(Stage::HotPatterns);
            needle.scan(3 * UNIT);
        }
        let prev = set_attribution(Attribution::Decoded);
        {
            let _decode = span(Stage::Decode);
            Haystack.sift(&needle, 2 * UNIT);
        }
        set_attribution(prev);
    }
    session.finish(RunState::Completed);
}

fn serve() {
    let stdout = std::io::stdout();
    println!("ready");
    stdout.lock().flush().ok();
    let mut open: Option<Session> = None;
    for line in std::io::stdin().lock().lines() {
        let line = match line {
            Ok(line) => line,
            Err(_) => break,
        };
        if line.starts_with("session") {
            nested(10);
        } else if line.starts_with("open") {
            // A session a tracer can join while it runs (kh_current_state).
            let mut session = Session::start(identity()).expect("no session active");
            session.transition(RunState::Scanning);
            open = Some(session);
        } else if line.starts_with("close") {
            decode_spans(10);
            if let Some(session) = open.take() {
                session.finish(RunState::Completed);
            }
        }
        println!("done");
        stdout.lock().flush().ok();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let count = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok()).unwrap_or(100);
    match args.get(1).map(String::as_str) {
        Some("nested") => nested(count(2)),
        Some("threads") => threads(count(2)),
        Some("sessions") => sessions(count(2)),
        Some("stages") => stages(),
        Some("nosession") => nosession(count(2)),
        Some("timed") => timed(count(2), count(3)),
        Some("redzone") => std::process::exit(redzone(count(2) as i64)),
        Some("serve") => serve(),
        Some("abort") => abort_in_session(count(2)),
        Some("exit") => exit_from_main(count(2)),
        Some("stacks") => stacks(count(2)),
        Some("waves") => waves::waves(count(2), count(3), count(4), count(5)),
        Some("names") => names(count(2)),
        _ => {
            eprintln!("usage: workload-rs nested|threads|sessions|stages|timed|nosession|redzone|serve|abort|exit|stacks|waves|names [N]");
            std::process::exit(2);
        }
    }
}
