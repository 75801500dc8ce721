//! `workload-rs waves SESSIONS WAVES THREADS ITERATIONS`: threads that end
//! in waves with partly filled batch buffers, in every way a Rust thread can
//! end while its spans still belong to a session (issue 29): the twin of
//! tests/workloads/waves.c, for tests/integration/tracing/test_soak.c.
//!
//! Each session runs WAVES waves of THREADS threads; thread i of a wave runs
//! ITERATIONS + (37 i mod 100) iterations of one hot-patterns span and one
//! entropy span (10 input bytes an iteration, 1 input unit a thread).  Wave
//! w of session s ends its threads in shape (s * WAVES + w) mod 5:
//!
//! - 0 joined: `std::thread::spawn` and `join`, which waits for the
//!   thread-local destructor that flushes the last batch;
//! - 1 scoped: `std::thread::scope`, which lets the main thread go on once
//!   the closures returned, before their thread-local destructors ran (the
//!   program of issue 29);
//! - 2 pooled: jobs for a pool of THREADS workers that lives across the
//!   sessions, idle between jobs with their buffers kept; dropped (its
//!   workers end, unjoined) after the last session;
//! - 3 racing: spawned threads that report their work done, then wait for a
//!   release the main thread gives just before it finishes the session:
//!   they end while it finishes;
//! - 4 panicking: scoped threads whose last entropy span is left by a panic
//!   that unwinds through its guard; the scope passes the panic on to the
//!   main thread, which catches it.
//!
//! Then the main thread runs ITERATIONS decode spans, attributed decoded,
//! and finishes the session, and prints what the record of the session must
//! hold:
//!
//!   session S hot-patterns=N entropy=N decode=N input_bytes=N input_units=N

use keyhog_profile::{add_input_bytes, add_input_units, set_attribution, span, Attribution, RunState, Session, Stage};
use std::ptr::{read_volatile, write_volatile};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

const SHAPES: u64 = 5;

#[derive(Default)]
struct Counts {
    hot: u64,
    entropy: u64,
    decode: u64,
    bytes: u64,
    units: u64,
}

fn burn(iterations: u64) {
    let mut x: u64 = 0;
    for i in 0..iterations {
        // SAFETY: a local.
        unsafe { write_volatile(&mut x, read_volatile(&x).wrapping_mul(6364136223846793005).wrapping_add(i)) };
    }
}

fn iteration() {
    add_input_bytes(10);
    {
        let _hot = span(Stage::HotPatterns);
        burn(20);
    }
    {
        let _entropy = span(Stage::Entropy);
        burn(20);
    }
}

/// A thread's work; with `panic_last`, its last entropy span is left by a panic.
fn run(iterations: u64, panic_last: bool) {
    let plain = if panic_last { iterations - 1 } else { iterations };
    for _ in 0..plain {
        iteration();
    }
    if panic_last {
        add_input_bytes(10);
        {
            let _hot = span(Stage::HotPatterns);
            burn(20);
        }
        add_input_units(1);
        let _entropy = span(Stage::Entropy);
        burn(20);
        panic!("waves: a worker's span left by a panic");
    }
    add_input_units(1);
}

/// The shape 3 threads' release: they end once its count passes theirs.
#[derive(Default)]
struct Release {
    count: Mutex<u64>,
    changed: Condvar,
}

/// The pool of shape 2: workers that take jobs until its sender drops.
struct Pool {
    jobs: mpsc::Sender<(u64, mpsc::Sender<()>)>,
}

impl Pool {
    fn new(threads: u64) -> Pool {
        let (jobs, queue) = mpsc::channel::<(u64, mpsc::Sender<()>)>();
        let queue = Arc::new(Mutex::new(queue));
        for _ in 0..threads {
            let queue = Arc::clone(&queue);
            // Detached: the pool never joins its workers.
            std::thread::spawn(move || loop {
                let job = queue.lock().expect("queue").recv();
                match job {
                    Ok((iterations, done)) => {
                        run(iterations, false);
                        done.send(()).expect("the main thread waits");
                    }
                    Err(_) => return,
                }
            });
        }
        Pool { jobs }
    }
}

fn wave(shape: u64, threads: u64, iterations: u64, c: &mut Counts, pool: &mut Option<Pool>, release: &Arc<Release>) {
    let lengths: Vec<u64> = (0..threads).map(|i| iterations + (37 * i) % 100).collect();
    for &n in &lengths {
        c.hot += n;
        c.entropy += n;
        c.bytes += 10 * n;
        c.units += 1;
    }
    match shape {
        0 => {
            let handles: Vec<_> = lengths.iter().map(|&n| std::thread::spawn(move || run(n, false))).collect();
            for handle in handles {
                handle.join().expect("a joined worker");
            }
        }
        1 => std::thread::scope(|s| {
            for &n in &lengths {
                s.spawn(move || run(n, false));
            }
        }),
        2 => {
            let pool = pool.get_or_insert_with(|| Pool::new(threads));
            let (done, finished) = mpsc::channel();
            for &n in &lengths {
                pool.jobs.send((n, done.clone())).expect("the pool takes jobs");
            }
            for _ in &lengths {
                finished.recv().expect("a job done");
            }
        }
        3 => {
            let (done, finished) = mpsc::channel();
            let mine = *release.count.lock().expect("release");
            for &n in &lengths {
                let done = done.clone();
                let release = Arc::clone(release);
                std::thread::spawn(move || {
                    run(n, false);
                    done.send(()).expect("the main thread waits");
                    let mut count = release.count.lock().expect("release");
                    while *count <= mine {
                        count = release.changed.wait(count).expect("release");
                    }
                });
            }
            for _ in &lengths {
                finished.recv().expect("a worker done");
            }
        }
        _ => {
            let scoped = std::panic::catch_unwind(|| {
                std::thread::scope(|s| {
                    for &n in &lengths {
                        s.spawn(move || run(n, true));
                    }
                })
            });
            assert!(scoped.is_err(), "the scope passes its workers' panics on");
        }
    }
}

pub fn waves(sessions: u64, waves: u64, threads: u64, iterations: u64) {
    // The workers' panics are expected: keep stderr for what is not.
    std::panic::set_hook(Box::new(|_| {}));
    let release = Arc::new(Release::default());
    let mut pool: Option<Pool> = None;
    for s in 0..sessions {
        let mut c = Counts::default();
        let mut session = Session::start(crate::identity()).expect("no session active");
        session.transition(RunState::Scanning);
        for w in 0..waves {
            wave((s * waves + w) % SHAPES, threads, iterations, &mut c, &mut pool, &release);
        }
        let previous = set_attribution(Attribution::Decoded);
        for _ in 0..iterations {
            let _decode = span(Stage::Decode);
            burn(20);
            c.decode += 1;
        }
        set_attribution(previous);
        *release.count.lock().expect("release") += 1;
        release.changed.notify_all();
        session.finish(RunState::Completed);
        println!(
            "session {s} hot-patterns={} entropy={} decode={} input_bytes={} input_units={}",
            c.hot, c.entropy, c.decode, c.bytes, c.units
        );
    }
    // The pool drops: its workers end, unjoined, while the process exits.
    drop(pool);
}
