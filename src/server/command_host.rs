//! The server as commands see it: `cmd::Server` and `cmd::WriteLog`, implemented over `Shared`.

use super::{background, replication, Shared};
use crate::cmd::errors::{MISCONF_AOF, MISCONF_RDB};
use crate::cmd::{
    self, ClientFilter, ExitSave, LogPosition, Replicating, RoleView, SaveError, WriteLog,
};
use crate::config::Config;
use crate::observe;
use crate::persist::aof::{format, Aof, PendingTransaction};
use crate::protocol::{Reply, Request, RequestList};
use crate::store::now_ms;
use std::sync::Arc;

/// On the `Arc` rather than on `Shared`: a background save needs a handle of its own to the
/// server, which outlives the command that started it.
impl cmd::Server for Arc<Shared> {
    fn config(&self) -> &Config {
        &self.config
    }

    fn scripts(&self) -> Option<&cmd::Scripts> {
        Some(&self.scripts)
    }

    fn write_log(&self) -> Option<&dyn WriteLog> {
        let logged = self.aof.is_some() || self.replication.stream.is_active();
        logged.then_some(&**self as &dyn WriteLog)
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

    fn slowlog_script_call(&self, request: Request, micros: u64) {
        let threshold = self.config.slowlog_threshold_us();
        if threshold >= 0 && micros >= threshold as u64 {
            self.slowlog.push(
                request,
                micros,
                now_ms() / 1000,
                (String::new(), Vec::new()),
                self.config.settings().slowlog_max_len,
            );
        }
    }

    fn reset_stats(&self) {
        self.stats.reset();
        self.commands.reset();
    }

    fn count_evictions(&self, keys: u64) {
        observe::Stats::add(&self.stats.evicted_keys, keys);
    }

    fn memory_not_counted(&self) -> u64 {
        self.replication.stream.beyond_backlog()
    }

    fn settings_changed(&self) {
        self.apply_eviction_settings();
        if let Some(aof) = self.aof.as_ref() {
            aof.set_fsync(self.config.settings().appendfsync);
        }
        self.saver.update_write_refusal(self);
        let settings = self.config.settings();
        self.replication.apply_settings(&settings);
        let wanted = settings.replicaof.0;
        let current = self.replication.primary().map(|p| (p.host, p.port));
        if wanted != current {
            replication::follow(self, wanted);
        }
    }

    fn save(&self) -> Result<(), SaveError> {
        self.saver.save(self).map(|_| ())
    }

    fn save_in_background(&self, schedule: bool) -> Result<bool, SaveError> {
        match background::start_save(self) {
            Ok(()) => Ok(true),
            Err(_) if schedule => {
                self.saver.schedule();
                Ok(false)
            }
            Err(error) => Err(error),
        }
    }

    fn last_save_secs(&self) -> u64 {
        self.saver.last_save_ms() / 1000
    }

    fn shutdown(&self, exit_save: ExitSave, force: bool) -> u64 {
        self.shutdown.request_with(exit_save, force)
    }

    fn role(&self) -> RoleView {
        let offset = self.replication.stream.offset();
        match self.replication.primary() {
            Some(primary) => RoleView::Replica {
                host: primary.host,
                port: primary.port,
                state: primary.state.role_name(),
                offset,
            },
            None => RoleView::Primary {
                offset,
                replicas: self
                    .replication
                    .followers()
                    .into_iter()
                    .map(|f| (f.ip, f.port, f.acked))
                    .collect(),
            },
        }
    }

    fn replicate(&self, primary: Option<(String, u16)>) -> Replicating {
        replication::follow(self, primary)
    }

    fn role_refusal(&self, writes: bool, runs_when_stale: bool) -> Option<&'static str> {
        self.replication.refusal(writes, runs_when_stale)
    }

    fn replica_link_down(&self) -> bool {
        !self.replication.link_up()
    }

    fn run_id(&self) -> &str {
        &self.run_id
    }

    fn loading(&self) -> bool {
        self.loading.active()
    }

    fn acked_replicas(&self, offset: u64) -> usize {
        self.replication.acked_at_least(offset)
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

    fn unblock_client(&self, id: u64, error: bool) -> bool {
        self.blocking.unblock(&self.store, id, error)
    }
}

impl WriteLog for Shared {
    fn in_order(
        &self,
        time_ms: u64,
        batch: &mut RequestList,
        write: &mut dyn FnMut(&mut RequestList),
    ) -> LogPosition {
        // A replica's own clients' writes (replica-read-only no) stay its own, as in Redis:
        // its stream is its primary's, byte for byte.
        let streamed = self.replication.stream.is_active() && !self.replication.is_replica();
        if !streamed {
            let Some(aof) = self.aof.as_ref() else {
                write(batch);
                batch.clear();
                return LogPosition::default();
            };
            let order = aof.order();
            write(batch);
            let durable_at = order.append_with(|out| encode(out, time_ms, batch));
            batch.clear();
            return LogPosition {
                durable_at,
                stream_offset: 0,
            };
        }
        let mut record = self.stream_order.lock().unwrap_or_else(|p| p.into_inner());
        let order = self.aof.as_ref().map(Aof::order);
        write(batch);
        encode(&mut record, time_ms, batch);
        batch.clear();
        if record.is_empty() {
            return LogPosition::default();
        }
        let position = LogPosition {
            durable_at: order.map_or(0, |order| order.append_with(|out| out.extend(&*record))),
            stream_offset: self.replication.stream.append(&record),
        };
        record.clear();
        position
    }
}

/// Appends each of the batch's records to `out` (the whole batch is one unless it was divided,
/// `RequestList::end_record`): one command, or a transaction.
fn encode(out: &mut Vec<u8>, time_ms: u64, batch: &RequestList) {
    for mut record in batch.records() {
        if record.len() == 1 {
            if let Some((db, request)) = record.next() {
                format::encode_single(out, time_ms, db, &request);
            }
        } else {
            let mut transaction = PendingTransaction::default();
            for (db, request) in record {
                transaction.push(db, &request);
            }
            transaction.encode(out, time_ms);
        }
    }
}
