//! `seed-api check [--traced] MINE OTHER`: this build judges the other build's run.
//! The transcripts must be equal line for line; OTHER's record must read
//! with this build's `RunProfile` and render, as text and as JSON, to
//! exactly what OTHER wrote; and the two records must agree field by
//! field, times and the machine's figures aside (each run has checked its
//! own times against its own clocks: oracle.rs).

use keyhog_profile::RunProfile;
use std::path::Path;

fn read(dir: &Path, name: &str) -> Result<String, Vec<String>> {
    let path = dir.join(name);
    std::fs::read_to_string(&path)
        .map_err(|e| vec![format!("cannot read '{}': {e}", path.display())])
}

fn profile(dir: &Path) -> Result<(RunProfile, String, String), Vec<String>> {
    let json = read(dir, "profile.json")?;
    let text = read(dir, "profile.txt")?;
    let parsed = serde_json::from_str(&json).map_err(|e| {
        vec![format!(
            "'{}': not a RunProfile for this build: {e}",
            dir.join("profile.json").display()
        )]
    })?;
    Ok((parsed, json, text))
}

/// With `traced` (one of the runs was traced by khprof), the transcript
/// lines that say whether spans are timed outside any session ("~ ...")
/// are left out.
pub fn check(mine: &Path, other: &Path, traced: bool) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    let (my_transcript, their_transcript) =
        (read(mine, "transcript.txt")?, read(other, "transcript.txt")?);
    let compared = |line: &&str| !(traced && line.starts_with("~ "));
    let (my_transcript, their_transcript): (String, String) = (
        my_transcript.lines().filter(compared).map(|l| format!("{l}\n")).collect(),
        their_transcript.lines().filter(compared).map(|l| format!("{l}\n")).collect(),
    );
    for (i, (a, b)) in my_transcript.lines().zip(their_transcript.lines()).enumerate() {
        if a != b {
            errors.push(format!("transcript line {}: '{a}' here, '{b}' there", i + 1));
            break;
        }
    }
    let (mine_lines, their_lines) =
        (my_transcript.lines().count(), their_transcript.lines().count());
    if mine_lines != their_lines {
        errors.push(format!("transcript: {mine_lines} lines here, {their_lines} there"));
    }

    let (ours, _, _) = profile(mine)?;
    let (theirs, their_json, their_text) = profile(other)?;
    if theirs.render_text() != their_text {
        errors.push(format!(
            "render_text of the other record differs here:\n{}\nthere:\n{their_text}",
            theirs.render_text()
        ));
    }
    match theirs.to_json_pretty() {
        Ok(json) if json == their_json => {}
        Ok(json) => errors.push(format!(
            "to_json_pretty of the other record differs here:\n{json}\nthere:\n{their_json}"
        )),
        Err(e) => errors.push(format!("to_json_pretty of the other record: {e}")),
    }

    let mut differ = |what: &str, here: String, there: String| {
        if here != there {
            errors.push(format!("{what}: {here} here, {there} there"));
        }
    };
    differ("schema", ours.schema.clone(), theirs.schema.clone());
    let (mut a, mut b) = (ours.identity.clone(), theirs.identity.clone());
    a.run_id.clear();
    b.run_id.clear();
    differ("identity", format!("{a:?}"), format!("{b:?}"));
    differ("status", format!("{:?}", ours.status), format!("{:?}", theirs.status));
    differ(
        "input",
        format!("{} {}", ours.input_bytes, ours.input_units),
        format!("{} {}", theirs.input_bytes, theirs.input_units),
    );
    let stages = |p: &RunProfile| -> Vec<String> {
        p.stages
            .iter()
            .map(|m| {
                format!("{} calls={} decoded={}", m.stage.as_str(), m.calls, m.attributed_ns != 0)
            })
            .collect()
    };
    differ("stages", format!("{:?}", stages(&ours)), format!("{:?}", stages(&theirs)));
    let transitions = |p: &RunProfile| -> Vec<String> {
        p.transitions.iter().map(|t| format!("{:?}", t.state)).collect()
    };
    differ(
        "transitions",
        format!("{:?}", transitions(&ours)),
        format!("{:?}", transitions(&theirs)),
    );
    let states = |p: &RunProfile| -> Vec<String> {
        p.states
            .iter()
            .map(|s| {
                format!(
                    "{:?} {} {}",
                    s.state,
                    s.cpu_time_ms.is_some(),
                    s.aggregate_cpu_milli_percent.is_some()
                )
            })
            .collect()
    };
    differ("states", format!("{:?}", states(&ours)), format!("{:?}", states(&theirs)));
    let samples = |p: &RunProfile| -> Vec<String> {
        p.resource_samples
            .iter()
            .map(|s| format!("{:?} {:?}", s.state, s.snapshot.thread_count.is_some()))
            .collect()
    };
    differ("resource samples", format!("{:?}", samples(&ours)), format!("{:?}", samples(&theirs)));
    differ(
        "resources",
        format!("{:?}", ours.resources.aggregate_cpu_percent.is_some()),
        format!("{:?}", theirs.resources.aggregate_cpu_percent.is_some()),
    );
    if errors.is_empty() {
        println!("seed-api: {} and {} agree", mine.display(), other.display());
        Ok(())
    } else {
        Err(errors)
    }
}
