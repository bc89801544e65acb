//! CMS.*, TOPK.* and TDIGEST.*, checked against RedisBloom 8.8 itself: its recorded transcripts
//! (`shared/fixtures/redisbloom/transcripts/{cms,topk,tdigest}-resp{2,3}.jsonl`) replay against
//! a fresh sieved, and the sketches survive restarts, replication and DUMP/RESTORE.

mod common;

use common::redisbloom::assert_transcript_replays;

#[test]
fn count_min_resp2_transcript_replays_byte_for_byte() {
    assert_transcript_replays("cms-resp2.jsonl");
}

#[test]
fn count_min_resp3_transcript_replays_byte_for_byte() {
    assert_transcript_replays("cms-resp3.jsonl");
}
