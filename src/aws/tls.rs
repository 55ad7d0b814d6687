//! TLS of the S3 and RDS clients: rustls (ring) with this machine's root
//! certificates, or, with the Profile's `skipSSLVerify`, any certificate.

use std::sync::Arc;

/// Adds what to do when the server's certificate is not trusted.
pub(crate) fn tls_hint(msg: String) -> String {
    if msg.contains("certificate") || msg.contains("UnknownIssuer") {
        format!(
            "{msg} (the server's TLS certificate is not trusted: install its CA on this machine, or set skipSSLVerify: true in the Profile)"
        )
    } else {
        msg
    }
}

/// The client's TLS set-up; the error is worded for the user (the clients' `Config` error).
pub(crate) fn tls_config(https: bool, skip_verify: bool) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?;
    let cfg = if skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth()
    } else if https {
        use hyper_rustls::ConfigBuilderExt as _;
        builder
            .with_native_roots()
            .map_err(|e| {
                format!(
                    "TLS set-up: cannot load this machine's root certificates ({e}); install CA certificates or set skipSSLVerify: true in the Profile"
                )
            })?
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth()
    };
    Ok(cfg)
}

/// `skipSSLVerify`: any certificate, any name (signatures still checked).
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
