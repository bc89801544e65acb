//! A user: enabled or not, its passwords (SHA-256 hashes, never the text), whether RESTORE
//! payloads are checked, sieved's quotas, and its selectors.

use super::command_table::{c_str, CommandTable};
use super::quota::Quota;
use super::rules::RuleError;
use super::selector::{Selector, SelectorDescription};
use sha2::{Digest, Sha256};

/// A password hash as Redis shows it: 64 lower-case hex digits.
pub type PasswordHash = [u8; 64];

/// ACL GETUSER's reply, a map whose fields come in this order: `flags` (a set), `passwords`
/// (an array of hashes), the root selector's `commands`, `keys` and `channels`, then
/// `selectors` (an array of maps of those three). `quota` is sieved's: when not unlimited the
/// command layer adds its fields after `selectors` (see `quota.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserDescription {
    pub flags: Vec<&'static str>,
    pub passwords: Vec<PasswordHash>,
    pub root: SelectorDescription,
    pub selectors: Vec<SelectorDescription>,
    pub quota: Quota,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    name: Vec<u8>,
    enabled: bool,
    nopass: bool,
    skip_sanitize_payload: bool,
    passwords: Vec<PasswordHash>,
    quota: Quota,
    /// The root selector first; `(...)` selectors after it, in the order they were added.
    selectors: Vec<Selector>,
}

/// What a rule is resolved against: the commands, and `acl-pubsub-default`.
#[derive(Clone, Copy)]
pub(crate) struct RuleContext<'a> {
    pub(crate) table: &'a CommandTable,
    pub(crate) all_channels: bool,
}

impl User {
    /// A new user as Redis creates one: off, no passwords, no permissions but the channels
    /// `acl-pubsub-default` grants.
    pub(crate) fn new(name: &[u8], context: RuleContext) -> User {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            skip_sanitize_payload: false,
            passwords: Vec::new(),
            quota: Quota::default(),
            selectors: vec![Selector::new(context.table, context.all_channels)],
        }
    }

    /// The `default` user of a fresh server: on, nopass, every key, channel and command.
    pub(crate) fn new_default(context: RuleContext) -> User {
        let mut user = User::new(b"default", context);
        for rule in ["+@all", "~*", "&*", "on", "nopass"] {
            user.apply(rule.as_bytes(), context)
                .expect("the default user's rules are valid");
        }
        user
    }

    pub fn name(&self) -> &[u8] {
        &self.name
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn nopass(&self) -> bool {
        self.nopass
    }

    /// RESTORE skips the deep check of its payload (`skip-sanitize-payload`).
    pub fn skips_payload_sanitizing(&self) -> bool {
        self.skip_sanitize_payload
    }

    pub fn quota(&self) -> Quota {
        self.quota
    }

    pub(crate) fn selectors(&self) -> &[Selector] {
        &self.selectors
    }

    /// Whether `password` opens this user (enabled, and nopass or a matching hash).
    pub fn accepts(&self, password: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let hash = hash_password(password);
        // Compares every hash in full, so the time taken tells nothing of how close one was.
        self.passwords.iter().fold(false, |found, known| {
            found | same_in_constant_time(known, &hash)
        })
    }

    /// Applies one rule (`ACLSetUser`); on error the user may be half changed, so callers
    /// apply rules to a copy.
    pub(crate) fn apply(&mut self, op: &[u8], context: RuleContext) -> Result<(), RuleError> {
        if op.is_empty() {
            return Ok(());
        }
        let word = c_str(op);
        let is = |keyword: &str| word.eq_ignore_ascii_case(keyword.as_bytes());
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.skip_sanitize_payload = true;
        } else if is("sanitize-payload") {
            self.skip_sanitize_payload = false;
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if matches!(op[0], b'>' | b'#') {
            let hash = if op[0] == b'>' {
                hash_password(&op[1..])
            } else {
                parse_hash(&op[1..])?
            };
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.nopass = false;
        } else if matches!(op[0], b'<' | b'!') {
            let hash = if op[0] == b'<' {
                hash_password(&op[1..])
            } else {
                parse_hash(&op[1..])?
            };
            let at = self.passwords.iter().position(|known| *known == hash);
            self.passwords.remove(at.ok_or(RuleError::NoSuchPassword)?);
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            let selector = Selector::from_parenthesized(op, context.table, context.all_channels)?;
            self.selectors.push(selector);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            self.reset(context);
        } else if let Some(quota) = self.quota.with_rule(word)? {
            self.quota = quota;
        } else {
            self.selectors[0].apply(op, context.table)?;
        }
        Ok(())
    }

    /// `reset`: back to the state of a new user (sieved's quotas included).
    fn reset(&mut self, context: RuleContext) {
        let root = &mut self.selectors[0];
        for rule in ["resetkeys", "resetchannels"] {
            root.apply(rule.as_bytes(), context.table)
                .expect("valid rule");
        }
        if context.all_channels {
            root.apply(b"allchannels", context.table)
                .expect("valid rule");
        }
        root.apply(b"-@all", context.table).expect("valid rule");
        self.passwords.clear();
        self.nopass = false;
        self.enabled = false;
        self.skip_sanitize_payload = false;
        self.quota = Quota::default();
        self.selectors.truncate(1);
    }

    /// The user's rules as ACL LIST and the aclfile write them (after `user <name> `).
    pub fn describe(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for flag in self.flags() {
            out.extend_from_slice(flag.as_bytes());
            out.push(b' ');
        }
        for hash in &self.passwords {
            out.push(b'#');
            out.extend_from_slice(hash);
            out.push(b' ');
        }
        self.quota.describe(&mut out);
        self.selectors[0].describe(&mut out);
        for selector in &self.selectors[1..] {
            out.extend_from_slice(b" (");
            selector.describe(&mut out);
            out.push(b')');
        }
        out
    }

    /// ACL GETUSER's fields.
    pub fn getuser(&self) -> UserDescription {
        UserDescription {
            flags: self.flags(),
            passwords: self.passwords.clone(),
            root: self.selectors[0].description(),
            selectors: self.selectors[1..]
                .iter()
                .map(Selector::description)
                .collect(),
            quota: self.quota,
        }
    }

    /// The flags ACL GETUSER lists, in Redis's order.
    fn flags(&self) -> Vec<&'static str> {
        let mut flags = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            flags.push("nopass");
        }
        flags.push(if self.skip_sanitize_payload {
            "skip-sanitize-payload"
        } else {
            "sanitize-payload"
        });
        flags
    }
}

pub(crate) fn hash_password(password: &[u8]) -> PasswordHash {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(password);
    let mut hex = [0u8; 64];
    for (i, byte) in digest.iter().enumerate() {
        hex[2 * i] = HEX[usize::from(byte >> 4)];
        hex[2 * i + 1] = HEX[usize::from(byte & 0x0f)];
    }
    hex
}

fn parse_hash(text: &[u8]) -> Result<PasswordHash, RuleError> {
    let hash: PasswordHash = text.try_into().map_err(|_| RuleError::BadHash)?;
    if hash
        .iter()
        .all(|&c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
    {
        Ok(hash)
    } else {
        Err(RuleError::BadHash)
    }
}

fn same_in_constant_time(a: &PasswordHash, b: &PasswordHash) -> bool {
    a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}
