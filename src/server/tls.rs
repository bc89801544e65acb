//! TLS: the server's rustls configuration, built once at start-up from the certificate files,
//! and the handshake each connection to the TLS port goes through before it is served; and the
//! client side a replica's link to its primary uses with `tls-replication`.

use crate::config::{ClientAuth, TlsSettings};
use rustls::crypto::ring;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// Longest a client may take to complete the handshake; it holds a client slot meanwhile.
pub(super) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A start-up error that names the setting and the file it is about.
fn file_error(setting: &str, path: &Path, why: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{setting} {}: {why}", path.display()),
    )
}

fn certificates(setting: &str, path: &Path) -> io::Result<Vec<CertificateDer<'static>>> {
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_error(setting, path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(setting, path, e))?;
    if certificates.is_empty() {
        return Err(file_error(setting, path, "no PEM certificate in the file"));
    }
    Ok(certificates)
}

fn private_key(path: &Path) -> io::Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => {
            file_error("tls-key-file", path, "no PEM private key in the file")
        }
        other => file_error("tls-key-file", path, other),
    })
}

/// Reads the certificate, key and CA files and builds the acceptor; every error names the file.
pub(super) fn acceptor(settings: &TlsSettings) -> io::Result<TlsAcceptor> {
    let provider = Arc::new(ring::default_provider());
    let chain = certificates("tls-cert-file", &settings.cert_file)?;
    let key = private_key(&settings.key_file)?;
    let verifier = match (settings.auth_clients, &settings.ca_cert_file) {
        (ClientAuth::Off, _) | (_, None) => WebPkiClientVerifier::no_client_auth(),
        (auth, Some(ca_file)) => {
            let mut roots = RootCertStore::empty();
            for certificate in certificates("tls-ca-cert-file", ca_file)? {
                roots
                    .add(certificate)
                    .map_err(|e| file_error("tls-ca-cert-file", ca_file, e))?;
            }
            let builder =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
            let builder = match auth {
                ClientAuth::Optional => builder.allow_unauthenticated(),
                _ => builder,
            };
            builder
                .build()
                .map_err(|e| file_error("tls-ca-cert-file", ca_file, e))?
        }
    };
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| {
            file_error(
                "tls-key-file",
                &settings.key_file,
                format!(
                    "cannot be used with tls-cert-file {}: {e}",
                    settings.cert_file.display()
                ),
            )
        })?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The replication link's TLS client: it trusts `tls-ca-cert-file` and shows
/// `tls-client-cert-file` (or `tls-cert-file`), if any, to a primary that asks for one.
pub(super) fn connector(settings: &TlsSettings) -> io::Result<TlsConnector> {
    let provider = Arc::new(ring::default_provider());
    let ca_file = settings.ca_cert_file.as_ref().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "tls-replication needs tls-ca-cert-file, the authority that signs the primary's \
             certificate",
        )
    })?;
    let mut roots = RootCertStore::empty();
    for certificate in certificates("tls-ca-cert-file", ca_file)? {
        roots
            .add(certificate)
            .map_err(|e| file_error("tls-ca-cert-file", ca_file, e))?;
    }
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_root_certificates(roots);
    let (cert_file, key_file) = match (&settings.client_cert_file, &settings.client_key_file) {
        (Some(cert), Some(key)) => (cert.clone(), key.clone()),
        _ => (settings.cert_file.clone(), settings.key_file.clone()),
    };
    let config = if cert_file.as_os_str().is_empty() {
        builder.with_no_client_auth()
    } else {
        builder
            .with_client_auth_cert(
                certificates("tls-client-cert-file", &cert_file)?,
                private_key(&key_file)?,
            )
            .map_err(|e| file_error("tls-client-key-file", &key_file, e))?
    };
    Ok(TlsConnector::from(Arc::new(config)))
}

/// Why a handshake did not produce a connection.
pub(super) enum HandshakeFailure {
    TimedOut,
    Failed(io::Error),
}

/// Runs the server's side of the handshake, giving up after `limit`.
pub(super) async fn handshake(
    acceptor: &TlsAcceptor,
    stream: TcpStream,
    limit: Duration,
) -> Result<TlsStream<TcpStream>, HandshakeFailure> {
    match tokio::time::timeout(limit, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(error)) => Err(HandshakeFailure::Failed(error)),
        Err(_) => Err(HandshakeFailure::TimedOut),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn test_file(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/tls")
            .join(name)
    }

    fn settings(cert: &str, key: &str, ca: Option<&str>, auth: ClientAuth) -> TlsSettings {
        TlsSettings {
            port: Some(0),
            cert_file: test_file(cert),
            key_file: test_file(key),
            ca_cert_file: ca.map(test_file),
            auth_clients: auth,
            client_cert_file: None,
            client_key_file: None,
        }
    }

    fn error(settings: &TlsSettings) -> String {
        match acceptor(settings) {
            Ok(_) => panic!("{settings:?} accepted"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn the_test_certificates_load() {
        for auth in [ClientAuth::Required, ClientAuth::Optional, ClientAuth::Off] {
            acceptor(&settings("server.crt", "server.key", Some("ca.crt"), auth)).expect("loads");
        }
    }

    #[test]
    fn errors_name_the_file() {
        let missing = error(&settings("nope.crt", "server.key", None, ClientAuth::Off));
        assert!(missing.starts_with("tls-cert-file "), "{missing}");
        assert!(missing.contains("nope.crt"), "{missing}");

        let key_as_cert = error(&settings("server.key", "server.key", None, ClientAuth::Off));
        assert!(
            key_as_cert.contains("server.key: no PEM certificate"),
            "{key_as_cert}"
        );

        let cert_as_key = error(&settings("server.crt", "server.crt", None, ClientAuth::Off));
        assert!(
            cert_as_key.starts_with("tls-key-file ") && cert_as_key.contains("no PEM private key"),
            "{cert_as_key}"
        );

        let mismatch = error(&settings("server.crt", "client.key", None, ClientAuth::Off));
        assert!(
            mismatch.contains("client.key: cannot be used with tls-cert-file"),
            "{mismatch}"
        );

        let bad_ca = error(&settings(
            "server.crt",
            "server.key",
            Some("server.key"),
            ClientAuth::Required,
        ));
        assert!(bad_ca.starts_with("tls-ca-cert-file "), "{bad_ca}");
    }
}
