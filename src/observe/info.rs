//! INFO's text, section by section, in Redis's field names.

use super::{Report, ScriptMemory, Stats};
use crate::store::summarize;
use std::fmt::Write;

/// How often a second the server's periodic work runs (expiry, the access clock, the rates),
/// as Redis's `hz`.
const HZ: u32 = 10;

/// The sections named, in the order given, separated by blank lines as Redis does.
pub(crate) fn render(report: &Report, sections: &[&str]) -> String {
    let mut text = String::new();
    for (i, name) in sections.iter().enumerate() {
        if i > 0 {
            text.push_str("\r\n");
        }
        section(report, name, &mut text);
    }
    text
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "K", "M", "G", "T"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes}B")
    } else {
        format!("{value:.2}{}", UNITS[unit])
    }
}

/// INFO memory's scripting fields, in Redis 7.4's order; like Redis, `used_memory_scripts` is
/// EVAL's cache and the libraries together.
fn script_memory(scripts: &ScriptMemory) -> String {
    let vm_total = scripts.vm_eval + scripts.vm_functions;
    let used_scripts = scripts.scripts_eval + scripts.functions_memory;
    format!(
        "used_memory_lua:{}\r\nused_memory_vm_eval:{}\r\nused_memory_lua_human:{}\r\n\
         used_memory_scripts_eval:{}\r\nnumber_of_cached_scripts:{}\r\nnumber_of_functions:{}\r\n\
         number_of_libraries:{}\r\nused_memory_vm_functions:{}\r\nused_memory_vm_total:{vm_total}\r\n\
         used_memory_vm_total_human:{}\r\nused_memory_functions:{}\r\n\
         used_memory_scripts:{used_scripts}\r\nused_memory_scripts_human:{}\r\n",
        scripts.vm_eval,
        scripts.vm_eval,
        human_bytes(scripts.vm_eval),
        scripts.scripts_eval,
        scripts.cached_scripts,
        scripts.functions,
        scripts.libraries,
        scripts.vm_functions,
        human_bytes(vm_total),
        scripts.functions_memory,
        human_bytes(used_scripts),
    )
}

fn section(report: &Report, name: &str, out: &mut String) {
    let stats = report.stats;
    let uptime = report.uptime_secs;
    // Writing to a String cannot fail.
    let _ = match name {
        "server" => write!(
            out,
            "# Server\r\nredis_version:{}\r\nsieved_version:{}\r\nredis_git_sha1:00000000\r\n\
             redis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:standalone\r\nos:{} {}\r\n\
             arch_bits:{}\r\nmultiplexing_api:epoll\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\n\
             server_time_usec:{}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\nhz:{HZ}\r\n\
             configured_hz:{HZ}\r\nlru_clock:{}\r\nio_threads_active:{}\r\nexecutable:{}\r\n\
             config_file:{}\r\n",
            crate::REDIS_VERSION,
            crate::VERSION,
            std::env::consts::OS,
            std::env::consts::ARCH,
            usize::BITS,
            std::process::id(),
            report.run_id,
            report.tcp_port,
            report.now_ms * 1000,
            uptime / 86400,
            report.lru_clock,
            report.threads,
            std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
            report.config_file.as_deref().map(|p| p.display().to_string()).unwrap_or_default(),
        )
        .and_then(|()| {
            report
                .background
                .iter()
                .try_for_each(|(name, state)| write!(out, "background_{name}:{state}\r\n"))
        }),
        "clients" => write!(
            out,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:{}\r\n\
             pubsub_clients:{}\r\n",
            report.connected_clients,
            report.maxclients,
            report.blocked_clients,
            report.pubsub_clients,
        ),
        "memory" => {
            let memory = &report.memory;
            let (used, peak) = (memory.used, memory.peak);
            write!(
                out,
                "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{}\r\n\
                 used_memory_rss_human:{}\r\nused_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\n\
                 total_system_memory:{}\r\ntotal_system_memory_human:{}\r\n{}maxmemory:{}\r\n\
                 maxmemory_human:{}\r\nmaxmemory_policy:{}\r\nmem_fragmentation_ratio:{:.2}\r\n\
                 mem_not_counted_for_evict:{}\r\nmem_allocator:libc\r\nmem_query_buffers:{}\r\n",
                human_bytes(used),
                memory.rss,
                human_bytes(memory.rss),
                human_bytes(peak),
                memory.total_system,
                human_bytes(memory.total_system),
                script_memory(&memory.scripts),
                memory.maxmemory,
                human_bytes(memory.maxmemory),
                memory.policy,
                memory.rss as f64 / used.max(1) as f64,
                memory.not_counted_for_evict,
                report.stats.query_buffer_bytes(),
            )
        }
        "persistence" => {
            persistence(out, report);
            Ok(())
        }
        "stats" => {
            let (input_kbps, output_kbps) = stats.instantaneous_kbps();
            write!(
                out,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
                 instantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\n\
                 instantaneous_input_kbps:{input_kbps:.2}\r\ninstantaneous_output_kbps:{output_kbps:.2}\r\n\
                 rejected_connections:{}\r\nsync_full:{}\r\nsync_partial_ok:{}\r\nsync_partial_err:{}\r\n\
                 expired_keys:{}\r\nevicted_keys:{}\r\nevicted_scripts:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\n\
                 pubsubshard_channels:0\r\npanicked_tasks:{}\r\n",
                Stats::get(&stats.connections_received),
                Stats::get(&stats.commands_processed),
                stats.instantaneous_ops_per_sec(),
                Stats::get(&stats.net_input_bytes),
                Stats::get(&stats.net_output_bytes),
                Stats::get(&stats.rejected_connections),
                report.replication.sync_full,
                report.replication.sync_partial_ok,
                report.replication.sync_partial_err,
                Stats::get(&stats.expired_keys),
                Stats::get(&stats.evicted_keys),
                report.memory.scripts.evicted_scripts,
                report.pubsub_channels,
                report.pubsub_patterns,
                Stats::get(&stats.panicked_tasks),
            )
        }
        "replication" => {
            out.push_str("# Replication\r\n");
            out.push_str(&report.replication.fields);
            Ok(())
        }
        "cpu" => {
            let cpu = &report.cpu;
            write!(
                out,
                "# CPU\r\nused_cpu_sys:{:.6}\r\nused_cpu_user:{:.6}\r\nused_cpu_sys_children:{:.6}\r\n\
                 used_cpu_user_children:{:.6}\r\n",
                cpu.sys, cpu.user, cpu.sys_children, cpu.user_children,
            )
        }
        // What a server with RedisBloom and RedisJSON loaded lists, so that tools which look
        // for the modules find them (see MODULE LIST).
        "modules" => write!(
            out,
            "# Modules\r\nmodule:name=bf,ver={},api=1,filters=0,usedby=[],using=[],\
             options=[handle-io-errors]\r\nmodule:name=ReJSON,ver={},api=1,filters=0,\
             usedby=[],using=[],options=[handle-io-errors]\r\n",
            crate::BLOOM_MODULE_VERSION,
            crate::JSON_MODULE_VERSION
        ),
        "cluster" => {
            out.push_str("# Cluster\r\ncluster_enabled:0\r\n");
            Ok(())
        }
        "keyspace" => {
            out.push_str("# Keyspace\r\n");
            for (index, db) in report.store.dbs().enumerate() {
                let keys = db.len();
                if keys > 0 {
                    let _ = write!(out, "db{index}:keys={keys},expires={},avg_ttl=0\r\n", db.volatile_len());
                }
            }
            Ok(())
        }
        "commandstats" => {
            commandstats_section(report, out);
            Ok(())
        }
        "bloom" => {
            bloom_section(report, out);
            Ok(())
        }
        _ => Ok(()),
    };
}

/// INFO persistence, with Redis's fields of a load while start-up's runs.
fn persistence(out: &mut String, report: &Report) {
    let snapshots = &report.snapshots;
    let aof = report.aof.as_ref();
    let _ = write!(
        out,
        "# Persistence\r\nloading:{}\r\nasync_loading:0\r\nrdb_changes_since_last_save:{}\r\n\
         rdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\n\
         rdb_last_bgsave_time_sec:{}\r\nrdb_saves:{}\r\naof_enabled:{}\r\naof_rewrite_in_progress:{}\r\n\
         aof_last_bgrewrite_status:{}\r\naof_rewrites:{}\r\naof_last_write_status:{}\r\n\
         aof_current_size:{}\r\naof_base_size:{}\r\n",
        report.loading.is_some() as u8,
        snapshots.changes_since_last,
        snapshots.in_progress as u8,
        snapshots.last_save_ms / 1000,
        if snapshots.last_ok { "ok" } else { "err" },
        snapshots.last_duration_ms / 1000,
        snapshots.saves,
        aof.is_some() as u8,
        (aof.is_some() && snapshots.in_progress) as u8,
        if aof.is_none() || snapshots.last_ok { "ok" } else { "err" },
        aof.map_or(0, |aof| aof.rewrites),
        match aof.map(|aof| &aof.failure) {
            Some(Some(_)) => "err",
            _ => "ok",
        },
        aof.map_or(0, |aof| aof.current_size),
        aof.map_or(0, |aof| aof.base_size),
    );
    if let Some(loading) = &report.loading {
        let _ = write!(
            out,
            "loading_start_time:{}\r\nloading_total_bytes:{}\r\nloading_loaded_bytes:{}\r\n\
             loading_loaded_perc:{:.2}\r\nloading_eta_seconds:{}\r\n",
            loading.start_time_secs,
            loading.total_bytes,
            loading.loaded_bytes,
            loading.loaded_perc,
            loading.eta_secs,
        );
    }
}

/// INFO commandstats, in Redis's format.
fn commandstats_section(report: &Report, out: &mut String) {
    out.push_str("# Commandstats\r\n");
    for (name, totals) in &report.commands {
        let per_call = totals.usec as f64 / totals.calls.max(1) as f64;
        let _ = write!(
            out,
            "cmdstat_{}:calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
            name, totals.calls, totals.usec, totals.rejected, totals.failed,
        );
    }
}

/// INFO bloom: every filter in every database, by type. Visits every key, which is why the
/// section is left out of a plain INFO (as Redis leaves out its costlier sections).
fn bloom_section(report: &Report, out: &mut String) {
    let summary = summarize(report.store, report.now_ms);
    let (bloom, counting) = (summary.bloom, summary.counting);
    let _ = write!(
        out,
        "# Bloom\r\nbf_filters:{}\r\nbf_bytes:{}\r\nbf_items:{}\r\nbf_capacity:{}\r\nbf_links:{}\r\n\
         cbf_filters:{}\r\ncbf_bytes:{}\r\ncbf_items:{}\r\ncbf_capacity:{}\r\ncbf_links:{}\r\n\
         cbf_saturated_counters:{}\r\n",
        bloom.filters,
        bloom.bytes,
        bloom.items,
        bloom.capacity,
        bloom.links,
        counting.filters,
        counting.bytes,
        counting.items,
        counting.capacity,
        counting.links,
        counting.saturated_counters,
    );
}
