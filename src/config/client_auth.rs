//! `tls-auth-clients`: a setting's value type, as `fsync.rs` and `save.rs` hold theirs.

/// `tls-auth-clients`: what a TLS client has to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// A certificate signed by the CA: `yes`.
    Required,
    /// Checked against the CA when the client shows one: `optional`.
    Optional,
    /// Never asked for: `no`.
    Off,
}

impl ClientAuth {
    pub fn parse(value: &str) -> Result<ClientAuth, String> {
        match value.to_ascii_lowercase().as_str() {
            "yes" => Ok(ClientAuth::Required),
            "optional" => Ok(ClientAuth::Optional),
            "no" => Ok(ClientAuth::Off),
            _ => Err("argument must be 'yes', 'no' or 'optional'".into()),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ClientAuth::Required => "yes",
            ClientAuth::Optional => "optional",
            ClientAuth::Off => "no",
        }
    }
}
