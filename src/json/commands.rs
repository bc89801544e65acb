//! The `JSON.*` commands as RedisJSON 2.8 decides them: the same reading of arguments, the
//! same order of checks (argument errors, then the key's type, then the document, then the
//! path), the same per-match results for JSONPath and single results or errors for legacy
//! paths, and the same replies for RESP2 and RESP3.
//!
//! The engine sees keys through `Keyspace`: the command adapter looks them up in the store,
//! says what each holds, and applies creations and deletions; documents are changed in place.

use super::answer::Answer;
use super::edit::{self, After, Arithmetic};
use super::path::{LastStep, Located, Overload, Path, Query};
use super::text::{self, ParseError, ParseLimits};
use super::value::{Kind, Number, Value, MAX_NESTING};
use super::write::{to_text, Layout, Writer};

mod by_type;
mod writes;

/// What a key holds.
pub enum Lookup<T> {
    Missing,
    Json(T),
    /// A value of another type (`Existing key has wrong Redis type` when a command needs it).
    OtherType,
}

/// The keys a command works on, as the command adapter provides them.
pub trait Keyspace {
    fn get(&self, key: &[u8]) -> Lookup<&Value>;
    fn get_mut(&mut self, key: &[u8]) -> Lookup<&mut Value>;
    /// Stores a new document under a key that holds none.
    fn create(&mut self, key: &[u8], document: Value);
    fn delete(&mut self, key: &[u8]);
    /// Heap bytes a new document may take before the memory limit refuses it.
    fn document_budget(&self) -> usize {
        usize::MAX
    }
}

/// A number a command computed and stored: logs record these values rather than the
/// arithmetic, so that replay does not depend on how floats are computed.
#[derive(Debug, Clone, PartialEq)]
pub struct NumberWrite {
    pub key: Vec<u8>,
    /// Member names and array indexes (as text) from the root.
    pub path: Vec<String>,
    pub value: Number,
}

/// What a command did.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub answer: Answer,
    /// The keyspace events RedisJSON raises (and the commands it replicates), with their key.
    pub events: Vec<(Vec<u8>, &'static str)>,
    /// Keys whose document changed, was created or was deleted, events or not (a command that
    /// fails halfway may have changed a document, which then must be logged all the same).
    pub changed: Vec<Vec<u8>>,
    /// For `JSON.NUMINCRBY`, `JSON.NUMMULTBY` and `JSON.NUMPOWBY`: each number stored.
    pub numbers: Vec<NumberWrite>,
}

const WRONG_KEY_TYPE: &str = "Existing key has wrong Redis type";
const NO_KEY: &str = "ERR could not perform this operation on a key that doesn't exist";
const NO_PATH: &str = "ERR Path does not exist";
const NEW_AT_ROOT: &str = "ERR new objects must be created at the root";
const SYNTAX: &str = "ERR syntax error";
const WRONG_REPLY_FORMAT: &str = "ERR wrong reply format";
const FORMAT_ON_RESP2: &str = "ERR FORMAT argument is not supported on RESP2";
const NOT_UTF8: &str = "Couldn't parse as UTF-8 string";
const NOT_INTEGER: &str = "Couldn't parse as integer";
const OUT_OF_MEMORY: &str = "OOM command not allowed when used memory > 'maxmemory'.";
/// sieved's own limits, which RedisJSON does not have.
const TOO_DEEP: &str = "ERR the document would nest deeper than 1024 levels";
const TOO_COMPLEX: &str = "ERR the path needs too much work to evaluate";

fn no_path_or(what: &str) -> String {
    format!("ERR Path does not exist or {what}")
}

fn expected(what: &str) -> String {
    format!("WRONGTYPE wrong type of path value - expected {what}")
}

impl From<Overload> for String {
    fn from(_: Overload) -> String {
        TOO_COMPLEX.to_string()
    }
}

type Step<T> = Result<T, String>;

/// Runs one `JSON.*` command. `name` is the command's name (any case), `args` what follows it.
pub fn execute(name: &str, args: &[&[u8]], keys: &mut dyn Keyspace, resp3: bool) -> Outcome {
    let command = name.to_ascii_lowercase();
    let mut run = Run {
        keys,
        resp3,
        events: Vec::new(),
        changed: Vec::new(),
        numbers: Vec::new(),
    };
    let mut args = Args {
        items: args,
        at: 0,
        command: &command,
    };
    let result = match command.as_str() {
        "json.get" => run.get(&mut args),
        "json.set" => run.set(&mut args),
        "json.merge" => run.merge(&mut args),
        "json.mset" => run.mset(&mut args),
        "json.mget" => run.mget(&mut args),
        "json.del" | "json.forget" => run.del(&mut args),
        "json.type" => run.type_of(&mut args),
        "json.numincrby" => run.number_op(&mut args, Arithmetic::Add, "json.numincrby"),
        "json.nummultby" => run.number_op(&mut args, Arithmetic::Multiply, "json.nummultby"),
        "json.numpowby" => run.number_op(&mut args, Arithmetic::Power, "json.numpowby"),
        "json.toggle" => run.toggle(&mut args),
        "json.strappend" => run.str_append(&mut args),
        "json.strlen" => run.str_len(&mut args),
        "json.arrappend" => run.arr_append(&mut args),
        "json.arrindex" => run.arr_index(&mut args),
        "json.arrinsert" => run.arr_insert(&mut args),
        "json.arrlen" => run.arr_len(&mut args),
        "json.arrpop" => run.arr_pop(&mut args),
        "json.arrtrim" => run.arr_trim(&mut args),
        "json.objkeys" => run.obj_keys(&mut args),
        "json.objlen" => run.obj_len(&mut args),
        "json.clear" => run.clear(&mut args),
        "json.debug" => run.debug(&mut args),
        "json.resp" => run.resp(&mut args),
        _ => Err(format!("ERR unknown command '{name}'")),
    };
    let mut changed = run.changed;
    changed.dedup();
    Outcome {
        answer: result.unwrap_or_else(Answer::Error),
        events: run.events,
        changed,
        numbers: run.numbers,
    }
}

/// The arguments after the command's name, read as RedisJSON's module API reads them.
struct Args<'a> {
    items: &'a [&'a [u8]],
    at: usize,
    command: &'a str,
}

impl<'a> Args<'a> {
    fn arity(&self) -> String {
        format!(
            "ERR wrong number of arguments for '{}' command",
            self.command
        )
    }

    fn remaining(&self) -> usize {
        self.items.len() - self.at
    }

    fn next(&mut self) -> Option<&'a [u8]> {
        let item = self.items.get(self.at).copied()?;
        self.at += 1;
        Some(item)
    }

    fn next_arg(&mut self) -> Step<&'a [u8]> {
        self.next().ok_or_else(|| self.arity())
    }

    fn next_str(&mut self) -> Step<&'a str> {
        let arg = self.next_arg()?;
        utf8(arg)
    }

    /// Redis's `string2ll`: no spaces, no `+`, no leading zeros.
    fn next_i64(&mut self) -> Step<i64> {
        let arg = self.next_arg()?;
        parse_integer(arg).ok_or_else(|| NOT_INTEGER.to_string())
    }
}

fn utf8(arg: &[u8]) -> Step<&str> {
    std::str::from_utf8(arg).map_err(|_| NOT_UTF8.to_string())
}

fn parse_integer(arg: &[u8]) -> Option<i64> {
    if arg.is_empty() || arg.len() >= 21 {
        return None;
    }
    if arg == b"0" {
        return Some(0);
    }
    let (negative, digits) = match arg.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, arg),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut value: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        if value > i64::MAX as u64 + 1 {
            return None;
        }
        Some((value as i64).wrapping_neg())
    } else {
        i64::try_from(value).ok()
    }
}

/// `JSON.GET`'s reply formats (`FORMAT`), and `JSON.ARRPOP`'s default, `STRINGS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReplyFormat {
    String,
    Strings,
    Expand1,
    Expand,
}

impl ReplyFormat {
    fn parse(text: &str) -> Step<ReplyFormat> {
        match text {
            "STRING" => Ok(ReplyFormat::String),
            "STRINGS" => Ok(ReplyFormat::Strings),
            "EXPAND1" => Ok(ReplyFormat::Expand1),
            "EXPAND" => Ok(ReplyFormat::Expand),
            _ => Err(WRONG_REPLY_FORMAT.to_string()),
        }
    }
}

struct Formatting<'a> {
    format: ReplyFormat,
    layout: Layout<'a>,
    resp3: bool,
}

impl Formatting<'_> {
    /// RESP3 with `EXPAND1` or `EXPAND`: values as RESP3 types rather than JSON text.
    fn typed_reply(&self) -> bool {
        self.resp3 && matches!(self.format, ReplyFormat::Expand1 | ReplyFormat::Expand)
    }
}

/// `SET`'s and `MERGE`'s `FORMAT` (the input format).
fn input_format(text: &str) -> Step<()> {
    match text {
        "STRING" | "JSON" => Ok(()),
        "BSON" => Err("ERR BSON input is not supported".to_string()),
        _ => Err("ERR wrong format".to_string()),
    }
}

/// How `JSON.SET` (and the paths of `MSET` and `MERGE`) treats a path that matches nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetMode {
    Always,
    OnlyIfMissing,
    OnlyIfPresent,
    Merge,
}

/// One triple of `JSON.MSET`, checked: its key, where it writes (`None` for the root) and
/// the JSON text.
type Planned<'a> = (&'a [u8], Option<Vec<Target>>, &'a str);

/// Where a write goes: over an existing value, or as a new member of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Replace(Vec<String>),
    AddMember(Vec<String>, String),
}

fn compile(path: &str) -> Step<Query> {
    Query::compile(path).map_err(|e| e.to_string())
}

/// All matches (`get_values`).
fn values<'v>(doc: &'v Value, path: &str) -> Step<Vec<&'v Value>> {
    Ok(compile(path)?.select(doc)?)
}

/// The first match, or `Path does not exist` (`get_first`).
fn first<'v>(doc: &'v Value, path: &str) -> Step<&'v Value> {
    values(doc, path)?
        .into_iter()
        .next()
        .ok_or_else(|| NO_PATH.to_string())
}

/// All matches with their paths, as commands that change documents find them.
fn located<'v>(doc: &'v Value, path: &str) -> Step<Vec<Located<'v>>> {
    Ok(compile(path)?.select_paths(doc)?)
}

/// The paths of matches that pass `keep` (`find_paths`).
fn paths_where(doc: &Value, path: &str, keep: impl Fn(&Value) -> bool) -> Step<Vec<Vec<String>>> {
    Ok(located(doc, path)?
        .into_iter()
        .filter(|(v, _)| keep(v))
        .map(|(_, p)| p)
        .collect())
}

/// Every match's path, `None` where it fails `keep` (`find_all_paths`).
fn paths_or_none(
    doc: &Value,
    path: &str,
    keep: impl Fn(&Value) -> bool,
) -> Step<Vec<Option<Vec<String>>>> {
    Ok(located(doc, path)?
        .into_iter()
        .map(|(v, p)| keep(v).then_some(p))
        .collect())
}

/// Every match, `None` where it fails `keep` (`find_all_values`).
fn values_or_none<'v>(
    doc: &'v Value,
    path: &str,
    keep: impl Fn(&Value) -> bool,
) -> Step<Vec<Option<&'v Value>>> {
    Ok(located(doc, path)?
        .into_iter()
        .map(|(v, _)| keep(v).then_some(v))
        .collect())
}

fn is_kind(kind: Kind) -> impl Fn(&Value) -> bool {
    move |v| v.kind() == kind
}

fn is_number(v: &Value) -> bool {
    matches!(v, Value::Number(_))
}

/// RedisJSON's order for changing several matches: deeper paths first, and within one array
/// higher indexes first, so that no change moves what a later one points at. A step that
/// reads as a number counts as an index, wherever it is.
fn mutation_order(a: &[String], b: &[String]) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    for (x, y) in a.iter().zip(b) {
        let order = match (x.parse::<usize>(), y.parse::<usize>()) {
            (Err(_), Err(_)) => x.cmp(y),
            (Ok(_), Err(_)) => Ordering::Greater,
            (Err(_), Ok(_)) => Ordering::Less,
            (Ok(i), Ok(j)) => j.cmp(&i),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    b.len().cmp(&a.len())
}

/// Orders paths for changes and drops those inside another matched path (only the
/// outermost of nested matches is changed).
fn prepare_for_update(paths: &mut Vec<Vec<String>>) {
    if paths.len() < 2 {
        return;
    }
    paths.sort_by(|a, b| mutation_order(a, b));
    // RedisJSON compares the paths joined with commas: one is inside another when the other's
    // text and a comma begin it (so the root's empty path contains nothing).
    let joined: Vec<String> = paths.iter().map(|p| p.join(",")).collect();
    let inside_another = |path: &str| {
        joined.iter().any(|q| {
            path.len() > q.len() && path.starts_with(q.as_str()) && path[q.len()..].starts_with(',')
        })
    };
    let keep: Vec<bool> = joined.iter().map(|p| !inside_another(p)).collect();
    let mut keep = keep.into_iter();
    paths.retain(|_| keep.next().unwrap_or(false));
}

struct Run<'k> {
    keys: &'k mut dyn Keyspace,
    resp3: bool,
    events: Vec<(Vec<u8>, &'static str)>,
    changed: Vec<Vec<u8>>,
    numbers: Vec<NumberWrite>,
}

impl Run<'_> {
    fn read(&self, key: &[u8]) -> Step<Option<&Value>> {
        match self.keys.get(key) {
            Lookup::Missing => Ok(None),
            Lookup::Json(doc) => Ok(Some(doc)),
            Lookup::OtherType => Err(WRONG_KEY_TYPE.to_string()),
        }
    }

    /// The key's document for changing, after its type is checked; `None` if missing.
    fn write(&mut self, key: &[u8]) -> Step<Option<&mut Value>> {
        match self.keys.get_mut(key) {
            Lookup::Missing => Ok(None),
            Lookup::Json(doc) => Ok(Some(doc)),
            Lookup::OtherType => Err(WRONG_KEY_TYPE.to_string()),
        }
    }

    fn existing(&mut self, key: &[u8]) -> Step<&mut Value> {
        self.write(key)?.ok_or_else(|| NO_KEY.to_string())
    }

    fn check_type(&self, key: &[u8]) -> Step<()> {
        self.read(key).map(|_| ())
    }

    fn changed(&mut self, key: &[u8]) {
        if self.changed.last().map(Vec::as_slice) != Some(key) {
            self.changed.push(key.to_vec());
        }
    }

    fn notify(&mut self, key: &[u8], event: &'static str) {
        self.changed(key);
        self.events.push((key.to_vec(), event));
    }

    /// A JSON argument, as RedisJSON's `from_str` parses it (its errors without a code).
    fn parse_document(&self, text: &str) -> Step<Value> {
        text::parse(text, ParseLimits::command(self.keys.document_budget())).map_err(|e| match e {
            ParseError::TooLarge => OUT_OF_MEMORY.to_string(),
            e => e.to_string(),
        })
    }

    /// A JSON argument that RedisJSON parses with `serde_json` directly: its errors get `ERR`.
    fn parse_operand(&self, text: &str) -> Step<Value> {
        text::parse(text, ParseLimits::command(self.keys.document_budget())).map_err(|e| match e {
            ParseError::TooLarge => OUT_OF_MEMORY.to_string(),
            e => format!("ERR {e}"),
        })
    }

    // ---- JSON.GET, JSON.MGET, JSON.TYPE, JSON.RESP, JSON.DEBUG ----

    fn get(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let mut paths: Vec<Path<'_>> = Vec::new();
        let mut formatting = Formatting {
            format: ReplyFormat::String,
            layout: Layout::default(),
            resp3: self.resp3,
        };
        // An argument that is not UTF-8 ends the options silently, as RedisJSON's loop does.
        while let Some(arg) = args.next() {
            let Ok(arg) = std::str::from_utf8(arg) else {
                break;
            };
            let is = |word: &str| arg.len() <= 8 && arg.eq_ignore_ascii_case(word);
            if is("FORMAT") {
                if !self.resp3 && paths.is_empty() {
                    return Err(FORMAT_ON_RESP2.to_string());
                }
                let next = args.next_str()?;
                if next.eq_ignore_ascii_case("STRINGS") {
                    return Err(WRONG_REPLY_FORMAT.to_string());
                }
                formatting.format = ReplyFormat::parse(next)?;
            } else if is("INDENT") {
                formatting.layout.indent = Some(args.next_str()?);
            } else if is("NEWLINE") {
                formatting.layout.newline = Some(args.next_str()?);
            } else if is("SPACE") {
                formatting.layout.space = Some(args.next_str()?);
            } else if is("NOESCAPE") {
                // Accepted and ignored, as in RedisJSON 2.x (a 1.x option).
            } else {
                paths.push(Path::new(arg));
            }
        }
        if paths.is_empty() {
            paths.push(Path::new("."));
        }
        match self.read(key)? {
            None => Ok(Answer::Nil),
            Some(doc) => get_document(doc, &paths, &formatting),
        }
    }

    fn mget(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        if args.remaining() < 2 {
            return Err(args.arity());
        }
        let path_arg = args.items[args.items.len() - 1];
        let path = Path::new(utf8(path_arg)?);
        let formatting = Formatting {
            format: ReplyFormat::String,
            layout: Layout::default(),
            resp3: self.resp3,
        };
        let keys = &args.items[..args.items.len() - 1];
        Ok(Answer::Array(
            keys.iter()
                .map(|&key| match self.keys.get(key) {
                    Lookup::Json(doc) => {
                        let text = if path.is_legacy() {
                            first(doc, path.text()).map(|v| serialize(v, &formatting))
                        } else {
                            values(doc, path.text()).map(|vs| serialize_list(&vs, &formatting))
                        };
                        text.map_or(Answer::Nil, Answer::Bulk)
                    }
                    _ => Answer::Nil,
                })
                .collect(),
        ))
    }

    fn type_of(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str().unwrap_or("."));
        let doc = self.read(key)?;
        let answer = match doc {
            None => Answer::Nil,
            Some(doc) if path.is_legacy() => {
                first(doc, path.text()).map_or(Answer::Nil, |v| Answer::bulk(v.type_name()))
            }
            Some(doc) => Answer::Array(
                values(doc, path.text())?
                    .into_iter()
                    .map(|v| Answer::bulk(v.type_name()))
                    .collect(),
            ),
        };
        Ok(if self.resp3 {
            Answer::Array(vec![answer])
        } else {
            answer
        })
    }

    fn resp(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = match args.next() {
            None => Path::new("."),
            Some(arg) => Path::new(utf8(arg)?),
        };
        let Some(doc) = self.read(key)? else {
            return Ok(Answer::Nil);
        };
        if path.is_legacy() {
            Ok(resp_tree(first(doc, path.text())?))
        } else {
            Ok(Answer::Array(
                values(doc, path.text())?
                    .into_iter()
                    .map(resp_tree)
                    .collect(),
            ))
        }
    }

    fn debug(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        match args.next_str()?.to_uppercase().as_str() {
            "MEMORY" => {
                let key = args.next_arg()?;
                let path = Path::new(args.next_str().unwrap_or("."));
                let doc = self.read(key)?;
                if path.is_legacy() {
                    Ok(Answer::Integer(match doc {
                        Some(doc) => first(doc, path.text())?.memory() as i64,
                        None => 0,
                    }))
                } else {
                    Ok(Answer::Array(match doc {
                        Some(doc) => values(doc, path.text())?
                            .into_iter()
                            .map(|v| Answer::Integer(v.memory() as i64))
                            .collect(),
                        None => Vec::new(),
                    }))
                }
            }
            // sieved never defragments documents.
            "DEFRAG_INFO" => Ok(Answer::Map(
                ["defrag_started", "defrag_ended", "keys_defrag"]
                    .into_iter()
                    .map(|k| (k.as_bytes().to_vec(), Answer::Integer(0)))
                    .collect(),
            )),
            "HELP" => Ok(Answer::Array(vec![
                Answer::bulk("MEMORY <key> [path] - reports memory usage"),
                Answer::bulk("HELP                - this message"),
            ])),
            _ => Err("ERR unknown subcommand - try `JSON.DEBUG HELP`".to_string()),
        }
    }

    // ---- JSON.SET, JSON.MERGE, JSON.MSET, JSON.DEL ----
}

/// Stores a number a `NumberWrite` records, where it was stored: how a log replays the
/// numeric commands without redoing their arithmetic. False if no number is there.
pub fn set_number(document: &mut Value, path: &[String], value: Number) -> bool {
    let mut stored = false;
    let result = edit::edit_at(document, path, |v| {
        if let Value::Number(n) = v {
            *n = value;
            stored = true;
        }
        Ok(After::Keep)
    });
    result.is_ok() && stored
}

/// Where `JSON.SET` (or `MSET`, `MERGE`) writes at a non-root path: over every match, or,
/// when nothing matches and the path is static, as a new member of the parents it names.
fn targets(doc: &Value, path: &str, mode: SetMode) -> Step<Vec<Target>> {
    if mode != SetMode::OnlyIfMissing {
        let query = compile(path)?;
        let mut found: Vec<Vec<String>> = query
            .select_paths(doc)?
            .into_iter()
            .map(|(_, p)| p)
            .collect();
        if mode != SetMode::Merge {
            prepare_for_update(&mut found);
        }
        if !found.is_empty() {
            return Ok(found.into_iter().map(Target::Replace).collect());
        }
    }
    if mode == SetMode::OnlyIfPresent {
        return Ok(Vec::new());
    }
    let mut query = compile(path)?;
    if !query.is_static() {
        return Err("Err wrong static path".to_string());
    }
    if query.is_empty() {
        return Err("Err path must end with object key to set".to_string());
    }
    let length = query.len();
    match query.pop_last() {
        Some(LastStep::Key(member)) => {
            if length == 1 {
                Ok(vec![Target::AddMember(Vec::new(), member)])
            } else {
                Ok(query
                    .select_paths(doc)?
                    .into_iter()
                    .map(|(_, p)| Target::AddMember(p, member.clone()))
                    .collect())
            }
        }
        _ => {
            // An index that matches nothing is out of range; one that matches is a no-op
            // (NX over an existing element).
            if compile(path)?.select_paths(doc)?.is_empty() {
                Err("ERR array index out of range".to_string())
            } else {
                Ok(Vec::new())
            }
        }
    }
}

/// One write of `JSON.SET`: true if the document changed.
fn set_at(doc: &mut Value, target: Target, value: Value) -> Step<bool> {
    match target {
        Target::Replace(p) => {
            if p.is_empty() {
                *doc = value;
                return Ok(true);
            }
            let mut value = Some(value);
            let mut updated = false;
            edit::update(doc, &p, |v| {
                if let Some(value) = value.take() {
                    *v = value;
                    updated = true;
                }
                Ok(After::Keep)
            })?;
            Ok(updated)
        }
        Target::AddMember(p, member) => add_member(doc, &p, &member, value),
    }
}

/// Adds `member` to the object at `path` if it has no such member yet.
fn add_member(doc: &mut Value, path: &[String], member: &str, value: Value) -> Step<bool> {
    let mut value = Some(value);
    let mut added = false;
    edit::edit_at(doc, path, |v| {
        if let Value::Object(o) = v {
            if !o.contains_key(member) {
                if let Some(value) = value.take() {
                    o.insert(member, value);
                    added = true;
                }
            }
        }
        Ok(After::Keep)
    })?;
    Ok(added)
}

fn check_nesting(depth: usize, value: &Value) -> Step<()> {
    if depth + value.nesting() > MAX_NESTING {
        Err(TOO_DEEP.to_string())
    } else {
        Ok(())
    }
}

/// `JSON.ARRINDEX` in one value: the index of the first item equal to `needle` within
/// `start..end` (0 for `end` meaning the end), -1 if none, `None` if not an array.
fn first_index(value: &Value, needle: &Value, start: i64, end: i64) -> Option<i64> {
    let array = value.as_array()?;
    let len = array.len() as i64;
    if len == 0 {
        return Some(-1);
    }
    let start = edit::start_index(start, len);
    let end = match end {
        0 => len,
        e if e < 0 => (len + e).max(0),
        e => e.min(len),
    };
    if end < start {
        return Some(-1);
    }
    Some(
        (start..end)
            .find(|&i| {
                array
                    .get(i as usize)
                    .is_some_and(|item| item.strictly_equals(needle))
            })
            .unwrap_or(-1),
    )
}

/// `JSON.RESP`'s tree: arrays as `[` then the items, objects as `{` then names and values.
fn resp_tree(v: &Value) -> Answer {
    match v {
        Value::Null => Answer::Nil,
        Value::Bool(true) => Answer::Simple("true"),
        Value::Bool(false) => Answer::Simple("false"),
        Value::Number(Number::Int(i)) => Answer::Integer(*i),
        Value::Number(n) => Answer::Double(n.to_f64()),
        Value::String(s) => Answer::bulk(s.as_bytes()),
        Value::Array(a) => Answer::Array(
            std::iter::once(Answer::Simple("["))
                .chain(a.iter().map(resp_tree))
                .collect(),
        ),
        Value::Object(o) => {
            let mut items = vec![Answer::Simple("{")];
            for (k, v) in o.iter() {
                items.push(Answer::bulk(k.as_bytes()));
                items.push(resp_tree(v));
            }
            Answer::Array(items)
        }
    }
}

fn serialize(v: &Value, formatting: &Formatting<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    Writer::new(formatting.layout, &mut out).value(v);
    out
}

fn serialize_list(vs: &[&Value], formatting: &Formatting<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    Writer::new(formatting.layout, &mut out).list(vs.iter().copied());
    out
}

/// A value for `FORMAT EXPAND1` (scalars typed, containers as JSON text) or `EXPAND` (all
/// typed: arrays, maps).
fn typed(v: &Value, formatting: &Formatting<'_>) -> Answer {
    match v {
        Value::Null => Answer::Nil,
        Value::Bool(b) => Answer::Bool(*b),
        Value::Number(Number::Int(i)) => Answer::Integer(*i),
        Value::Number(n) => Answer::Double(n.to_f64()),
        _ if formatting.format != ReplyFormat::Expand => Answer::Bulk(serialize(v, formatting)),
        Value::String(s) => Answer::bulk(s.as_bytes()),
        Value::Array(a) => Answer::Array(a.iter().map(|v| typed(v, formatting)).collect()),
        Value::Object(o) => Answer::Map(
            o.iter()
                .map(|(k, v)| (k.as_bytes().to_vec(), typed(v, formatting)))
                .collect(),
        ),
    }
}

/// `JSON.GET` of an existing document.
fn get_document(doc: &Value, paths: &[Path<'_>], formatting: &Formatting<'_>) -> Step<Answer> {
    let legacy = paths.iter().all(Path::is_legacy);
    if formatting.typed_reply() {
        // One entry per path, each the list of its matches; a path that does not parse
        // gives an empty list.
        return Ok(Answer::Array(
            paths
                .iter()
                .map(|p| {
                    let matches = p
                        .compile()
                        .ok()
                        .and_then(|q| q.select(doc).ok())
                        .unwrap_or_default();
                    Answer::Array(matches.into_iter().map(|v| typed(v, formatting)).collect())
                })
                .collect(),
        ));
    }
    if paths.len() == 1 {
        let path = &paths[0];
        return Ok(Answer::Bulk(if legacy {
            serialize(first(doc, path.text())?, formatting)
        } else {
            serialize_list(&values(doc, path.text())?, formatting)
        }));
    }
    // Several paths: an object keyed by each path as written. RedisJSON builds it in a hash
    // map, whose order varies from run to run; this one keeps the order of the arguments.
    // Paths that do not parse are left out.
    let mut members: Vec<(&str, Vec<&Value>)> = Vec::new();
    for path in paths {
        let Ok(query) = path.compile() else {
            continue;
        };
        let found = query.select(doc)?;
        if legacy && found.is_empty() {
            return Err(NO_PATH.to_string());
        }
        match members.iter_mut().find(|(k, _)| *k == path.original()) {
            Some(member) => member.1 = found,
            None => members.push((path.original(), found)),
        }
    }
    let mut out = Vec::new();
    Writer::new(formatting.layout, &mut out).object(&members, |w, found| {
        if legacy {
            w.value(found[0]);
        } else {
            w.list(found.iter().copied());
        }
    });
    Ok(Answer::Bulk(out))
}

#[cfg(test)]
mod command_tests;
