//! Commands against a stub server: what reaches the write log for each kind of write, without a
//! network or a disk. The stub implements the same traits the real server does.

use super::*;
use crate::config::Config;
use crate::protocol::{Protocol, Reply, Request, RequestList};
use crate::store::{Store, Value};
use std::net::SocketAddr;
use std::sync::Mutex;

mod table;

/// A server whose write log keeps each logged record as text.
struct Stub {
    config: Config,
    log: Option<Log>,
    /// What `write_refusal` answers.
    refusal: Option<String>,
}

#[derive(Default)]
struct Log {
    records: Mutex<Vec<RequestList>>,
    /// The time each record was stamped with.
    times: Mutex<Vec<u64>>,
}

impl WriteLog for Log {
    fn in_order(
        &self,
        time_ms: u64,
        batch: &mut RequestList,
        write: &mut dyn FnMut(&mut RequestList),
    ) -> LogPosition {
        let mut records = self.records.lock().expect("log");
        write(batch);
        if batch.is_empty() {
            return LogPosition::default();
        }
        records.push(std::mem::take(batch));
        self.times.lock().expect("log").push(time_ms);
        LogPosition {
            durable_at: records.len() as u64,
            stream_offset: 0,
        }
    }
}

impl Server for Stub {
    fn config(&self) -> &Config {
        &self.config
    }
    fn write_log(&self) -> Option<&dyn WriteLog> {
        self.log.as_ref().map(|log| log as &dyn WriteLog)
    }
    fn info(&self, sections: &[&'static str], _now: u64) -> String {
        sections.join(",")
    }
    fn client_list(&self, _filter: &ClientFilter, _now: u64) -> String {
        String::new()
    }
    fn kill_clients(&self, _filter: &ClientFilter, _caller: u64, _now: u64) -> usize {
        0
    }
    fn slowlog_get(&self, _count: usize, reply: &mut Reply) {
        reply.array(0);
    }
    fn slowlog_len(&self) -> usize {
        0
    }
    fn slowlog_reset(&self) {}
    fn reset_stats(&self) {}
    fn settings_changed(&self) {}
    fn count_evictions(&self, _keys: u64) {}
    fn memory_not_counted(&self) -> u64 {
        0
    }
    fn save(&self) -> Result<(), SaveError> {
        Err(SaveError::InProgress)
    }
    fn save_in_background(&self, _schedule: bool) -> Result<bool, SaveError> {
        Ok(true)
    }
    fn last_save_secs(&self) -> u64 {
        0
    }
    fn shutdown(&self, _exit_save: ExitSave, _force: bool) -> u64 {
        1
    }
    fn role(&self) -> RoleView {
        RoleView::Primary {
            offset: 0,
            replicas: Vec::new(),
        }
    }

    fn replicate(&self, _primary: Option<(String, u16)>) -> Replicating {
        Replicating::Started
    }

    fn role_refusal(&self, _writes: bool, _runs_when_stale: bool) -> Option<&'static str> {
        None
    }

    fn replica_link_down(&self) -> bool {
        false
    }

    fn run_id(&self) -> &str {
        "0000000000000000000000000000000000000000"
    }

    fn acked_replicas(&self, _offset: u64) -> usize {
        0
    }
    fn write_refusal(&self) -> Option<String> {
        self.refusal.clone()
    }
    fn pubsub(&self) -> &dyn PubSub {
        &NoSubscribers
    }
}

/// A registry where nobody ever subscribes.
struct NoSubscribers;

impl PubSub for NoSubscribers {
    fn subscribe(&self, _client: u64, _kind: SubscriptionKind, _name: &[u8]) -> usize {
        0
    }
    fn unsubscribe(&self, _client: u64, _kind: SubscriptionKind, _name: &[u8]) -> usize {
        0
    }
    fn subscription_counts(&self, _client: u64) -> (usize, usize) {
        (0, 0)
    }
    fn subscriptions(&self, _client: u64, _kind: SubscriptionKind) -> Vec<Vec<u8>> {
        Vec::new()
    }
    fn publish(&self, _channel: &[u8], _message: &[u8]) -> usize {
        0
    }
    fn deliver_pending(&self, _client: u64, _reply: &mut Reply) {}
    fn channels(&self, _pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        Vec::new()
    }
    fn subscribers(&self, _channel: &[u8]) -> usize {
        0
    }
    fn patterns(&self) -> usize {
        0
    }
}

struct Client {
    server: Stub,
    store: Store,
    session: Session,
    reply: Reply,
    /// The time commands run at.
    now: u64,
}

impl Client {
    fn new(log: Option<Log>) -> Client {
        let addr: SocketAddr = "127.0.0.1:1".parse().expect("address");
        Client {
            server: Stub {
                config: Config::default_for_tests(),
                log,
                refusal: None,
            },
            store: Store::new(2, 4),
            session: Session::new(ClientInfo::new(1, addr, addr, 0), true),
            reply: Reply::new(Protocol::Resp2),
            now: 1_000,
        }
    }

    /// Sets configuration directives, as CONFIG SET would.
    fn configure(&mut self, settings: &[(&str, &str)]) {
        let settings: Vec<(&[u8], &[u8])> = settings
            .iter()
            .map(|(name, value)| (name.as_bytes(), value.as_bytes()))
            .collect();
        self.server.config.set_many(&settings).expect("settings");
    }

    /// Runs one command and returns its reply.
    fn run(&mut self, args: &[&str]) -> String {
        let mut base = Vec::new();
        let mut ranges = Vec::new();
        for arg in args {
            let start = base.len();
            base.extend_from_slice(arg.as_bytes());
            ranges.push(start..base.len());
        }
        self.with_ctx(|ctx| execute(ctx, Request::new(&base, &ranges)));
        let text = String::from_utf8_lossy(self.reply.bytes()).into_owned();
        self.reply.clear();
        text
    }

    fn with_ctx<R>(&mut self, f: impl FnOnce(&mut Ctx) -> R) -> R {
        f(&mut Ctx {
            server: &self.server,
            store: &self.store,
            session: &mut self.session,
            reply: &mut self.reply,
            now: self.now,
        })
    }

    fn logged(&self) -> Vec<RequestList> {
        let log = self.server.log.as_ref().expect("a log");
        log.records.lock().expect("log").clone()
    }

    /// Applies the log's records as replay does, each at the time it was stamped with, as the
    /// append-only file and replicas apply them.
    fn replay_timed(&mut self, log: &Client) {
        let times = log
            .server
            .log
            .as_ref()
            .expect("a log")
            .times
            .lock()
            .expect("log")
            .clone();
        for (record, time) in log.logged().iter().zip(times) {
            self.now = time;
            self.replay(std::slice::from_ref(record));
        }
    }

    /// Applies logged records as replay does.
    fn replay(&mut self, records: &[RequestList]) {
        for record in records {
            for (db, request) in record.iter() {
                self.session.db = db;
                self.with_ctx(|ctx| replay(ctx, request))
                    .expect("a logged write applies");
                self.reply.clear();
            }
        }
        self.session.db = 0;
    }
}

/// The logged records as text, `db:args`, a LOADCHUNK's binary dump header shown as <header>:
/// each batch the log was given as the records the server would make of it.
fn shapes(batches: &[RequestList]) -> Vec<Vec<String>> {
    batches
        .iter()
        .flat_map(RequestList::records)
        .map(|record| {
            record
                .map(|(db, request)| {
                    let args: Vec<String> = request
                        .args()
                        .enumerate()
                        .map(|(i, arg)| match i {
                            3 if request.arg(0).ends_with(b"LOADCHUNK") => "<header>".into(),
                            _ => String::from_utf8_lossy(arg).into_owned(),
                        })
                        .collect();
                    format!("{db}:{}", args.join(" "))
                })
                .collect()
        })
        .collect()
}

#[test]
fn an_add_that_creates_its_key_logs_the_filter_shape_first() {
    let mut client = Client::new(Some(Log::default()));
    assert_eq!(client.run(&["BF.ADD", "k", "a"]), ":1\r\n");
    assert_eq!(client.run(&["BF.ADD", "k", "b"]), ":1\r\n");
    assert_eq!(
        shapes(&client.logged()),
        vec![
            vec!["0:BF.LOADCHUNK k 1 <header>", "0:BF.ADD k a"],
            vec!["0:BF.ADD k b"],
        ]
    );
}

/// A pipelined run of adds (`cmd::runs`) logs what the adds one by one would: the creation with
/// the first, then a record of its own for each other add.
#[test]
fn a_run_of_adds_logs_what_each_add_alone_would() {
    let mut alone = Client::new(Some(Log::default()));
    let mut together = Client::new(Some(Log::default()));
    let items = ["a", "b", "a", "c"];
    let mut input = Vec::new();
    for item in items {
        alone.run(&["BF.ADD", "k", item]);
        crate::protocol::encode_request(&mut input, &[b"BF.ADD", b"k", item.as_bytes()]);
    }
    let (run, taken) = runs::tests::gather(&input).expect("a run");
    assert_eq!(taken, items.len());
    let mut outcomes = Vec::new();
    let ran = together.with_ctx(|ctx| execute_run(ctx, &run, &input, &mut |ok| outcomes.push(ok)));
    assert!(ran);
    assert_eq!(outcomes, [true; 4]);
    assert_eq!(together.reply.bytes(), b":1\r\n:1\r\n:0\r\n:1\r\n");
    let logged = shapes(&together.logged());
    assert_eq!(logged, shapes(&alone.logged()));
    assert_eq!(
        logged,
        vec![
            vec!["0:BF.LOADCHUNK k 1 <header>", "0:BF.ADD k a"],
            vec!["0:BF.ADD k b"],
            vec!["0:BF.ADD k a"],
            vec!["0:BF.ADD k c"],
        ]
    );
}

#[test]
fn reserve_is_logged_as_the_filter_it_made() {
    let mut client = Client::new(Some(Log::default()));
    assert_eq!(client.run(&["CBF.RESERVE", "c", "0.01", "100"]), "+OK\r\n");
    assert_eq!(
        client.run(&["CBF.RESERVE", "c", "0.01", "100"]),
        "-ERR item exists\r\n"
    );
    assert_eq!(
        shapes(&client.logged()),
        vec![vec!["0:CBF.LOADCHUNK c 1 <header>"]]
    );
}

#[test]
fn replaying_the_log_recreates_the_same_filters_whatever_the_settings() {
    let mut client = Client::new(Some(Log::default()));
    client.run(&[
        "BF.INSERT",
        "k",
        "CAPACITY",
        "7",
        "ERROR",
        "0.2",
        "ITEMS",
        "x",
    ]);
    client.run(&["CBF.ADD", "c", "y"]);
    for i in 0..50 {
        client.run(&["BF.ADD", "k", &format!("item-{i}")]);
    }
    let expected = (
        client.run(&["BF.DEBUG", "k"]),
        client.run(&["CBF.INFO", "c"]),
    );
    let mut replica = Client::new(None);
    replica.configure(&[
        ("max-filter-memory", "1024"),
        ("bf-initial-size", "3"),
        ("bf-layout", "blocked"),
    ]);
    replica.replay(&client.logged());
    assert_eq!(
        (
            replica.run(&["BF.DEBUG", "k"]),
            replica.run(&["CBF.INFO", "c"])
        ),
        expected
    );
    // The limit still holds for new filters.
    assert!(replica
        .run(&["BF.RESERVE", "new", "0.001", "100000"])
        .starts_with("-ERR"));
}

#[test]
fn failed_writes_and_reads_log_nothing() {
    let mut client = Client::new(Some(Log::default()));
    assert_eq!(client.run(&["SET", "s", "v"]), "+OK\r\n");
    assert!(client.run(&["BF.ADD", "s", "a"]).starts_with("-WRONGTYPE"));
    assert_eq!(client.run(&["BF.EXISTS", "k", "a"]), ":0\r\n");
    assert_eq!(shapes(&client.logged()), vec![vec!["0:SET s v"]]);
}

#[test]
fn a_transaction_is_one_record_in_the_databases_its_commands_ran_in() {
    let mut client = Client::new(Some(Log::default()));
    assert_eq!(client.run(&["MULTI"]), "+OK\r\n");
    assert_eq!(client.run(&["SET", "a", "1"]), "+QUEUED\r\n");
    assert_eq!(client.run(&["SELECT", "1"]), "+QUEUED\r\n");
    assert_eq!(client.run(&["BF.ADD", "f", "x"]), "+QUEUED\r\n");
    assert_eq!(client.run(&["EXEC"]), "*3\r\n+OK\r\n+OK\r\n:1\r\n");
    assert_eq!(
        shapes(&client.logged()),
        vec![vec![
            "0:SET a 1",
            "1:BF.LOADCHUNK f 1 <header>",
            "1:BF.ADD f x"
        ]]
    );
}

#[test]
fn a_server_that_cannot_keep_writes_refuses_them_and_ping_but_not_reads() {
    let mut client = Client::new(Some(Log::default()));
    client.server.refusal = Some("MISCONF test".into());
    assert_eq!(client.run(&["SET", "a", "1"]), "-MISCONF test\r\n");
    assert_eq!(client.run(&["PING"]), "-MISCONF test\r\n");
    assert_eq!(client.run(&["GET", "a"]), "$-1\r\n");
    assert_eq!(client.run(&["MULTI"]), "+OK\r\n");
    assert_eq!(client.run(&["SET", "a", "1"]), "-MISCONF test\r\n");
    assert_eq!(
        client.run(&["EXEC"]),
        "-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    assert!(client.logged().is_empty());
}

#[test]
fn without_a_log_writes_just_run() {
    let mut client = Client::new(None);
    assert_eq!(client.run(&["BF.ADD", "k", "a"]), ":1\r\n");
    assert_eq!(client.run(&["BF.EXISTS", "k", "a"]), ":1\r\n");
    assert!(client.session.batch.is_empty() && client.session.effects.is_empty());
}

#[test]
fn info_asks_the_server_for_the_sections_in_order() {
    let mut client = Client::new(None);
    let reply = client.run(&["INFO", "keyspace", "server"]);
    assert!(reply.ends_with("server,keyspace\r\n"), "{reply}");
}

#[test]
fn incrbyfloat_is_logged_as_the_value_it_set() {
    let mut client = Client::new(Some(Log::default()));
    assert_eq!(client.run(&["INCRBYFLOAT", "f", "1.5"]), "$3\r\n1.5\r\n");
    assert_eq!(
        client.run(&["INCRBYFLOAT", "f", "x"]),
        "-ERR value is not a valid float\r\n"
    );
    assert_eq!(
        client.run(&["INCRBYFLOAT", "missing", "inf"]),
        "-ERR increment would produce NaN or Infinity\r\n"
    );
    assert_eq!(client.run(&["EXISTS", "missing"]), ":0\r\n");
    assert_eq!(shapes(&client.logged()), vec![vec!["0:SET f 1.5 KEEPTTL"]]);
}

#[test]
fn a_merge_is_logged_as_itself_and_replays_to_the_same_filters() {
    let mut client = Client::new(Some(Log::default()));
    for i in 0..150 {
        client.run(&["BF.ADD", "a", &format!("a{i}")]);
    }
    for i in 0..500 {
        client.run(&["BF.ADD", "b", &format!("b{i}")]);
    }
    client.run(&["CBF.MADD", "c", "x", "x", "y"]);
    assert_eq!(client.run(&["BF.MERGE", "m", "a", "b"]), "+OK\r\n");
    assert_eq!(client.run(&["BF.MERGE", "a", "b"]), "+OK\r\n");
    assert_eq!(client.run(&["CBF.MERGE", "d", "c", "c"]), "+OK\r\n");
    assert!(client
        .run(&["BF.MERGE", "m", "c"])
        .starts_with("-WRONGTYPE"));
    let merges: Vec<String> = shapes(&client.logged())
        .into_iter()
        .flatten()
        .filter(|command| command.contains("MERGE"))
        .collect();
    assert_eq!(
        merges,
        ["0:BF.MERGE m a b", "0:BF.MERGE a b", "0:CBF.MERGE d c c"]
    );
    let state = |client: &mut Client| {
        (
            client.run(&["BF.DEBUG", "m"]),
            client.run(&["BF.DEBUG", "a"]),
            client.run(&["CBF.INFO", "d"]),
            client.run(&["SIEVED.DIGEST"]),
        )
    };
    let expected = state(&mut client);
    let mut replica = Client::new(None);
    replica.configure(&[("max-filter-memory", "1024"), ("bf-layout", "blocked")]);
    replica.replay(&client.logged());
    assert_eq!(state(&mut replica), expected);
}

#[test]
fn a_capacity_past_the_default_cap_replays_under_any_cap() {
    let mut client = Client::new(Some(Log::default()));
    let insert = [
        "BF.INSERT",
        "k",
        "CAPACITY",
        "1500000000",
        "ERROR",
        "0.2",
        "ITEMS",
        "x",
    ];
    assert_eq!(client.run(&insert), "-Bad capacity\r\n");
    client.configure(&[("bf-max-capacity", "2000000000")]);
    assert_eq!(client.run(&insert), "*1\r\n:1\r\n");
    assert_eq!(
        client.run(&["BF.INSERT", "k", "CAPACITY", "1500000000", "ITEMS", "y"]),
        "*1\r\n:1\r\n"
    );
    let mut replica = Client::new(None);
    replica.replay(&client.logged());
    assert_eq!(
        replica.run(&["BF.INFO", "k", "CAPACITY"]),
        "*1\r\n:1500000000\r\n"
    );
    assert_eq!(replica.run(&["BF.CARD", "k"]), ":2\r\n");
}

#[test]
fn a_windowed_filter_replays_into_the_slices_it_filled_live_on_any_day() {
    let mut client = Client::new(Some(Log::default()));
    client.now = 1_700_000_000_000;
    let start = client.now;
    client.configure(&[("bf-layout", "blocked")]);
    assert_eq!(
        client.run(&["TBF.RESERVE", "w", "0.01", "1000", "4000"]),
        "+OK\r\n"
    );
    assert_eq!(
        client.run(&["TBF.RESERVE", "w", "0.01", "1000", "4000"]),
        "-ERR item exists\r\n"
    );
    for second in 0..6u64 {
        client.now = start + second * 1000;
        client.run(&["TBF.ADD", "w", &format!("s{second}")]);
        client.run(&["TBF.MADD", "w", "every", &format!("m{second}")]);
    }
    // At 5 s: the slices of seconds 2 to 5 are in the window.
    let state = |client: &mut Client| {
        (
            client.run(&["TBF.MEXISTS", "w", "s0", "s1", "s2", "s5", "m2", "every"]),
            client.run(&["TBF.CARD", "w"]),
            client.run(&["TBF.SCANDUMP", "w", "0"]),
        )
    };
    let live = state(&mut client);
    assert_eq!(live.0, "*6\r\n:0\r\n:0\r\n:1\r\n:1\r\n:1\r\n:1\r\n");
    assert_eq!(live.1, ":12\r\n");
    assert_eq!(
        shapes(&client.logged())[0],
        vec!["0:TBF.LOADCHUNK w 1 <header>"]
    );
    // Replayed much later, with other settings, each write at its own time.
    let mut replica = Client::new(None);
    replica.replay_timed(&client);
    replica.now = client.now;
    assert_eq!(state(&mut replica), live);
    assert_eq!(
        replica.run(&["SIEVED.DIGEST"]),
        client.run(&["SIEVED.DIGEST"])
    );
    // A day later everything is forgotten; an add then starts afresh.
    replica.now = start + 86_400_000;
    assert_eq!(replica.run(&["TBF.CARD", "w"]), ":0\r\n");
    assert_eq!(replica.run(&["TBF.EXISTS", "w", "every"]), ":0\r\n");
    assert_eq!(replica.run(&["TBF.ADD", "w", "every"]), ":1\r\n");
}

#[test]
fn blocking_pops_are_logged_as_plain_pops_and_a_parked_one_not_at_all() {
    let mut client = Client::new(Some(Log::default()));
    client.run(&["RPUSH", "l", "a", "b"]);
    client.run(&["ZADD", "z", "1", "m"]);
    assert_eq!(
        client.run(&["BRPOP", "missing", "l", "0"]),
        "*2\r\n$1\r\nl\r\n$1\r\nb\r\n"
    );
    client.run(&["BZPOPMIN", "z", "0"]);
    // Nothing there: the client is to be parked, with nothing replied or logged yet.
    assert_eq!(client.run(&["BLPOP", "missing", "5"]), "");
    let Some(After::Block(block)) = client.session.after.take() else {
        panic!("parked");
    };
    assert_eq!(block.keys, vec![b"missing".to_vec()]);
    assert_eq!(block.timeout, Some(std::time::Duration::from_secs(5)));
    assert!((block.serves)(&Value::List(Box::default())));
    // Inside EXEC it answers at once.
    client.run(&["MULTI"]);
    client.run(&["BLPOP", "missing", "0"]);
    client.run(&["BZPOPMAX", "missing", "0"]);
    assert_eq!(client.run(&["EXEC"]), "*2\r\n*-1\r\n*-1\r\n");
    assert!(client.session.after.is_none());
    assert_eq!(
        shapes(&client.logged()),
        vec![
            vec!["0:RPUSH l a b"],
            vec!["0:ZADD z 1 m"],
            vec!["0:RPOP l"],
            vec!["0:ZPOPMIN z"],
        ]
    );
}
