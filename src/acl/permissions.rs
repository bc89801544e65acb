//! Whether a user may run a request: its command, every key it names (for reading, writing or
//! both, as the command's key specs say) and every channel it publishes or subscribes to. The
//! caller finds the keys and channels; the engine only judges them.

use super::command_table::{CommandId, CommandTable};
use super::selector::Selector;
use super::user::User;
use crate::store::glob_match;

/// One key of a request: its argument's index (within the request's arguments, which the
/// caller guarantees) and what the command does with it. A key spec's
/// `access` flag means read; `insert`, `delete` and `update` mean write. Neither (a spec without
/// flags) passes any pattern that matches, as in Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRef {
    pub arg: usize,
    pub read: bool,
    pub write: bool,
}

/// One channel a request publishes or subscribes to (unsubscribing is never checked).
/// `pattern` is PSUBSCRIBE's: such a channel must equal an allowed pattern literally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelRef {
    pub arg: usize,
    pub pattern: bool,
}

/// What denied a request, as Redis ranks it when no selector allows it all: a channel over a key
/// over the command, and among the same kind, the argument furthest on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denial {
    Command,
    Key { arg: usize },
    Channel { arg: usize },
}

impl Denial {
    /// The argument to blame (0, the command's name, for a command).
    pub fn arg(self) -> usize {
        match self {
            Denial::Command => 0,
            Denial::Key { arg } | Denial::Channel { arg } => arg,
        }
    }

    /// The NOPERM reply's text after `NOPERM `, as Redis 7.4 words it to the client.
    pub fn message(self, user: &[u8], command: &str) -> Vec<u8> {
        match self {
            Denial::Command => command_message(user, command),
            Denial::Key { .. } => b"No permissions to access a key".to_vec(),
            Denial::Channel { .. } => b"No permissions to access a channel".to_vec(),
        }
    }

    /// ACL DRYRUN's reply, which names the key or channel.
    pub fn verbose_message(self, user: &[u8], command: &str, args: &[&[u8]]) -> Vec<u8> {
        let (what, kind): (&[u8], &[u8]) = match self {
            Denial::Command => return command_message(user, command),
            Denial::Key { arg } => (args[arg], b"key"),
            Denial::Channel { arg } => (args[arg], b"channel"),
        };
        let mut text = b"User ".to_vec();
        text.extend_from_slice(user);
        text.extend_from_slice(b" has no permissions to access the '");
        text.extend_from_slice(what);
        text.extend_from_slice(b"' ");
        text.extend_from_slice(kind);
        text
    }

    /// What ACL LOG records as the entry's object: the command's full name, or the key or
    /// channel.
    pub fn object(self, command: &str, args: &[&[u8]]) -> Vec<u8> {
        match self {
            Denial::Command => command.as_bytes().to_vec(),
            Denial::Key { arg } | Denial::Channel { arg } => args[arg].to_vec(),
        }
    }
}

fn command_message(user: &[u8], command: &str) -> Vec<u8> {
    let mut text = b"User ".to_vec();
    text.extend_from_slice(user);
    text.extend_from_slice(b" has no permissions to run the '");
    text.extend_from_slice(command.as_bytes());
    text.extend_from_slice(b"' command");
    text
}

impl User {
    /// Whether this user may run `command` with `args` (the whole request, name included).
    /// `keys` is called at most once, and only when a selector restricts keys; `channels` lists
    /// the channels published or subscribed to. A user that allows everything costs three tests.
    pub fn check(
        &self,
        table: &CommandTable,
        command: CommandId,
        args: &[&[u8]],
        keys: impl FnOnce() -> Vec<KeyRef>,
        channels: &[ChannelRef],
    ) -> Result<(), Denial> {
        let mut keys = LazyKeys {
            find: Some(keys),
            found: Vec::new(),
        };
        let mut worst = Denial::Command;
        for selector in self.selectors() {
            match selector.check(table, command, args, &mut keys, channels) {
                Ok(()) => return Ok(()),
                Err(denial) => worst = worst.max(denial),
            }
        }
        Err(worst)
    }

    /// Whether this user may touch `key` in some selector (`ACLUserCheckKeyPerm`), for keys
    /// found while a command runs, as those a script reaches through `redis.call`.
    pub fn may_access_key(&self, key: &[u8], read: bool, write: bool) -> bool {
        self.selectors()
            .iter()
            .any(|s| s.allows_key(key, read, write))
    }

    /// Whether this user may use `channel` in some selector (`ACLUserCheckChannelPerm`).
    pub fn may_access_channel(&self, channel: &[u8], pattern: bool) -> bool {
        self.selectors()
            .iter()
            .any(|s| s.all_channels() || channel_allowed(s.channel_patterns(), channel, pattern))
    }

    /// Whether some selector reaches every key with the given access (`allkeys`, `~*`, or `%R~*`
    /// for reading...): then a listing of keys needs no filtering for this user.
    pub fn may_access_every_key(&self, read: bool, write: bool) -> bool {
        self.selectors().iter().any(|selector| {
            selector.all_keys()
                || selector
                    .key_patterns()
                    .iter()
                    .any(|p| p.pattern == b"*" && (p.read || !read) && (p.write || !write))
        })
    }
}

/// The request's keys, found once for all selectors and only if one needs them.
struct LazyKeys<F> {
    find: Option<F>,
    found: Vec<KeyRef>,
}

impl<F: FnOnce() -> Vec<KeyRef>> LazyKeys<F> {
    fn get(&mut self) -> &[KeyRef] {
        if let Some(find) = self.find.take() {
            self.found = find();
        }
        &self.found
    }
}

impl Selector {
    fn check<F: FnOnce() -> Vec<KeyRef>>(
        &self,
        table: &CommandTable,
        command: CommandId,
        args: &[&[u8]],
        keys: &mut LazyKeys<F>,
        channels: &[ChannelRef],
    ) -> Result<(), Denial> {
        if !self.all_commands() && !table.runs_before_auth(command) && !self.allows_bit(command) {
            // Denied unless the first argument is one this command is allowed with.
            let index = if table.parent(command).is_some() {
                2
            } else {
                1
            };
            let first_arg_allowed = args.len() >= 2
                && self.first_args(command).is_some_and(|allowed| {
                    args.get(index)
                        .is_some_and(|arg| allowed.iter().any(|a| a.eq_ignore_ascii_case(arg)))
                });
            if !first_arg_allowed {
                return Err(Denial::Command);
            }
        }
        if !self.all_keys() {
            for key in keys.get() {
                if !self.allows_key(args[key.arg], key.read, key.write) {
                    return Err(Denial::Key { arg: key.arg });
                }
            }
        }
        if !self.all_channels() {
            for channel in channels {
                if !channel_allowed(self.channel_patterns(), args[channel.arg], channel.pattern) {
                    return Err(Denial::Channel { arg: channel.arg });
                }
            }
        }
        Ok(())
    }

    fn allows_key(&self, key: &[u8], read: bool, write: bool) -> bool {
        self.all_keys()
            || self.key_patterns().iter().any(|p| {
                (p.read || !read) && (p.write || !write) && glob_match(&p.pattern, key, false)
            })
    }
}

/// A channel against a list of allowed patterns; a PSUBSCRIBE pattern must equal one of them.
pub(crate) fn channel_allowed(patterns: &[Vec<u8>], channel: &[u8], pattern: bool) -> bool {
    patterns.iter().any(|allowed| {
        if pattern {
            allowed.as_slice() == channel
        } else {
            glob_match(allowed, channel, false)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::small_table;
    use super::super::*;

    fn user(rules: &[&[u8]]) -> (Arc<CommandTable>, User) {
        let table = small_table();
        let mut acl = Acl::new(table.clone());
        acl.set_user(b"u", rules).unwrap();
        let user = User::clone(acl.user(b"u").unwrap());
        (table, user)
    }

    fn check(
        table: &CommandTable,
        user: &User,
        args: &[&[u8]],
        keys: &[KeyRef],
    ) -> Result<(), Denial> {
        let channels: Vec<ChannelRef> = match args[0] {
            b"publish" => vec![ChannelRef {
                arg: 1,
                pattern: false,
            }],
            b"psubscribe" => (1..args.len())
                .map(|arg| ChannelRef { arg, pattern: true })
                .collect(),
            _ => Vec::new(),
        };
        let id = table.resolve(args).unwrap();
        user.check(table, id, args, || keys.to_vec(), &channels)
    }

    const READ: KeyRef = KeyRef {
        arg: 1,
        read: true,
        write: false,
    };
    const WRITE: KeyRef = KeyRef {
        arg: 1,
        read: false,
        write: true,
    };

    #[test]
    fn keys_are_checked_for_reading_and_writing() {
        let (table, user) = user(&[b"+@all", b"%R~r:*", b"%W~w:*", b"~rw:*"]);
        assert_eq!(check(&table, &user, &[b"get", b"r:1"], &[READ]), Ok(()));
        assert_eq!(
            check(&table, &user, &[b"set", b"r:1", b"v"], &[WRITE]),
            Err(Denial::Key { arg: 1 })
        );
        assert_eq!(
            check(&table, &user, &[b"set", b"w:1", b"v"], &[WRITE]),
            Ok(())
        );
        assert_eq!(
            check(&table, &user, &[b"get", b"w:1"], &[READ]),
            Err(Denial::Key { arg: 1 })
        );
        let both = KeyRef {
            read: true,
            ..WRITE
        };
        assert_eq!(
            check(&table, &user, &[b"set", b"rw:1", b"v", b"get"], &[both]),
            Ok(())
        );
        // A key found without flags passes any pattern it matches.
        let neither = KeyRef {
            read: false,
            ..WRITE
        };
        assert_eq!(check(&table, &user, &[b"get", b"w:1"], &[neither]), Ok(()));
        let keys = [
            KeyRef { arg: 1, ..READ },
            KeyRef { arg: 2, ..READ },
            KeyRef { arg: 3, ..READ },
        ];
        assert_eq!(
            check(&table, &user, &[b"mget", b"r:1", b"x", b"y"], &keys),
            Err(Denial::Key { arg: 2 })
        );
        assert!(user.may_access_key(b"rw:9", true, true));
        assert!(!user.may_access_every_key(true, false));
    }

    #[test]
    fn the_worst_denial_of_all_selectors_is_reported() {
        let (table, user) = user(&[b"+get", b"+mget", b"~a", b"(+mget ~b)", b"(+publish &c)"]);
        let keys = [KeyRef { arg: 1, ..READ }, KeyRef { arg: 2, ..READ }];
        // The root denies key 2, the first selector key 1: the one further on is reported.
        assert_eq!(
            check(&table, &user, &[b"mget", b"a", b"c"], &keys),
            Err(Denial::Key { arg: 2 })
        );
        assert_eq!(check(&table, &user, &[b"mget", b"b", b"b"], &keys), Ok(()));
        // A channel denial outranks a command denial.
        assert_eq!(
            check(&table, &user, &[b"publish", b"d", b"m"], &[]),
            Err(Denial::Channel { arg: 1 })
        );
        assert_eq!(
            check(&table, &user, &[b"set", b"a", b"v"], &[WRITE]),
            Err(Denial::Command)
        );
        assert_eq!(
            Denial::Command.message(b"u", "set"),
            b"User u has no permissions to run the 'set' command"
        );
        assert_eq!(
            Denial::Channel { arg: 1 }.verbose_message(b"u", "publish", &[b"publish", b"d"]),
            b"User u has no permissions to access the 'd' channel"
        );
    }

    #[test]
    fn commands_first_arguments_and_commands_before_auth() {
        let (table, user) = user(&[
            b"+select|0",
            b"+config|get",
            b"+@all",
            b"-@admin",
            b"+config|get",
        ]);
        assert_eq!(
            check(&table, &user, &[b"config", b"get", b"x"], &[]),
            Ok(())
        );
        assert_eq!(
            check(&table, &user, &[b"config", b"set", b"x", b"y"], &[]),
            Err(Denial::Command)
        );
        let (table, user) = user_with_select();
        assert_eq!(check(&table, &user, &[b"select", b"0"], &[]), Ok(()));
        assert_eq!(
            check(&table, &user, &[b"select", b"1"], &[]),
            Err(Denial::Command)
        );
        assert_eq!(
            check(&table, &user, &[b"select"], &[]),
            Err(Denial::Command)
        );
        assert_eq!(check(&table, &user, &[b"auth", b"a", b"b"], &[]), Ok(()));
    }

    fn user_with_select() -> (Arc<CommandTable>, User) {
        user(&[b"+select|0", b"+select|X"])
    }

    #[test]
    fn pattern_subscriptions_must_equal_an_allowed_pattern() {
        let (table, user) = user(&[b"+@all", b"&news.*"]);
        assert_eq!(
            check(&table, &user, &[b"publish", b"news.1", b"m"], &[]),
            Ok(())
        );
        assert_eq!(
            check(&table, &user, &[b"psubscribe", b"news.*"], &[]),
            Ok(())
        );
        assert_eq!(
            check(&table, &user, &[b"psubscribe", b"news.1"], &[]),
            Err(Denial::Channel { arg: 1 })
        );
        assert!(user.may_access_channel(b"news.x", false));
        assert!(!user.may_access_channel(b"news.x", true));
    }

    #[test]
    fn keys_are_not_looked_for_when_every_key_is_allowed() {
        let (table, user) = user(&[b"+@all", b"allkeys"]);
        let id = table.lookup(b"get").unwrap();
        let found = user.check(&table, id, &[b"get", b"k"], || unreachable!(), &[]);
        assert_eq!(found, Ok(()));
        assert!(user.may_access_every_key(true, true));
    }
}
