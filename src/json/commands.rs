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

    fn set(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let text = args.next_str()?;
        let mut mode = SetMode::Always;
        while let Some(arg) = args.next() {
            let arg = utf8(arg)?;
            if arg.eq_ignore_ascii_case("NX") && mode == SetMode::Always {
                mode = SetMode::OnlyIfMissing;
            } else if arg.eq_ignore_ascii_case("XX") && mode == SetMode::Always {
                mode = SetMode::OnlyIfPresent;
            } else if arg.eq_ignore_ascii_case("FORMAT") {
                input_format(args.next_str()?)?;
            } else {
                return Err(SYNTAX.to_string());
            }
        }
        let exists = self.read(key)?.is_some();
        let value = self.parse_document(text)?;
        if !exists {
            if mode == SetMode::OnlyIfPresent {
                return Ok(Answer::Nil);
            }
            if !path.is_root() {
                return Err(NEW_AT_ROOT.to_string());
            }
            check_nesting(0, &value)?;
            self.keys.create(key, value);
            self.notify(key, "json.set");
            return Ok(Answer::Ok);
        }
        if path.is_root() {
            if mode == SetMode::OnlyIfMissing {
                return Ok(Answer::Nil);
            }
            check_nesting(0, &value)?;
            *self.existing(key)? = value;
            self.notify(key, "json.set");
            return Ok(Answer::Ok);
        }
        let targets = {
            let doc = self.existing(key)?;
            targets(doc, path.text(), mode)?
        };
        if !targets.is_empty() && self.apply_sets(key, value, targets)? {
            self.notify(key, "json.set");
            Ok(Answer::Ok)
        } else {
            Ok(Answer::Nil)
        }
    }

    /// Writes `value` at each target; true if the last write that did not fail changed the
    /// document (RedisJSON's fold keeps only that one's answer).
    fn apply_sets(&mut self, key: &[u8], value: Value, targets: Vec<Target>) -> Step<bool> {
        for target in &targets {
            let depth = match target {
                Target::Replace(p) => p.len(),
                Target::AddMember(p, _) => p.len() + 1,
            };
            check_nesting(depth, &value)?;
        }
        let doc = self.existing(key)?;
        let single = targets.len() == 1;
        let mut value = Some(value);
        let mut updated = false;
        let mut any = false;
        for target in targets {
            let v = if single {
                value.take().expect("one target")
            } else {
                value.as_ref().expect("kept for every target").clone()
            };
            match set_at(doc, target, v) {
                Ok(changed) => {
                    updated = changed;
                    any |= changed;
                }
                Err(_) if single => updated = false,
                Err(_) => {}
            }
        }
        if any {
            self.changed(key);
        }
        Ok(updated)
    }

    fn merge(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let text = args.next_str()?;
        while let Some(arg) = args.next() {
            if utf8(arg)?.eq_ignore_ascii_case("FORMAT") {
                input_format(args.next_str()?)?;
            } else {
                return Err(SYNTAX.to_string());
            }
        }
        let exists = self.read(key)?.is_some();
        let patch = self.parse_document(text)?;
        if !exists {
            if !path.is_root() {
                return Err(NEW_AT_ROOT.to_string());
            }
            check_nesting(0, &patch)?;
            self.keys.create(key, patch);
            self.notify(key, "json.merge");
            return Ok(Answer::Ok);
        }
        if path.is_root() {
            check_nesting(0, &patch)?;
            edit::merge(self.existing(key)?, &patch);
            self.notify(key, "json.merge");
            return Ok(Answer::Ok);
        }
        let targets = targets(self.existing(key)?, path.text(), SetMode::Merge)?;
        if targets.is_empty() {
            return Ok(Answer::Nil);
        }
        for target in &targets {
            let depth = match target {
                Target::Replace(p) => p.len(),
                Target::AddMember(p, _) => p.len() + 1,
            };
            check_nesting(depth, &patch)?;
        }
        let mut any = false;
        let mut failure = None;
        {
            let doc = self.existing(key)?;
            for target in targets {
                let result = match target {
                    Target::Replace(p) if p.is_empty() => {
                        edit::merge(doc, &patch);
                        Ok(true)
                    }
                    Target::Replace(p) => {
                        let mut updated = false;
                        edit::update(doc, &p, |current| {
                            updated = true;
                            edit::merge(current, &patch);
                            Ok(After::Keep)
                        })
                        .map(|()| updated)
                    }
                    Target::AddMember(p, member) => add_member(doc, &p, &member, patch.clone()),
                };
                match result {
                    Ok(updated) => any |= updated,
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
        }
        if any {
            self.changed(key);
        }
        if let Some(e) = failure {
            return Err(e);
        }
        if any {
            self.notify(key, "json.merge");
            Ok(Answer::Ok)
        } else {
            Ok(Answer::Nil)
        }
    }

    fn mset(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        if args.remaining() < 3 {
            return Err(args.arity());
        }
        // Every triple is checked against the keys as they are before any is written.
        let mut planned: Vec<Planned<'_>> = Vec::new();
        while let Some(key) = args.next() {
            let doc = self.read(key)?;
            let path = Path::new(args.next_str()?);
            let targets = if path.is_root() {
                None
            } else if let Some(doc) = doc {
                Some(targets(doc, path.text(), SetMode::Always)?)
            } else {
                return Err(NEW_AT_ROOT.to_string());
            };
            let text = args.next_str()?;
            self.parse_document(text)?;
            planned.push((key, targets, text));
        }
        for (key, targets, text) in planned {
            let value = self.parse_document(text)?;
            let updated = match targets {
                Some(targets) => !targets.is_empty() && self.apply_sets(key, value, targets)?,
                None => {
                    check_nesting(0, &value)?;
                    match self.write(key)? {
                        Some(doc) => *doc = value,
                        None => self.keys.create(key, value),
                    }
                    true
                }
            };
            if updated {
                self.notify(key, "json.mset");
            }
        }
        Ok(Answer::Ok)
    }

    fn del(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = match args.next() {
            None => Path::new("."),
            Some(arg) => Path::new(utf8(arg)?),
        };
        if self.write(key)?.is_none() {
            return Ok(Answer::Integer(0));
        }
        let deleted = if path.is_root() {
            self.keys.delete(key);
            1
        } else {
            let doc = self.existing(key)?;
            let mut paths = paths_where(doc, path.text(), |_| true)?;
            prepare_for_update(&mut paths);
            let mut deleted = 0;
            for p in paths {
                let mut removed = false;
                edit::update(doc, &p, |_| {
                    removed = true;
                    Ok(After::Remove)
                })?;
                deleted += i64::from(removed);
            }
            deleted
        };
        if deleted > 0 {
            self.notify(key, "json.del");
        }
        Ok(Answer::Integer(deleted))
    }

    // ---- numbers, booleans, strings ----

    fn number_op(
        &mut self,
        args: &mut Args<'_>,
        op: Arithmetic,
        event: &'static str,
    ) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let operand = args.next_str()?;
        self.check_type(key)?;
        if self.resp3 || !path.is_legacy() {
            let paths = paths_or_none(self.existing(key)?, path.text(), is_number)?;
            let mut results = Vec::with_capacity(paths.len());
            for p in paths {
                results.push(match p {
                    Some(p) => Some(self.apply_number(key, p, operand, op, event)?),
                    None => None,
                });
            }
            if results.iter().any(Option::is_some) {
                self.notify(key, event);
            }
            Ok(if self.resp3 {
                Answer::Array(
                    results
                        .into_iter()
                        .map(|n| match n {
                            None => Answer::Nil,
                            Some(Number::Int(i)) => Answer::Integer(i),
                            Some(n) => Answer::Double(n.to_f64()),
                        })
                        .collect(),
                )
            } else {
                let values: Vec<Value> = results
                    .into_iter()
                    .map(|n| n.map_or(Value::Null, Value::Number))
                    .collect();
                let mut out = Vec::new();
                Writer::new(Layout::default(), &mut out).list(values.iter());
                Answer::Bulk(out)
            })
        } else {
            let paths = paths_where(self.existing(key)?, path.text(), is_number)?;
            if paths.is_empty() {
                return Err(no_path_or("does not contains a number"));
            }
            let mut last = None;
            for p in paths {
                last = Some(self.apply_number(key, p, operand, op, event)?);
            }
            self.notify(key, event);
            let mut out = Vec::new();
            super::write::write_number(last.expect("at least one path"), &mut out);
            Ok(Answer::Bulk(out))
        }
    }

    /// One number's arithmetic at `path`; the operand is read (with `serde_json`'s errors)
    /// for each match, as RedisJSON reads it.
    fn apply_number(
        &mut self,
        key: &[u8],
        path: Vec<String>,
        operand: &str,
        op: Arithmetic,
        _event: &'static str,
    ) -> Step<Number> {
        let Value::Number(operand) = self.parse_operand(operand)? else {
            return Err("bad input number".to_string());
        };
        let doc = self.existing(key)?;
        let mut result = None;
        edit::edit_at(doc, &path, |v| {
            let Value::Number(n) = v else {
                return Err(NO_PATH.to_string());
            };
            let computed = edit::arithmetic(op, *n, operand)?;
            *v = Value::Number(computed);
            result = Some(computed);
            Ok(After::Keep)
        })?;
        let result = result.ok_or_else(|| NO_PATH.to_string())?;
        self.changed(key);
        self.numbers.push(NumberWrite {
            key: key.to_vec(),
            path,
            value: result,
        });
        Ok(result)
    }

    fn toggle(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let doc = self.existing(key)?;
        let flip = |doc: &mut Value, p: &[String]| -> Step<bool> {
            let mut result = None;
            edit::edit_at(doc, p, |v| {
                if let Value::Bool(b) = v {
                    *b = !*b;
                    result = Some(*b);
                }
                Ok(After::Keep)
            })?;
            result.ok_or_else(|| NO_PATH.to_string())
        };
        if path.is_legacy() {
            let paths = paths_where(doc, path.text(), is_kind(Kind::Bool))?;
            if paths.is_empty() {
                return Err(no_path_or("not a bool"));
            }
            let mut last = false;
            for p in paths {
                last = flip(doc, &p)?;
            }
            self.notify(key, "json.toggle");
            Ok(Answer::bulk(last.to_string()))
        } else {
            let paths = paths_or_none(doc, path.text(), is_kind(Kind::Bool))?;
            let mut results = Vec::new();
            let mut any = false;
            for p in paths {
                results.push(match p {
                    Some(p) => {
                        any = true;
                        Answer::Integer(i64::from(flip(doc, &p)?))
                    }
                    None => Answer::Nil,
                });
            }
            if any {
                self.notify(key, "json.toggle");
            }
            Ok(Answer::Array(results))
        }
    }

    fn str_append(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let first_arg = args.next_str()?;
        let (path, text) = match args.next() {
            Some(arg) => (Path::new(first_arg), utf8(arg)?),
            None => (Path::new("."), first_arg),
        };
        self.check_type(key)?;
        let append = |run: &mut Self, p: &[String]| -> Step<i64> {
            let Value::String(suffix) = run.parse_operand(text)? else {
                return Err(expected("string"));
            };
            let mut length = None;
            edit::edit_at(run.existing(key)?, p, |v| {
                if let Value::String(s) = v {
                    let joined = format!("{s}{suffix}");
                    length = Some(joined.len() as i64);
                    *s = joined.into_boxed_str();
                }
                Ok(After::Keep)
            })?;
            run.changed(key);
            length.ok_or_else(|| NO_PATH.to_string())
        };
        if path.is_legacy() {
            let paths = paths_where(self.existing(key)?, path.text(), is_kind(Kind::String))?;
            if paths.is_empty() {
                return Err(no_path_or("not a string"));
            }
            let mut last = 0;
            for p in paths {
                last = append(self, &p)?;
            }
            self.notify(key, "json.strappend");
            Ok(Answer::Integer(last))
        } else {
            let paths = paths_or_none(self.existing(key)?, path.text(), is_kind(Kind::String))?;
            let mut results = Vec::new();
            let mut any = false;
            for p in paths {
                results.push(match p {
                    Some(p) => {
                        any = true;
                        Answer::Integer(append(self, &p)?)
                    }
                    None => Answer::Nil,
                });
            }
            if any {
                self.notify(key, "json.strappend");
            }
            Ok(Answer::Array(results))
        }
    }

    fn str_len(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str().unwrap_or("."));
        let doc = self.read(key)?;
        if path.is_legacy() {
            let Some(doc) = doc else {
                return Ok(Answer::Nil);
            };
            match first(doc, path.text())? {
                Value::String(s) => Ok(Answer::Integer(s.len() as i64)),
                _ => Err(expected("string")),
            }
        } else {
            let doc = doc.ok_or_else(|| NO_KEY.to_string())?;
            Ok(Answer::Array(
                values_or_none(doc, path.text(), is_kind(Kind::String))?
                    .into_iter()
                    .map(|v| match v.and_then(Value::as_str) {
                        Some(s) => Answer::Integer(s.len() as i64),
                        None => Answer::Nil,
                    })
                    .collect(),
            ))
        }
    }

    // ---- arrays ----

    /// The JSON values after the path (`ARRAPPEND`, `ARRINSERT`), parsed before the key is
    /// looked at; at least one is required.
    fn items(&self, args: &mut Args<'_>) -> Step<Vec<Value>> {
        if args.remaining() == 0 {
            return Err(args.arity());
        }
        let mut items = Vec::with_capacity(args.remaining());
        while let Some(arg) = args.next() {
            items.push(self.parse_document(utf8(arg)?)?);
        }
        Ok(items)
    }

    fn arr_append(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let items = self.items(args)?;
        let nesting = items.iter().map(Value::nesting).max().unwrap_or(0);
        let doc = self.existing(key)?;
        let append = |doc: &mut Value, p: &[String]| -> Step<i64> {
            if p.len() + 1 + nesting > MAX_NESTING {
                return Err(TOO_DEEP.to_string());
            }
            let mut length = None;
            edit::edit_at(doc, p, |v| {
                if let Value::Array(a) = v {
                    for item in &items {
                        a.push(item.clone());
                    }
                    length = Some(a.len() as i64);
                }
                Ok(After::Keep)
            })?;
            length.ok_or_else(|| NO_PATH.to_string())
        };
        if path.is_legacy() {
            let paths = paths_where(doc, path.text(), is_kind(Kind::Array))?;
            if paths.is_empty() {
                return Err(no_path_or("not an array"));
            }
            let mut last = 0;
            for p in paths {
                last = append(doc, &p)?;
            }
            self.notify(key, "json.arrappend");
            Ok(Answer::Integer(last))
        } else {
            let paths = paths_or_none(doc, path.text(), is_kind(Kind::Array))?;
            let mut results = Vec::new();
            let mut any = false;
            for p in paths {
                results.push(match p {
                    Some(p) => match append(doc, &p) {
                        Ok(n) => {
                            any = true;
                            Answer::Integer(n)
                        }
                        Err(e) => {
                            if any {
                                self.changed(key);
                            }
                            return Err(e);
                        }
                    },
                    None => Answer::Nil,
                });
            }
            if any {
                self.notify(key, "json.arrappend");
            }
            Ok(Answer::Array(results))
        }
    }

    fn arr_index(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let text = args.next_str()?;
        let start = match args.next() {
            Some(arg) => parse_integer(arg).ok_or_else(|| NOT_INTEGER.to_string())?,
            None => 0,
        };
        let end = match args.next() {
            Some(arg) => parse_integer(arg).ok_or_else(|| NOT_INTEGER.to_string())?,
            None => 0,
        };
        if args.remaining() > 0 {
            return Err(args.arity());
        }
        let needle = self.parse_operand(text)?;
        let doc = self.read(key)?.ok_or_else(|| NO_PATH.to_string())?;
        if path.is_legacy() {
            match first_index(first(doc, path.text())?, &needle, start, end) {
                None => Err(expected("array")),
                Some(i) => Ok(Answer::Integer(i)),
            }
        } else {
            Ok(Answer::Array(
                values(doc, path.text())?
                    .into_iter()
                    .map(|v| {
                        first_index(v, &needle, start, end).map_or(Answer::Nil, Answer::Integer)
                    })
                    .collect(),
            ))
        }
    }

    fn arr_insert(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let index = args.next_i64()?;
        let items = self.items(args)?;
        let nesting = items.iter().map(Value::nesting).max().unwrap_or(0);
        let insert = |doc: &mut Value, p: &[String]| -> Step<i64> {
            if p.len() + 1 + nesting > MAX_NESTING {
                return Err(TOO_DEEP.to_string());
            }
            let mut length = None;
            edit::edit_at(doc, p, |v| {
                let Value::Array(a) = v else {
                    return Ok(After::Keep);
                };
                let len = a.len() as i64;
                let at = if index < 0 { len + index } else { index };
                if !(0..=len).contains(&at) {
                    return Err("ERR index out of bounds".to_string());
                }
                a.reserve(items.len());
                for (offset, item) in items.iter().enumerate() {
                    a.insert(at as usize + offset, item.clone());
                }
                length = Some(a.len() as i64);
                Ok(After::Keep)
            })?;
            length.ok_or_else(|| NO_PATH.to_string())
        };
        self.each_array(key, &path, "json.arrinsert", |doc, p| {
            insert(doc, p).map(Answer::Integer)
        })
    }

    /// Runs `change` on every array the path matches, deepest and highest index first, for
    /// `ARRINSERT`, `ARRPOP` and `ARRTRIM`: a legacy path answers the last result (or fails
    /// when nothing is an array), JSONPath a result per match (nil where not an array).
    fn each_array(
        &mut self,
        key: &[u8],
        path: &Path<'_>,
        event: &'static str,
        mut change: impl FnMut(&mut Value, &[String]) -> Step<Answer>,
    ) -> Step<Answer> {
        let doc = self.existing(key)?;
        if path.is_legacy() {
            let mut paths = paths_where(doc, path.text(), is_kind(Kind::Array))?;
            if paths.is_empty() {
                return Err(no_path_or("not an array"));
            }
            paths.sort_by(|a, b| mutation_order(a, b));
            let mut last = Answer::Nil;
            for p in paths {
                match change(doc, &p) {
                    Ok(answer) => last = answer,
                    Err(e) => {
                        self.changed(key);
                        return Err(e);
                    }
                }
            }
            self.notify(key, event);
            Ok(last)
        } else {
            let paths = paths_or_none(doc, path.text(), is_kind(Kind::Array))?;
            let mut results = vec![Answer::Nil; paths.len()];
            let mut indexed: Vec<(usize, Vec<String>)> = paths
                .into_iter()
                .enumerate()
                .filter_map(|(i, p)| p.map(|p| (i, p)))
                .collect();
            indexed.sort_by(|(_, a), (_, b)| mutation_order(a, b));
            let mut any = false;
            for (i, p) in indexed {
                match change(doc, &p) {
                    Ok(answer) => {
                        any = true;
                        results[i] = answer;
                    }
                    Err(e) => {
                        if any {
                            self.changed(key);
                        }
                        return Err(e);
                    }
                }
            }
            if any {
                self.notify(key, event);
            }
            Ok(Answer::Array(results))
        }
    }

    fn arr_len(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str().unwrap_or("."));
        let Some(doc) = self.read(key)? else {
            return if path.is_legacy() {
                Ok(Answer::Nil)
            } else {
                Err(NO_KEY.to_string())
            };
        };
        let found = values_or_none(doc, path.text(), is_kind(Kind::Array))?;
        if path.is_legacy() {
            return match found.first() {
                None => Err(NO_PATH.to_string()),
                Some(None) => Err(no_path_or("not an array")),
                Some(Some(v)) => Ok(Answer::Integer(v.as_array().map_or(0, |a| a.len()) as i64)),
            };
        }
        Ok(Answer::Array(
            found
                .into_iter()
                .map(|v| match v.and_then(Value::as_array) {
                    Some(a) => Answer::Integer(a.len() as i64),
                    None => Answer::Nil,
                })
                .collect(),
        ))
    }

    fn arr_pop(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let mut format = ReplyFormat::Strings;
        let mut path_arg = None;
        if let Some(arg) = args.next() {
            if utf8(arg)?.eq_ignore_ascii_case("FORMAT") {
                match args.next().map(std::str::from_utf8) {
                    Some(Ok(next)) => {
                        format = ReplyFormat::parse(next)?;
                        if format == ReplyFormat::String {
                            return Err(WRONG_REPLY_FORMAT.to_string());
                        }
                        if !self.resp3 {
                            return Err(FORMAT_ON_RESP2.to_string());
                        }
                        path_arg = args.next();
                    }
                    // A lone `FORMAT` (or one followed by what is not text) is the path.
                    Some(Err(_)) | None => path_arg = Some(arg),
                }
            } else {
                path_arg = Some(arg);
            }
        }
        let (path, index) = match path_arg {
            None => (Path::new("."), i64::MAX),
            Some(arg) => {
                let path = Path::new(utf8(arg)?);
                let index = args.next().and_then(parse_integer).unwrap_or(-1);
                (path, index)
            }
        };
        if path.is_legacy() && format != ReplyFormat::Strings {
            return Err("Legacy paths are supported only with FORMAT STRINGS".to_string());
        }
        let formatting = Formatting {
            format,
            layout: Layout::default(),
            resp3: self.resp3,
        };
        let legacy = path.is_legacy();
        let mut popped_any = false;
        let answer = self.each_array(key, &path, "json.arrpop", |doc, p| {
            let mut popped = None;
            edit::edit_at(doc, p, |v| {
                let Value::Array(a) = v else {
                    return Err(expected("array"));
                };
                if !a.is_empty() {
                    let len = a.len() as i64;
                    popped = a.remove(edit::start_index(index, len) as usize);
                }
                Ok(After::Keep)
            })?;
            Ok(match popped {
                None => Answer::Nil,
                Some(v) => {
                    popped_any = true;
                    if formatting.typed_reply() {
                        typed(&v, &formatting)
                    } else {
                        Answer::Bulk(to_text(&v))
                    }
                }
            })
        })?;
        // RedisJSON raises the event for JSONPath only when something was popped.
        if !legacy && !popped_any {
            self.events
                .retain(|(k, e)| !(k == key && *e == "json.arrpop"));
        }
        Ok(answer)
    }

    fn arr_trim(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str()?);
        let start = args.next_i64()?;
        let stop = args.next_i64()?;
        self.each_array(key, &path, "json.arrtrim", |doc, p| {
            let mut length = None;
            edit::edit_at(doc, p, |v| {
                let Value::Array(a) = v else {
                    return Err(expected("array"));
                };
                a.keep_range(edit::trim_range(start, stop, a.len()));
                length = Some(a.len() as i64);
                Ok(After::Keep)
            })?;
            length
                .map(Answer::Integer)
                .ok_or_else(|| NO_PATH.to_string())
        })
    }

    // ---- objects, CLEAR ----

    fn obj_keys(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str().unwrap_or("."));
        let doc = self.read(key)?;
        let names = |o: &super::value::Object| Answer::Array(o.keys().map(Answer::bulk).collect());
        if path.is_legacy() {
            let Some(doc) = doc else {
                return Ok(Answer::Nil);
            };
            match first(doc, path.text()) {
                Ok(Value::Object(o)) => Ok(names(o)),
                Ok(_) => Err(no_path_or("not an object")),
                Err(_) => Ok(Answer::Nil),
            }
        } else {
            let doc = doc.ok_or_else(|| NO_KEY.to_string())?;
            Ok(Answer::Array(
                values_or_none(doc, path.text(), is_kind(Kind::Object))?
                    .into_iter()
                    .map(|v| v.and_then(Value::as_object).map_or(Answer::Nil, names))
                    .collect(),
            ))
        }
    }

    fn obj_len(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let path = Path::new(args.next_str().unwrap_or("."));
        let doc = self.read(key)?;
        if path.is_legacy() {
            let Some(doc) = doc else {
                return Ok(Answer::Nil);
            };
            match first(doc, path.text()) {
                Ok(Value::Object(o)) => Ok(Answer::Integer(o.len() as i64)),
                Ok(_) => Err(expected("object")),
                Err(_) => Ok(Answer::Nil),
            }
        } else {
            let doc = doc.ok_or_else(|| no_path_or("not an object"))?;
            Ok(Answer::Array(
                values_or_none(doc, path.text(), is_kind(Kind::Object))?
                    .into_iter()
                    .map(|v| match v.and_then(Value::as_object) {
                        Some(o) => Answer::Integer(o.len() as i64),
                        None => Answer::Nil,
                    })
                    .collect(),
            ))
        }
    }

    fn clear(&mut self, args: &mut Args<'_>) -> Step<Answer> {
        let key = args.next_arg()?;
        let mut paths = Vec::new();
        while let Some(arg) = args.next() {
            paths.push(Path::new(utf8(arg)?));
        }
        // Only the first path counts, as in RedisJSON.
        let path = paths.into_iter().next().unwrap_or_else(|| Path::new("."));
        let doc = self.existing(key)?;
        let clearable = |v: &Value| match v {
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            Value::Number(Number::Int(i)) => *i != 0,
            Value::Number(n) => n.to_f64() != 0.0,
            _ => false,
        };
        let mut cleared = 0;
        for p in paths_where(doc, path.text(), clearable)? {
            edit::edit_at(doc, &p, |v| {
                match v {
                    Value::Object(o) => o.clear(),
                    Value::Array(a) => a.clear(),
                    Value::Number(_) => *v = Value::Number(Number::Int(0)),
                    _ => return Ok(After::Keep),
                }
                cleared += 1;
                Ok(After::Keep)
            })?;
        }
        if cleared > 0 {
            self.notify(key, "json.clear");
        }
        Ok(Answer::Integer(cleared))
    }
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
mod tests {
    use super::*;
    use crate::json::{parse, ParseLimits};
    use std::collections::HashMap;

    #[derive(Default)]
    struct Keys(HashMap<Vec<u8>, Value>);

    impl Keyspace for Keys {
        fn get(&self, key: &[u8]) -> Lookup<&Value> {
            self.0.get(key).map_or(Lookup::Missing, Lookup::Json)
        }
        fn get_mut(&mut self, key: &[u8]) -> Lookup<&mut Value> {
            self.0.get_mut(key).map_or(Lookup::Missing, Lookup::Json)
        }
        fn create(&mut self, key: &[u8], document: Value) {
            self.0.insert(key.to_vec(), document);
        }
        fn delete(&mut self, key: &[u8]) {
            self.0.remove(key);
        }
    }

    fn run(keys: &mut Keys, command: &[&str]) -> Answer {
        let args: Vec<&[u8]> = command[1..].iter().map(|a| a.as_bytes()).collect();
        execute(command[0], &args, keys, false).answer
    }

    #[test]
    fn the_deepest_documents_fit_a_small_stack() {
        // Test threads have 2 MiB of stack, as tokio's workers do.
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let mut keys = Keys::default();
                let level = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
                assert_eq!(
                    run(&mut keys, &["json.set", "k", "$", &level(127)]),
                    Answer::Ok
                );
                let mut depth = 127;
                while depth + 127 <= MAX_NESTING {
                    let path = format!("${}", "[0]".repeat(depth - 1));
                    assert_eq!(
                        run(&mut keys, &["json.arrappend", "k", &path, &level(127)]),
                        Answer::Array(vec![Answer::Integer(1)])
                    );
                    depth += 127;
                }
                let path = format!("${}", "[0]".repeat(depth - 1));
                assert_eq!(
                    run(&mut keys, &["json.arrappend", "k", &path, &level(127)]),
                    Answer::Error(TOO_DEEP.to_string())
                );
                let doc = keys.0[&b"k"[..]].clone();
                assert_eq!(doc.nesting(), depth);
                for command in [
                    &["json.get", "k"][..],
                    &["json.get", "k", "INDENT", " ", "NEWLINE", "\n", "$..*"],
                    &["json.debug", "memory", "k"],
                    &["json.type", "k", "$..[?(@==@)]"],
                    &["json.arrlen", "k", "$..*"],
                    &["json.resp", "k"],
                ] {
                    assert!(!run(&mut keys, command).is_error(), "{command:?}");
                }
                let text = to_text(&doc);
                let stored = super::super::rdb::load(3, &super::super::rdb::save(&doc), usize::MAX);
                assert_eq!(stored.map(|d| to_text(&d)), Ok(text));
                assert_eq!(
                    run(&mut keys, &["json.del", "k", "$[0][0]"]),
                    Answer::Integer(1)
                );
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn number_writes_replay_without_arithmetic() {
        let mut keys = Keys::default();
        run(
            &mut keys,
            &["json.set", "k", "$", r#"{"a":[1,{"b":0.1}],"c":2}"#],
        );
        let args: Vec<&[u8]> = vec![b"k", b"$..*", b"0.2"];
        let outcome = execute("JSON.NUMINCRBY", &args, &mut keys, false);
        assert_eq!(
            outcome.answer,
            Answer::bulk(r#"[null,2.2,1.2,null,0.30000000000000004]"#)
        );
        assert_eq!(outcome.events, vec![(b"k".to_vec(), "json.numincrby")]);
        let mut replica = parse(
            r#"{"a":[1,{"b":0.1}],"c":2}"#,
            ParseLimits::command(usize::MAX),
        )
        .unwrap();
        for write in &outcome.numbers {
            assert!(set_number(&mut replica, &write.path, write.value));
        }
        assert_eq!(to_text(&replica), to_text(&keys.0[&b"k"[..]]));
    }

    #[test]
    fn integers_parse_as_redis_parses_them() {
        for (text, expected) in [
            ("0", Some(0)),
            ("-0", None),
            ("01", None),
            ("+1", None),
            (" 1", None),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775807", Some(i64::MAX)),
            ("9223372036854775808", None),
            ("", None),
            ("-", None),
        ] {
            assert_eq!(parse_integer(text.as_bytes()), expected, "{text}");
        }
    }

    #[test]
    fn mutation_order_is_deepest_and_highest_first() {
        let p = |s: &str| s.split('.').map(String::from).collect::<Vec<_>>();
        let mut paths = vec![p("a"), p("a.0"), p("a.1"), p("b")];
        paths.sort_by(|x, y| mutation_order(x, y));
        assert_eq!(paths, vec![p("a.1"), p("a.0"), p("a"), p("b")]);
        let mut nested = vec![p("a"), p("a.b"), p("c")];
        prepare_for_update(&mut nested);
        assert_eq!(nested, vec![p("a"), p("c")]);
    }
}
