//! The append-only file: every write command that succeeded, in the order it ran, with the time
//! it ran at. The format is documented in the module documentation of `persist`.
//!
//! Commands append to a buffer in memory while they hold the log's lock, so the log's order is
//! the order in which writes changed the store; one writer thread moves the buffer to disk. With
//! `appendfsync always` it syncs after every write it makes and publishes how far the file is
//! durable: connections wait for that before they send their replies, so the writes of every
//! client that arrived during one sync share the next one (group commit).

use super::{AOF_MAGIC, AOF_VERSION};
use crate::config::Fsync;
use crate::protocol::Request;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use xxhash_rust::xxh3::xxh3_64;

/// Bytes before the first record: magic, version, reserved, segment number.
pub const FILE_HEADER_LEN: u64 = 24;
/// A record's length field and the check of that field.
const RECORD_HEAD_LEN: usize = 8;
/// A record's body checksum.
const RECORD_TAIL_LEN: usize = 8;
/// The body's time and command count.
const BODY_FIXED_LEN: usize = 12;
/// A writer that failed waits this long before it tries again.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// `<dir>/sieved-<n>.aof`: segments are numbered from 1, and a snapshot names the first one
/// that is not folded into it.
pub fn segment_path(dir: &Path, segment: u64) -> PathBuf {
    dir.join(format!("sieved-{segment}.aof"))
}

/// The log segments in `dir`, in order.
pub fn list_segments(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut segments = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(segments),
        Err(error) => return Err(error),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let number = name
            .to_str()
            .and_then(|name| name.strip_prefix("sieved-"))
            .and_then(|rest| rest.strip_suffix(".aof"))
            .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<u64>().ok());
        if let Some(number) = number {
            segments.push((number, entry.path()));
        }
    }
    segments.sort();
    Ok(segments)
}

fn file_header(segment: u64) -> [u8; FILE_HEADER_LEN as usize] {
    let mut header = [0u8; FILE_HEADER_LEN as usize];
    header[..8].copy_from_slice(AOF_MAGIC);
    header[8..12].copy_from_slice(&AOF_VERSION.to_le_bytes());
    header[16..24].copy_from_slice(&segment.to_le_bytes());
    header
}

/// Creates an empty segment and makes its name durable.
pub fn create_segment(dir: &Path, segment: u64) -> io::Result<File> {
    let path = segment_path(dir, segment);
    let mut file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(&path)?;
    file.write_all(&file_header(segment))?;
    file.sync_all()?;
    File::open(dir)?.sync_all()?;
    Ok(file)
}

/// Appends one command to `out` in the record body's layout.
pub fn encode_command(out: &mut Vec<u8>, db: usize, request: &Request) {
    out.extend_from_slice(&(db as u16).to_le_bytes());
    out.extend_from_slice(&(request.len() as u32).to_le_bytes());
    for arg in request.args() {
        out.extend_from_slice(&(arg.len() as u32).to_le_bytes());
        out.extend_from_slice(arg);
    }
}

/// Appends a whole record holding `count` commands, already encoded end to end in `commands`.
fn encode_record(out: &mut Vec<u8>, time_ms: u64, count: u32, commands: &[u8]) {
    let body_len = (BODY_FIXED_LEN + commands.len()) as u32;
    let length = body_len.to_le_bytes();
    out.extend_from_slice(&length);
    out.extend_from_slice(&(xxh3_64(&length) as u32).to_le_bytes());
    let body_start = out.len();
    out.extend_from_slice(&time_ms.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(commands);
    let checksum = xxh3_64(&out[body_start..]);
    out.extend_from_slice(&checksum.to_le_bytes());
}

/// Appends a record of one command, encoding it in place.
fn encode_single(out: &mut Vec<u8>, time_ms: u64, db: usize, request: &Request) {
    let start = out.len();
    out.extend_from_slice(&[0u8; RECORD_HEAD_LEN]);
    out.extend_from_slice(&time_ms.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    encode_command(out, db, request);
    let body_len = (out.len() - start - RECORD_HEAD_LEN) as u32;
    let length = body_len.to_le_bytes();
    out[start..start + 4].copy_from_slice(&length);
    out[start + 4..start + 8].copy_from_slice(&(xxh3_64(&length) as u32).to_le_bytes());
    let checksum = xxh3_64(&out[start + RECORD_HEAD_LEN..]);
    out.extend_from_slice(&checksum.to_le_bytes());
}

/// The commands a transaction ran, gathered so that they reach the log as one record: a crash
/// keeps all of them or none.
#[derive(Default)]
pub struct PendingTransaction {
    commands: Vec<u8>,
    count: u32,
}

impl PendingTransaction {
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn push(&mut self, db: usize, request: &Request) {
        encode_command(&mut self.commands, db, request);
        self.count += 1;
    }
}

struct State {
    buffer: Vec<u8>,
    /// Bytes ever appended, counted from the start of the process: a position in the log.
    appended: u64,
    /// The segment that appends go to.
    segment: u64,
    /// Set by a compaction: the bytes before this position belong to the previous segment.
    rotate_at: Option<u64>,
    /// Bytes in the segments not yet folded into a snapshot, buffered bytes included.
    live_bytes: u64,
    writer_waiting: bool,
    closing: bool,
}

/// The log as commands and the writer thread share it.
pub struct Aof {
    dir: PathBuf,
    fsync: AtomicU8,
    state: Mutex<State>,
    wake: Condvar,
    /// How far the log is on disk as `appendfsync always` needs it: a position in the log.
    durable: watch::Sender<u64>,
    /// Set while writing to the file fails; write commands are then refused.
    failing: Mutex<Option<String>>,
    has_failed: AtomicBool,
    /// The last segment that is complete on disk and will not be written again.
    sealed: AtomicU64,
    /// Size of the live segments right after the last compaction, for the growth rule.
    base_bytes: AtomicU64,
    started: AtomicBool,
    stopped: Mutex<bool>,
    stopped_signal: Condvar,
}

/// What the writer thread starts with.
pub struct OpenSegment {
    pub segment: u64,
    pub file: File,
    /// Length of `file`, which appends continue from.
    pub file_len: u64,
    /// Bytes in this and any earlier live segments.
    pub live_bytes: u64,
}

impl Aof {
    pub fn new(dir: PathBuf, fsync: Fsync) -> Aof {
        Aof {
            dir,
            fsync: AtomicU8::new(fsync as u8),
            state: Mutex::new(State {
                buffer: Vec::new(),
                appended: 0,
                segment: 0,
                rotate_at: None,
                live_bytes: 0,
                writer_waiting: false,
                closing: false,
            }),
            wake: Condvar::new(),
            durable: watch::channel(0).0,
            failing: Mutex::new(None),
            has_failed: AtomicBool::new(false),
            sealed: AtomicU64::new(0),
            base_bytes: AtomicU64::new(0),
            started: AtomicBool::new(false),
            stopped: Mutex::new(false),
            stopped_signal: Condvar::new(),
        }
    }

    pub fn fsync(&self) -> Fsync {
        match self.fsync.load(Ordering::Relaxed) {
            0 => Fsync::Always,
            1 => Fsync::EverySec,
            _ => Fsync::No,
        }
    }

    pub fn set_fsync(&self, fsync: Fsync) {
        self.fsync.store(fsync as u8, Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Held while a write command runs and is appended, so that the log's order is the order
    /// the writes took effect in.
    pub fn order(&self) -> Appender<'_> {
        Appender {
            aof: self,
            state: self.lock(),
        }
    }

    /// Why writes are refused, while the log cannot be written.
    pub fn failure(&self) -> Option<String> {
        if !self.has_failed.load(Ordering::Relaxed) {
            return None;
        }
        self.failing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Resolves once everything up to `position` is as durable as the fsync policy promises
    /// before a reply: on disk for `always`, at once otherwise.
    pub async fn wait_durable(&self, position: u64) {
        if self.fsync() != Fsync::Always {
            return;
        }
        let mut durable = self.durable.subscribe();
        let _ = durable.wait_for(|&at| at >= position).await;
    }

    pub fn segment(&self) -> u64 {
        self.lock().segment
    }

    pub fn live_bytes(&self) -> u64 {
        self.lock().live_bytes
    }

    pub fn base_bytes(&self) -> u64 {
        self.base_bytes.load(Ordering::Relaxed)
    }

    /// Whether the live segments have grown enough to fold into a new snapshot: at least
    /// `min_bytes`, and `percent` more than right after the last compaction.
    pub fn wants_compaction(&self, percent: u64, min_bytes: u64) -> bool {
        if percent == 0 {
            return false;
        }
        let live = self.live_bytes();
        let base = self.base_bytes();
        live >= min_bytes && live.saturating_sub(base) * 100 >= base.max(1) * percent
    }

    /// Ends the current segment: what is appended from now on goes to a new one. Returns the
    /// number of the segment just ended.
    pub fn rotate(&self) -> u64 {
        let mut state = self.lock();
        let ended = state.segment;
        state.rotate_at = Some(state.appended);
        state.segment += 1;
        if state.writer_waiting {
            self.wake.notify_one();
        }
        ended
    }

    /// Waits until segment `segment` is complete on disk.
    pub fn wait_sealed(&self, segment: u64) -> io::Result<()> {
        while self.sealed.load(Ordering::Acquire) < segment {
            if *self.stopped.lock().unwrap_or_else(|p| p.into_inner()) {
                return Err(io::Error::other("the append-only file was closed"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// After a compaction folded everything before `first_live` into the snapshot.
    pub fn compacted(&self, folded_bytes: u64) {
        let mut state = self.lock();
        state.live_bytes = state.live_bytes.saturating_sub(folded_bytes);
        self.base_bytes.store(state.live_bytes, Ordering::Relaxed);
    }

    /// Whether `close` has run: the writer is gone and nothing more reaches the file.
    pub fn is_closed(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes out and syncs everything appended, then stops the writer thread.
    pub fn close(&self) {
        if !self.started.load(Ordering::Acquire) {
            return;
        }
        {
            let mut state = self.lock();
            state.closing = true;
            self.wake.notify_one();
        }
        let mut stopped = self.stopped.lock().unwrap_or_else(|p| p.into_inner());
        while !*stopped {
            stopped = self
                .stopped_signal
                .wait(stopped)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Takes the position of the segment appends go to, before any command can append or a
    /// compaction rotate, and says a writer thread is about to run, so that `close` waits for it.
    pub fn will_run_writer(&self, start: &OpenSegment) {
        {
            let mut state = self.lock();
            state.segment = start.segment;
            state.live_bytes = start.live_bytes;
        }
        self.base_bytes.store(start.live_bytes, Ordering::Relaxed);
        self.sealed
            .store(start.segment.saturating_sub(1), Ordering::Release);
        self.started.store(true, Ordering::Release);
    }

    /// The writer: moves what commands appended to the file, syncing as the policy says, and
    /// starts the next segment when a compaction asks for it. Runs on its own thread, after
    /// `will_run_writer`, until `close`.
    pub fn run_writer(&self, start: OpenSegment) {
        let mut writer = Writer {
            file: start.file,
            segment: start.segment,
            written: 0,
            file_len: start.file_len,
            unsynced: false,
            last_sync: Instant::now(),
        };
        let mut spare = Vec::new();
        loop {
            let (data, rotate_at, closing) = {
                let mut state = self.lock();
                loop {
                    if !state.buffer.is_empty() || state.rotate_at.is_some() || state.closing {
                        break;
                    }
                    let wait = match self.fsync() {
                        Fsync::EverySec if writer.unsynced => {
                            Duration::from_secs(1).saturating_sub(writer.last_sync.elapsed())
                        }
                        _ => Duration::from_secs(1),
                    };
                    if wait.is_zero() {
                        break;
                    }
                    state.writer_waiting = true;
                    state = self
                        .wake
                        .wait_timeout(state, wait)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    state.writer_waiting = false;
                }
                std::mem::swap(&mut state.buffer, &mut spare);
                (
                    std::mem::take(&mut spare),
                    state.rotate_at.take(),
                    state.closing,
                )
            };
            let mut rotate_at = rotate_at;
            let mut consumed = 0;
            let result = self.write_out(&mut writer, &data, &mut rotate_at, &mut consumed, closing);
            if let Err(error) = result {
                self.fail(&error);
                // Put back what did not reach the file, in front of anything appended since.
                let mut state = self.lock();
                let mut unwritten = data[consumed..].to_vec();
                unwritten.extend_from_slice(&state.buffer);
                state.buffer = unwritten;
                if let Some(at) = rotate_at {
                    state.rotate_at.get_or_insert(at);
                }
                state.closing |= closing;
                drop(state);
                std::thread::sleep(RETRY_AFTER_FAILURE);
                continue;
            }
            self.clear_failure();
            spare = data;
            spare.clear();
            if closing {
                break;
            }
        }
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.stopped_signal.notify_all();
    }

    /// Writes `data`, ending the segment at `rotate_at` if set (and then clearing it);
    /// `consumed` tells how much of `data` is in the files, also when it fails.
    fn write_out(
        &self,
        writer: &mut Writer,
        data: &[u8],
        rotate_at: &mut Option<u64>,
        consumed: &mut usize,
        closing: bool,
    ) -> io::Result<()> {
        if let Some(at) = *rotate_at {
            let before = (at.saturating_sub(writer.written) as usize).min(data.len());
            writer.append(&data[..before])?;
            *consumed = before;
            writer.sync()?;
            self.sealed.store(writer.segment, Ordering::Release);
            writer.file = create_segment(&self.dir, writer.segment + 1)?;
            writer.segment += 1;
            writer.file_len = FILE_HEADER_LEN;
            *rotate_at = None;
            self.add_live(FILE_HEADER_LEN);
        }
        writer.append(&data[*consumed..])?;
        *consumed = data.len();
        let sync_now = match self.fsync() {
            Fsync::Always => true,
            Fsync::EverySec => writer.last_sync.elapsed() >= Duration::from_secs(1),
            Fsync::No => false,
        } || closing;
        if sync_now && writer.unsynced {
            writer.sync()?;
        }
        if closing {
            self.sealed.store(writer.segment, Ordering::Release);
        }
        self.durable.send_replace(writer.written);
        Ok(())
    }

    fn add_live(&self, bytes: u64) {
        self.lock().live_bytes += bytes;
    }

    fn fail(&self, error: &io::Error) {
        if self.fsync() == Fsync::Always {
            // Nothing appended can be acknowledged any more, and waiting clients would wait
            // forever: stop, as Redis does, rather than pretend.
            tracing::error!(%error, "cannot write the append-only file with appendfsync always; exiting");
            std::process::exit(1);
        }
        tracing::error!(%error, "cannot write the append-only file; write commands are refused until it works again");
        *self.failing.lock().unwrap_or_else(|p| p.into_inner()) = Some(error.to_string());
        self.has_failed.store(true, Ordering::Relaxed);
    }

    fn clear_failure(&self) {
        if self.has_failed.swap(false, Ordering::Relaxed) {
            tracing::info!("the append-only file can be written again");
            *self.failing.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }
}

/// The file being appended to, and how far it got.
struct Writer {
    file: File,
    segment: u64,
    /// Log position up to which bytes are in the files.
    written: u64,
    /// Length of the current file.
    file_len: u64,
    unsynced: bool,
    last_sync: Instant,
}

impl Writer {
    /// Appends all of `data` or, failing, leaves the file as it was.
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        if let Err(error) = self.file.write_all(data) {
            let _ = self.file.set_len(self.file_len);
            return Err(error);
        }
        self.written += data.len() as u64;
        self.file_len += data.len() as u64;
        self.unsynced = true;
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()?;
        self.unsynced = false;
        self.last_sync = Instant::now();
        Ok(())
    }
}

/// The log's lock, held by a write command while it runs; it appends the command once it has
/// succeeded.
pub struct Appender<'a> {
    aof: &'a Aof,
    state: MutexGuard<'a, State>,
}

impl Appender<'_> {
    /// Appends one command; returns the log position a reply to it must wait for.
    pub fn append(mut self, time_ms: u64, db: usize, request: &Request) -> u64 {
        let before = self.state.buffer.len();
        encode_single(&mut self.state.buffer, time_ms, db, request);
        self.finish(before)
    }

    /// Appends a transaction's commands as one record.
    pub fn append_transaction(mut self, time_ms: u64, pending: &PendingTransaction) -> u64 {
        let before = self.state.buffer.len();
        encode_record(
            &mut self.state.buffer,
            time_ms,
            pending.count,
            &pending.commands,
        );
        self.finish(before)
    }

    fn finish(mut self, before: usize) -> u64 {
        let added = (self.state.buffer.len() - before) as u64;
        self.state.appended += added;
        self.state.live_bytes += added;
        if self.state.writer_waiting {
            self.aof.wake.notify_one();
        }
        self.state.appended
    }
}

/// One record read back: when it ran, and its commands as (database, argument ranges) over
/// `body`.
pub struct Record {
    pub time_ms: u64,
    pub body: Vec<u8>,
    pub commands: Vec<(usize, Vec<Range<usize>>)>,
}

/// What reading a segment found where it stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// The segment ends after a whole record.
    End,
    /// The last record is incomplete or fails its checksum and nothing follows it: a write cut
    /// short by a crash. The offset is where it starts.
    Torn { offset: u64, reason: String },
    /// Damage with more of the file after it.
    Damaged { offset: u64, reason: String },
}

/// Reads a segment record by record.
pub struct SegmentReader {
    input: BufReader<File>,
    pub size: u64,
    pub offset: u64,
}

impl SegmentReader {
    /// Opens a segment and checks its header.
    pub fn open(path: &Path, segment: u64) -> Result<SegmentReader, (u64, String)> {
        let file = File::open(path).map_err(|error| (0, error.to_string()))?;
        let size = file
            .metadata()
            .map_err(|error| (0, error.to_string()))?
            .len();
        let mut reader = SegmentReader {
            input: BufReader::with_capacity(1 << 20, file),
            size,
            offset: 0,
        };
        let mut header = [0u8; FILE_HEADER_LEN as usize];
        if size < FILE_HEADER_LEN {
            // Created but its header never reached the disk: a crash right after a rotation.
            return Ok(reader);
        }
        reader
            .input
            .read_exact(&mut header)
            .map_err(|error| (0, error.to_string()))?;
        if &header[..8] != AOF_MAGIC {
            return Err((0, "not a sieved append-only file (bad magic)".into()));
        }
        let version = u32::from_le_bytes(header[8..12].try_into().expect("four bytes"));
        if version != AOF_VERSION {
            return Err((
                8,
                format!("append-only file version {version} is not supported (this build reads {AOF_VERSION})"),
            ));
        }
        if header[12..16] != [0u8; 4] {
            return Err((
                12,
                "the reserved field of the file header is not zero".into(),
            ));
        }
        let number = u64::from_le_bytes(header[16..24].try_into().expect("eight bytes"));
        if number != segment {
            return Err((
                16,
                format!("the file says it is segment {number}, its name says {segment}"),
            ));
        }
        reader.offset = FILE_HEADER_LEN;
        Ok(reader)
    }

    /// The next record, or where and why reading stopped.
    pub fn next_record(&mut self) -> Result<Record, Stop> {
        let start = self.offset;
        let left = self.size - self.offset;
        if left == 0 {
            return Err(Stop::End);
        }
        if self.size < FILE_HEADER_LEN {
            return Err(Stop::Torn {
                offset: 0,
                reason: "the file header is incomplete".into(),
            });
        }
        let torn = |reason: &str| Stop::Torn {
            offset: start,
            reason: reason.to_string(),
        };
        let damaged = |reason: String| Stop::Damaged {
            offset: start,
            reason,
        };
        if left < RECORD_HEAD_LEN as u64 {
            return Err(torn("the last record is cut short"));
        }
        let mut head = [0u8; RECORD_HEAD_LEN];
        self.read(&mut head).map_err(|e| damaged(e.to_string()))?;
        let length: [u8; 4] = head[..4].try_into().expect("four bytes");
        let check = u32::from_le_bytes(head[4..].try_into().expect("four bytes"));
        if xxh3_64(&length) as u32 != check {
            // A crash can leave zeros where the tail was to go; anything else is damage.
            if head == [0u8; RECORD_HEAD_LEN] && self.rest_is_zero()? {
                return Err(torn("the end of the file is zeros"));
            }
            return Err(damaged("a record's length field is damaged".into()));
        }
        let body_len = u32::from_le_bytes(length) as u64;
        if body_len < BODY_FIXED_LEN as u64 {
            return Err(damaged(format!(
                "a record of {body_len} bytes is too short"
            )));
        }
        if body_len + RECORD_TAIL_LEN as u64 > self.size - self.offset {
            return Err(torn("the last record is cut short"));
        }
        let mut body = vec![0u8; body_len as usize];
        self.read(&mut body).map_err(|e| damaged(e.to_string()))?;
        let mut tail = [0u8; RECORD_TAIL_LEN];
        self.read(&mut tail).map_err(|e| damaged(e.to_string()))?;
        if xxh3_64(&body) != u64::from_le_bytes(tail) {
            if self.offset == self.size {
                return Err(torn("the last record fails its checksum"));
            }
            return Err(damaged("a record fails its checksum".into()));
        }
        parse_body(body).map_err(damaged)
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.input.read_exact(buf)?;
        self.offset += buf.len() as u64;
        Ok(())
    }

    fn rest_is_zero(&mut self) -> Result<bool, Stop> {
        let mut chunk = [0u8; 4096];
        loop {
            let n = self.input.read(&mut chunk).map_err(|e| Stop::Damaged {
                offset: self.offset,
                reason: e.to_string(),
            })?;
            if n == 0 {
                return Ok(true);
            }
            if chunk[..n].iter().any(|&b| b != 0) {
                return Ok(false);
            }
        }
    }
}

/// Splits a checksummed body into its commands; a body whose checksum matched but whose
/// contents do not parse was written by a different program, and is damage.
fn parse_body(body: Vec<u8>) -> Result<Record, String> {
    let bad = || "a record's contents are malformed".to_string();
    let time_ms = u64::from_le_bytes(body[..8].try_into().expect("eight bytes"));
    let count = u32::from_le_bytes(body[8..12].try_into().expect("four bytes"));
    let mut at = BODY_FIXED_LEN;
    let mut take = |n: usize| -> Result<Range<usize>, String> {
        let end = at
            .checked_add(n)
            .filter(|&end| end <= body.len())
            .ok_or_else(bad)?;
        let range = at..end;
        at = end;
        Ok(range)
    };
    let mut commands = Vec::new();
    for _ in 0..count {
        let db = u16::from_le_bytes(body[take(2)?].try_into().expect("two bytes")) as usize;
        let argc = u32::from_le_bytes(body[take(4)?].try_into().expect("four bytes")) as usize;
        if argc == 0 || argc > body.len() {
            return Err(bad());
        }
        let mut args = Vec::with_capacity(argc);
        for _ in 0..argc {
            let len = u32::from_le_bytes(body[take(4)?].try_into().expect("four bytes"));
            args.push(take(len as usize)?);
        }
        commands.push((db, args));
    }
    if at != body.len() {
        return Err(bad());
    }
    Ok(Record {
        time_ms,
        body,
        commands,
    })
}
