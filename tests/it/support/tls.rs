//! TLS for the tests: the committed certificates (made by tests/tls/gen-certs.sh), servers with
//! a TLS port, and the client side of the handshake with tokio-rustls.

use super::async_client::AsyncClient;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use sieved::config::{ClientAuth, Config, TlsSettings};
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

pub fn cert_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/tls")
        .join(name)
}

/// A TLS port on a free port, with the test server certificate and the test CA.
pub fn settings(auth_clients: ClientAuth) -> TlsSettings {
    TlsSettings {
        port: Some(0),
        cert_file: cert_file("server.crt"),
        key_file: cert_file("server.key"),
        ca_cert_file: Some(cert_file("ca.crt")),
        auth_clients,
        client_cert_file: Some(cert_file("client.crt")),
        client_key_file: Some(cert_file("client.key")),
    }
}

pub fn config(auth_clients: ClientAuth) -> Config {
    let mut config = Config::default_for_tests();
    config.tls = settings(auth_clients);
    config
}

/// What a client shows the server: nothing, the certificate the test CA signed, or one the CA
/// never signed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Identity {
    None,
    Signed,
    Untrusted,
}

fn client_config(identity: Identity) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(cert_file("ca.crt")).expect("CA certificate"))
        .expect("CA certificate");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots);
    let files = match identity {
        Identity::None => return Arc::new(builder.with_no_client_auth()),
        Identity::Signed => ("client.crt", "client.key"),
        Identity::Untrusted => ("untrusted-client.crt", "untrusted-client.key"),
    };
    let chain = vec![CertificateDer::from_pem_file(cert_file(files.0)).expect("certificate")];
    let key = PrivateKeyDer::from_pem_file(cert_file(files.1)).expect("key");
    Arc::new(builder.with_client_auth_cert(chain, key).expect("identity"))
}

/// Connects and completes the client's side of the handshake. Under TLS 1.3 the server checks a
/// client certificate after the client has finished, so a refusal shows on the first read.
pub async fn connect(
    addr: SocketAddr,
    identity: Identity,
) -> io::Result<AsyncClient<TlsStream<TcpStream>>> {
    let stream = TcpStream::connect(addr).await?;
    let connector = TlsConnector::from(client_config(identity));
    let stream = connector
        .connect(ServerName::IpAddress(addr.ip().into()), stream)
        .await?;
    Ok(AsyncClient::new(stream))
}
