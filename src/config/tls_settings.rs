//! The TLS listener's settings, checked against each other.

use super::client_auth::ClientAuth;
use super::table::Startup;
use std::path::PathBuf;

/// The TLS listener's settings, fixed at start-up.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// `None` serves no TLS. `Some(0)` picks a free port, which only embedding and tests can
    /// ask for: the tls-port flag's 0 means "off", as in Redis.
    pub port: Option<u16>,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    pub ca_cert_file: Option<PathBuf>,
    pub auth_clients: ClientAuth,
    /// What this server shows as a TLS client, when not its server certificate.
    pub client_cert_file: Option<PathBuf>,
    pub client_key_file: Option<PathBuf>,
}

impl TlsSettings {
    /// The TLS entries of the table, checked against each other: a TLS port needs its
    /// certificate, key and, to check clients, an authority.
    pub(crate) fn from_startup(startup: &Startup) -> Result<TlsSettings, String> {
        let given = |path: &PathBuf| (!path.as_os_str().is_empty()).then(|| path.clone());
        let settings = TlsSettings {
            port: (startup.tls_port != 0).then_some(startup.tls_port),
            cert_file: startup.tls_cert_file.clone(),
            key_file: startup.tls_key_file.clone(),
            ca_cert_file: given(&startup.tls_ca_cert_file),
            auth_clients: startup.tls_auth_clients,
            client_cert_file: given(&startup.tls_client_cert_file),
            client_key_file: given(&startup.tls_client_key_file),
        };
        if settings.client_cert_file.is_some() != settings.client_key_file.is_some() {
            return Err("--tls-client-cert-file and --tls-client-key-file go together".into());
        }
        if settings.port.is_none() {
            return Ok(settings);
        }
        if startup.tls_port == startup.port {
            return Err("--tls-port: must differ from --port".into());
        }
        if given(&settings.cert_file).is_none() || given(&settings.key_file).is_none() {
            return Err("--tls-port: needs --tls-cert-file and --tls-key-file".into());
        }
        if settings.auth_clients != ClientAuth::Off && settings.ca_cert_file.is_none() {
            return Err(format!(
                "--tls-auth-clients {}: needs --tls-ca-cert-file, the authority that signs \
                 client certificates (or --tls-auth-clients no, to ask for none)",
                settings.auth_clients.name()
            ));
        }
        Ok(settings)
    }
}
