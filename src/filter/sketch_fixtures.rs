//! Proof that the Count-Min sketch, Top-K and t-digest answer as RedisBloom 8.8 does, before
//! any command exists: RedisBloom's recorded transcripts
//! (`shared/fixtures/redisbloom/transcripts/{cms,topk,tdigest}-resp{2,3}.jsonl`, beside the
//! crate) replayed through a small interpreter of their commands over the three structures.
//!
//! Every reply that carries data (counts, estimates, expelled items, lists, INFO, errors the
//! structures give, the fields of DUMP payloads) is compared with RedisBloom's bytes; a command
//! refused before any sketch is involved (arity, syntax, missing keys, wrong types) must have
//! been refused by RedisBloom too. Top-K's random decay draws from glibc's generator under
//! `srand(1)`: the transcripts only hold adds whose draws cannot change the outcome (their
//! README says how). Without the fixtures the tests print why and pass, as in CI.

mod count_min_commands;
mod rdb_module_value;
mod reply_model;
mod sketch_keyspace;
mod t_digest_commands;
mod top_k_commands;
mod transcript_lines;

use sketch_keyspace::{Keyspace, Outcome};
use std::collections::BTreeMap;

#[derive(Default)]
struct Tally {
    /// Data-bearing replies compared, by command.
    matched: BTreeMap<String, usize>,
    /// Commands refused before reaching a sketch, as RedisBloom refused them.
    refused: usize,
    /// Key bookkeeping (SET, DEL, EXISTS, RESTORE) compared, and lines not about a sketch.
    bookkeeping: usize,
    mismatches: Vec<String>,
}

impl Tally {
    fn matched_total(&self) -> usize {
        self.matched.values().sum()
    }
}

fn replay(file_name: &str) -> Option<Tally> {
    let dir = transcript_lines::transcripts_dir()?;
    let (protocol, lines) = transcript_lines::read(&dir.join(file_name));
    let resp3 = protocol == 3;
    let mut keys = Keyspace::new();
    let mut tally = Tally::default();
    for (number, line) in lines.iter().enumerate() {
        let command = String::from_utf8_lossy(&line.args[0]).to_ascii_uppercase();
        let describe = || {
            let args: Vec<String> = line
                .args
                .iter()
                .map(|arg| String::from_utf8_lossy(&arg[..arg.len().min(40)]).into_owned())
                .collect();
            format!("line {}: {}", number + 2, args.join(" "))
        };
        let mut mismatch = |what: String| {
            if tally.mismatches.len() < 30 {
                tally.mismatches.push(format!("{}\n    {what}", describe()));
            } else {
                tally.mismatches.push(String::new());
            }
        };
        match keys.run(&line.args, &line.reply) {
            Outcome::Reply(reply) => {
                let mut ours = Vec::new();
                reply.render(resp3, &mut ours);
                if ours == line.reply {
                    *tally.matched.entry(command).or_default() += 1;
                } else {
                    mismatch(format!(
                        "ours {:?}\n    theirs {:?}",
                        String::from_utf8_lossy(&ours),
                        String::from_utf8_lossy(&line.reply)
                    ));
                }
            }
            Outcome::Refused => {
                if line.reply.starts_with(b"-") {
                    tally.refused += 1;
                } else {
                    mismatch(format!(
                        "refused, but RedisBloom answered {:?}",
                        String::from_utf8_lossy(&line.reply)
                    ));
                }
            }
            Outcome::Bookkeeping(reply) => {
                let mut ours = Vec::new();
                if let Some(reply) = &reply {
                    reply.render(resp3, &mut ours);
                }
                if reply.is_none() || ours == line.reply {
                    tally.bookkeeping += 1;
                } else {
                    mismatch(format!(
                        "ours {:?}, theirs {:?}",
                        String::from_utf8_lossy(&ours),
                        String::from_utf8_lossy(&line.reply)
                    ));
                }
            }
            Outcome::Dumped(Ok(())) => *tally.matched.entry(command).or_default() += 1,
            Outcome::Dumped(Err(difference)) => {
                mismatch(format!("the DUMP payload differs: {difference}"))
            }
        }
    }
    println!(
        "{file_name}: {} lines, {} data-bearing replies identical to RedisBloom's, {} refused \
         as RedisBloom refused them, {} key bookkeeping, {} mismatches",
        lines.len(),
        tally.matched_total(),
        tally.refused,
        tally.bookkeeping,
        tally.mismatches.len()
    );
    for (command, count) in &tally.matched {
        println!("    {command}: {count}");
    }
    Some(tally)
}

/// Replays a transcript; fails on any mismatch, and if too few replies were compared for the
/// check to mean anything.
fn assert_replays(file_name: &str, at_least: usize) {
    let Some(tally) = replay(file_name) else {
        return;
    };
    let shown: Vec<&String> = tally.mismatches.iter().filter(|m| !m.is_empty()).collect();
    assert!(
        tally.mismatches.is_empty(),
        "{file_name}: {} mismatches, the first:\n{}",
        tally.mismatches.len(),
        shown
            .iter()
            .map(|m| m.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        tally.matched_total() >= at_least,
        "{file_name}: only {} replies compared",
        tally.matched_total()
    );
}

#[test]
fn count_min_resp2_replies_as_redisbloom() {
    assert_replays("cms-resp2.jsonl", 3000);
}

#[test]
fn count_min_resp3_replies_as_redisbloom() {
    assert_replays("cms-resp3.jsonl", 3000);
}

#[test]
fn top_k_resp2_replies_as_redisbloom() {
    assert_replays("topk-resp2.jsonl", 3000);
}

#[test]
fn top_k_resp3_replies_as_redisbloom() {
    assert_replays("topk-resp3.jsonl", 3000);
}

#[test]
fn t_digest_resp2_replies_as_redisbloom() {
    assert_replays("tdigest-resp2.jsonl", 3000);
}

#[test]
fn t_digest_resp3_replies_as_redisbloom() {
    assert_replays("tdigest-resp3.jsonl", 3000);
}
