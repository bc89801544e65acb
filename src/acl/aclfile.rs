//! Users as text: the aclfile (`ACL LOAD`, `ACL SAVE`) and the `user` lines of the configuration
//! file, with Redis 7.4's messages. Reading and writing the file itself is the caller's: this
//! only turns text into users and users into text.

use super::command_table::c_str;
use super::rules::{is_c_space, merge_selectors, RuleError};
use super::user::User;
use super::Acl;
use std::collections::BTreeMap;

const NO_CHANGE: &str =
    "WARNING: ACL errors detected, no change to the previously active ACL rules was performed";

impl Acl {
    /// The aclfile's text for ACL SAVE: one `user <name> <rules>` line per user, by name.
    pub fn to_aclfile(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for line in self.list() {
            out.extend_from_slice(&line);
            out.push(b'\n');
        }
        out
    }

    /// ACL LOAD: replaces every user with those of `text`, or, if any line is wrong, changes
    /// nothing and returns Redis's message listing every problem (`filename` names the file in
    /// it). A file without `default` gets a fresh default user.
    pub fn load_aclfile(&mut self, text: &[u8], filename: &str) -> Result<(), String> {
        let context = self.context();
        let mut users: BTreeMap<Vec<u8>, User> = BTreeMap::new();
        let mut errors = String::new();
        for (index, line) in text.split(|&b| b == b'\n').enumerate() {
            let number = index + 1;
            let line = trim(line, b" \t\r\n");
            if line.is_empty() {
                continue;
            }
            let args: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
            if args[0] != b"user" || args.len() < 2 {
                errors.push_str(&format!(
                    "{filename}:{number} should start with user keyword followed by the username. "
                ));
                continue;
            }
            let name = args[1];
            if has_space_or_nul(name) {
                errors.push_str(&format!(
                    "'{filename}:{number}: username '{}' contains invalid characters. ",
                    text_of(name)
                ));
                continue;
            }
            if users.contains_key(name) {
                errors.push_str(&format!(
                    "WARNING: Duplicate user '{}' found on line {number}. ",
                    text_of(name)
                ));
                continue;
            }
            let mut user = User::new(name, context);
            let rules = merge_selectors(&args[2..]).unwrap_or_else(|_| {
                errors.push_str(&format!(
                    "{filename}:{number}: Unmatched parenthesis in selector definition."
                ));
                Vec::new()
            });
            let mut reported_syntax = false;
            for rule in &rules {
                let rule = trim(rule, b"\t\r\n");
                match user.apply(rule, context) {
                    Ok(()) => {}
                    Err(RuleError::UnknownName) => errors.push_str(&format!(
                        "{filename}:{number}: Error in applying operation '{}': {}. ",
                        text_of(rule),
                        RuleError::UnknownName.message()
                    )),
                    // Only the first other error: it may explain those after it.
                    Err(error) if !reported_syntax => {
                        errors.push_str(&format!("{filename}:{number}: {}. ", error.message()));
                        reported_syntax = true;
                    }
                    Err(_) => {}
                }
            }
            users.insert(name.to_vec(), user);
        }
        if !errors.is_empty() {
            return Err(errors + NO_CHANGE);
        }
        users
            .entry(b"default".to_vec())
            .or_insert_with(|| User::new_default(context));
        self.replace_users(users);
        Ok(())
    }

    /// The configuration file's `user <name> <rules...>` lines, applied at start-up in order
    /// (`args` without the `user` keyword). A `default` line resets the default user first; a
    /// name given twice, or any wrong rule, is an error worded as Redis's configuration errors.
    pub fn load_config_users(&mut self, lines: &[Vec<&[u8]>]) -> Result<(), String> {
        let context = self.context();
        let mut seen: Vec<&[u8]> = Vec::new();
        let mut users = self.users.clone();
        for args in lines {
            let (name, rules) = args.split_first().ok_or("user needs a name")?;
            if seen.contains(name) {
                return Err(declaration_error(name, RuleError::DuplicateUser.message()));
            }
            seen.push(name);
            if has_space_or_nul(name) {
                return Err("Spaces not allowed in ACL usernames".into());
            }
            let rules = merge_selectors(rules).map_err(|start| {
                declaration_error(rules[start], "Unmatched parenthesis in acl selector")
            })?;
            let mut user = if name == b"default" {
                let mut user = User::new_default(context);
                user.apply(b"reset", context).expect("valid rule");
                user
            } else {
                User::new(name, context)
            };
            for rule in &rules {
                user.apply(rule, context)
                    .map_err(|error| declaration_error(rule, error.message()))?;
            }
            users.insert(name.to_vec(), std::sync::Arc::new(user));
        }
        self.users = users;
        self.changed();
        Ok(())
    }
}

/// Redis names the argument at the failing rule's index counted from `user`, which is two
/// arguments off; sieved names the rule itself.
fn declaration_error(rule: &[u8], message: &str) -> String {
    format!("Error in user declaration '{}': {message}", text_of(rule))
}

fn text_of(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(c_str(bytes))
}

fn trim<'a>(mut bytes: &'a [u8], set: &[u8]) -> &'a [u8] {
    while let [first, rest @ ..] = bytes {
        if !set.contains(first) {
            break;
        }
        bytes = rest;
    }
    while let [rest @ .., last] = bytes {
        if !set.contains(last) {
            break;
        }
        bytes = rest;
    }
    bytes
}

fn has_space_or_nul(name: &[u8]) -> bool {
    name.iter().any(|&b| is_c_space(b) || b == 0)
}

#[cfg(test)]
mod tests {
    use super::super::tests::small_table;
    use super::*;

    /// The file and the message were checked against Redis 7.4.1's ACL LOAD.
    #[test]
    fn a_wrong_file_changes_nothing_and_lists_every_problem() {
        let mut acl = Acl::new(small_table());
        acl.set_user(b"kept", &[b"on"]).unwrap();
        let before = acl.list();
        let file = b"user alice on bogus +nosuch +@nosuch\nnotuser x\nuser bob\tx on\n\
                     user alice on\nuser dave %X~a ~a b +nosuch2\n\n  \nuser\nuser carol (~x\n\
                     user eve  on\n";
        let error = acl.load_aclfile(file, "/tmp/acltest/good.acl").unwrap_err();
        assert_eq!(
            error,
            "/tmp/acltest/good.acl:1: Syntax error. /tmp/acltest/good.acl:1: Error in applying \
             operation '+nosuch': Unknown command or category name in ACL. \
             /tmp/acltest/good.acl:1: Error in applying operation '+@nosuch': Unknown command \
             or category name in ACL. /tmp/acltest/good.acl:2 should start with user keyword \
             followed by the username. '/tmp/acltest/good.acl:3: username 'bob\tx' contains \
             invalid characters. WARNING: Duplicate user 'alice' found on line 4. \
             /tmp/acltest/good.acl:5: Syntax error. /tmp/acltest/good.acl:5: Error in applying \
             operation '+nosuch2': Unknown command or category name in ACL. \
             /tmp/acltest/good.acl:8 should start with user keyword followed by the username. \
             /tmp/acltest/good.acl:9: Unmatched parenthesis in selector definition.WARNING: ACL \
             errors detected, no change to the previously active ACL rules was performed"
        );
        assert_eq!(acl.list(), before);
    }

    /// As Redis 7.4.1 loaded and saved the same users.
    #[test]
    fn a_file_replaces_the_users_and_saves_back_the_same() {
        let mut acl = Acl::new(small_table());
        acl.set_user(b"gone", &[b"on"]).unwrap();
        let generation = acl.generation();
        acl.load_aclfile(
            b"user alice on (~x +get)\nuser bob off\nuser eve  on  >x\n",
            "f",
        )
        .unwrap();
        assert!(acl.generation() > generation);
        acl.set_user(b"zed", &[b"on", b">p", b"%R~r:*", b"(+set ~s)"])
            .unwrap();
        let saved = acl.to_aclfile();
        assert_eq!(
            String::from_utf8(saved.clone()).unwrap(),
            "user alice on sanitize-payload resetchannels -@all (~x resetchannels -@all +get)\n\
             user bob off sanitize-payload resetchannels -@all\n\
             user default on nopass sanitize-payload ~* &* +@all\n\
             user eve on sanitize-payload \
             #2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881 resetchannels -@all\n\
             user zed on sanitize-payload \
             #148de9c5a7a44d19e56cd9ae1a554bf67847afb0c58f6e12fa29ac7ddfca9940 %R~r:* \
             resetchannels -@all (~s resetchannels -@all +set)\n"
        );
        let mut reloaded = Acl::new(small_table());
        reloaded.load_aclfile(&saved, "f").unwrap();
        assert_eq!(reloaded.to_aclfile(), saved);
        assert!(reloaded.user(b"gone").is_none());
    }

    #[test]
    fn configuration_users_reset_default_and_refuse_duplicates() {
        let mut acl = Acl::new(small_table());
        let lines: Vec<Vec<&[u8]>> = vec![
            vec![b"default", b"on", b">pw", b"~*", b"+get"],
            vec![b"worker", b"on", b"nopass", b"(~a", b"+get)"],
        ];
        acl.load_config_users(&lines).unwrap();
        assert_eq!(
            acl.list(),
            [
                b"user default on sanitize-payload \
                  #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~* \
                  resetchannels -@all +get"
                    .to_vec(),
                b"user worker on nopass sanitize-payload resetchannels -@all (~a resetchannels \
                  -@all +get)"
                    .to_vec(),
            ]
        );
        let twice: Vec<Vec<&[u8]>> = vec![vec![b"a"], vec![b"a", b"on"]];
        assert_eq!(
            acl.load_config_users(&twice).unwrap_err(),
            "Error in user declaration 'a': Duplicate user found. A user can only be defined \
             once in config files"
        );
        let wrong: Vec<Vec<&[u8]>> = vec![vec![b"b", b"on", b"+nosuch"]];
        assert_eq!(
            acl.load_config_users(&wrong).unwrap_err(),
            "Error in user declaration '+nosuch': Unknown command or category name in ACL"
        );
        assert!(acl.user(b"a").is_none() && acl.user(b"b").is_none());
    }
}
