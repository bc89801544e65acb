//! The vocabulary of the command table: what each family declares about its commands, in the
//! terms Redis's COMMAND INFO and COMMAND DOCS report, plus how to run them.

use super::args::{is, Args};
use super::errors::{CmdError, CmdResult};
use super::Ctx;
use crate::protocol::Request;

pub(crate) type Handler = fn(&mut Ctx, Request) -> CmdResult;

/// Runs a run of the command on one key (`cmd::runs`): writes one reply per item, in order, each
/// the one the command alone would have written, calling `after_each` after each with whether
/// that request succeeded.
pub(crate) type RunHandler =
    fn(&mut Ctx, key: &[u8], items: &[&[u8]], after_each: &mut dyn FnMut(bool));

/// Declares a set of named bits: the type, a constant per bit, and the names COMMAND reports,
/// in the order listed (Redis's own).
macro_rules! bit_set {
    (
        $(#[$meta:meta])*
        $set:ident($int:ty) {
            $($(#[$doc:meta])* $bit:ident = $shift:literal => $name:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $set($int);

        impl $set {
            pub const NONE: $set = $set(0);
            $($(#[$doc])* pub const $bit: $set = $set(1 << $shift);)*

            const NAMES: &'static [($set, &'static str)] = &[$(($set::$bit, $name)),*];

            pub const fn or(self, other: $set) -> $set {
                $set(self.0 | other.0)
            }

            pub const fn contains(self, other: $set) -> bool {
                self.0 & other.0 == other.0
            }

            /// The names of the bits set, in the order COMMAND reports them.
            pub fn names(self) -> impl Iterator<Item = &'static str> + Clone {
                $set::NAMES
                    .iter()
                    .filter(move |(bit, _)| self.contains(*bit))
                    .map(|(_, name)| *name)
            }
        }
    };
}

bit_set! {
    /// Redis's command flags, those sieved's commands use.
    Flags(u32) {
        WRITE = 0 => "write",
        READONLY = 1 => "readonly",
        /// Refused while memory is over `maxmemory`.
        DENYOOM = 2 => "denyoom",
        ADMIN = 3 => "admin",
        PUBSUB = 13 => "pubsub",
        NOSCRIPT = 4 => "noscript",
        /// May park its client until a key changes (see `BlockOn`).
        BLOCKING = 14 => "blocking",
        LOADING = 5 => "loading",
        STALE = 6 => "stale",
        SKIP_SLOWLOG = 7 => "skip_slowlog",
        FAST = 8 => "fast",
        /// May run before AUTH.
        NO_AUTH = 9 => "no_auth",
        NO_ASYNC_LOADING = 10 => "no_async_loading",
        /// Refused inside MULTI, which then fails at EXEC.
        NO_MULTI = 11 => "no_multi",
        ALLOW_BUSY = 12 => "allow_busy",
        SKIP_MONITOR = 15 => "skip_monitor",
        MAY_REPLICATE = 16 => "may_replicate",
        NO_MANDATORY_KEYS = 17 => "no_mandatory_keys",
    }
}

/// `bits![Flags: WRITE, DENYOOM]`: a value of one of the sets above from the names of its bits.
macro_rules! bits {
    ($set:ident: $($bit:ident),* $(,)?) => {
        $crate::cmd::spec::$set::NONE$(.or($crate::cmd::spec::$set::$bit))*
    };
}
pub(crate) use bits;

impl Flags {
    /// Not a Redis flag and never reported: runs at once inside MULTI instead of being queued
    /// (EXEC, DISCARD, MULTI, WATCH, QUIT, RESET), which Redis decides by a list in its code.
    pub const NOT_QUEUED: Flags = Flags(1 << 31);
    /// Not a Redis flag and never reported: runs while no other connection runs anything (EXEC
    /// inside MULTI, a script; see `transaction::runs_exclusively`).
    pub const EXCLUSIVE: Flags = Flags(1 << 30);
    /// Not a Redis flag and never reported: a command that only the write log and the
    /// replication stream hold (FQ.LEASE, the form a pop is logged in). Replay and a primary's
    /// link apply it; every client is refused it (`errors::log_only`), inside MULTI too.
    pub const LOG_ONLY: Flags = Flags(1 << 29);
    /// Not a Redis flag and never reported: not a write command, but some of its subcommands
    /// log what they change themselves (FUNCTION LOAD, DELETE and FLUSH), so replay runs it.
    pub const LOGS_ITSELF: Flags = Flags(1 << 28);
}

bit_set! {
    /// ACL categories, those sieved's commands belong to; module categories come last.
    Acl(u32) {
        KEYSPACE = 0 => "@keyspace",
        READ = 1 => "@read",
        WRITE = 2 => "@write",
        SET = 13 => "@set",
        SORTEDSET = 14 => "@sortedset",
        LIST = 15 => "@list",
        HASH = 16 => "@hash",
        STRING = 3 => "@string",
        BITMAP = 12 => "@bitmap",
        PUBSUB = 11 => "@pubsub",
        ADMIN = 4 => "@admin",
        FAST = 5 => "@fast",
        SLOW = 6 => "@slow",
        BLOCKING = 18 => "@blocking",
        DANGEROUS = 7 => "@dangerous",
        CONNECTION = 8 => "@connection",
        TRANSACTION = 9 => "@transaction",
        /// RedisBloom's category, which sieved's own filter commands share.
        BLOOM = 10 => "@bloom",
        /// RedisBloom's category of its cuckoo filter commands.
        CUCKOO = 17 => "@cuckoo",
        /// The category Redis 8's bundled JSON declares for JSON.* (RedisJSON 2.8 has none).
        JSON = 19 => "@json",
        /// RedisBloom's categories of its Count-Min sketch, Top-K and t-digest commands.
        CMS = 20 => "@cms",
        TOPK = 21 => "@topk",
        TDIGEST = 22 => "@tdigest",
        SCRIPTING = 23 => "@scripting",
    }
}

impl Acl {
    /// The category's name without its `@`, as ACL CAT and COMMAND LIST FILTERBY ACLCAT spell it.
    pub(crate) fn find(name: &[u8]) -> Option<Acl> {
        Acl::NAMES
            .iter()
            .find(|(_, known)| known.as_bytes()[1..].eq_ignore_ascii_case(name))
            .map(|(category, _)| *category)
    }
}

bit_set! {
    /// What a command does with the keys a key specification finds.
    KeyFlags(u16) {
        RO = 0 => "RO",
        RW = 1 => "RW",
        OW = 2 => "OW",
        RM = 3 => "RM",
        ACCESS = 4 => "access",
        UPDATE = 5 => "update",
        INSERT = 6 => "insert",
        DELETE = 7 => "delete",
        VARIABLE_FLAGS = 8 => "variable_flags",
    }
}

bit_set! {
    /// What COMMAND DOCS says of a command besides its text: deprecated, or internal (a
    /// command only servers send each other).
    DocFlags(u8) {
        DEPRECATED = 0 => "deprecated",
        SYSCMD = 1 => "syscmd",
    }
}

/// Where a command's keys are, as Redis 7's key specifications say it: from the argument at
/// `index`, up to `last_key` further on (counted from the end when negative), every `step`.
/// sieved's commands need no other kind of search.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    pub flags: KeyFlags,
    pub index: i32,
    pub last_key: i32,
    pub step: i32,
    pub notes: Option<&'static str>,
}

impl KeySpec {
    pub(crate) const fn range(flags: KeyFlags, index: i32, last_key: i32, step: i32) -> KeySpec {
        KeySpec {
            flags,
            index,
            last_key,
            step,
            notes: None,
        }
    }

    pub(crate) const fn notes(mut self, notes: &'static str) -> KeySpec {
        self.notes = Some(notes);
        self
    }

    /// The positions of the keys in a request of `argc` words, or None when they would run
    /// past its end (Redis's "Invalid arguments specified for command").
    pub(crate) fn positions(&self, argc: usize) -> Option<impl Iterator<Item = usize>> {
        let argc = argc as i64;
        let first = i64::from(self.index);
        let last = if self.last_key >= 0 {
            first + i64::from(self.last_key)
        } else {
            argc + i64::from(self.last_key)
        };
        if first < 1 || first >= argc || last >= argc || last < first || self.step < 1 {
            return None;
        }
        Some((first as usize..=last as usize).step_by(self.step as usize))
    }
}

/// A family's commands, one line each, as dragonfly's `RegisterStringFamily` lists a family:
///
/// ```text
/// pub(super) const SPECS: &[CommandSpec] = &command_table! { Bloom:
///     // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
///     "bf.add", 3, [WRITE, DENYOOM], WRITE_KEY, [WRITE, BLOOM], add, docs::ADD, runs(add_run);
///     Server: "slowlog", -2, [], &[], [], slowlog, docs::SLOWLOG, subcommands(SUBCOMMANDS);
/// };
/// ```
///
/// The group after the brace is every line's, unless a line names its own before the name.
/// Flags and categories are the names of `Flags`' and `Acl`'s bits; key specs a `&[KeySpec]`;
/// docs a `Docs` (summary, since, complexity, arguments), written in the family's `mod docs`
/// below its table; `more` are `CommandSpec`'s other builders (`runs`, `tips`, `subcommands`).
/// rustfmt leaves the table as written: a line too long for 100 columns goes on on the next,
/// indented.
macro_rules! command_table {
    (@group $group:ident $($default:ident)?) => {
        $crate::cmd::spec::Group::$group
    };
    ($default:ident: $(
        $($group:ident:)? $name:literal, $arity:literal, [$($flag:ident),*], $keys:expr,
        [$($acl:ident),*], $handler:expr, $docs:expr $(, $more:ident($($value:expr),*))*;
    )*) => {
        [$(
            $crate::cmd::spec::CommandSpec::declare(
                $name,
                $arity,
                $crate::cmd::spec::command_table!(@group $($group)? $default),
                $crate::cmd::spec::bits![Flags: $($flag),*],
                $keys,
                $crate::cmd::spec::bits![Acl: $($acl),*],
                $handler,
                $docs,
            )$(.$more($($value),*))*
        ),*]
    };
}
pub(crate) use command_table;

/// Redis's command groups. Module commands report `module` and the module's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Generic,
    String,
    Bitmap,
    Connection,
    Server,
    Transactions,
    Pubsub,
    List,
    Set,
    SortedSet,
    Hash,
    Scripting,
    /// A command RedisBloom would provide (module `bf`): BF.*, and sieved's CBF.* and SIEVED.*.
    Bloom,
    /// A command RedisJSON provides (module `ReJSON`): JSON.*.
    Json,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Generic => "generic",
            Group::String => "string",
            Group::Bitmap => "bitmap",
            Group::Connection => "connection",
            Group::Server => "server",
            Group::Transactions => "transactions",
            Group::Pubsub => "pubsub",
            Group::List => "list",
            Group::Set => "set",
            Group::SortedSet => "sorted-set",
            Group::Hash => "hash",
            Group::Scripting => "scripting",
            Group::Bloom | Group::Json => "module",
        }
    }

    pub fn module(self) -> Option<&'static str> {
        match self {
            Group::Bloom => Some("bf"),
            Group::Json => Some("ReJSON"),
            _ => None,
        }
    }
}

/// An argument's type, as COMMAND DOCS names it; blocks and choices hold their arguments.
#[derive(Debug, Clone, Copy)]
pub enum ArgType {
    String,
    Integer,
    Double,
    /// A key, and the index of the key specification that finds it.
    Key(u8),
    Pattern,
    UnixTime,
    PureToken,
    OneOf(&'static [Arg]),
    Block(&'static [Arg]),
}

impl ArgType {
    pub fn name(self) -> &'static str {
        match self {
            ArgType::String => "string",
            ArgType::Integer => "integer",
            ArgType::Double => "double",
            ArgType::Key(_) => "key",
            ArgType::Pattern => "pattern",
            ArgType::UnixTime => "unix-time",
            ArgType::PureToken => "pure-token",
            ArgType::OneOf(_) => "oneof",
            ArgType::Block(_) => "block",
        }
    }
}

/// One argument of a command, as COMMAND DOCS reports it.
#[derive(Debug, Clone, Copy)]
pub struct Arg {
    pub name: &'static str,
    pub kind: ArgType,
    /// The keyword written before the value (or alone, for a pure token).
    pub token: Option<&'static str>,
    pub summary: Option<&'static str>,
    pub since: Option<&'static str>,
    pub deprecated_since: Option<&'static str>,
    pub optional: bool,
    pub multiple: bool,
    /// Repeated with its token each time (`GET enc off GET enc off`), not once before all.
    pub multiple_token: bool,
}

const fn arg(name: &'static str, kind: ArgType) -> Arg {
    Arg {
        name,
        kind,
        token: None,
        summary: None,
        since: None,
        deprecated_since: None,
        optional: false,
        multiple: false,
        multiple_token: false,
    }
}

pub(crate) const fn key(name: &'static str) -> Arg {
    arg(name, ArgType::Key(0))
}
pub(crate) const fn string(name: &'static str) -> Arg {
    arg(name, ArgType::String)
}
pub(crate) const fn integer(name: &'static str) -> Arg {
    arg(name, ArgType::Integer)
}
pub(crate) const fn double(name: &'static str) -> Arg {
    arg(name, ArgType::Double)
}
pub(crate) const fn pattern(name: &'static str) -> Arg {
    arg(name, ArgType::Pattern)
}
pub(crate) const fn unix_time(name: &'static str) -> Arg {
    arg(name, ArgType::UnixTime)
}
/// A keyword standing alone: `pure_token("nx", "NX")`.
pub(crate) const fn pure_token(name: &'static str, token: &'static str) -> Arg {
    arg(name, ArgType::PureToken).token(token)
}
pub(crate) const fn one_of(name: &'static str, choices: &'static [Arg]) -> Arg {
    arg(name, ArgType::OneOf(choices))
}
pub(crate) const fn block(name: &'static str, parts: &'static [Arg]) -> Arg {
    arg(name, ArgType::Block(parts))
}

impl Arg {
    pub(crate) const fn token(mut self, token: &'static str) -> Arg {
        self.token = Some(token);
        self
    }
    /// What the value means, where its name does not say (its unit, say).
    pub(crate) const fn summary(mut self, summary: &'static str) -> Arg {
        self.summary = Some(summary);
        self
    }
    pub(crate) const fn since(mut self, version: &'static str) -> Arg {
        self.since = Some(version);
        self
    }
    pub(crate) const fn deprecated_since(mut self, version: &'static str) -> Arg {
        self.deprecated_since = Some(version);
        self
    }
    pub(crate) const fn optional(mut self) -> Arg {
        self.optional = true;
        self
    }
    pub(crate) const fn multiple(mut self) -> Arg {
        self.multiple = true;
        self
    }
    /// Repeatable, each time with its token.
    pub(crate) const fn multiple_token(mut self) -> Arg {
        self.multiple = true;
        self.multiple_token = true;
        self
    }
    /// For a key: which key specification finds it (the second key of RENAME is 1).
    pub(crate) const fn key_spec(mut self, index: u8) -> Arg {
        self.kind = ArgType::Key(index);
        self
    }
}

/// The version of sieved its own commands (CBF.*, TBF.*, FQ.*, BF.MERGE, SIEVED.*, ...) came
/// in: what their `since` says.
pub(crate) const FIRST_RELEASE: &str = "0.1.0";

/// What COMMAND DOCS reports of a command or a subcommand, besides its name and group: the
/// facts of Redis's `src/commands/*.json` for Redis's commands, in Redis 8's words.
#[derive(Debug, Clone, Copy)]
pub struct Docs {
    /// Empty when undocumented (and then left out of COMMAND DOCS, as `since`).
    pub summary: &'static str,
    pub since: &'static str,
    pub complexity: Option<&'static str>,
    pub doc_flags: DocFlags,
    pub deprecated_since: Option<&'static str>,
    pub replaced_by: Option<&'static str>,
    /// The versions that changed the command, and how, oldest first.
    pub history: &'static [(&'static str, &'static str)],
    pub args: &'static [Arg],
}

impl Docs {
    pub(crate) const fn new(summary: &'static str) -> Docs {
        Docs {
            summary,
            since: "1.0.0",
            complexity: None,
            doc_flags: DocFlags::NONE,
            deprecated_since: None,
            replaced_by: None,
            history: &[],
            args: &[],
        }
    }
    pub(crate) const fn since(mut self, version: &'static str) -> Docs {
        self.since = version;
        self
    }
    pub(crate) const fn complexity(mut self, complexity: &'static str) -> Docs {
        self.complexity = Some(complexity);
        self
    }
    pub(crate) const fn doc_flags(mut self, flags: DocFlags) -> Docs {
        self.doc_flags = self.doc_flags.or(flags);
        self
    }
    /// Deprecated since `since`: what to use instead.
    pub(crate) const fn deprecated(
        mut self,
        since: &'static str,
        replaced_by: &'static str,
    ) -> Docs {
        self.doc_flags = self.doc_flags.or(DocFlags::DEPRECATED);
        self.deprecated_since = Some(since);
        self.replaced_by = Some(replaced_by);
        self
    }
    pub(crate) const fn history(
        mut self,
        history: &'static [(&'static str, &'static str)],
    ) -> Docs {
        self.history = history;
        self
    }
    pub(crate) const fn args(mut self, args: &'static [Arg]) -> Docs {
        self.args = args;
        self
    }
    /// A module command its module gives no documentation: COMMAND DOCS then has only its
    /// group and module, as Redis reports such a command.
    pub(crate) const fn undocumented() -> Docs {
        let mut docs = Docs::new("");
        docs.since = "";
        docs
    }
}

/// What COMMAND reports about a command, and how to run it.
#[derive(Clone, Copy)]
pub struct CommandSpec {
    /// Lower case, as Redis reports it.
    pub name: &'static str,
    /// Exact argument count including the name when positive; a minimum when negative.
    pub arity: i32,
    pub flags: Flags,
    /// The first and last key's positions (last negative: counted from the end), and the step:
    /// Redis's legacy summary of `key_specs`.
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub key_specs: &'static [KeySpec],
    /// Declared categories; `acl_categories` adds those Redis derives from the flags.
    pub acl: Acl,
    pub group: Group,
    pub docs: Docs,
    /// A container's subcommands (`config|get`), each documented as a command is.
    pub subcommands: &'static [(&'static str, Docs)],
    /// Hints for cluster clients (`request_policy:multi_shard`), as COMMAND INFO lists them.
    pub tips: &'static [&'static str],
    pub(crate) handler: Handler,
    /// Set for the commands whose consecutive requests on one key may run as one (`cmd::runs`).
    pub(crate) run: Option<RunHandler>,
}

impl CommandSpec {
    /// A command with no keys, flags or categories yet; each family adds what applies.
    pub(crate) const fn new(
        name: &'static str,
        arity: i32,
        group: Group,
        summary: &'static str,
        handler: Handler,
    ) -> CommandSpec {
        CommandSpec {
            name,
            arity,
            flags: Flags::NONE,
            first_key: 0,
            last_key: 0,
            step: 0,
            key_specs: &[],
            acl: Acl::NONE,
            group,
            docs: Docs::new(summary),
            subcommands: &[],
            tips: &[],
            handler,
            run: None,
        }
    }

    /// One line of a family's table (`command_table!`): what dispatch, COMMAND INFO and the
    /// ACL categories need, and what COMMAND DOCS says. A command without keys gives `&[]`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) const fn declare(
        name: &'static str,
        arity: i32,
        group: Group,
        flags: Flags,
        keys: &'static [KeySpec],
        acl: Acl,
        handler: Handler,
        docs: Docs,
    ) -> CommandSpec {
        let mut spec = CommandSpec::new(name, arity, group, "", handler)
            .flags(flags)
            .acl(acl);
        if !keys.is_empty() {
            spec = spec.key_specs(keys);
        }
        spec.docs = docs;
        spec
    }

    /// Lets consecutive requests of the command on one key run as one (`cmd::runs`).
    pub(crate) const fn runs(mut self, run: RunHandler) -> CommandSpec {
        self.run = Some(run);
        self
    }

    pub(crate) const fn flags(mut self, flags: Flags) -> CommandSpec {
        self.flags = flags;
        self
    }
    /// Sets the key specifications, and the legacy range Redis derives from them: from the
    /// first specification's key to the last one's.
    pub(crate) const fn key_specs(mut self, specs: &'static [KeySpec]) -> CommandSpec {
        let (first, last) = (specs[0], specs[specs.len() - 1]);
        self.key_specs = specs;
        self.first_key = first.index;
        self.last_key = if last.last_key < 0 {
            last.last_key
        } else {
            last.index + last.last_key
        };
        self.step = first.step;
        self
    }
    pub(crate) const fn acl(mut self, acl: Acl) -> CommandSpec {
        self.acl = acl;
        self
    }
    pub(crate) const fn since(mut self, version: &'static str) -> CommandSpec {
        self.docs = self.docs.since(version);
        self
    }
    pub(crate) const fn complexity(mut self, complexity: &'static str) -> CommandSpec {
        self.docs = self.docs.complexity(complexity);
        self
    }
    pub(crate) const fn doc_flags(mut self, flags: DocFlags) -> CommandSpec {
        self.docs = self.docs.doc_flags(flags);
        self
    }
    pub(crate) const fn deprecated(
        mut self,
        since: &'static str,
        replaced_by: &'static str,
    ) -> CommandSpec {
        self.docs = self.docs.deprecated(since, replaced_by);
        self
    }
    pub(crate) const fn history(
        mut self,
        history: &'static [(&'static str, &'static str)],
    ) -> CommandSpec {
        self.docs = self.docs.history(history);
        self
    }
    pub(crate) const fn args(mut self, args: &'static [Arg]) -> CommandSpec {
        self.docs = self.docs.args(args);
        self
    }
    pub(crate) const fn subcommands(
        mut self,
        subcommands: &'static [(&'static str, Docs)],
    ) -> CommandSpec {
        self.subcommands = subcommands;
        self
    }
    pub(crate) const fn tips(mut self, tips: &'static [&'static str]) -> CommandSpec {
        self.tips = tips;
        self
    }

    pub fn writes(&self) -> bool {
        self.flags.contains(Flags::WRITE)
    }

    /// Whether `argc` words (the name included) fit the arity.
    pub fn arity_fits(&self, argc: usize) -> bool {
        arity_fits(self.arity, argc)
    }

    /// The categories COMMAND INFO reports. Like Redis, a built-in command also gets those its
    /// flags imply (and @slow unless @fast); a module command reports only what it declared.
    pub fn acl_categories(&self) -> Acl {
        if self.group.module().is_some() {
            return self.acl;
        }
        let mut acl = self.acl;
        for (flag, implied) in [
            (Flags::WRITE, Acl::WRITE),
            (Flags::READONLY, Acl::READ),
            (Flags::ADMIN, Acl::ADMIN.or(Acl::DANGEROUS)),
            (Flags::FAST, Acl::FAST),
            (Flags::BLOCKING, Acl::BLOCKING),
        ] {
            if self.flags.contains(flag) {
                acl = acl.or(implied);
            }
        }
        if !acl.contains(Acl::FAST) {
            acl = acl.or(Acl::SLOW);
        }
        acl
    }
}

/// Whether `argc` words fit `arity`: exactly that many when positive, at least when negative.
pub(crate) fn arity_fits(arity: i32, argc: usize) -> bool {
    match usize::try_from(arity) {
        Ok(exact) => argc == exact,
        Err(_) => argc >= arity.unsigned_abs() as usize,
    }
}

/// What to do for a container command's subcommand, `request`'s second word, found in `table`
/// of (name, arity, what to do); Redis's errors for an unknown one and for the wrong number of
/// arguments, which name it `container|name`.
pub(super) fn find_subcommand<'t, T>(
    request: &Request,
    container: &str,
    table: &'t [(&str, i32, T)],
) -> Result<&'t T, CmdError> {
    let sub = Args::new(*request, 1).required()?;
    let (name, arity, found) = table
        .iter()
        .find(|(name, _, _)| is(sub, name))
        .ok_or_else(|| CmdError::unknown_subcommand(sub, container))?;
    if !arity_fits(*arity, request.len()) {
        let container = container.to_ascii_lowercase();
        return Err(CmdError::arity(&format!("{container}|{name}")));
    }
    Ok(found)
}

/// The families' tables as one array, in order, built at compile time.
pub(crate) const fn concat<const N: usize>(families: &[&[CommandSpec]]) -> [CommandSpec; N] {
    let mut all = [families[0][0]; N];
    let mut at = 0;
    let mut family = 0;
    while family < families.len() {
        let mut i = 0;
        while i < families[family].len() {
            all[at] = families[family][i];
            at += 1;
            i += 1;
        }
        family += 1;
    }
    assert!(at == N, "the table's length is the sum of the families'");
    all
}

pub(crate) const fn total(families: &[&[CommandSpec]]) -> usize {
    let mut sum = 0;
    let mut family = 0;
    while family < families.len() {
        sum += families[family].len();
        family += 1;
    }
    sum
}
