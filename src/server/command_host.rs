//! The server as commands see it: `cmd::Server` and `cmd::WriteLog`, implemented over `Shared`.

use super::saver;
use super::{background, Shared};
use crate::cmd::errors::{MISCONF_AOF, MISCONF_RDB};
use crate::cmd::{self, ClientFilter, ExitSave, SaveError, WriteLog};
use crate::config::Config;
use crate::observe;
use crate::persist::aof::{Aof, PendingTransaction};
use crate::protocol::{Reply, RequestList};
use std::sync::Arc;

/// On the `Arc` rather than on `Shared`: a background save needs a handle of its own to the
/// server, which outlives the command that started it.
impl cmd::Server for Arc<Shared> {
    fn config(&self) -> &Config {
        &self.config
    }

    fn write_log(&self) -> Option<&dyn WriteLog> {
        self.aof.as_ref().map(|aof| aof as &dyn WriteLog)
    }

    fn info(&self, sections: &[&'static str], now: u64) -> String {
        let mut report = self.report();
        report.now_ms = now;
        observe::info(&report, sections)
    }

    fn client_list(&self, filter: &ClientFilter, now: u64) -> String {
        self.clients.list(filter, now)
    }

    fn kill_clients(&self, filter: &ClientFilter, caller: u64, now: u64) -> usize {
        self.clients.kill(filter, caller, now)
    }

    fn slowlog_get(&self, count: usize, reply: &mut Reply) {
        let entries = self.slowlog.newest(count);
        reply.array(entries.len());
        for entry in entries {
            reply.array(6);
            reply.int(entry.id as i64);
            reply.int(entry.timestamp as i64);
            reply.int(entry.micros as i64);
            reply.array(entry.args.len());
            entry.args.iter().for_each(|arg| reply.bulk(arg));
            reply.bulk(entry.client_addr.as_bytes());
            reply.bulk(&entry.client_name);
        }
    }

    fn slowlog_len(&self) -> usize {
        self.slowlog.len()
    }

    fn slowlog_reset(&self) {
        self.slowlog.reset();
    }

    fn reset_stats(&self) {
        self.stats.reset();
        self.commands.reset();
    }

    fn settings_changed(&self) {
        if let Some(aof) = self.aof.as_ref() {
            aof.set_fsync(self.config.settings().appendfsync);
        }
        self.saver.update_write_refusal(self);
    }

    fn save(&self) -> Result<(), SaveError> {
        self.saver.save(self).map(|_| ()).map_err(save_error)
    }

    fn save_in_background(&self, schedule: bool) -> Result<bool, SaveError> {
        match background::start_save(self) {
            Ok(()) => Ok(true),
            Err(_) if schedule => {
                self.saver.schedule();
                Ok(false)
            }
            Err(error) => Err(save_error(error)),
        }
    }

    fn last_save_secs(&self) -> u64 {
        self.saver.last_save_ms() / 1000
    }

    fn shutdown(&self, exit_save: ExitSave, force: bool) -> u64 {
        self.shutdown.request_with(exit_save, force)
    }

    fn replication_offset(&self) -> u64 {
        self.replication.offset
    }

    fn write_refusal(&self) -> Option<String> {
        if let Some(failure) = self.aof.as_ref().and_then(Aof::failure) {
            return Some(format!("{MISCONF_AOF}{failure}"));
        }
        self.saver.refuses_writes().then(|| MISCONF_RDB.to_string())
    }

    fn pubsub(&self) -> &dyn cmd::PubSub {
        &self.pubsub
    }
}

fn save_error(error: saver::SaveError) -> SaveError {
    match error {
        saver::SaveError::InProgress => SaveError::InProgress,
        saver::SaveError::Failed(error) => SaveError::Failed(error.to_string()),
    }
}

impl WriteLog for Aof {
    fn in_order(
        &self,
        time_ms: u64,
        batch: &mut RequestList,
        write: &mut dyn FnMut(&mut RequestList),
    ) -> u64 {
        let order = self.order();
        write(batch);
        let position = match batch.len() {
            0 => 0,
            1 => batch
                .iter()
                .next()
                .map_or(0, |(db, request)| order.append(time_ms, db, &request)),
            _ => {
                let mut transaction = PendingTransaction::default();
                for (db, request) in batch.iter() {
                    transaction.push(db, &request);
                }
                order.append_transaction(time_ms, &transaction)
            }
        };
        batch.clear();
        position
    }
}
