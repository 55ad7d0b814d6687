//! Development certificates: a private CA and a serving certificate signed by it (rcgen).
//!
//! `blueprint-operator certs --out certs/ --dns-name blueprint-operator-webhook.blueprint-operator.svc`
//! writes `ca.crt`, `ca.key`, `tls.crt`, `tls.key` and prints the `caBundle` (base64 of the CA
//! PEM) to put into the webhook configurations. In a cluster, prefer cert-manager (see
//! `manifests/webhook/cert-manager/`); these files are for development and tests.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use base64::Engine as _;
use chrono::{Datelike as _, Duration, Utc};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

/// A CA and a serving certificate, all PEM.
#[derive(Debug, Clone)]
pub struct DevCerts {
    pub ca_cert_pem: String,
    pub ca_key_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl DevCerts {
    /// The value of `clientConfig.caBundle`: base64 of the CA certificate PEM.
    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.ca_cert_pem.as_bytes())
    }
}

/// `blueprint-operator certs`: write a development CA and serving certificate.
#[derive(Debug, Clone, clap::Args)]
pub struct CertsArgs {
    /// Directory to write ca.crt, ca.key, tls.crt and tls.key into (created if missing).
    #[arg(long, default_value = "certs")]
    pub out: PathBuf,
    /// Subject alternative name of the serving certificate; repeat for several. Plain IP
    /// addresses become IP SANs. The API server checks `<service>.<namespace>.svc`.
    #[arg(long = "dns-name", required = true)]
    pub dns_names: Vec<String>,
    /// Validity of both certificates, in days.
    #[arg(long, default_value_t = 365)]
    pub days: u32,
    /// Overwrite existing files in --out.
    #[arg(long)]
    pub force: bool,
}

/// Generates a CA and a serving certificate for `names` (DNS names or IP addresses), valid for
/// `days` days from yesterday (one day of slack for clock skew).
pub fn generate(names: &[String], days: u32) -> anyhow::Result<DevCerts> {
    anyhow::ensure!(
        !names.is_empty(),
        "the serving certificate needs at least one name (--dns-name)"
    );
    anyhow::ensure!(days > 0, "--days must be at least 1");
    let now = Utc::now();
    let start = now - Duration::days(1);
    let end = now + Duration::days(i64::from(days));
    let not_before = rcgen::date_time_ymd(start.year(), start.month() as u8, start.day() as u8);
    let not_after = rcgen::date_time_ymd(end.year(), end.month() as u8, end.day() as u8);

    let ca_key = KeyPair::generate().context("generating the CA key")?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.distinguished_name = DistinguishedName::new();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "blueprint-operator webhook dev CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca_params.not_before = not_before;
    ca_params.not_after = not_after;
    let ca_cert = ca_params
        .self_signed(&ca_key)
        .context("self-signing the CA")?;
    let ca_key_pem = ca_key.serialize_pem();
    let issuer = Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate().context("generating the serving key")?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    for name in names {
        let san = match name.parse::<IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => {
                anyhow::ensure!(
                    is_dns_name(name),
                    "{name:?} is not a valid DNS name (letters, digits, '-', '.', optional leading '*.')"
                );
                SanType::DnsName(
                    name.clone()
                        .try_into()
                        .with_context(|| format!("{name:?} is not a valid DNS name"))?,
                )
            }
        };
        params.subject_alt_names.push(san);
    }
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, names[0].clone());
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = not_before;
    params.not_after = not_after;
    let cert = params
        .signed_by(&key, &issuer)
        .context("signing the serving certificate")?;

    Ok(DevCerts {
        ca_cert_pem: ca_cert.pem(),
        ca_key_pem,
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

fn is_dns_name(name: &str) -> bool {
    let name = name.strip_prefix("*.").unwrap_or(name);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

/// Writes `ca.crt`, `ca.key`, `tls.crt`, `tls.key` into `dir` (keys with mode 0600 on Unix).
pub fn write(certs: &DevCerts, dir: &Path, force: bool) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let files = [
        ("ca.crt", &certs.ca_cert_pem, false),
        ("ca.key", &certs.ca_key_pem, true),
        ("tls.crt", &certs.cert_pem, false),
        ("tls.key", &certs.key_pem, true),
    ];
    if !force {
        for (name, _, _) in &files {
            let path = dir.join(name);
            anyhow::ensure!(
                !path.exists(),
                "{} already exists; pass --force to overwrite it or choose another --out",
                path.display()
            );
        }
    }
    for (name, content, secret) in files {
        let path = dir.join(name);
        write_file(&path, content.as_bytes(), secret)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn write_file(path: &Path, content: &[u8], secret: bool) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = secret;
    let mut f = opts.open(path)?;
    f.write_all(content)?;
    f.sync_all()
}

/// `blueprint-operator certs`.
pub fn run_certs(args: CertsArgs) -> anyhow::Result<()> {
    let certs = generate(&args.dns_names, args.days)?;
    write(&certs, &args.out, args.force)?;
    eprintln!(
        "wrote {0}/ca.crt, {0}/ca.key, {0}/tls.crt, {0}/tls.key (valid {1} days, names: {2})",
        args.out.display(),
        args.days,
        args.dns_names.join(", ")
    );
    eprintln!("caBundle for the webhook configurations:");
    println!("{}", certs.ca_bundle());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_a_chain_rustls_accepts() {
        let certs = generate(&["localhost".into(), "127.0.0.1".into()], 30).unwrap();
        assert!(certs.ca_cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        let cfg =
            super::super::tls::server_config(certs.cert_pem.as_bytes(), certs.key_pem.as_bytes());
        assert!(cfg.is_ok(), "{:?}", cfg.err());
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(certs.ca_bundle())
            .unwrap();
        assert_eq!(decoded, certs.ca_cert_pem.as_bytes());
    }

    #[test]
    fn refuses_bad_input() {
        assert!(generate(&[], 1).is_err());
        assert!(generate(&["localhost".into()], 0).is_err());
        let err = generate(&["bad name with spaces".into()], 1).unwrap_err();
        assert!(
            format!("{err:#}").contains("not a valid DNS name"),
            "{err:#}"
        );
    }

    #[test]
    fn write_refuses_to_overwrite_without_force() {
        let dir = std::env::temp_dir().join(format!("bpo-certs-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let certs = generate(&["localhost".into()], 1).unwrap();
        write(&certs, &dir, false).unwrap();
        let err = write(&certs, &dir, false).unwrap_err();
        assert!(err.to_string().contains("--force"), "{err}");
        write(&certs, &dir, true).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("tls.crt")).unwrap(),
            certs.cert_pem
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
