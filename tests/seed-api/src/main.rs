//! A program written against the seed's API (`keyhog_profile`), built
//! twice from this source: against the seed (`../shared/seed`) and against
//! khprof's crate under the seed's name (rust/keyhog-probes), only the
//! dependency line differing (Cargo.toml).  tests/integration/tracing/test_seed_api.c
//! runs both and has each judge the other, and traces the second with khprof.
//!
//!   seed-api run DIR            the workload: writes DIR/profile.json
//!                               (to_json_pretty), DIR/profile.txt
//!                               (render_text) and DIR/transcript.txt
//!                               (every observation that does not depend on
//!                               time or the machine); exits 1 if the
//!                               profile fails its own checks
//!   seed-api check [--traced] MINE OTHER
//!                               reads OTHER's record with this build's
//!                               types and compares it with MINE's
//!                               (--traced: one run was traced by khprof)
//!
//! The generated module (`seed_api`, build.rs) uses every public item of
//! the seed with the seed's signature: it compiles only against a crate
//! that has them all.

#[allow(dead_code, clippy::all)]
mod seed_api {
    include!(concat!(env!("OUT_DIR"), "/seed_api.rs"));
}
mod check;
mod oracle;
mod workload;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = |i: usize| std::path::Path::new(&args[i]);
    let result =
        match (args.get(1).map(String::as_str), args.get(2).map(String::as_str), args.len()) {
            (Some("run"), _, 3) => workload::run(path(2)),
            (Some("check"), Some("--traced"), 5) => check::check(path(3), path(4), true),
            (Some("check"), _, 4) => check::check(path(2), path(3), false),
            _ => {
                eprintln!("usage: seed-api run DIR | seed-api check [--traced] MINE_DIR OTHER_DIR");
                std::process::exit(2);
            }
        };
    if let Err(errors) = result {
        for error in &errors {
            eprintln!("seed-api: {error}");
        }
        std::process::exit(1);
    }
}
