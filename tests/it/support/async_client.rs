//! `RawClient` for tests that run many connections at once in tokio tasks, over TCP or TLS: the
//! same encoding and framing (client.rs), over an asynchronous stream.

use super::client::{encode_command, escape, frame_len, Resp};
use std::io;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Only there so that a wedged server fails the test instead of hanging it.
const HANG_GUARD: Duration = Duration::from_secs(30);

pub struct AsyncClient<S> {
    stream: S,
    pending: Vec<u8>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncClient<S> {
    pub fn new(stream: S) -> AsyncClient<S> {
        AsyncClient {
            stream,
            pending: Vec::new(),
        }
    }

    pub async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await?;
        self.stream.flush().await
    }

    async fn read_more(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let n = tokio::time::timeout(HANG_GUARD, self.stream.read(&mut chunk))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no reply"))??;
        self.pending.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// Reads exactly one RESP2 reply and returns its bytes.
    pub async fn read_reply(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if let Some(len) = frame_len(Resp::Two, &self.pending)? {
                return Ok(self.pending.drain(..len).collect());
            }
            if self.read_more().await? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("closed; partial reply {}", escape(&self.pending)),
                ));
            }
        }
    }

    /// Sends a command and returns its reply.
    pub async fn cmd(&mut self, args: &[&str]) -> io::Result<Vec<u8>> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send(&encode_command(&args)).await?;
        self.read_reply().await
    }

    /// Reads until the server ends the connection and returns everything that came before; a
    /// connection reset or a TLS alert counts as an end too, a server that never ends it fails.
    pub async fn read_until_closed(&mut self) -> Vec<u8> {
        loop {
            match self.read_more().await {
                Ok(0) => break,
                Ok(_) => {}
                Err(error) if error.kind() == io::ErrorKind::TimedOut => {
                    panic!("the server did not close the connection")
                }
                Err(_) => break,
            }
        }
        std::mem::take(&mut self.pending)
    }
}
