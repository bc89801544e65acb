//! CONFIG REWRITE: the settings CONFIG SET can change, written back into the configuration file.

use super::file::{self, Change, Update};
use super::sources::file_value;
use super::table::{Access, Param, PARAMS};
use super::Config;

impl Config {
    /// CONFIG REWRITE: writes the parameters CONFIG SET can change back into the configuration
    /// file, with their current values wherever these came from (CONFIG SET, a flag or an
    /// environment variable given for one run), as Redis does. Parameters fixed at start-up are
    /// left as the file has them, where Redis writes those too: a `--port` or `SIEVED_DIR`
    /// given for one run does not become permanent.
    pub fn rewrite(&self) -> Result<(), String> {
        let path = self
            .file
            .as_deref()
            .ok_or("ERR The server is running without a config file")?;
        let _one_at_a_time = self.rewriting.lock().unwrap_or_else(|p| p.into_inner());
        let fail = |why: String| format!("ERR Rewriting config file: {why}");
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(fail(e.to_string())),
        };
        let directives = file::parse(&text).map_err(|e| fail(format!("{}:{e}", path.display())))?;
        let settings = self.settings();
        let mut updates = Vec::new();
        for param in PARAMS {
            let update = match param.access {
                Access::Runtime { get, set, written } => {
                    // The value as CONFIG GET would show it, so that `1e-2` in the file
                    // counts as the 0.01 it means.
                    let canonical = |value: &str| {
                        let mut scratch = settings.clone();
                        set(&mut scratch, value).ok()?;
                        Some(get(&scratch))
                    };
                    let current = get(&settings);
                    let in_file = file_value(&directives, param.name, param.list);
                    let unchanged = in_file
                        .is_some_and(|(value, _)| canonical(&value).as_ref() == Some(&current));
                    let change = if unchanged {
                        Change::Keep
                    } else if param.absent_when_empty && current.is_empty() {
                        Change::Remove
                    } else {
                        Change::Write(directive_line(param, &written(&settings)))
                    };
                    Update {
                        name: param.name,
                        change,
                        add_if_missing: canonical(param.default).as_ref() != Some(&current),
                    }
                }
                Access::Password => self.requirepass_update(param, &directives).map_err(fail)?,
                Access::Fixed { .. } => continue,
            };
            updates.push(update);
        }
        let rewritten = file::rewrite_text(&text, &directives, &updates);
        file::write_atomically(path, &rewritten).map_err(|e| fail(e.to_string()))?;
        tracing::info!(file = %path.display(), "configuration rewritten");
        Ok(())
    }

    /// CONFIG REWRITE's line for `requirepass`. A password that is not UTF-8 cannot be written
    /// so that it reads back the same: it stops the rewrite rather than lock every client out
    /// at the next start.
    fn requirepass_update(
        &self,
        param: &'static Param,
        directives: &[file::Directive],
    ) -> Result<Update, String> {
        let password = self
            .requirepass
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let password = String::from_utf8(password).map_err(|_| {
            format!(
                "{} is not UTF-8 text, which the file cannot hold",
                param.name
            )
        })?;
        let unchanged = file_value(directives, param.name, param.list)
            .is_some_and(|(written, _)| written == password);
        Ok(Update {
            name: param.name,
            change: match unchanged {
                true => Change::Keep,
                false => Change::Write(directive_line(param, &password)),
            },
            add_if_missing: password != param.default,
        })
    }
}

/// How a directive is written into the file: a list (`save`) as bare words, like Redis writes
/// it.
fn directive_line(param: &Param, value: &str) -> String {
    if param.list && !value.is_empty() {
        format!("{} {value}", param.name)
    } else {
        format!("{} {}", param.name, file::quote(value))
    }
}
