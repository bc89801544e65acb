//! The Prometheus endpoint (`--metrics-addr`): `GET /metrics` in the text exposition format.
//!
//! A scraper sends one small request and reads one response, so this is HTTP/1.1 reduced to
//! that: read the request head, answer, close. A web framework would bring a dependency tree
//! larger than the server for no behaviour a scraper uses.

use super::Shared;
use crate::observe;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request head longer than this is not a scraper's.
const MAX_HEAD: usize = 8 * 1024;
/// A client that has not sent its request by then is dropped.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves the endpoint from `listener` (bound at start-up, if `metrics-addr` was set) until
/// shutdown, following `metrics-addr` meanwhile: CONFIG SET of it turns the endpoint on, moves
/// it, or turns it off with "". An address that cannot be bound is logged, and leaves the
/// endpoint off until the next change.
pub(super) async fn serve(shared: Arc<Shared>, mut listener: Option<TcpListener>) {
    let mut serving = shared.config.settings().metrics_addr;
    loop {
        // Made before the setting is read, so that no change slips in between.
        let changed = shared.config.changed();
        let wanted = shared.config.settings().metrics_addr;
        if wanted != serving {
            // Closed first, so that the new address may be the old one's port.
            drop(listener.take());
            listener = rebind(&wanted).await;
            serving = wanted;
        }
        let accepted = tokio::select! {
            accepted = accept(listener.as_ref()) => accepted,
            _ = changed => continue,
            _ = shared.shutdown.requested() => return,
        };
        match accepted {
            Ok((stream, addr)) => {
                let shared = shared.clone();
                tokio::spawn(async move {
                    if let Err(error) = answer(&shared, stream).await {
                        tracing::debug!(%addr, %error, "metrics request failed");
                    }
                });
            }
            Err(error) => {
                tracing::warn!(%error, "metrics: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// A listener on `address`, or none when it is empty or cannot be bound.
async fn rebind(address: &str) -> Option<TcpListener> {
    if address.is_empty() {
        tracing::info!("metrics endpoint off");
        return None;
    }
    match TcpListener::bind(address).await {
        Ok(listener) => {
            let at = listener
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_default();
            tracing::info!(address = %at, "metrics endpoint listening");
            Some(listener)
        }
        Err(error) => {
            tracing::error!(%error, "metrics-addr {address}: cannot listen; the endpoint is off");
            None
        }
    }
}

/// The next connection to `listener`; never, without one.
async fn accept(listener: Option<&TcpListener>) -> io::Result<(TcpStream, SocketAddr)> {
    match listener {
        Some(listener) => listener.accept().await,
        None => std::future::pending().await,
    }
}

async fn read_head(stream: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too long",
            ));
        }
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        head.extend_from_slice(&chunk[..read]);
    }
    Ok(head)
}

async fn answer(shared: &Arc<Shared>, mut stream: TcpStream) -> io::Result<()> {
    let head = tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream))
        .await
        .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
    let head = String::from_utf8_lossy(&head);
    let mut words = head.lines().next().unwrap_or_default().split_whitespace();
    let (method, target) = (
        words.next().unwrap_or_default(),
        words.next().unwrap_or_default(),
    );
    let path = target.split('?').next().unwrap_or_default();
    let (status, content_type, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let worker = shared.clone();
            // Counting keys by type visits the whole keyspace; keep it off the workers that
            // serve clients.
            let body = tokio::task::spawn_blocking(move || observe::metrics(&worker.report()))
                .await
                .map_err(io::Error::other)?;
            ("200 OK", "text/plain; version=0.0.4; charset=utf-8", body)
        }
        (_, "/metrics") => ("405 Method Not Allowed", "text/plain", "GET only\n".into()),
        _ => (
            "404 Not Found",
            "text/plain",
            "not found; try /metrics\n".into(),
        ),
    };
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        response.push_str(&body);
    }
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}
