//! sprig v2.22.0 `genCA`, `genSelfSignedCert`, `genSignedCert` and
//! `buildCustomCert`: 2048-bit RSA keys and certificates with the fields and
//! extensions Go's `x509.CreateCertificate` writes from sprig's template,
//! returned as sprig's `certificate` struct (`.Cert`, `.Key`: PEM).

use super::args::int;
use super::args::{Ctx, FnResult, arity, s};
use super::encoding::go_b64_decode;
use super::error::FuncError;
use super::print::{fmt_v, go_quote};
use super::sprig_crypto::{new_rsa_key, pem_decode, pem_encode, rsa_key_pem};
use super::sprig_other::random_bytes;
use super::value::{Field, GoStruct, GoTime, Value};
use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DistinguishedName, DnType, DnValue,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyIdMethod, KeyUsagePurpose, PublicKeyData, SanType,
    SerialNumber, SignatureAlgorithm, SigningKey,
};
use std::net::IpAddr;
use std::sync::Arc;
use x509_cert::der::{Decode, Tagged};

/// Go's name for sprig's result type (`typeOf`, argument type errors).
const CERT_TYPE: &str = "sprig.certificate";

/// sprig's key size for every certificate function.
const CERT_KEY_BITS: usize = 2048;

pub const NAMES: &[&str] = &[
    "genCA",
    "genSelfSignedCert",
    "genSignedCert",
    "buildCustomCert",
];

pub fn call(name: &str, args: &[Value], ctx: &Ctx) -> Option<FnResult> {
    NAMES.contains(&name).then(|| run(name, args, ctx))
}

fn run(name: &str, args: &[Value], ctx: &Ctx) -> FnResult {
    match name {
        "genCA" => {
            arity(name, args, 2)?;
            let (cn, days) = (s(&args[0])?, int(&args[1])?);
            generate(&base_template(cn, &[], &[], days, ctx.now, true)?, None)
        }
        "genSelfSignedCert" => {
            arity(name, args, 4)?;
            let (cn, ips, dns) = (s(&args[0])?, iface_list(&args[1])?, iface_list(&args[2])?);
            let days = int(&args[3])?;
            generate(&base_template(cn, ips, dns, days, ctx.now, false)?, None)
        }
        "genSignedCert" => {
            arity(name, args, 5)?;
            let (cn, ips, dns) = (s(&args[0])?, iface_list(&args[1])?, iface_list(&args[2])?);
            let days = int(&args[3])?;
            let (ca_cert, ca_key) = certificate_arg(&args[4])?;
            // sprig reads the CA before anything else.
            let ca = CaSigner::parse(ca_cert, ca_key)?;
            generate(
                &base_template(cn, ips, dns, days, ctx.now, false)?,
                Some(&ca),
            )
        }
        "buildCustomCert" => {
            arity(name, args, 2)?;
            build_custom_cert(s(&args[0])?, s(&args[1])?)
        }
        other => Err(FuncError::NotDefined(other.to_string())),
    }
}

fn certificate_value(cert: String, key: String) -> Value {
    let field = |name, v: String| Field {
        name,
        json: None,
        omitempty: false,
        embedded: false,
        value: Value::str(v),
    };
    Value::Struct(Arc::new(GoStruct {
        ty: CERT_TYPE,
        fields: vec![field("Cert", cert), field("Key", key)],
    }))
}

/// A `certificate` parameter: only sprig's own results have that type.
fn certificate_arg(v: &Value) -> Result<(&str, &str), FuncError> {
    fn text<'a>(st: &'a GoStruct, name: &str) -> Result<&'a str, FuncError> {
        match st.get(name) {
            Some(Value::Str(x)) => Ok(x),
            _ => Err(FuncError::Nil {
                expected: CERT_TYPE,
            }),
        }
    }
    match v {
        Value::Struct(st) if st.ty == CERT_TYPE => Ok((text(st, "Cert")?, text(st, "Key")?)),
        other => Err(FuncError::wrong_type(CERT_TYPE, other)),
    }
}

/// A `[]interface{}` parameter (nil is an empty slice; `[]string` is refused).
fn iface_list(v: &Value) -> Result<&[Value], FuncError> {
    match v {
        Value::Nil => Ok(&[]),
        Value::List(items, ty) if &*ty.name == "[]interface {}" => Ok(items),
        other => Err(FuncError::wrong_type_of("[]interface {}", other)),
    }
}

/// sprig's `getBaseCertTemplate` (plus `IsCA` and the CA key usage for `genCA`).
fn base_template(
    cn: &str,
    ips: &[Value],
    dns: &[Value],
    days: i64,
    now: &GoTime,
    is_ca: bool,
) -> Result<CertificateParams, FuncError> {
    let mut sans = Vec::with_capacity(ips.len() + dns.len());
    // Go writes DNS names before IP addresses.
    for d in dns {
        let Value::Str(d) = d else {
            return Err(FuncError::DnsNameType(fmt_v(d)));
        };
        let name = d.as_ref().try_into().map_err(|_| {
            FuncError::CertCreate(format!(
                "x509: {} cannot be encoded as an IA5String",
                go_quote(d)
            ))
        })?;
        sans.push(SanType::DnsName(name));
    }
    for ip in ips {
        let Value::Str(text) = ip else {
            return Err(FuncError::IpType(fmt_v(ip)));
        };
        let addr: IpAddr = text.parse().map_err(|_| FuncError::Ip(text.to_string()))?;
        // Go writes IPv4 (also IPv4-mapped IPv6) as 4 bytes.
        sans.push(SanType::IpAddress(addr.to_canonical()));
    }
    let mut p = CertificateParams::default();
    p.subject_alt_names = sans;
    p.distinguished_name = DistinguishedName::new();
    if !cn.is_empty() {
        // Go's asn1 picks PrintableString when every character allows it.
        let value = match cn.try_into() {
            Ok(printable) => DnValue::PrintableString(printable),
            Err(_) => DnValue::Utf8String(cn.to_string()),
        };
        p.distinguished_name.push(DnType::CommonName, value);
    }
    // Go: a random serial below 2^128.
    p.serial_number = Some(SerialNumber::from_slice(&random_bytes(16)?));
    let (not_before, not_after) = validity(now, days)?;
    p.not_before = not_before;
    p.not_after = not_after;
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    if is_ca {
        p.key_usages.push(KeyUsagePurpose::KeyCertSign);
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    } else {
        // Go writes `BasicConstraintsValid` (CA:FALSE) without a key
        // identifier; rcgen's ExplicitNoCa would add one.
        let mut bc = CustomExtension::from_oid_content(&[2, 5, 29, 19], vec![0x30, 0x00]);
        bc.set_criticality(true);
        p.custom_extensions = vec![bc];
    }
    Ok(p)
}

/// NotBefore = the render clock, NotAfter = + `days` * 24h. Go's Duration
/// multiplication wraps at ±292 years; so does this.
fn validity(
    now: &GoTime,
    days: i64,
) -> Result<(time::OffsetDateTime, time::OffsetDateTime), FuncError> {
    let start = now.dt.timestamp();
    let nanos = days.wrapping_mul(86_400_000_000_000);
    let at = |secs: i64| {
        time::OffsetDateTime::from_unix_timestamp(secs)
            .map_err(|_| FuncError::CertCreate(format!("time {secs} is out of range")))
    };
    Ok((at(start)?, at(start + nanos / 1_000_000_000)?))
}

/// A new key, its certificate from `template`, signed by `ca` or by itself.
fn generate(template: &CertificateParams, ca: Option<&CaSigner>) -> FnResult {
    let key = new_rsa_key(CERT_KEY_BITS).map_err(|e| FuncError::RsaKey(e.to_string()))?;
    let key = RsaSigner::new(key)?;
    let der = match ca {
        None => {
            let mut t = template.clone();
            if matches!(t.is_ca, IsCa::Ca(_)) {
                t.key_identifier_method = KeyIdMethod::PreSpecified(key.key_id());
            }
            t.self_signed(&key)
        }
        Some(ca) => {
            let mut t = template.clone();
            t.use_authority_key_identifier_extension = ca.key_id.is_some();
            let mut issuer = CertificateParams::default();
            issuer.distinguished_name = ca.subject.clone();
            issuer.key_identifier_method =
                KeyIdMethod::PreSpecified(ca.key_id.clone().unwrap_or_default());
            t.signed_by(&key, &Issuer::new(issuer, &ca.key))
        }
    }
    .map_err(|e| FuncError::CertCreate(e.to_string()))?;
    Ok(certificate_value(
        pem_encode("CERTIFICATE", der.der()),
        rsa_key_pem(&key.private).map_err(|e| FuncError::KeyEncoding(e.to_string()))?,
    ))
}

/// sprig `buildCustomCertificate`: base64 PEM certificate and PKCS#1 key,
/// checked and returned as given.
fn build_custom_cert(b64cert: &str, b64key: &str) -> FnResult {
    let cert =
        go_b64_decode(b64cert.as_bytes()).map_err(|_| FuncError::Decode("base64 certificate"))?;
    let key =
        go_b64_decode(b64key.as_bytes()).map_err(|_| FuncError::Decode("base64 private key"))?;
    let der = pem_decode(&cert).ok_or(FuncError::Decode("certificate"))?;
    parse_certificate(&der, "decodedCert.Bytes")?;
    let key_der = pem_decode(&key).ok_or(FuncError::Decode("key"))?;
    parse_pkcs1(&key_der, "decodedKey.Bytes")?;
    Ok(certificate_value(
        String::from_utf8_lossy(&cert).into_owned(),
        String::from_utf8_lossy(&key).into_owned(),
    ))
}

/// Go's `x509.ParseCertificate` of the bytes sprig names `what`.
fn parse_certificate(der: &[u8], what: &'static str) -> Result<x509_cert::Certificate, FuncError> {
    x509_cert::Certificate::from_der(der).map_err(|e| cert_parse(what, e))
}

fn cert_parse(what: &'static str, e: impl std::fmt::Display) -> FuncError {
    FuncError::CertParse {
        what,
        detail: e.to_string(),
    }
}

/// Go's `x509.ParsePKCS1PrivateKey` (which also validates the key) of the
/// bytes sprig names `what`.
fn parse_pkcs1(der: &[u8], what: &'static str) -> Result<rsa::PrivateKey, FuncError> {
    use rsa::pkcs1::DecodeRsaPrivateKey;
    let bad = |e: &dyn std::fmt::Display| FuncError::KeyParse {
        what,
        detail: format!("x509: {e}"),
    };
    let key = rsa::PrivateKey::from_pkcs1_der(der).map_err(|e| bad(&e))?;
    key.validate().map_err(|e| bad(&e))?;
    Ok(key)
}

/// An RSA key signing with PKCS#1 v1.5 SHA-256, as Go does for RSA keys.
struct RsaSigner {
    private: rsa::PrivateKey,
    signer: rsa::pkcs1v15::SigningKey<rsa::sha2::Sha256>,
    /// PKCS#1 `RSAPublicKey` DER (the certificate's subjectPublicKey bits).
    public: Vec<u8>,
}

impl RsaSigner {
    fn new(private: rsa::PrivateKey) -> Result<Self, FuncError> {
        use rsa::pkcs1::EncodeRsaPublicKey;
        let public = private
            .to_public_key()
            .to_pkcs1_der()
            .map_err(|e| FuncError::CertCreate(e.to_string()))?
            .into_vec();
        Ok(RsaSigner {
            signer: rsa::pkcs1v15::SigningKey::new(private.clone()),
            private,
            public,
        })
    }

    /// Go's SubjectKeyId for CAs: SHA-256 of the public key bits, cut to 20 bytes.
    fn key_id(&self) -> Vec<u8> {
        use sha2::Digest;
        sha2::Sha256::digest(&self.public)[..20].to_vec()
    }
}

impl PublicKeyData for RsaSigner {
    fn der_bytes(&self) -> &[u8] {
        &self.public
    }

    fn algorithm(&self) -> &'static SignatureAlgorithm {
        &rcgen::PKCS_RSA_SHA256
    }
}

impl SigningKey for RsaSigner {
    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        use rsa::signature::{SignatureEncoding, Signer};
        self.signer
            .try_sign(msg)
            .map(|s| s.to_vec())
            .map_err(|_| rcgen::Error::RemoteKeyError)
    }
}

/// The CA given to `genSignedCert`: its key, subject and key identifier.
struct CaSigner {
    key: RsaSigner,
    subject: DistinguishedName,
    key_id: Option<Vec<u8>>,
}

impl CaSigner {
    fn parse(cert: &str, key: &str) -> Result<Self, FuncError> {
        const CERT: &str = "decodedSignerCert.Bytes";
        let der = pem_decode(cert.as_bytes()).ok_or(FuncError::Decode("certificate"))?;
        let parsed = parse_certificate(&der, CERT)?;
        let key_der = pem_decode(key.as_bytes()).ok_or(FuncError::Decode("key"))?;
        let private = parse_pkcs1(&key_der, "decodedSignerKey.Bytes")?;
        let key = RsaSigner::new(private)?;
        let tbs = parsed.tbs_certificate();
        if tbs.subject_public_key_info().subject_public_key.raw_bytes() != key.public {
            return Err(FuncError::CertCreate(
                "x509: provided PrivateKey doesn't match parent's PublicKey".into(),
            ));
        }
        let key_id = tbs
            .get_extension::<x509_cert::ext::pkix::SubjectKeyIdentifier>()
            .map_err(|e| cert_parse(CERT, e))?
            .map(|(_, id)| id.0.as_bytes().to_vec());
        Ok(CaSigner {
            key,
            subject: issuer_name(tbs.subject())?,
            key_id,
        })
    }
}

/// The CA's subject as rcgen writes names: one attribute per RDN, each type
/// once, in the order given, with the same string types.
fn issuer_name(name: &x509_cert::name::Name) -> Result<DistinguishedName, FuncError> {
    use rcgen::string::{BmpString, Ia5String, PrintableString, TeletexString};
    use x509_cert::der::Tag;
    let unsupported = |why: &str| FuncError::CaSubject {
        subject: name.to_string(),
        why: why.to_string(),
    };
    let mut dn = DistinguishedName::new();
    for rdn in name.iter_rdn() {
        if rdn.len() != 1 {
            return Err(unsupported("a multi-valued RDN"));
        }
        for atv in rdn.iter() {
            let oid: Vec<u64> = atv.oid.arcs().map(u64::from).collect();
            let ty = DnType::from_oid(&oid);
            if dn.get(&ty).is_some() {
                return Err(unsupported("an attribute type that repeats"));
            }
            let bytes = atv.value.value();
            let text = || std::str::from_utf8(bytes).map_err(|_| unsupported("invalid text"));
            let bad = |_| unsupported("invalid text");
            let value = match atv.value.tag() {
                Tag::PrintableString => {
                    DnValue::PrintableString(PrintableString::try_from(text()?).map_err(bad)?)
                }
                Tag::Utf8String => DnValue::Utf8String(text()?.to_string()),
                Tag::Ia5String => DnValue::Ia5String(Ia5String::try_from(text()?).map_err(bad)?),
                Tag::TeletexString => {
                    DnValue::TeletexString(TeletexString::try_from(text()?).map_err(bad)?)
                }
                Tag::BmpString => {
                    DnValue::BmpString(BmpString::from_utf16be(bytes.to_vec()).map_err(bad)?)
                }
                other => return Err(unsupported(&format!("a value of type {other}"))),
            };
            dn.push(ty, value);
        }
    }
    Ok(dn)
}
