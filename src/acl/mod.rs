//! Users and their permissions, as Redis 7.4's ACL: the rules of ACL SETUSER and their exact
//! errors, users described back as ACL GETUSER and ACL LIST show them, the check of a request's
//! command, keys and channels, ACL LOG's entries, the aclfile's text and ACL GENPASS.
//!
//! The engine does no I/O and writes no protocol. It is given the command table as data
//! (`CommandTable`: names, subcommands, category names), so rules name commands without knowing
//! how they run, and it is told a request's keys and channels by the caller, which knows the
//! command's key specs. The command family ACL, AUTH and the check in dispatch sit above it.
//!
//! What Redis 7.4 does, and so this engine:
//! - A selector keeps its commands as a bitmap over command ids and, for display, the ordered
//!   list of the command and category rules that built it (Redis 7.2+'s `command_rules`), from
//!   which `-@all`/`+@all` and the rules are printed back; a rule replaces an earlier one for the
//!   same command or category. `+@all` alone also admits commands the table does not have yet.
//! - `+cmd|first-arg` on a command without subcommands allows only that first argument.
//! - Rules are matched as C strings, up to a NUL byte, except passwords and patterns.
//! - ACL SETUSER applies all rules to a copy and keeps none if one fails.
//!
//! Where sieved departs from Redis 7.4, on purpose:
//! - A lone `%` (a key pattern with no permission) and a first argument holding a space or a
//!   quote are syntax errors; Redis accepts them and then aborts when it describes the user.
//! - The quotas of issue 37 are user rules Redis does not have: `maxmemory=<bytes>` (Redis's
//!   memory units: `100mb`, `2gb`...) and `maxkeys=<count>`, `0` for no limit (the default), not
//!   allowed inside a selector, cleared by `reset`, listed after the passwords in bytes and only
//!   when set, so a user without them reads exactly as in Redis (`quota.rs`).
//! - A configuration `user` line's error names the failing rule (Redis names the argument two
//!   places before it).

mod aclfile;
mod command_table;
mod genpass;
mod permissions;
mod quota;
mod rules;
mod security_log;
mod selector;
#[cfg(test)]
mod transcripts;
mod user;

pub use command_table::{
    CommandId, CommandInfo, CommandTable, TableError, MAX_CATEGORIES, STANDARD_CATEGORIES,
};
pub use genpass::{genpass, BAD_BITS_MESSAGE, DEFAULT_BITS, MAX_BITS};
pub use permissions::{ChannelRef, Denial, KeyRef};
pub use quota::Quota;
pub use rules::RuleError;
pub use security_log::{Context, Entry, Event, Reason, SecurityLog, DEFAULT_MAX_LEN};
pub use selector::{KeyPattern, Selector, SelectorDescription};
pub use user::{PasswordHash, User, UserDescription};

use command_table::c_str;
use permissions::channel_allowed;
use rules::{is_c_space, merge_selectors};
use std::collections::BTreeMap;
use std::sync::Arc;
use user::RuleContext;

/// Every user, by name (ACL LIST's order: bytewise), and the settings rules depend on.
#[derive(Debug, Clone)]
pub struct Acl {
    table: Arc<CommandTable>,
    users: BTreeMap<Vec<u8>, Arc<User>>,
    /// `acl-pubsub-default allchannels`: new users and selectors start with `&*`.
    all_channels_by_default: bool,
    /// Moves on every change, so that a connection holding a user's `Arc` knows to fetch it again.
    generation: u64,
}

/// Why ACL SETUSER failed, with Redis's message (the reply is `ERR <message>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetUserError {
    BadUsername,
    UnmatchedParenthesis { at: Vec<u8> },
    Rule { rule: Vec<u8>, error: RuleError },
}

impl SetUserError {
    pub fn message(&self) -> Vec<u8> {
        match self {
            SetUserError::BadUsername => {
                b"Usernames can't contain spaces or null characters".to_vec()
            }
            SetUserError::UnmatchedParenthesis { at } => {
                let mut text = b"Unmatched parenthesis in acl selector starting at '".to_vec();
                text.extend_from_slice(c_str(at));
                text.extend_from_slice(b"'.");
                text
            }
            SetUserError::Rule { rule, error } => {
                let mut text = b"Error in ACL SETUSER modifier '".to_vec();
                text.extend_from_slice(c_str(rule));
                text.extend_from_slice(b"': ");
                text.extend_from_slice(error.message().as_bytes());
                text
            }
        }
    }
}

/// Channels a changed user may no longer use: its connections subscribed to one of them must
/// be closed, as Redis closes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevokedChannels {
    /// The channel patterns of the user's new selectors, together.
    still_allowed: Vec<Vec<u8>>,
}

impl RevokedChannels {
    /// Whether a subscription (`pattern` for PSUBSCRIBE's) falls outside what remains allowed.
    pub fn revokes(&self, channel: &[u8], pattern: bool) -> bool {
        !channel_allowed(&self.still_allowed, channel, pattern)
    }
}

/// `AUTH <password>` when the default user is `nopass` (Redis's wording).
pub const AUTH_WITHOUT_PASSWORD_MESSAGE: &str = "AUTH <password> called without any password \
     configured for the default user. Are you sure your configuration is correct?";
/// Every failed login, whatever the cause.
pub const WRONGPASS_MESSAGE: &str = "WRONGPASS invalid username-password pair or user is disabled.";
/// ACL DELUSER default.
pub const DELETE_DEFAULT_MESSAGE: &str = "The 'default' user cannot be removed";

impl Acl {
    /// A fresh server's users: only `default`, on, nopass, allowed everything.
    pub fn new(table: Arc<CommandTable>) -> Acl {
        let mut acl = Acl {
            table,
            users: BTreeMap::new(),
            all_channels_by_default: false,
            generation: 0,
        };
        let default = User::new_default(acl.context());
        acl.users.insert(b"default".to_vec(), Arc::new(default));
        acl
    }

    fn context(&self) -> RuleContext<'_> {
        RuleContext {
            table: &self.table,
            all_channels: self.all_channels_by_default,
        }
    }

    fn changed(&mut self) {
        self.generation += 1;
    }

    fn replace_users(&mut self, users: BTreeMap<Vec<u8>, User>) {
        self.users = users
            .into_iter()
            .map(|(name, user)| (name, Arc::new(user)))
            .collect();
        self.changed();
    }

    pub fn table(&self) -> &CommandTable {
        &self.table
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// `acl-pubsub-default`: true for `allchannels`. Applies to users and selectors created
    /// from now on, and to `reset`.
    pub fn set_all_channels_by_default(&mut self, all: bool) {
        self.all_channels_by_default = all;
    }

    pub fn user(&self, name: &[u8]) -> Option<&Arc<User>> {
        self.users.get(name)
    }

    pub fn default_user(&self) -> &Arc<User> {
        &self.users[b"default".as_slice()]
    }

    /// The users by name, as ACL USERS and ACL LIST list them.
    pub fn users(&self) -> impl Iterator<Item = &Arc<User>> {
        self.users.values()
    }

    /// ACL LIST: `user <name> <rules>` for each user.
    pub fn list(&self) -> Vec<Vec<u8>> {
        self.users
            .values()
            .map(|user| {
                let mut line = b"user ".to_vec();
                line.extend_from_slice(user.name());
                line.push(b' ');
                line.extend_from_slice(&user.describe());
                line
            })
            .collect()
    }

    /// ACL SETUSER: creates the user if needed and applies `rules` in order, all or none.
    /// Returns the channels the change revokes, if it revokes any.
    pub fn set_user(
        &mut self,
        name: &[u8],
        rules: &[&[u8]],
    ) -> Result<Option<RevokedChannels>, SetUserError> {
        if name.iter().any(|&b| is_c_space(b) || b == 0) {
            return Err(SetUserError::BadUsername);
        }
        let rules = merge_selectors(rules).map_err(|start| SetUserError::UnmatchedParenthesis {
            at: rules[start].to_vec(),
        })?;
        let context = self.context();
        let existing = self.users.get(name);
        let mut user = match existing {
            Some(user) => User::clone(user),
            None => User::new(name, context),
        };
        for rule in &rules {
            user.apply(rule, context)
                .map_err(|error| SetUserError::Rule {
                    rule: rule.clone(),
                    error,
                })?;
        }
        let revoked = existing.and_then(|old| revoked_channels(&user, old));
        self.users.insert(name.to_vec(), Arc::new(user));
        self.changed();
        Ok(revoked)
    }

    /// ACL DELUSER: removes the users named, which must not include `default` (then nothing is
    /// removed); returns the names removed, whose connections the caller closes.
    pub fn delete_users(&mut self, names: &[&[u8]]) -> Result<Vec<Vec<u8>>, &'static str> {
        if names.iter().any(|&name| name == b"default") {
            return Err(DELETE_DEFAULT_MESSAGE);
        }
        let removed: Vec<Vec<u8>> = names
            .iter()
            .filter_map(|&name| self.users.remove(name).map(|_| name.to_vec()))
            .collect();
        if !removed.is_empty() {
            self.changed();
        }
        Ok(removed)
    }

    /// AUTH and HELLO's AUTH: the user, if it exists, is on, and takes the password. Every
    /// failure reads the same to the client (`WRONGPASS_MESSAGE`).
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<&Arc<User>> {
        self.users.get(name).filter(|user| user.accepts(password))
    }

    /// `requirepass`: the default user's only password, or nopass for None.
    pub fn set_default_password(&mut self, password: Option<&[u8]>) {
        let context = self.context();
        let mut user = User::clone(self.default_user());
        user.apply(b"resetpass", context).expect("valid rule");
        match password {
            Some(password) => {
                let mut rule = b">".to_vec();
                rule.extend_from_slice(password);
                user.apply(&rule, context)
                    .expect("a password is always valid");
            }
            None => user.apply(b"nopass", context).expect("valid rule"),
        }
        self.users.insert(b"default".to_vec(), Arc::new(user));
        self.changed();
    }
}

/// Redis's `getUpcomingChannelList`: None when the new rules allow every channel the old ones
/// did, else the new channel patterns.
fn revoked_channels(new: &User, old: &User) -> Option<RevokedChannels> {
    if new.selectors().iter().any(Selector::all_channels) {
        return None;
    }
    let still_allowed: Vec<Vec<u8>> = new
        .selectors()
        .iter()
        .flat_map(|s| s.channel_patterns().iter().cloned())
        .collect();
    let kept = old.selectors().iter().all(|s| {
        !s.all_channels()
            && s.channel_patterns()
                .iter()
                .all(|c| still_allowed.contains(c))
    });
    (!kept).then_some(RevokedChannels { still_allowed })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn command(name: &str, categories: &[&str], subcommands: Vec<CommandInfo>) -> CommandInfo {
        CommandInfo {
            name: name.into(),
            categories: categories.iter().map(|c| c.to_string()).collect(),
            subcommands,
            ..CommandInfo::default()
        }
    }

    /// A few commands of each kind, and a module's category after Redis's.
    pub(crate) fn small_table() -> Arc<CommandTable> {
        let mut categories = STANDARD_CATEGORIES.to_vec();
        categories.push("bloom");
        let admin = ["admin", "slow", "dangerous"];
        let commands = [
            command("get", &["read", "string", "fast"], vec![]),
            command("set", &["write", "string", "slow"], vec![]),
            command("mget", &["read", "string", "fast"], vec![]),
            command(
                "config",
                &["slow"],
                vec![
                    command("get", &admin, vec![]),
                    command("set", &admin, vec![]),
                ],
            ),
            command("select", &["fast", "connection"], vec![]),
            command("publish", &["pubsub", "fast"], vec![]),
            command("psubscribe", &["pubsub", "slow"], vec![]),
            CommandInfo {
                no_auth: true,
                ..command("auth", &["fast", "connection"], vec![])
            },
            CommandInfo {
                module: true,
                ..command("bf.add", &["write", "bloom", "fast"], vec![])
            },
        ];
        Arc::new(CommandTable::new(&categories, &commands).unwrap())
    }

    fn line(acl: &Acl, name: &str) -> String {
        let user = acl.user(name.as_bytes()).unwrap();
        String::from_utf8(user.describe()).unwrap()
    }

    #[test]
    fn setuser_applies_all_rules_or_none() {
        let mut acl = Acl::new(small_table());
        acl.set_user(b"w", &[b"on", b">pw", b"~urls:*", b"+@bloom", b"+GET"])
            .unwrap();
        let before = line(&acl, "w");
        let error = acl.set_user(b"w", &[b"off", b"+nosuch"]).unwrap_err();
        assert_eq!(
            error.message(),
            b"Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"
        );
        assert_eq!(line(&acl, "w"), before);
        assert_eq!(
            acl.set_user(b"w", &[b"(~a", b"+get"])
                .unwrap_err()
                .message(),
            b"Unmatched parenthesis in acl selector starting at '(~a'."
        );
        assert_eq!(
            acl.set_user(b"a b", &[]).unwrap_err(),
            SetUserError::BadUsername
        );
        assert_eq!(acl.users().count(), 2);
    }

    #[test]
    fn rules_are_described_back_in_redis_order() {
        let mut acl = Acl::new(small_table());
        let rules: [&[u8]; 9] = [
            b"on",
            b"+@all",
            b"-config|SET",
            b"-@bloom",
            b"+select|0",
            b"%R~r:*",
            b"%W~w:*",
            b"&news.*",
            b"(~x +get)",
        ];
        acl.set_user(b"op", &rules).unwrap();
        assert_eq!(
            line(&acl, "op"),
            "on sanitize-payload %R~r:* %W~w:* resetchannels &news.* +@all -config|set -@bloom \
             +select|0 (~x resetchannels -@all +get)"
        );
        // A rule replaces an earlier one for the same command, or for its subcommands.
        acl.set_user(b"op", &[b"+config", b"%W~r:*", b"clearselectors"])
            .unwrap();
        assert_eq!(
            line(&acl, "op"),
            "on sanitize-payload ~r:* %W~w:* resetchannels &news.* +@all -@bloom +select|0 +config"
        );
        acl.set_user(b"op", &[b"reset", b"maxkeys=10"]).unwrap();
        assert_eq!(
            line(&acl, "op"),
            "off sanitize-payload maxkeys=10 resetchannels -@all"
        );
        let user = acl.user(b"op").unwrap();
        assert_eq!(user.quota().max_keys, 10);
    }

    #[test]
    fn sieved_refuses_what_redis_would_abort_on() {
        let mut acl = Acl::new(small_table());
        for rule in [
            b"%".as_slice(),
            b"+select|a b",
            b"+select|\"x\"",
            b"(maxkeys=1)",
        ] {
            let error = acl.set_user(b"u", &[rule]).unwrap_err();
            assert!(matches!(
                error,
                SetUserError::Rule {
                    error: RuleError::Syntax,
                    ..
                }
            ));
        }
        acl.set_user(b"u", &[b"%R", b"+select|x"]).unwrap();
        assert_eq!(
            line(&acl, "u"),
            "off sanitize-payload %R~ resetchannels -@all +select|x"
        );
    }

    #[test]
    fn logins_need_an_enabled_user_and_a_password() {
        let mut acl = Acl::new(small_table());
        assert!(acl.authenticate(b"default", b"anything").is_some());
        acl.set_default_password(Some(b"rootpw"));
        assert!(acl.authenticate(b"default", b"anything").is_none());
        assert!(acl.authenticate(b"default", b"rootpw").is_some());
        acl.set_user(b"w", &[b">a", b">b"]).unwrap();
        assert!(acl.authenticate(b"w", b"a").is_none(), "off");
        acl.set_user(b"w", &[b"on", b"<a"]).unwrap();
        assert!(acl.authenticate(b"w", b"a").is_none());
        assert!(acl.authenticate(b"w", b"b").is_some());
        assert!(acl.authenticate(b"nobody", b"b").is_none());
        acl.set_default_password(None);
        assert!(acl.default_user().nopass());
    }

    #[test]
    fn deleting_default_deletes_nothing() {
        let mut acl = Acl::new(small_table());
        acl.set_user(b"a", &[]).unwrap();
        assert_eq!(
            acl.delete_users(&[b"a", b"default"]),
            Err(DELETE_DEFAULT_MESSAGE)
        );
        assert_eq!(
            acl.delete_users(&[b"a", b"a", b"x"]).unwrap(),
            [b"a".to_vec()]
        );
        assert_eq!(acl.users().count(), 1);
    }

    #[test]
    fn narrowing_channels_names_what_remains() {
        let mut acl = Acl::new(small_table());
        acl.set_user(b"s", &[b"&a.*", b"&b"]).unwrap();
        assert_eq!(acl.set_user(b"s", &[b"&c"]).unwrap(), None, "a superset");
        let revoked = acl
            .set_user(b"s", &[b"resetchannels", b"&a.*"])
            .unwrap()
            .unwrap();
        assert!(!revoked.revokes(b"a.1", false));
        assert!(revoked.revokes(b"b", false));
        assert!(!revoked.revokes(b"a.*", true));
        assert!(revoked.revokes(b"a.1*", true));
        acl.set_all_channels_by_default(true);
        acl.set_user(b"new", &[]).unwrap();
        assert_eq!(line(&acl, "new"), "off sanitize-payload &* -@all");
    }

    #[test]
    fn descriptions_rebuild_the_same_commands() {
        let mut acl = Acl::new(small_table());
        let rules: [&[u8]; 8] = [
            b"+@all",
            b"-@string",
            b"+config|get",
            b"-@admin",
            b"+select|0",
            b"+config",
            b"-publish",
            b"(+@read -mget +config|set)",
        ];
        acl.set_user(b"u", &rules).unwrap();
        let table = small_table();
        for selector in acl.user(b"u").unwrap().selectors() {
            assert!(selector
                .rebuilt_from_description(&table)
                .same_commands(selector));
        }
    }

    /// Rules with the pieces that matter, and bytes at random.
    fn any_rule() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let tokens = [
            "on",
            "off",
            "nopass",
            "resetpass",
            "reset",
            ">pw",
            "<pw",
            "allkeys",
            "resetkeys",
            "~a*",
            "%R~r",
            "%W~w",
            "%RW~b?",
            "%",
            "&c.*",
            "allchannels",
            "resetchannels",
            "+get",
            "-get",
            "+@all",
            "-@all",
            "+@read",
            "-@admin",
            "+config|get",
            "-config",
            "+select|1",
            "+select|x|y",
            "(~s +set)",
            "(",
            "~x)",
            "clearselectors",
            "maxkeys=5",
            "+@bloom",
            "skip-sanitize-payload",
            "#",
            "!x",
            "(+@all",
            "-@string)",
            "",
        ];
        prop_oneof![
            3 => proptest::sample::select(tokens.to_vec()).prop_map(|t| t.as_bytes().to_vec()),
            1 => proptest::collection::vec(any::<u8>(), 0..8),
        ]
    }

    proptest::proptest! {
        /// No rules panic, and whatever SETUSER accepts, ACL SAVE writes and ACL LOAD reads back
        /// the same (selectors' patterns hold no quotes here: Redis splits a selector's text with
        /// its quoting rules, so `(~a'b)` would not read back, in Redis either).
        #[test]
        fn accepted_rules_survive_save_and_load(rules in proptest::collection::vec(any_rule(), 0..8)) {
            let mut acl = Acl::new(small_table());
            let rules: Vec<&[u8]> = rules.iter().map(Vec::as_slice).collect();
            let quoted = rules.iter().any(|r| r.iter().any(|&b| b == b'"' || b == b'\'' || b == b'\\'));
            if acl.set_user(b"u", &rules).is_ok() && !quoted {
                let saved = acl.to_aclfile();
                let mut loaded = Acl::new(small_table());
                loaded.load_aclfile(&saved, "f").unwrap();
                proptest::prop_assert_eq!(loaded.to_aclfile(), saved);
            }
        }
    }
}
