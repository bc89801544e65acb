//! The sieved binary: read settings, start logging, serve until told to stop.

use clap::parser::ValueSource;
use clap::ArgMatches;
use sieved::config::{self, Config};
use sieved::import_rdb;
use sieved::notify;
use sieved::open_files;
use sieved::server::Server;
use std::io::IsTerminal;
use std::process::ExitCode;

/// INFO's used_memory and the maxmemory check count every allocation of the process.
#[global_allocator]
static ALLOCATOR: sieved::memory::CountingAllocator = sieved::memory::CountingAllocator;

fn main() -> ExitCode {
    // A known subcommand's name is the subcommand; any other first argument is the
    // configuration file (`sieved /etc/sieved/sieved.conf`).
    let matches = config::command()
        .subcommand(import_rdb::command())
        .disable_help_subcommand(true)
        .get_matches();
    if let Some((name, arguments)) = matches.subcommand() {
        if let Some(flag) = server_flag_given(&matches) {
            eprintln!("sieved: {flag} is the server's; {name} does not take it");
            return ExitCode::from(2);
        }
        return import_rdb::run(arguments);
    }
    let config = match Config::from_matches(&matches) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("sieved: {error}");
            return ExitCode::from(2);
        }
    };
    // The table has checked the level already.
    let level = config
        .log_level
        .parse::<tracing::Level>()
        .unwrap_or(tracing::Level::INFO);
    // Under systemd the output goes to the journal, where colour codes would show as noise.
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_target(false)
        .with_ansi(std::io::stdout().is_terminal())
        .init();

    raise_open_files_limit(config.settings().maxclients);

    // Accepting and the background tasks; connections are served by their own threads
    // (`--threads`, server/connection_threads.rs).
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "cannot start the runtime");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(%error, "sieved stopped");
            ExitCode::FAILURE
        }
    }
}

/// The first of the server's own arguments given on the command line, which a subcommand would
/// otherwise pass over in silence.
fn server_flag_given(matches: &ArgMatches) -> Option<String> {
    matches
        .ids()
        .find(|id| matches.value_source(id.as_str()) == Some(ValueSource::CommandLine))
        .map(|id| format!("--{id}"))
}

/// Makes room for `maxclients` connections, as Redis does; a shortfall only warns, since the
/// server still works, for fewer clients.
fn raise_open_files_limit(maxclients: u64) {
    let wanted = maxclients.saturating_add(open_files::RESERVED);
    match open_files::raise_to(wanted) {
        Ok(limit) if limit >= wanted => tracing::debug!(limit, "open-files limit"),
        Ok(limit) => tracing::warn!(
            "the open-files limit is {limit}, short of the {wanted} that maxclients {maxclients} \
             needs; about {} clients can connect (raise the hard limit: ulimit -Hn, or \
             LimitNOFILE= under systemd)",
            limit.saturating_sub(open_files::RESERVED)
        ),
        Err(error) => tracing::warn!(%error, "cannot raise the open-files limit to {wanted}"),
    }
}

async fn serve(config: Config) -> std::io::Result<()> {
    let settings = config.settings();
    tracing::info!(
        version = sieved::VERSION,
        pid = std::process::id(),
        config_file = %config.file.as_deref().map(|p| p.display().to_string()).unwrap_or_default(),
        "sieved starting; threads={} shards={} databases={} dir={} save=\"{}\" bf-error-rate={} \
         bf-initial-size={} bf-expansion-factor={} max-filter-memory={}",
        config.threads,
        config.shards,
        config.databases,
        config.dir.display(),
        settings.save,
        settings.bf_error_rate,
        settings.bf_initial_size,
        settings.bf_expansion_factor,
        settings.max_filter_memory,
    );
    let server = Server::bind(config).await?;
    let shared = server.shared();
    let address = server.local_addr()?;
    match (server.tls_addr(), shared.metrics_addr) {
        (Some(tls), Some(metrics)) => tracing::info!(%address, %tls, %metrics, "listening"),
        (Some(tls), None) => tracing::info!(%address, %tls, "listening"),
        (None, Some(metrics)) => tracing::info!(%address, %metrics, "listening"),
        (None, None) => tracing::info!(%address, "listening"),
    }
    // Clients are served while the data loads (as Redis: `-LOADING` to what needs the data).
    let stopping = shared.clone();
    tokio::spawn(async move {
        stopping.shutdown.requested().await;
        notify::tell("STOPPING=1\nSTATUS=shutting down");
    });
    server
        .load_and_run(true, move |recovery| {
            // What start-up loaded, for the log.
            match recovery.snapshot {
                Some(report) => tracing::info!(
                    expired = report.expired,
                    bytes = report.bytes,
                    "loaded {} keys from the snapshot in {:.3}s",
                    report.keys,
                    report.duration.as_secs_f64()
                ),
                None => tracing::info!("no snapshot to load"),
            }
            let log = &recovery.log;
            if log.segments > 0 {
                tracing::info!(
                    segments = log.segments,
                    records = log.records,
                    commands = log.commands,
                    bytes = log.bytes,
                    "replayed the append-only file in {:.3}s",
                    log.duration.as_secs_f64()
                );
            }
            let keys: usize = shared.store.dbs().map(|db| db.len()).sum();
            notify::tell(&format!("READY=1\nSTATUS=serving; {keys} keys loaded"));
            tracing::info!("ready to accept connections");
        })
        .await?;
    tracing::info!("sieved stopped");
    Ok(())
}
