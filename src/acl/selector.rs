//! One set of permissions: which commands, which keys (for reading, writing or both), which
//! channels. A user has a root selector and any number of `(...)` selectors; a command runs when
//! one of them allows all of it.
//!
//! Commands are kept as Redis 7.4 keeps them: a bitmap over the table's ids, a flag for
//! `allcommands`, a bit for "commands added later" that only `+@all` sets, first arguments
//! allowed for a command otherwise denied (`+select|0`), and the ordered list of the command and
//! category rules that built the bitmap, which is how the selector is described back.

use super::command_table::{c_str, CommandId, CommandTable};
use super::rules::{is_c_space, split_args, RuleError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    pub pattern: Vec<u8>,
    pub read: bool,
    pub write: bool,
}

impl KeyPattern {
    /// `~pat`, `%R~pat` or `%W~pat`, as ACL LIST and GETUSER print it.
    fn describe(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(match (self.read, self.write) {
            (true, false) => b"%R~".as_slice(),
            (false, true) => b"%W~",
            _ => b"~",
        });
        out.extend_from_slice(&self.pattern);
    }
}

/// A selector's three fields in ACL GETUSER, in their order there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorDescription {
    /// `+@all` or `-@all`, then the command and category rules in force.
    pub commands: Vec<u8>,
    /// `~*`, or the patterns (`~p`, `%R~p`, `%W~p`) separated by spaces.
    pub keys: Vec<u8>,
    /// `&*`, or the patterns (`&p`) separated by spaces.
    pub channels: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    all_keys: bool,
    all_channels: bool,
    all_commands: bool,
    /// Set by `+@all` only: the user may also run commands the table does not list yet.
    future_commands: bool,
    allowed: Vec<u64>,
    first_args: Vec<(CommandId, Vec<Vec<u8>>)>,
    keys: Vec<KeyPattern>,
    channels: Vec<Vec<u8>>,
    /// The command and category rules in force, in order, each `+name` or `-name` in lower
    /// case, as Redis's `command_rules`.
    command_rules: Vec<Vec<u8>>,
}

impl Selector {
    /// A selector that allows nothing; `all_channels` is `acl-pubsub-default allchannels`.
    pub(crate) fn new(table: &CommandTable, all_channels: bool) -> Selector {
        Selector {
            all_keys: false,
            all_channels,
            all_commands: false,
            future_commands: false,
            allowed: vec![0; table.len().div_ceil(64)],
            first_args: Vec::new(),
            keys: Vec::new(),
            channels: Vec::new(),
            command_rules: Vec::new(),
        }
    }

    /// A `(...)` selector: the rules between the parentheses, split as Redis splits them.
    pub(crate) fn from_parenthesized(
        op: &[u8],
        table: &CommandTable,
        all_channels: bool,
    ) -> Result<Selector, RuleError> {
        let mut selector = Selector::new(table, all_channels);
        // Unbalanced quotes give no rules at all, and so an empty selector, as in Redis.
        for rule in split_args(&op[1..op.len() - 1]).unwrap_or_default() {
            selector.apply(&rule, table)?;
        }
        Ok(selector)
    }

    pub fn all_keys(&self) -> bool {
        self.all_keys
    }

    pub fn all_channels(&self) -> bool {
        self.all_channels
    }

    pub fn all_commands(&self) -> bool {
        self.all_commands
    }

    pub fn key_patterns(&self) -> &[KeyPattern] {
        &self.keys
    }

    pub fn channel_patterns(&self) -> &[Vec<u8>] {
        &self.channels
    }

    pub(crate) fn allows_bit(&self, id: CommandId) -> bool {
        self.allowed[id.index() / 64] & (1 << (id.index() % 64)) != 0
    }

    pub(crate) fn first_args(&self, id: CommandId) -> Option<&[Vec<u8>]> {
        self.first_args
            .iter()
            .find(|(command, _)| *command == id)
            .map(|(_, args)| args.as_slice())
    }

    fn set_bit(&mut self, id: CommandId, allow: bool) {
        let (word, bit) = (id.index() / 64, 1u64 << (id.index() % 64));
        if allow {
            self.allowed[word] |= bit;
        } else {
            self.allowed[word] &= !bit;
            self.all_commands = false;
        }
    }

    /// A command and all its subcommands, as `ACLChangeSelectorPerm`.
    fn change_command(&mut self, table: &CommandTable, id: CommandId, allow: bool) {
        self.set_bit(id, allow);
        self.first_args.retain(|(command, _)| *command != id);
        for &sub in table.subcommands(id) {
            self.set_bit(sub, allow);
        }
    }

    /// Records `+rule` or `-rule` after dropping any earlier rule for the same command (or one of
    /// its subcommands, or the same category), so the list stays the shortest that rebuilds the
    /// bitmap.
    fn record_rule(&mut self, rule: &[u8], allow: bool) {
        let rule = rule.to_ascii_lowercase();
        self.command_rules.retain(|existing| {
            let name = &existing[1..];
            !(name == rule.as_slice()
                || (name.len() > rule.len() && name.starts_with(&rule) && name[rule.len()] == b'|'))
        });
        let mut recorded = Vec::with_capacity(rule.len() + 1);
        recorded.push(if allow { b'+' } else { b'-' });
        recorded.extend_from_slice(&rule);
        self.command_rules.push(recorded);
    }

    fn set_all_commands(&mut self, allow: bool) {
        self.allowed.fill(if allow { u64::MAX } else { 0 });
        self.all_commands = allow;
        self.future_commands = allow;
        self.command_rules.clear();
        self.first_args.clear();
    }

    /// Applies one rule that a selector understands (`ACLSetSelector`).
    pub(crate) fn apply(&mut self, op: &[u8], table: &CommandTable) -> Result<(), RuleError> {
        let word = c_str(op);
        let is = |keyword: &str| word.eq_ignore_ascii_case(keyword.as_bytes());
        if is("allkeys") || word == b"~*" {
            self.all_keys = true;
            self.keys.clear();
        } else if is("resetkeys") {
            self.all_keys = false;
            self.keys.clear();
        } else if is("allchannels") || word == b"&*" {
            self.all_channels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.set_all_commands(true);
        } else if is("nocommands") || is("-@all") {
            self.set_all_commands(false);
        } else if op.first() == Some(&b'~') || op.first() == Some(&b'%') {
            self.add_key_pattern(op)?;
        } else if op.first() == Some(&b'&') {
            if self.all_channels {
                return Err(RuleError::ChannelPatternAfterAll);
            }
            let pattern = &op[1..];
            if has_space_or_nul(pattern) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.iter().any(|known| known == pattern) {
                self.channels.push(pattern.to_vec());
            }
            self.all_channels = false;
        } else if word.first() == Some(&b'+') && word.get(1) != Some(&b'@') {
            self.allow_command(&word[1..], table)?;
        } else if word.first() == Some(&b'-') && word.get(1) != Some(&b'@') {
            let id = table.lookup(&word[1..]).ok_or(RuleError::UnknownName)?;
            self.change_command(table, id, false);
            self.record_rule(table.fullname(id).as_bytes(), false);
        } else if matches!(word.first(), Some(b'+' | b'-')) {
            let allow = word[0] == b'+';
            let bit = table
                .category_bit(&word[2..])
                .ok_or(RuleError::UnknownName)?;
            self.record_rule(&word[1..], allow);
            for id in table.ids() {
                if table.in_category(id, bit) {
                    self.change_command(table, id, allow);
                }
            }
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// `~pattern`, `%R~pattern`, `%W~pattern`, `%RW~pattern`.
    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeyPatternAfterAll);
        }
        let (mut read, mut write) = (true, true);
        let mut offset = 1;
        if op[0] == b'%' {
            (read, write) = (false, false);
            while offset < op.len() {
                match op[offset] {
                    b'R' | b'r' if !read => read = true,
                    b'W' | b'w' if !write => write = true,
                    b'~' if read || write => {
                        offset += 1;
                        break;
                    }
                    _ => return Err(RuleError::Syntax),
                }
                offset += 1;
            }
            // Redis 7.4 takes a lone `%` as a pattern with no permission, and then aborts when
            // it describes the user; sieved refuses it.
            if !read && !write {
                return Err(RuleError::Syntax);
            }
        }
        let pattern = &op[offset..];
        if has_space_or_nul(pattern) {
            return Err(RuleError::Syntax);
        }
        match self.keys.iter_mut().find(|known| known.pattern == pattern) {
            Some(known) => {
                known.read |= read;
                known.write |= write;
            }
            None => self.keys.push(KeyPattern {
                pattern: pattern.to_vec(),
                read,
                write,
            }),
        }
        self.all_keys = false;
        Ok(())
    }

    /// `+cmd`, `+container|sub`, or `+cmd|first-arg` for a command without subcommands.
    fn allow_command(&mut self, name: &[u8], table: &CommandTable) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&b| b == b'|') else {
            let id = table.lookup(name).ok_or(RuleError::UnknownName)?;
            self.change_command(table, id, true);
            self.record_rule(table.fullname(id).as_bytes(), true);
            return Ok(());
        };
        let (base, first_arg) = (&name[..bar], &name[bar + 1..]);
        let id = table.lookup(base).ok_or(RuleError::UnknownName)?;
        if table.parent(id).is_some() {
            return Err(RuleError::FirstArgOfSubcommand);
        }
        if first_arg.is_empty() {
            return Err(RuleError::Syntax);
        }
        if table.subcommands(id).is_empty() {
            // Redis 7.4 keeps such a first argument in its rules text and later splits that text
            // at spaces and quotes, aborting on what it cannot split back; sieved refuses them.
            if first_arg
                .iter()
                .any(|&b| is_c_space(b) || b == b'"' || b == b'\'')
            {
                return Err(RuleError::Syntax);
            }
            match self
                .first_args
                .iter_mut()
                .find(|(command, _)| *command == id)
            {
                Some((_, args)) => {
                    if !args
                        .iter()
                        .any(|known| known.eq_ignore_ascii_case(first_arg))
                    {
                        args.push(first_arg.to_vec());
                    }
                }
                None => self.first_args.push((id, vec![first_arg.to_vec()])),
            }
        } else {
            let sub = table.lookup(name).ok_or(RuleError::UnknownName)?;
            self.change_command(table, sub, true);
        }
        self.record_rule(name, true);
        Ok(())
    }

    /// The selector as ACL GETUSER shows it.
    pub fn description(&self) -> SelectorDescription {
        SelectorDescription {
            commands: self.describe_commands(),
            keys: self.describe_keys(),
            channels: self.describe_channels(),
        }
    }

    /// The command rules as ACL GETUSER and ACL LIST show them: `+@all` or `-@all`, then the
    /// rules in force in order.
    fn describe_commands(&self) -> Vec<u8> {
        let mut out = if self.future_commands {
            b"+@all".to_vec()
        } else {
            b"-@all".to_vec()
        };
        for rule in &self.command_rules {
            out.push(b' ');
            out.extend_from_slice(rule);
        }
        out
    }

    /// The key patterns as ACL GETUSER shows them: `~*`, or the patterns separated by spaces.
    fn describe_keys(&self) -> Vec<u8> {
        if self.all_keys {
            return b"~*".to_vec();
        }
        let mut out = Vec::new();
        for (i, pattern) in self.keys.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            pattern.describe(&mut out);
        }
        out
    }

    /// The channel patterns as ACL GETUSER shows them: `&*`, or `&pattern`s.
    fn describe_channels(&self) -> Vec<u8> {
        if self.all_channels {
            return b"&*".to_vec();
        }
        let mut out = Vec::new();
        for (i, channel) in self.channels.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.push(b'&');
            out.extend_from_slice(channel);
        }
        out
    }

    /// The whole selector as ACL LIST shows it: keys, channels, then commands.
    pub(crate) fn describe(&self, out: &mut Vec<u8>) {
        if self.all_keys {
            out.extend_from_slice(b"~* ");
        } else {
            for pattern in &self.keys {
                pattern.describe(out);
                out.push(b' ');
            }
        }
        if self.all_channels {
            out.extend_from_slice(b"&* ");
        } else {
            out.extend_from_slice(b"resetchannels ");
            for channel in &self.channels {
                out.push(b'&');
                out.extend_from_slice(channel);
                out.push(b' ');
            }
        }
        out.extend_from_slice(&self.describe_commands());
    }

    /// The same bitmap and first arguments rebuilt from the description alone (the check Redis
    /// makes before it trusts a description).
    #[cfg(test)]
    pub(crate) fn rebuilt_from_description(&self, table: &CommandTable) -> Selector {
        let mut rebuilt = Selector::new(table, self.all_channels);
        let description = self.describe_commands();
        for rule in description.split(|&b| b == b' ') {
            rebuilt.apply(rule, table).unwrap();
        }
        rebuilt
    }

    #[cfg(test)]
    pub(crate) fn same_commands(&self, other: &Selector) -> bool {
        self.allowed == other.allowed && self.future_commands == other.future_commands
    }
}

/// Patterns may hold neither spaces nor NUL bytes, so that a description splits back into the
/// same rules.
fn has_space_or_nul(pattern: &[u8]) -> bool {
    pattern.iter().any(|&b| is_c_space(b) || b == 0)
}
