//! Cost of one span (enter + exit) measured by the program itself, the
//! Rust twin of bench/span_cost.c (`make bench`, row 1):
//!
//!   span_cost probes N      the crate's spans, in span_cost.c's loop
//!   span_cost seed-loop N   the crate's spans in the seed's own
//!                           seed-overhead loop (alternating stages, the
//!                           guard kept in memory by black_box)
//!   span_cost enabled N     the same loop with the in-process profile on
//!                           (set_enabled(true), the seed's enabled figure;
//!                           traced by khprof, both at once)
//!   span_cost traced-sim N  the same loop with the batch semaphore set by
//!                           the program itself, as khprof's batch mode sets
//!                           it: the user-space side of a traced span, its
//!                           sites nops, for callgrind (never under khprof)
//!   span_cost both-sim N    the same, the in-process profile on too
//!
//! Prints "ns_per_span=X" (median of 5 rounds of N spans).  No bare loop:
//! LLVM unrolls a loop without spans eightfold (2.4 instructions per
//! iteration against the C loop's 4), so the figure to compare is the whole
//! iteration of the same loop, against span_cost.c's `probes`.  Needs Rust 1.66
//! (std::hint::black_box); only `make bench` builds it.

// black_box (1.66) is newer than the crate's 1.63; only the bench builds this.
#![allow(clippy::incompatible_msrv)]

use keyhog_probes::{set_enabled, span, take_stage_measurements, Stage};
use std::hint::black_box;
use std::ptr::write_volatile;
use std::time::Instant;

static mut SINK: u64 = 0;

extern "C" {
    // The crate's semaphore object (hidden, so this program's own copy).
    static mut keyhog_semaphores: u64;
}

/// Sets the batch half (+2) as the kernel does when khprof attaches batch mode.
fn simulate_batch_tracing() {
    // SAFETY: the 2 bytes of the batch semaphore; no tracer is attached.
    unsafe { std::ptr::write_volatile((std::ptr::addr_of_mut!(keyhog_semaphores) as *mut u16).add(1), 1) };
}

// One loop per variant, unmangled so callgrind can count each alone.
#[no_mangle]
#[inline(never)]
pub extern "C" fn kh_rs_spans_probes(n: u64) {
    for i in 0..n {
        let _span = span(Stage::HotPatterns);
        // SAFETY: single-threaded benchmark.
        unsafe { write_volatile(std::ptr::addr_of_mut!(SINK), i) };
    }
}

/// seed-overhead's per_span, with this crate's span.
#[no_mangle]
#[inline(never)]
pub extern "C" fn kh_rs_spans_seed_loop(n: u64) {
    for i in 0..n {
        let stage = if i & 1 == 0 { Stage::HotPatterns } else { Stage::Entropy };
        let s = span(black_box(stage));
        black_box(&s);
        drop(s);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let run: extern "C" fn(u64) = match args.get(1).map(String::as_str) {
        Some("probes") => kh_rs_spans_probes,
        Some("seed-loop") => kh_rs_spans_seed_loop,
        Some("enabled") => {
            set_enabled(true);
            kh_rs_spans_seed_loop
        }
        Some("traced-sim") => {
            simulate_batch_tracing();
            kh_rs_spans_seed_loop
        }
        Some("both-sim") => {
            simulate_batch_tracing();
            set_enabled(true);
            kh_rs_spans_seed_loop
        }
        _ => {
            eprintln!("usage: span_cost probes|seed-loop|enabled|traced-sim|both-sim N [ROUNDS]");
            std::process::exit(2);
        }
    };
    let n: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(20_000_000);
    let rounds: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(5);
    let mut results: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            run(n);
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .collect();
    // The in-process counters saw every span (a bench that counted nothing
    // would be cheap for the wrong reason).
    let counted: u64 = take_stage_measurements().iter().map(|m| m.calls).sum();
    let local = args[1] == "enabled" || args[1] == "both-sim";
    if local && counted != n * rounds as u64 {
        eprintln!("span_cost: {counted} spans counted in process, not {}", n * rounds as u64);
        std::process::exit(1);
    }
    results.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("ns_per_span={:.3}", results[rounds / 2]);
}
