//! Persistence on its own, with a stand-in for the commands (`SET key value` and `DEL key`):
//! round trips through recovery and compaction, and the fault walk: every change a snapshot,
//! a log append, a compaction and a start-up make to the data directory is made to fail (EIO,
//! ENOSPC, EROFS) or to crash in turn; after each, a start-up on a sound disk must succeed with every
//! acknowledged write, and no file persistence does not own may have been touched.

use super::aof::{format, Aof, OnFatal, PendingTransaction};
use super::compaction;
use super::faults::{Fault, FaultyFs};
use super::fs::{self, FileSystem};
use super::recovery::{self, ApplyLogged, Logged, Options, Recovery};
use super::snapshot::{self, Expired};
use super::test_support::{request, scratch_dir};
use crate::config::Fsync;
use crate::protocol::Request;
use crate::store::{Store, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Applies `SET key value` and `DEL key`; anything else cannot be applied.
struct Stub;

impl ApplyLogged for Stub {
    fn apply(&mut self, store: &Store, write: Logged) -> Result<(), String> {
        let Logged {
            db,
            request,
            time_ms,
        } = write;
        match request.arg(0) {
            b"SET" => {
                store
                    .db(db)
                    .insert(request.arg(1), Value::String(request.arg(2).to_vec()), 0)
            }
            b"DEL" => {
                store.db(db).remove(request.arg(1), time_ms);
            }
            other => return Err(format!("unknown {}", String::from_utf8_lossy(other))),
        }
        Ok(())
    }
}

fn value_of(store: &Store, key: &[u8]) -> Option<Vec<u8>> {
    store.db(0).get(key, 0, |value| match value {
        Some(Value::String(bytes)) => Some(bytes.clone()),
        _ => None,
    })
}

/// Files a person keeps beside the data: persistence must never touch them.
const BYSTANDERS: &[(&str, &[u8])] = &[
    ("notes.txt", b"mine"),
    ("sieved.snap.bak", b"an old copy"),
    ("sieved.snap.tmp-", b"not a pid"),
    ("other-1.aof", b"someone else's"),
];

fn place_bystanders(dir: &Path) {
    for (name, bytes) in BYSTANDERS {
        std::fs::write(dir.join(name), bytes).expect("bystander");
    }
}

fn assert_bystanders_untouched(dir: &Path) {
    for (name, bytes) in BYSTANDERS {
        assert_eq!(
            std::fs::read(dir.join(name)).ok().as_deref(),
            Some(*bytes),
            "{name}"
        );
    }
}

fn recover_with(
    fs: &dyn FileSystem,
    dir: &Path,
    store: &Store,
    log_on: bool,
) -> Result<Recovery, String> {
    let options = Options {
        dir,
        fs,
        log_on,
        load_damaged: false,
    };
    recovery::recover(&options, store, &mut Stub, |_, _, _| {}).map_err(|e| e.to_string())
}

/// Starts a log on `dir` as a server would, with its writer on a thread.
fn start_log(
    fs: Arc<dyn FileSystem>,
    dir: &Path,
    store: &Store,
    fsync: Fsync,
) -> Result<Arc<Aof>, String> {
    let mut recovered = recover_with(fs.as_ref(), dir, store, true)?;
    let on_fatal: OnFatal = Box::new(|_| {});
    let aof = Arc::new(Aof::new(dir.to_path_buf(), fsync, fs, on_fatal));
    let open = recovered.append_to.take().expect("a segment to append to");
    aof.will_run_writer(&open);
    let writer = aof.clone();
    std::thread::spawn(move || writer.run_writer(open));
    Ok(aof)
}

/// Appends `SET key value` and waits until it is durable or the writer has stopped: true when
/// the write is acknowledged, as a client's reply would be. Like a connection, it first tries
/// to write the log itself (under `everysec` and `no`).
fn set_logged(aof: &Aof, store: &Store, key: &str, value: &str) -> bool {
    let (body, ranges) = request(&[b"SET", key.as_bytes(), value.as_bytes()]);
    let position = {
        let order = aof.order();
        let request = Request::new(&body, &ranges);
        let write = Logged {
            db: 0,
            request,
            time_ms: 1,
        };
        Stub.apply(store, write).expect("apply");
        order.append_with(|out| format::encode_single(out, 1, 0, &Request::new(&body, &ranges)))
    };
    aof.write_through(position);
    loop {
        if aof.durable_position() >= position {
            return true;
        }
        if aof.is_closed() {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// The scenario the walk runs: a log started on a directory holding a snapshot, writes, a
/// compaction in the middle, more writes, a transaction, the exit snapshot of a stopping server,
/// and a clean close. Returns the acknowledged writes.
fn log_scenario(fs: Arc<dyn FileSystem>, dir: &Path, fsync: Fsync) -> Vec<(String, String)> {
    let store = Store::new(1, 4);
    let mut acknowledged = Vec::new();
    let Ok(aof) = start_log(fs.clone(), dir, &store, fsync) else {
        return acknowledged;
    };
    for round in 0..3 {
        for i in 0..6 {
            let (key, value) = (format!("k{round}-{i}"), format!("v{round}-{i}"));
            if set_logged(&aof, &store, &key, &value) {
                acknowledged.push((key, value));
            }
        }
        if round == 1 {
            let scratch = Store::new(1, 4);
            let ended = aof.rotate();
            let _ = compaction::compact(fs.as_ref(), dir, &aof, ended, &scratch, &mut Stub);
        }
    }
    let mut transaction = PendingTransaction::default();
    let (body, ranges) = request(&[b"SET", b"tx", b"whole"]);
    let write = Logged {
        db: 0,
        request: Request::new(&body, &ranges),
        time_ms: 2,
    };
    transaction.push(0, &write.request);
    let position = {
        let order = aof.order();
        Stub.apply(&store, write).expect("apply");
        order.append_with(|out| transaction.encode(out, 2))
    };
    // The exit snapshot of a stopping server, commands paused: the segments up to the one just
    // ended are folded into a snapshot of the live keyspace, then removed.
    let ended = aof.rotate();
    if aof.wait_sealed(ended).is_ok()
        && snapshot::write(fs.as_ref(), &store, dir, ended + 1, Expired::Keep).is_ok()
    {
        let _ = compaction::remove_segments_before(fs.as_ref(), dir, ended + 1);
    }
    aof.close();
    if aof.durable_position() >= position {
        acknowledged.push(("tx".into(), "whole".into()));
    }
    acknowledged
}

/// A directory with a snapshot of two keys, as the log scenario starts from.
fn seeded_dir(name: &str) -> PathBuf {
    let dir = scratch_dir(name);
    place_bystanders(&dir);
    let store = Store::new(1, 4);
    store
        .db(0)
        .insert(b"seed-a", Value::String(b"A".to_vec()), 0);
    store
        .db(0)
        .insert(b"seed-b", Value::String(b"B".to_vec()), 0);
    snapshot::write(&fs::RealFs, &store, &dir, 0, Expired::Drop).expect("seed snapshot");
    dir
}

/// After a fault: start-up on a sound disk succeeds and holds everything acknowledged.
fn assert_recovers(dir: &Path, acknowledged: &[(String, String)], what: &str) {
    let store = Store::new(1, 4);
    recover_with(&fs::RealFs, dir, &store, true)
        .unwrap_or_else(|e| panic!("{what}: start-up failed: {e}"));
    for key in ["seed-a", "seed-b"] {
        assert!(
            value_of(&store, key.as_bytes()).is_some(),
            "{what}: {key} lost"
        );
    }
    for (key, value) in acknowledged {
        assert_eq!(
            value_of(&store, key.as_bytes()).as_deref(),
            Some(value.as_bytes()),
            "{what}: acknowledged {key} lost"
        );
    }
    assert_bystanders_untouched(dir);
}

/// Runs the log scenario under `fsync` without a fault, on a directory seeded as `name`,
/// checks that every write was acknowledged and recovers, and returns how many changes it made:
/// the points a walk puts a fault at.
fn unfaulted_points(attic: &Path, name: &str, fsync: Fsync) -> u64 {
    let counting = FaultyFs::new(attic);
    let dir = seeded_dir(name);
    let acknowledged = log_scenario(Arc::new(counting.clone()), &dir, fsync);
    assert_eq!(
        acknowledged.len(),
        19,
        "without faults every write is acknowledged"
    );
    assert_recovers(&dir, &acknowledged, "no fault");
    counting.points()
}

#[test]
fn every_fault_in_log_appends_compaction_and_start_up_keeps_what_was_acknowledged() {
    let attic = scratch_dir("attic");
    let points = unfaulted_points(&attic, "count", Fsync::Always);
    assert!(points > 20, "the scenario makes {points} changes");
    let faults = [
        Fault::Crash,
        Fault::Fail(libc::EIO),
        Fault::Fail(libc::ENOSPC),
        Fault::Fail(libc::EROFS),
    ];
    let mut walked = 0;
    for point in 1..=points {
        for fault in faults {
            let dir = seeded_dir("walk");
            let faulty = FaultyFs::new(&attic);
            faulty.set_fault(point, fault);
            let acknowledged = log_scenario(Arc::new(faulty.clone()), &dir, Fsync::Always);
            let what = format!("{fault:?} at change {point} of {points}");
            assert!(
                faulty.trespasses().is_empty(),
                "{what}: touched {:?}",
                faulty.trespasses()
            );
            assert_recovers(&dir, &acknowledged, &what);
            walked += 1;
        }
    }
    eprintln!("fault walk: {walked} runs over {points} changes");
    let _ = std::fs::remove_dir_all(&attic);
}

/// Under `everysec` a reply waits until its write is handed to the operating system, which the
/// waiting caller does itself when it can. A change that fails once (the caller's own write, a
/// sync, a new segment) loses nothing acknowledged: the writer thread tries it again. (A crash
/// of the disk may lose the last second, as Redis's `everysec` may; start-up after one is walked
/// under `always` above.)
#[test]
fn under_everysec_every_failed_change_keeps_what_was_acknowledged() {
    let attic = scratch_dir("everysec-attic");
    let points = unfaulted_points(&attic, "everysec-count", Fsync::EverySec);
    for point in 1..=points {
        for error in [libc::EIO, libc::ENOSPC] {
            let dir = seeded_dir("everysec-walk");
            let faulty = FaultyFs::new(&attic);
            faulty.set_fault(point, Fault::Fail(error));
            let acknowledged = log_scenario(Arc::new(faulty.clone()), &dir, Fsync::EverySec);
            let what = format!("everysec, error {error} at change {point} of {points}");
            assert!(faulty.trespasses().is_empty(), "{what}");
            // Either start-up refused to run on a failing disk, or every write went through.
            assert!(
                [0, 19].contains(&acknowledged.len()),
                "{what}: a failure once is retried, {} acknowledged",
                acknowledged.len()
            );
            assert_recovers(&dir, &acknowledged, &what);
        }
    }
    let _ = std::fs::remove_dir_all(&attic);
}

#[test]
fn every_fault_in_a_start_up_that_repairs_and_folds_the_log_keeps_what_was_acknowledged() {
    let attic = scratch_dir("start-up-attic");
    let prepare = || {
        let dir = seeded_dir("start-up");
        let acknowledged = log_scenario(fs::real(), &dir, Fsync::Always);
        // A write cut short by a crash at the end of the last segment.
        let (_, last) = super::aof::list_segments(&dir)
            .expect("segments")
            .pop()
            .expect("a segment");
        let mut bytes = std::fs::read(&last).expect("segment");
        let mut record = Vec::new();
        let (body, ranges) = request(&[b"SET", b"torn", b"never acknowledged"]);
        let mut transaction = PendingTransaction::default();
        transaction.push(0, &Request::new(&body, &ranges));
        transaction.encode(&mut record, 3);
        bytes.extend_from_slice(&record[..record.len() / 2]);
        std::fs::write(&last, bytes).expect("torn tail");
        (dir, acknowledged)
    };
    for log_on in [false, true] {
        let counting = FaultyFs::new(&attic);
        let (dir, _) = prepare();
        recover_with(&counting, &dir, &Store::new(1, 4), log_on).expect("start-up");
        for point in 1..=counting.points() {
            for fault in [Fault::Crash, Fault::Fail(libc::ENOSPC)] {
                let (dir, acknowledged) = prepare();
                let faulty = FaultyFs::new(&attic);
                faulty.set_fault(point, fault);
                let _ = recover_with(&faulty, &dir, &Store::new(1, 4), log_on);
                let what = format!("log {log_on}, {fault:?} at change {point}");
                assert!(faulty.trespasses().is_empty(), "{what}");
                assert_recovers(&dir, &acknowledged, &what);
            }
        }
    }
}

#[test]
fn every_fault_in_a_snapshot_leaves_the_previous_one_or_the_new_one() {
    let attic = scratch_dir("snapshot-attic");
    let store = Store::new(1, 4);
    for i in 0..200 {
        store.db(0).insert(
            format!("new{i}").as_bytes(),
            Value::String(vec![b'x'; 1000]),
            0,
        );
    }
    let counting = FaultyFs::new(&attic);
    let dir = seeded_dir("snapshot-count");
    snapshot::write(&counting, &store, &dir, 0, Expired::Drop).expect("snapshot");
    for point in 1..=counting.points() {
        for fault in [Fault::Crash, Fault::Fail(libc::ENOSPC)] {
            let dir = seeded_dir("snapshot-walk");
            let faulty = FaultyFs::new(&attic);
            faulty.set_fault(point, fault);
            let written = snapshot::write(&faulty, &store, &dir, 0, Expired::Drop).is_ok();
            let loaded = Store::new(1, 4);
            recover_with(&fs::RealFs, &dir, &loaded, false).expect("start-up");
            let new = value_of(&loaded, b"new199").is_some();
            let old = value_of(&loaded, b"seed-a").is_some();
            assert!(
                new != old,
                "{fault:?} at {point}: exactly one snapshot, not a mix"
            );
            if written && !faulty.crashed() {
                assert!(
                    new,
                    "{fault:?} at {point}: a save that succeeded is what loads"
                );
            }
            let leftovers: Vec<_> = std::fs::read_dir(&dir)
                .expect("dir")
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|name| snapshot::format::is_temp_file(name))
                .collect();
            assert!(
                leftovers.is_empty(),
                "{fault:?} at {point}: left {leftovers:?}"
            );
            assert_bystanders_untouched(&dir);
        }
    }
    let _ = std::fs::remove_dir_all(&attic);
}

#[test]
fn a_compaction_keeps_expired_keys_that_later_writes_may_revive() {
    let dir = scratch_dir("expired");
    let store = Store::new(1, 4);
    // Expired long ago by the wall clock, but the segment after the compaction may hold a write
    // that ran while it was alive.
    store
        .db(0)
        .insert(b"sliding", Value::String(b"kept".to_vec()), 5);
    snapshot::write(&fs::RealFs, &store, &dir, 0, Expired::Keep).expect("snapshot");
    let reloaded = Store::new(1, 4);
    let report = snapshot::load(&reloaded, &dir, |_, _| {})
        .expect("load")
        .expect("a snapshot");
    assert_eq!(report.expired, 1);
    assert_eq!(reloaded.db(0).expires_at(b"sliding", 1), Some(5));
    snapshot::write(&fs::RealFs, &store, &dir, 0, Expired::Drop).expect("snapshot");
    let dropped = Store::new(1, 4);
    snapshot::load(&dropped, &dir, |_, _| {}).expect("load");
    assert_eq!(dropped.db(0).len(), 0);
}

#[test]
fn leftovers_of_crashed_saves_are_removed_and_nothing_else() {
    let dir = scratch_dir("leftovers");
    place_bystanders(&dir);
    for pid in [1, 99999] {
        std::fs::write(dir.join(format!("sieved.snap.tmp-{pid}")), vec![0u8; 4096])
            .expect("leftover");
    }
    let store = Store::new(1, 4);
    recover_with(&fs::RealFs, &dir, &store, false).expect("start-up");
    assert!(!dir.join("sieved.snap.tmp-1").exists());
    assert!(!dir.join("sieved.snap.tmp-99999").exists());
    assert_bystanders_untouched(&dir);
}

#[test]
fn a_fatal_log_error_is_reported_once_and_stops_the_writer() {
    let dir = scratch_dir("fatal");
    let attic = scratch_dir("fatal-attic");
    let faulty = FaultyFs::new(&attic);
    let store = Store::new(1, 4);
    let mut recovered = recover_with(&faulty, &dir, &store, true).expect("start-up");
    let fatal = Arc::new(AtomicBool::new(false));
    let seen = fatal.clone();
    let on_fatal: OnFatal = Box::new(move |_| seen.store(true, Ordering::SeqCst));
    let aof = Arc::new(Aof::new(
        dir.clone(),
        Fsync::Always,
        Arc::new(faulty.clone()),
        on_fatal,
    ));
    let open = recovered.append_to.take().expect("segment");
    aof.will_run_writer(&open);
    let writer = aof.clone();
    let thread = std::thread::spawn(move || writer.run_writer(open));
    faulty.set_fault(faulty.points() + 1, Fault::Fail(libc::ENOSPC));
    assert!(!set_logged(&aof, &store, "k", "v"));
    thread.join().expect("writer");
    assert!(fatal.load(Ordering::SeqCst));
    assert!(aof.failure().is_some());
}

#[test]
fn a_version_1_segment_is_replayed_and_never_appended_to() {
    let dir = scratch_dir("version-1");
    let mut bytes = super::aof::format::file_header(1).to_vec();
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    std::fs::write(super::aof::segment_path(&dir, 1), &bytes).expect("segment");
    let store = Store::new(1, 4);
    let recovered = recover_with(&fs::RealFs, &dir, &store, true).expect("start-up");
    assert_eq!(recovered.log.segments, 1);
    assert_eq!(recovered.append_to.expect("a segment").segment, 2);
    assert_eq!(
        std::fs::read(super::aof::segment_path(&dir, 1)).expect("kept"),
        bytes
    );
}

/// Starts a log under `everysec` on a faulty file system, with its writer on a thread.
fn start_everysec_log(faulty: &FaultyFs, dir: &Path, store: &Store) -> Arc<Aof> {
    let mut recovered = recover_with(faulty, dir, store, true).expect("start-up");
    let on_fatal: OnFatal = Box::new(|_| {});
    let aof = Arc::new(Aof::new(
        dir.to_path_buf(),
        Fsync::EverySec,
        Arc::new(faulty.clone()),
        on_fatal,
    ));
    let open = recovered.append_to.take().expect("segment");
    aof.will_run_writer(&open);
    let writer = aof.clone();
    std::thread::spawn(move || writer.run_writer(open));
    aof
}

#[test]
fn a_background_sync_that_fails_refuses_writes() {
    let dir = scratch_dir("everysec-sync-fails");
    let faulty = FaultyFs::new(&scratch_dir("everysec-sync-fails-attic"));
    let store = Store::new(1, 4);
    let aof = start_everysec_log(&faulty, &dir, &store);
    // Change 1 is the write; with nothing else appended, change 2 is the sync that the writer
    // hands to the sync thread once the second is up. The disk stops there, so the writer's
    // own retries fail too.
    faulty.set_fault(faulty.points() + 2, Fault::Crash);
    assert!(set_logged(&aof, &store, "k", "v"));
    assert!(wait_for(|| aof.failure().is_some()), "writes are refused");
    assert!(aof.failure().is_some(), "and stay refused while syncs fail");
}

#[test]
fn a_background_sync_that_fails_once_is_retried_and_writes_go_on() {
    let dir = scratch_dir("everysec-sync-retried");
    let faulty = FaultyFs::new(&scratch_dir("everysec-sync-retried-attic"));
    let store = Store::new(1, 4);
    let aof = start_everysec_log(&faulty, &dir, &store);
    let before = faulty.points();
    faulty.set_fault(before + 2, Fault::Fail(libc::EIO));
    assert!(set_logged(&aof, &store, "k", "v"));
    // The failed sync (change 2) and the writer's retry of it (change 3), which works.
    assert!(wait_for(|| faulty.points() >= before + 3));
    assert!(wait_for(|| aof.failure().is_none()));
    assert!(set_logged(&aof, &store, "k2", "v2"));
    aof.close();
    let restarted = Store::new(1, 4);
    recover_with(&faulty, &dir, &restarted, true).expect("restart");
    assert_eq!(value_of(&restarted, b"k").as_deref(), Some(&b"v"[..]));
    assert_eq!(value_of(&restarted, b"k2").as_deref(), Some(&b"v2"[..]));
}

/// Polls `condition` for up to ten seconds (the sync runs once a second).
fn wait_for(condition: impl Fn() -> bool) -> bool {
    for _ in 0..1000 {
        if condition() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}

/// Payloads longer than the read buffer are read straight into the values' memory, in large
/// reads each hashed where it lands (the Bloom filter's, over 8 MiB, with its pages faulted in
/// ahead by a helper thread): they come back byte for byte (a counting filter with its tally of
/// saturated counters), and a flipped byte or a cut anywhere is refused.
#[test]
fn large_payloads_load_in_place_and_damage_anywhere_in_them_is_refused() {
    use crate::filter::{
        BloomChain, ChainOptions, CounterBits, CountingChain, CountingOptions, HashScheme, Layout,
    };
    let dir = scratch_dir("large");
    let store = Store::new(1, 4);
    let mut bloom = BloomChain::new(
        ChainOptions {
            error_rate: 0.01,
            capacity: 8_000_000,
            expansion: 0,
            non_scaling: true,
            layout: Layout::Classic,
            hash: HashScheme::Xxh3,
        },
        u64::MAX,
    )
    .unwrap();
    let mut counting = CountingChain::new(
        CountingOptions {
            error_rate: 0.01,
            capacity: 500_000,
            expansion: 2,
            counter_bits: CounterBits::Four,
        },
        u64::MAX,
    )
    .unwrap();
    for i in 0..5000 {
        let item = format!("item{i}");
        bloom.add(item.as_bytes(), u64::MAX).unwrap();
        counting.add(item.as_bytes(), u64::MAX).unwrap();
    }
    for _ in 0..20 {
        counting.add(b"often", u64::MAX).unwrap();
    }
    let saturated = counting.saturated_counters();
    assert!(saturated > 0);
    let string: Vec<u8> = (0..3_000_001u32).map(|i| (i * 7 % 251) as u8).collect();
    let db = store.db(0);
    db.insert(b"bloom", Value::Bloom(bloom), 0);
    db.insert(b"counting", Value::Counting(Box::new(counting)), 0);
    db.insert(b"string", Value::String(string.clone()), 0);
    db.insert(b"small", Value::String(b"v".to_vec()), 0);
    snapshot::write(&fs::RealFs, &store, &dir, 0, Expired::Keep).expect("snapshot");
    let payload = |store: &Store, key: &[u8]| {
        store.db(0).get(key, 0, |value| {
            let value = value.expect("the key is there");
            let mut bytes = Vec::new();
            assert!(value.read_payload(0, value.payload_len(), &mut bytes));
            bytes
        })
    };
    let reloaded = Store::new(1, 4);
    let report = snapshot::load(&reloaded, &dir, |_, _| {})
        .expect("load")
        .expect("a snapshot");
    assert_eq!(report.keys, 4);
    for key in [&b"bloom"[..], b"counting", b"string", b"small"] {
        assert!(payload(&store, key) == payload(&reloaded, key), "{key:?}");
    }
    reloaded.db(0).get(b"counting", 0, |value| match value {
        Some(Value::Counting(chain)) => assert_eq!(chain.saturated_counters(), saturated),
        _ => panic!("not a counting filter"),
    });

    let good = std::fs::read(dir.join(snapshot::FILE_NAME)).expect("snapshot");
    let attempt = |bytes: &[u8]| {
        std::fs::write(dir.join(snapshot::FILE_NAME), bytes).expect("write");
        snapshot::load(&Store::new(1, 4), &dir, |_, _| {})
    };
    let step = good.len() / 61;
    for at in (0..good.len())
        .step_by(step)
        .chain([good.len() - 9, good.len() - 1])
    {
        let mut bad = good.clone();
        bad[at] ^= 0x01;
        attempt(&bad).expect_err(&format!("a flipped byte at {at} went unnoticed"));
    }
    for len in (0..good.len()).step_by(step / 3).chain([good.len() - 1]) {
        attempt(&good[..len]).expect_err(&format!("a file cut at {len} bytes went unnoticed"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_snapshot_holds_the_function_libraries_and_older_files_load_without_them() {
    let dir = scratch_dir("functions");
    let store = Store::new(1, 4);
    store.db(0).insert(b"k", Value::String(b"v".to_vec()), 0);
    let code = b"#!lua name=lib\nredis.register_function('f', function() return 1 end)";
    store.functions().insert(b"lib", code);
    snapshot::write(&fs::RealFs, &store, &dir, 0, Expired::Drop).expect("snapshot");
    let reloaded = Store::new(1, 4);
    let report = snapshot::load(&reloaded, &dir, |_, _| {})
        .expect("load")
        .expect("a snapshot");
    assert_eq!(report.keys, 1);
    assert_eq!(
        reloaded.functions().codes().1,
        vec![(b"lib".to_vec(), code.to_vec())]
    );
    // A flipped byte of the library's code fails its record's checksum.
    let path = dir.join(snapshot::FILE_NAME);
    let mut bytes = std::fs::read(&path).expect("read");
    let at = bytes
        .windows(code.len())
        .position(|w| w == code)
        .expect("the code is in the file");
    bytes[at + 3] ^= 1;
    std::fs::write(&path, &bytes).expect("write");
    assert!(snapshot::load(&Store::new(1, 4), &dir, |_, _| {}).is_err());
    // The version 3 snapshot of tests/data, written before libraries were saved, has none.
    let old = scratch_dir("functions-old");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/v3.snap"),
        old.join(snapshot::FILE_NAME),
    )
    .expect("copy");
    let from_old = Store::new(16, 4);
    snapshot::load(&from_old, &old, |_, _| {})
        .expect("load")
        .expect("a snapshot");
    assert!(from_old.functions().is_empty());
}
