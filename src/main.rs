//! The sieved binary: parse settings, start logging, serve until told to stop.

use clap::Parser;
use sieved::config::{Config, Flags};
use sieved::server::Server;
use std::process::ExitCode;

fn main() -> ExitCode {
    let config = match Config::from_flags(Flags::parse()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("sieved: {error}");
            return ExitCode::from(2);
        }
    };
    let level = match config.log_level.parse::<tracing::Level>() {
        Ok(level) => level,
        Err(_) => {
            eprintln!("sieved: --log-level: expected error, warn, info, debug or trace");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_target(false)
        .init();

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads)
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

async fn serve(config: Config) -> std::io::Result<()> {
    let settings = config.settings();
    let summary = format!(
        "threads={} shards={} databases={} dir={} save=\"{}\" bf-error-rate={} bf-initial-size={} \
         bf-expansion-factor={} max-filter-memory={}",
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
    tracing::info!(
        version = sieved::VERSION,
        address = %server.local_addr()?,
        "sieved started; {summary}"
    );
    match server.load() {
        Ok(Some(report)) => tracing::info!(
            keys = report.keys,
            expired = report.expired,
            bytes = report.bytes,
            seconds = report.duration.as_secs_f64(),
            "loaded the snapshot"
        ),
        Ok(None) => tracing::info!("no snapshot to load; starting empty"),
        Err(error) => {
            tracing::error!("{error}; the file is left as it is");
            return Err(std::io::Error::other("the snapshot could not be loaded"));
        }
    }
    server.run(true).await?;
    tracing::info!("sieved stopped");
    Ok(())
}
