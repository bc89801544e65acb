//! Where settings come from at start-up, later ones winning: the table's defaults, the
//! configuration file, environment variables, command-line flags. The flags and variables are
//! clap arguments built from the table.

use super::file;
use super::table::{find, Access, Values, PARAMS};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command};
use std::path::PathBuf;

/// clap's id of `--config`, which names the file rather than being a setting of its own.
const CONFIG_FILE: &str = "config";
/// clap's id of the configuration file given as the first argument, as redis-server takes it:
/// `sieved /etc/sieved/sieved.conf`.
const CONFIG_FILE_ARGUMENT: &str = "config-file";

/// The command line: a flag (and environment variable) for every entry of the table, and the
/// configuration file, as the first argument or with `--config`.
pub fn command() -> Command {
    let settings = PARAMS.iter().map(|param| {
        let mut arg = Arg::new(param.flag)
            .long(param.flag)
            .env(param.env())
            .value_name(param.kind)
            .help(param.help)
            .action(ArgAction::Set)
            .allow_negative_numbers(true)
            .hide_env_values(matches!(param.access, Access::Password));
        if !param.default.is_empty() {
            arg = arg.default_value(param.default);
        }
        arg
    });
    Command::new("sieved")
        .version(env!("CARGO_PKG_VERSION"))
        .about(
            "A Redis-protocol server for a crawler fleet's shared state: RedisBloom-compatible \
             filters, a crawl frontier, Redis data types, replication",
        )
        .args(settings)
        .arg(
            Arg::new(CONFIG_FILE_ARGUMENT)
                .value_name("config-file")
                .value_parser(clap::value_parser!(PathBuf))
                .help(
                    "Configuration file, as redis-server takes it (`sieved /etc/sieved/sieved.conf`), \
                     read as --config reads it",
                ),
        )
        .arg(
            Arg::new(CONFIG_FILE)
                .long(CONFIG_FILE)
                .env("SIEVED_CONFIG")
                .value_name("path")
                .value_parser(clap::value_parser!(PathBuf))
                .help(
                    "Configuration file, in redis.conf's `directive value` style; environment \
                     variables and flags override what it says.",
                ),
        )
}

/// The values the arguments give, on top of the file they name (as an absolute path, CONFIG
/// REWRITE's target) and the defaults.
pub(crate) fn gather(matches: &ArgMatches) -> Result<(Values, Option<PathBuf>), String> {
    let mut values = Values::defaults();
    let argument = matches.get_one::<PathBuf>(CONFIG_FILE_ARGUMENT);
    if argument.is_some() && matches.value_source(CONFIG_FILE) == Some(ValueSource::CommandLine) {
        return Err(
            "give the configuration file once: as the first argument or with --config".into(),
        );
    }
    // The first argument is on the command line, so it wins over SIEVED_CONFIG.
    let file = argument
        .or_else(|| matches.get_one::<PathBuf>(CONFIG_FILE))
        .map(|path| std::path::absolute(path).unwrap_or_else(|_| path.clone()));
    if let Some(path) = &file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the configuration file {}: {e}", path.display()))?;
        apply_file(&mut values, &text).map_err(|e| format!("{}:{e}", path.display()))?;
    }
    for param in PARAMS {
        let source = match matches.value_source(param.flag) {
            Some(ValueSource::CommandLine) => format!("--{}", param.flag),
            Some(ValueSource::EnvVariable) => param.env().to_string(),
            _ => continue,
        };
        let Some(text) = matches.get_one::<String>(param.flag) else {
            continue;
        };
        (param.load)(&mut values, text)
            .map_err(|why| format!("{source}: {}", why.at_start_up(text)))?;
    }
    Ok((values, file))
}

/// The value the file gives a directive, with the 1-based line that settles it: the last line
/// wins, except for a list (`save`), whose lines add up until an empty one clears them, as in
/// Redis.
pub(crate) fn file_value(
    directives: &[file::Directive],
    name: &str,
    list: bool,
) -> Option<(String, usize)> {
    let mut found: Option<(String, usize)> = None;
    for directive in directives.iter().filter(|d| d.name == name) {
        let words = directive.args.join(" ");
        let value = match found {
            Some((items, _)) if list && !words.trim().is_empty() && !items.is_empty() => {
                format!("{items} {words}")
            }
            _ => words,
        };
        found = Some((value, directive.line + 1));
    }
    found
}

/// Reads every directive of the file into `values`; an error starts with the line number.
/// Each is checked even where a flag overrides it, so that the file is known good for the day
/// the flag goes.
fn apply_file(values: &mut Values, text: &str) -> Result<(), String> {
    let directives = file::parse(text)?;
    for directive in &directives {
        let line = directive.line + 1;
        let Some(param) = find(directive.name.as_bytes()) else {
            return Err(format!("{line}: unknown directive '{}'", directive.name));
        };
        if !param.list && directive.args.len() != 1 {
            return Err(format!("{line}: '{}' takes one value", directive.name));
        }
    }
    for param in PARAMS {
        if let Some((value, line)) = file_value(&directives, param.name, param.list) {
            (param.load)(values, &value)
                .map_err(|why| format!("{line}: {}: {}", param.name, why.at_start_up(&value)))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gathered(args: &[&str]) -> Result<Values, String> {
        let matches = command()
            .try_get_matches_from(std::iter::once("sieved").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        gather(&matches).map(|(values, _)| values)
    }

    #[test]
    fn flags_are_read_and_checked_by_the_table() {
        let values = gathered(&[
            "--port",
            "7",
            "--save",
            "",
            "--slowlog-log-slower-than",
            "-1",
        ])
        .unwrap();
        assert_eq!(values.startup.port, 7);
        assert!(values.settings.save.is_empty());
        assert_eq!(values.settings.slowlog_log_slower_than, -1);
        assert_eq!(values.settings.bf_initial_size, 100);
        assert_eq!(
            gathered(&["--databases", "0"]).err().unwrap(),
            "--databases: argument must be between 1 and 1024 inclusive"
        );
        assert_eq!(
            gathered(&["--threads", "many"]).err().unwrap(),
            "--threads: invalid value 'many'"
        );
    }

    #[test]
    fn the_first_argument_is_the_configuration_file() {
        let dir = std::env::temp_dir().join(format!("sieved-sources-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sieved.conf");
        std::fs::write(&path, "port 7\ndatabases 3\n").unwrap();
        let path = path.to_str().unwrap();
        let values = gathered(&[path, "--databases", "5"]).unwrap();
        // The file's directives, under the flags, as with --config.
        assert_eq!((values.startup.port, values.startup.databases), (7, 5));
        assert_eq!(
            gathered(&[path, "--config", path]).err().unwrap(),
            "give the configuration file once: as the first argument or with --config"
        );
        let missing = dir.join("missing.conf");
        assert!(gathered(&[missing.to_str().unwrap()])
            .err()
            .unwrap()
            .starts_with("cannot read the configuration file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn file_errors_name_the_line() {
        let mut values = Values::defaults();
        assert_eq!(
            apply_file(&mut values, "port 1\nsave 60 1\nsave 30 2\nio-threads 3\n"),
            Ok(())
        );
        assert_eq!(values.settings.save.to_string(), "60 1 30 2");
        assert_eq!(values.startup.threads, Some(3));
        for (text, error) in [
            ("nope 1\n", "1: unknown directive 'nope'"),
            ("\nport 1 2\n", "2: 'port' takes one value"),
            ("port many\n", "1: port: invalid value 'many'"),
            (
                "databases 0\n",
                "1: databases: argument must be between 1 and 1024 inclusive",
            ),
            (
                "loglevel loud\n",
                "1: loglevel: expected error, warn, info, debug or trace",
            ),
        ] {
            assert_eq!(apply_file(&mut values, text).unwrap_err(), error, "{text}");
        }
    }
}
