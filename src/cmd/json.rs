//! The JSON.* family, as RedisJSON 2.8 answers it. The engine (`crate::json`) reads each
//! command's arguments and decides its reply, as RedisJSON's own code does (argument errors,
//! then the key's type, then the document, then the path); this file is the adapter around
//! it: it finds the keys a request names (`Keys::parse`), holds each key's lock while the
//! engine works on its document in place, creates and deletes keys as the engine asks,
//! writes the engine's answer in the connection's protocol, and says what the log records.
//!
//! What the log records is deterministic to replay: a command that changed nothing is not
//! logged; the numeric commands (NUMINCRBY, NUMMULTBY, NUMPOWBY) are logged as the numbers
//! they stored, each a `JSON.SET` at the number's own place, so replay never redoes float
//! arithmetic; every other change is logged as the request, which does the same again.

use super::args::Args;
use super::errors::{CmdError, CmdResult};
use super::filter_specs::FILTER_KEY;
use super::spec::{bits, command_table, CommandSpec, Docs, KeySpec};
use super::Ctx;
use crate::json::{self, Answer, Keyspace, Lookup, NumberWrite};
use crate::protocol::{Reply, Request};
use crate::store::{Db, Value};

/// The keys a request names, where RedisJSON 2.8 declares them.
enum Keys<'a> {
    /// None (too few arguments, JSON.DEBUG HELP): the engine answers without the keyspace.
    None,
    /// The command's one key.
    One(&'a [u8]),
    /// JSON.MGET key [key ...] path: every word but the last.
    Each(Vec<&'a [u8]>),
    /// JSON.MSET key path value [key path value ...]: every third word from the first.
    Triples(Vec<&'a [u8]>),
}

impl<'a> Keys<'a> {
    fn parse(request: Request<'a>) -> Keys<'a> {
        let mut args = Args::new(request, 1);
        let name = args.name();
        let is = |known: &str| name.eq_ignore_ascii_case(known.as_bytes());
        if is("json.mget") && args.remaining() >= 2 {
            Keys::Each(args.items_but_last(1).iter().collect())
        } else if is("json.mset") {
            Keys::Triples(args.rest().step_by(3).collect())
        } else if is("json.debug") {
            // JSON.DEBUG MEMORY key [path]; HELP and the rest name no key.
            args.next();
            args.next().map_or(Keys::None, Keys::One)
        } else {
            args.next().map_or(Keys::None, Keys::One)
        }
    }
}

/// The engine's view of one key while its lock is held: the document read or changed in
/// place, or what the command does to the key itself.
enum Held<'v> {
    Missing,
    OtherType,
    Read(&'v json::Value),
    Write(&'v mut json::Value),
    Created(json::Value),
    Deleted,
}

impl<'v> Held<'v> {
    fn read(value: Option<&'v Value>) -> Held<'v> {
        match value {
            None => Held::Missing,
            Some(Value::Json(document)) => Held::Read(document),
            Some(_) => Held::OtherType,
        }
    }

    fn write(value: Option<&'v mut Value>) -> Held<'v> {
        match value {
            None => Held::Missing,
            Some(Value::Json(document)) => Held::Write(document),
            Some(_) => Held::OtherType,
        }
    }
}

/// One key, as the engine sees it: any other key it asks for is missing.
struct OneKey<'k, 'v> {
    key: &'k [u8],
    held: Held<'v>,
    budget: usize,
}

impl Keyspace for OneKey<'_, '_> {
    fn get(&self, key: &[u8]) -> Lookup<&json::Value> {
        match &self.held {
            _ if key != self.key => Lookup::Missing,
            Held::Read(document) => Lookup::Json(document),
            Held::Write(document) => Lookup::Json(document),
            Held::Created(document) => Lookup::Json(document),
            Held::OtherType => Lookup::OtherType,
            Held::Missing | Held::Deleted => Lookup::Missing,
        }
    }

    /// A command registered as read-only never changes its key: its document is not lent
    /// for writing.
    fn get_mut(&mut self, key: &[u8]) -> Lookup<&mut json::Value> {
        match &mut self.held {
            _ if key != self.key => Lookup::Missing,
            Held::Write(document) => Lookup::Json(document),
            Held::Created(document) => Lookup::Json(document),
            Held::OtherType => Lookup::OtherType,
            Held::Read(_) | Held::Missing | Held::Deleted => Lookup::Missing,
        }
    }

    fn create(&mut self, key: &[u8], document: json::Value) {
        if key == self.key {
            self.held = Held::Created(document);
        }
    }

    fn delete(&mut self, key: &[u8]) {
        if key == self.key {
            self.held = Held::Deleted;
        }
    }

    fn document_budget(&self) -> usize {
        self.budget
    }
}

/// What a command did to its key itself, applied once the key's lock is released.
enum KeyChange {
    None,
    Create(json::Value),
    Delete,
}

impl KeyChange {
    fn of(held: Held) -> KeyChange {
        match held {
            Held::Created(document) => KeyChange::Create(document),
            Held::Deleted => KeyChange::Delete,
            _ => KeyChange::None,
        }
    }

    fn apply(self, db: &Db, key: &[u8], now: u64) {
        match self {
            KeyChange::None => {}
            KeyChange::Create(document) => db.insert(key, Value::Json(Box::new(document)), 0),
            KeyChange::Delete => {
                db.remove(key, now);
            }
        }
    }
}

/// What a key held when JSON.MSET copied it, then what the command made of it.
enum Copied {
    Missing,
    OtherType,
    Json(json::Value),
}

/// Copies of several keys' documents (JSON.MSET, which checks every triple before it writes
/// any, as RedisJSON does), capacities and all, so that the changed ones stored back after
/// are as a change in place would have left them.
struct Copies {
    keys: Vec<(Vec<u8>, Copied)>,
    budget: usize,
}

impl Copies {
    fn find(&self, key: &[u8]) -> Option<&Copied> {
        self.keys
            .iter()
            .find(|(known, _)| known == key)
            .map(|(_, copied)| copied)
    }

    fn find_mut(&mut self, key: &[u8]) -> Option<&mut Copied> {
        self.keys
            .iter_mut()
            .find(|(known, _)| known == key)
            .map(|(_, copied)| copied)
    }
}

impl Keyspace for Copies {
    fn get(&self, key: &[u8]) -> Lookup<&json::Value> {
        match self.find(key) {
            Some(Copied::Json(document)) => Lookup::Json(document),
            Some(Copied::OtherType) => Lookup::OtherType,
            Some(Copied::Missing) | None => Lookup::Missing,
        }
    }

    fn get_mut(&mut self, key: &[u8]) -> Lookup<&mut json::Value> {
        match self.find_mut(key) {
            Some(Copied::Json(document)) => Lookup::Json(document),
            Some(Copied::OtherType) => Lookup::OtherType,
            Some(Copied::Missing) | None => Lookup::Missing,
        }
    }

    fn create(&mut self, key: &[u8], document: json::Value) {
        if let Some(copied) = self.find_mut(key) {
            *copied = Copied::Json(document);
        }
    }

    fn delete(&mut self, key: &[u8]) {
        if let Some(copied) = self.find_mut(key) {
            *copied = Copied::Missing;
        }
    }

    fn document_budget(&self) -> usize {
        self.budget
    }
}

/// Heap bytes a new document may take: what is left under `maxmemory` (counted as eviction
/// counts it), unlimited without one
/// and on replay (which applies what was admitted when it first ran).
fn budget(ctx: &Ctx) -> usize {
    let limit = ctx.config().maxmemory();
    if limit == 0 || ctx.session.replaying {
        return usize::MAX;
    }
    let used = (crate::memory::allocated() as u64).saturating_sub(ctx.server.memory_not_counted());
    usize::try_from(limit.saturating_sub(used)).unwrap_or(usize::MAX)
}

/// A request's name and arguments as the engine takes them.
fn engine_args<'a>(request: Request<'a>) -> (String, Vec<&'a [u8]>) {
    let mut args = Args::new(request, 1);
    let name = String::from_utf8_lossy(args.name()).into_owned();
    (name, args.rest().collect())
}

/// The commands that only read: their keys are read-locked, so readers share them.
fn read(ctx: &mut Ctx, request: Request) -> CmdResult {
    let resp3 = ctx.reply.is_resp3();
    let (name, args) = engine_args(request);
    let budget = budget(ctx);
    let answer = match Keys::parse(request) {
        Keys::One(key) => ctx.db().get(key, ctx.now, |value| {
            let mut keys = OneKey {
                key,
                held: Held::read(value),
                budget,
            };
            json::execute(&name, &args, &mut keys, resp3).answer
        }),
        Keys::Each(keys) => mget(ctx, &name, &keys, args[args.len() - 1], resp3),
        Keys::None | Keys::Triples(_) => {
            let mut none = Copies {
                keys: Vec::new(),
                budget,
            };
            json::execute(&name, &args, &mut none, resp3).answer
        }
    };
    answer_with(ctx.reply, answer)
}

/// JSON.MGET: each key read alone, under its own lock, its one answer taken from the
/// engine's; the path's errors come first, as they do for the whole command.
fn mget(ctx: &Ctx, name: &str, keys: &[&[u8]], path: &[u8], resp3: bool) -> Answer {
    let mut answers = Vec::with_capacity(keys.len());
    for &key in keys {
        let answer = ctx.db().get(key, ctx.now, |value| {
            let mut one = OneKey {
                key,
                held: Held::read(value),
                budget: usize::MAX,
            };
            json::execute(name, &[key, path], &mut one, resp3).answer
        });
        match answer {
            Answer::Array(mut one) if one.len() == 1 => answers.extend(one.pop()),
            other => return other,
        }
    }
    Answer::Array(answers)
}

/// The commands that may change documents: their key is write-locked while the engine runs.
fn write(ctx: &mut Ctx, request: Request) -> CmdResult {
    let resp3 = ctx.reply.is_resp3();
    let (name, args) = engine_args(request);
    let budget = budget(ctx);
    let now = ctx.now;
    let outcome = match Keys::parse(request) {
        Keys::One(key) => {
            let (outcome, change) = ctx.db().get_mut(key, now, |value| {
                let mut keys = OneKey {
                    key,
                    held: Held::write(value),
                    budget,
                };
                let outcome = json::execute(&name, &args, &mut keys, resp3);
                (outcome, KeyChange::of(keys.held))
            });
            change.apply(ctx.db(), key, now);
            outcome
        }
        Keys::Triples(keys) => {
            let db = ctx.db();
            let mut copies = Copies {
                keys: Vec::with_capacity(keys.len()),
                budget,
            };
            for key in keys {
                if copies.find(key).is_none() {
                    let copied = db.get(key, now, |value| match value {
                        None => Copied::Missing,
                        Some(Value::Json(document)) => Copied::Json(document.copy_as_is()),
                        Some(_) => Copied::OtherType,
                    });
                    copies.keys.push((key.to_vec(), copied));
                }
            }
            let outcome = json::execute(&name, &args, &mut copies, resp3);
            for (key, copied) in copies.keys {
                if let (true, Copied::Json(document)) = (outcome.changed.contains(&key), copied) {
                    store_back(db, &key, document, now);
                }
            }
            outcome
        }
        Keys::None | Keys::Each(_) => {
            let mut none = Copies {
                keys: Vec::new(),
                budget,
            };
            json::execute(&name, &args, &mut none, resp3)
        }
    };
    note_for_log(ctx, request, &outcome);
    answer_with(ctx.reply, outcome.answer)
}

/// Stores a document JSON.MSET changed: in place, keeping the key's expiry, or as a new key.
fn store_back(db: &Db, key: &[u8], document: json::Value, now: u64) {
    let mut document = Some(document);
    db.get_mut(key, now, |value| {
        if let Some(value) = value {
            *value = Value::Json(Box::new(document.take().unwrap_or(json::Value::Null)));
        }
    });
    if let Some(document) = document {
        db.insert(key, Value::Json(Box::new(document)), 0);
    }
}

/// Says what the log records for a write (see the top of this file).
fn note_for_log(ctx: &mut Ctx, request: Request, outcome: &json::Outcome) {
    ctx.log_effects_only();
    if outcome.changed.is_empty() || !ctx.logging() {
        return;
    }
    if outcome.numbers.is_empty() {
        ctx.note_effect(request.args());
        return;
    }
    for write in &outcome.numbers {
        let logged = number_write(ctx.db(), ctx.now, write);
        ctx.note_effect(logged.iter().map(Vec::as_slice));
    }
}

/// `JSON.SET key <path> <number>` for a number a command stored, the path spelled so that it
/// names that place alone; where a member's name cannot be spelled plainly in a path (a quote
/// or a backslash in it), the whole document is set instead.
fn number_write(db: &Db, now: u64, write: &NumberWrite) -> Vec<Vec<u8>> {
    let set =
        |path: Vec<u8>, value: Vec<u8>| vec![b"JSON.SET".to_vec(), write.key.clone(), path, value];
    let number = json::to_text(&json::Value::Number(write.value));
    db.peek(&write.key, now, |value| {
        let Some(Value::Json(document)) = value else {
            return set(b"$".to_vec(), number.clone());
        };
        match spelled_path(document, &write.path) {
            Some(path) => set(path, number.clone()),
            None => set(b"$".to_vec(), json::to_text(document)),
        }
    })
}

/// `$["a"][3]...` for member names and indexes from the root, or None if a name holds a
/// character a plain quoted name cannot.
fn spelled_path(document: &json::Value, steps: &[String]) -> Option<Vec<u8>> {
    let mut path = b"$".to_vec();
    let mut at = Some(document);
    for step in steps {
        let node = at?;
        if let Some(array) = node.as_array() {
            let index: usize = step.parse().ok()?;
            path.extend_from_slice(format!("[{index}]").as_bytes());
            at = array.get(index);
        } else {
            if step.contains(['"', '\'', '\\']) {
                return None;
            }
            path.extend_from_slice(format!("[\"{step}\"]").as_bytes());
            at = node.as_object().and_then(|object| object.get(step));
        }
    }
    Some(path)
}

/// Writes the engine's answer; an error as the whole reply fails the command (so that it
/// counts as failed), with the engine's exact message.
fn answer_with(reply: &mut Reply, answer: Answer) -> CmdResult {
    match answer {
        Answer::Error(message) => Err(CmdError::Owned(message)),
        answer => {
            write_answer(reply, &answer);
            Ok(())
        }
    }
}

fn write_answer(reply: &mut Reply, answer: &Answer) {
    match answer {
        Answer::Ok => reply.ok(),
        Answer::Simple(text) => reply.simple(text),
        Answer::Bulk(bytes) => reply.bulk(bytes),
        Answer::Integer(value) => reply.int(*value),
        Answer::Double(value) => reply.double_text(json::redis_double(*value).as_bytes()),
        Answer::Bool(value) => reply.boolean(*value),
        Answer::Nil => reply.null(),
        Answer::Array(items) => {
            reply.array(items.len());
            items.iter().for_each(|item| write_answer(reply, item));
        }
        Answer::Map(pairs) => {
            reply.map(pairs.len());
            for (key, value) in pairs {
                reply.bulk(key);
                write_answer(reply, value);
            }
        }
        Answer::Error(message) => reply.error(message),
    }
}

/// JSON.MSET's keys: every third word from the first.
const MSET_KEYS: &[KeySpec] = &[KeySpec::range(
    bits![KeyFlags: RW, ACCESS, UPDATE],
    1,
    -1,
    3,
)];
/// JSON.DEBUG MEMORY's key, after the subcommand.
const DEBUG_KEY: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE], 2, 0, 1)];

/// JSON.* as RedisJSON 2.8 registers them: module `ReJSON`, arity -1 (the engine checks each
/// command's words itself), the flags RedisJSON gives, the key specification Redis gives a
/// module command from its first, last and step, and the category `@json` that Redis 8's
/// bundled JSON declares. RedisJSON 2.8 documents none of them.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Json:
    // name, arity, [flags], key specs, [ACL categories], handler, docs
    "json.del", -1, [WRITE], FILTER_KEY, [WRITE, JSON], write, Docs::undocumented();
    "json.forget", -1, [WRITE], FILTER_KEY, [WRITE, JSON], write, Docs::undocumented();
    "json.get", -1, [READONLY], FILTER_KEY, [READ, JSON], read, Docs::undocumented();
    // RedisJSON declares only JSON.MGET's first key (first 1, last 1, step 1).
    "json.mget", -1, [READONLY], FILTER_KEY, [READ, JSON], read, Docs::undocumented();
    "json.set", -1, [WRITE, DENYOOM], FILTER_KEY, [WRITE, JSON], write, Docs::undocumented();
    "json.mset", -1, [WRITE, DENYOOM], MSET_KEYS, [WRITE, JSON], write, Docs::undocumented();
    "json.merge", -1, [WRITE, DENYOOM], FILTER_KEY, [WRITE, JSON], write, Docs::undocumented();
    "json.type", -1, [READONLY], FILTER_KEY, [READ, JSON], read, Docs::undocumented();
    "json.numincrby", -1, [WRITE], FILTER_KEY, [WRITE, JSON], write, Docs::undocumented();
    "json.nummultby", -1, [WRITE], FILTER_KEY, [WRITE, JSON], write, Docs::undocumented();
    "json.numpowby", -1, [WRITE], FILTER_KEY, [WRITE, JSON], write, Docs::undocumented();
    "json.toggle", -1, [WRITE, DENYOOM], FILTER_KEY, [WRITE, JSON], write, Docs::undocumented();
    "json.strappend", -1, [WRITE, DENYOOM], FILTER_KEY, [WRITE, JSON], write,
        Docs::undocumented();
    "json.strlen", -1, [READONLY], FILTER_KEY, [READ, JSON], read, Docs::undocumented();
    "json.arrappend", -1, [WRITE, DENYOOM], FILTER_KEY, [WRITE, JSON], write,
        Docs::undocumented();
    "json.arrindex", -1, [READONLY], FILTER_KEY, [READ, JSON], read, Docs::undocumented();
    "json.arrinsert", -1, [WRITE, DENYOOM], FILTER_KEY, [WRITE, JSON], write,
        Docs::undocumented();
    "json.arrlen", -1, [READONLY], FILTER_KEY, [READ, JSON], read, Docs::undocumented();
    "json.arrpop", -1, [WRITE], FILTER_KEY, [WRITE, JSON], write, Docs::undocumented();
    "json.arrtrim", -1, [WRITE], FILTER_KEY, [WRITE, JSON], write, Docs::undocumented();
    "json.objkeys", -1, [READONLY], FILTER_KEY, [READ, JSON], read, Docs::undocumented();
    "json.objlen", -1, [READONLY], FILTER_KEY, [READ, JSON], read, Docs::undocumented();
    "json.clear", -1, [WRITE], FILTER_KEY, [WRITE, JSON], write, Docs::undocumented();
    "json.debug", -1, [READONLY], DEBUG_KEY, [READ, JSON], read, Docs::undocumented();
    "json.resp", -1, [READONLY], FILTER_KEY, [READ, JSON], read, Docs::undocumented();
};
