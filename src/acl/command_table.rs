//! The commands and categories ACL rules name, given to the engine as data: each command's name,
//! its categories, whether it may run before authentication, whether a module brings it, and its
//! subcommands. Rules resolve against this table, and a selector's bitmap is indexed by the ids it
//! hands out, so the engine knows nothing of how commands run.

use std::collections::HashMap;

/// Redis's own categories, in the order ACL CAT lists them (a module's come after).
pub const STANDARD_CATEGORIES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// Redis keeps a category as one bit of a 64-bit word.
pub const MAX_CATEGORIES: usize = 64;

/// What the table is built from: one command, or one subcommand of a container.
#[derive(Debug, Clone, Default)]
pub struct CommandInfo {
    /// For a subcommand the container's name is not repeated: `get`, not `config|get`.
    pub name: String,
    /// Category names without their `@`; a name the table does not list is an error.
    pub categories: Vec<String>,
    /// Runs before authentication (AUTH, HELLO...): Redis never denies such a command by rule.
    pub no_auth: bool,
    /// Brought by a module: Redis 7.4's `ACL CAT <category>` leaves these out.
    pub module: bool,
    pub subcommands: Vec<CommandInfo>,
}

/// The index of a command or subcommand in the table, and of its bit in a selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommandId(pub(crate) u32);

impl CommandId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Debug)]
struct Entry {
    /// `get`, or `config|get` for a subcommand: the name rules and NOPERM replies use.
    fullname: String,
    categories: u64,
    no_auth: bool,
    module: bool,
    parent: Option<CommandId>,
    subcommands: Vec<CommandId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableError {
    TooManyCategories,
    UnknownCategory { command: String, category: String },
    DuplicateCommand(String),
}

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TableError::TooManyCategories => {
                write!(f, "more than {MAX_CATEGORIES} ACL categories")
            }
            TableError::UnknownCategory { command, category } => {
                write!(
                    f,
                    "command '{command}' names an unknown ACL category '{category}'"
                )
            }
            TableError::DuplicateCommand(name) => write!(f, "command '{name}' is listed twice"),
        }
    }
}

impl std::error::Error for TableError {}

#[derive(Debug)]
pub struct CommandTable {
    categories: Vec<String>,
    entries: Vec<Entry>,
    /// Lower-case full names (`config|get` too) to ids.
    by_name: HashMap<String, CommandId>,
}

impl CommandTable {
    /// `categories` in ACL CAT's order (usually `STANDARD_CATEGORIES` and then the modules'),
    /// and every command, each followed by its subcommands in the ids it is given.
    pub fn new(categories: &[&str], commands: &[CommandInfo]) -> Result<CommandTable, TableError> {
        if categories.len() > MAX_CATEGORIES {
            return Err(TableError::TooManyCategories);
        }
        let mut table = CommandTable {
            categories: categories.iter().map(|c| c.to_ascii_lowercase()).collect(),
            entries: Vec::new(),
            by_name: HashMap::new(),
        };
        for command in commands {
            let id = table.add(command, None)?;
            for sub in &command.subcommands {
                let sub_id = table.add(sub, Some(id))?;
                table.entries[id.index()].subcommands.push(sub_id);
            }
        }
        Ok(table)
    }

    fn add(
        &mut self,
        info: &CommandInfo,
        parent: Option<CommandId>,
    ) -> Result<CommandId, TableError> {
        let name = info.name.to_ascii_lowercase();
        let fullname = match parent {
            Some(parent) => format!("{}|{}", self.entries[parent.index()].fullname, name),
            None => name,
        };
        let mut categories = 0u64;
        for category in &info.categories {
            let bit = self.category_bit(category.as_bytes()).ok_or_else(|| {
                TableError::UnknownCategory {
                    command: fullname.clone(),
                    category: category.clone(),
                }
            })?;
            categories |= bit;
        }
        let id = CommandId(self.entries.len() as u32);
        if self.by_name.insert(fullname.clone(), id).is_some() {
            return Err(TableError::DuplicateCommand(fullname));
        }
        self.entries.push(Entry {
            fullname,
            categories,
            no_auth: info.no_auth,
            module: info.module,
            parent,
            subcommands: Vec::new(),
        });
        Ok(id)
    }

    /// How many commands and subcommands: the width of a selector's bitmap.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The categories, as `ACL CAT` lists them.
    pub fn categories(&self) -> impl ExactSizeIterator<Item = &str> {
        self.categories.iter().map(String::as_str)
    }

    /// A category's bit, its name matched without regard to ASCII case.
    pub(crate) fn category_bit(&self, name: &[u8]) -> Option<u64> {
        self.categories
            .iter()
            .position(|known| known.as_bytes().eq_ignore_ascii_case(name))
            .map(|index| 1u64 << index)
    }

    /// `ACL CAT <category>`: the full names of the commands and subcommands in it, those of
    /// modules left out as Redis 7.4 does; None for an unknown category.
    pub fn commands_in(&self, category: &[u8]) -> Option<Vec<&str>> {
        let bit = self.category_bit(category)?;
        Some(
            self.entries
                .iter()
                .filter(|entry| entry.categories & bit != 0)
                .filter(|entry| !self.is_module(entry))
                .map(|entry| entry.fullname.as_str())
                .collect(),
        )
    }

    fn is_module(&self, entry: &Entry) -> bool {
        entry.module
            || entry
                .parent
                .is_some_and(|parent| self.entries[parent.index()].module)
    }

    /// The message of `ACL CAT` with an unknown category, as Redis words it (the name cut at
    /// 128 bytes).
    pub fn unknown_category_message(category: &[u8]) -> Vec<u8> {
        let mut message = b"Unknown category '".to_vec();
        message.extend_from_slice(&c_str(category)[..c_str(category).len().min(128)]);
        message.push(b'\'');
        message
    }

    /// A command by the name a rule gives it, `get` or `config|get`, in any case: a name with a
    /// `|` must name a subcommand of a container, as Redis's lookup by full name requires.
    pub fn lookup(&self, name: &[u8]) -> Option<CommandId> {
        let mut parts = name.split(|&b| b == b'|');
        let first = parts.next()?;
        let second = parts.next();
        if parts.next().is_some() {
            return None;
        }
        let base = self.by_name(first)?;
        match second {
            None => Some(base),
            Some(sub) => {
                if self.entries[base.index()].subcommands.is_empty() {
                    return None;
                }
                self.subcommand(base, sub)
            }
        }
    }

    /// The command a request runs, as Redis finds it: the first word, and for a container with
    /// at least two words, the subcommand the second names (None when it names none).
    pub fn resolve(&self, args: &[&[u8]]) -> Option<CommandId> {
        let base = self.by_name(args.first()?)?;
        if args.len() == 1 || self.entries[base.index()].subcommands.is_empty() {
            return Some(base);
        }
        self.subcommand(base, args[1])
    }

    fn by_name(&self, name: &[u8]) -> Option<CommandId> {
        if name.contains(&b'|') {
            return None;
        }
        let lower = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        self.by_name.get(&lower).copied()
    }

    fn subcommand(&self, parent: CommandId, name: &[u8]) -> Option<CommandId> {
        let name = std::str::from_utf8(name).ok()?;
        let full =
            format!("{}|{}", self.entries[parent.index()].fullname, name).to_ascii_lowercase();
        self.by_name.get(&full).copied()
    }

    pub fn fullname(&self, id: CommandId) -> &str {
        &self.entries[id.index()].fullname
    }

    pub fn parent(&self, id: CommandId) -> Option<CommandId> {
        self.entries[id.index()].parent
    }

    pub fn subcommands(&self, id: CommandId) -> &[CommandId] {
        &self.entries[id.index()].subcommands
    }

    pub fn runs_before_auth(&self, id: CommandId) -> bool {
        self.entries[id.index()].no_auth
    }

    pub(crate) fn ids(&self) -> impl Iterator<Item = CommandId> {
        (0..self.entries.len() as u32).map(CommandId)
    }

    pub(crate) fn in_category(&self, id: CommandId, bit: u64) -> bool {
        self.entries[id.index()].categories & bit != 0
    }
}

/// A rule as Redis's C string functions see it: up to its first NUL byte.
pub(crate) fn c_str(bytes: &[u8]) -> &[u8] {
    match bytes.iter().position(|&b| b == 0) {
        Some(end) => &bytes[..end],
        None => bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, categories: &[&str], subcommands: Vec<CommandInfo>) -> CommandInfo {
        CommandInfo {
            name: name.into(),
            categories: categories.iter().map(|c| c.to_string()).collect(),
            subcommands,
            ..CommandInfo::default()
        }
    }

    fn table() -> CommandTable {
        let config = info(
            "config",
            &["slow"],
            vec![
                info("get", &["admin", "slow"], vec![]),
                info("SET", &["admin"], vec![]),
            ],
        );
        CommandTable::new(
            &STANDARD_CATEGORIES,
            &[info("get", &["read", "string"], vec![]), config],
        )
        .unwrap()
    }

    #[test]
    fn names_resolve_in_any_case_and_subcommands_only_under_containers() {
        let table = table();
        let get = table.lookup(b"GET").unwrap();
        assert_eq!(table.fullname(get), "get");
        let set = table.lookup(b"Config|Set").unwrap();
        assert_eq!(table.fullname(set), "config|set");
        assert_eq!(table.parent(set), table.lookup(b"config"));
        assert_eq!(table.lookup(b"get|x"), None);
        assert_eq!(table.lookup(b"config|nosuch"), None);
        assert_eq!(table.lookup(b"config|get|x"), None);
        assert_eq!(table.lookup(b"config|"), None);
        assert_eq!(table.lookup(b""), None);
        assert_eq!(
            table.resolve(&[b"config", b"GET", b"x"]),
            Some(table.lookup(b"config|get").unwrap())
        );
        assert_eq!(table.resolve(&[b"config"]), table.lookup(b"config"));
        assert_eq!(table.resolve(&[b"config", b"nosuch"]), None);
        assert_eq!(table.resolve(&[b"get", b"k"]), Some(get));
    }

    #[test]
    fn categories_list_their_commands_and_refuse_unknown_names() {
        let table = table();
        assert_eq!(
            table.commands_in(b"ADMIN").unwrap(),
            ["config|get", "config|set"]
        );
        assert_eq!(
            table.commands_in(b"slow").unwrap(),
            ["config", "config|get"]
        );
        assert_eq!(table.commands_in(b"nosuch"), None);
        assert_eq!(
            CommandTable::unknown_category_message(b"x\0y"),
            b"Unknown category 'x'"
        );
        let long = [b'a'; 200];
        assert_eq!(
            CommandTable::unknown_category_message(&long).len(),
            18 + 128 + 1
        );
        let bad = CommandTable::new(&["read"], &[info("get", &["write"], vec![])]);
        assert!(matches!(bad, Err(TableError::UnknownCategory { .. })));
    }
}
