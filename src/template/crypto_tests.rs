//! Shape and round-trip tests of the random sprig crypto functions
//! (`encryptAES`, `genPrivateKey`, the certificate functions); interop with
//! real Go is in `tests/template_oracle.rs`.

use super::*;
use base64::Engine;
use rsa::pkcs1::DecodeRsaPublicKey;
use rsa::signature::Verifier;
use x509_cert::der::{Decode, Encode};
use x509_cert::ext::pkix::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAltName,
    SubjectKeyIdentifier,
};

const NOW: &str = "2024-01-02T03:04:05Z";

fn render(t: &str, params: &serde_json::Value) -> Result<String, TemplateError> {
    Template::parse(t).and_then(|x| x.render_at(params, NOW.parse().unwrap()))
}

fn r(t: &str) -> String {
    render(t, &serde_json::json!({})).unwrap_or_else(|e| panic!("{t}: {e}"))
}

fn e(t: &str) -> String {
    match render(t, &serde_json::json!({})) {
        Ok(out) => panic!("{t}: expected an error, got {out:?}"),
        Err(err) => err.to_string(),
    }
}

fn pem_der(pem: &str, label: &str) -> Vec<u8> {
    let begin = format!("-----BEGIN {label}-----\n");
    let end = format!("-----END {label}-----\n");
    assert!(pem.starts_with(&begin) && pem.ends_with(&end), "{pem}");
    let body = &pem[begin.len()..pem.len() - end.len()];
    assert!(body.lines().all(|l| l.len() <= 64), "64-column PEM: {pem}");
    base64::engine::general_purpose::STANDARD
        .decode(body.replace('\n', ""))
        .unwrap()
}

/// Renders `{{ $c := <expr> }}{{ $c.Cert }}|{{ $c.Key }}`.
fn cert_and_key(expr: &str) -> (String, String) {
    let out = r(&format!(
        "{{{{ $c := {expr} }}}}{{{{ $c.Cert }}}}|{{{{ $c.Key }}}}"
    ));
    let (c, k) = out.split_once('|').unwrap();
    (c.to_string(), k.to_string())
}

fn parse_cert(pem: &str) -> x509_cert::Certificate {
    x509_cert::Certificate::from_der(&pem_der(pem, "CERTIFICATE")).unwrap()
}

fn rsa_bits(key_pem: &str) -> usize {
    use rsa::pkcs1::DecodeRsaPrivateKey;
    use rsa::traits::PublicKeyParts;
    let key = rsa::PrivateKey::from_pkcs1_der(&pem_der(key_pem, "RSA PRIVATE KEY")).unwrap();
    key.validate().unwrap();
    key.size() * 8
}

fn ext<'a, T: Decode<'a> + x509_cert::der::oid::AssociatedOid>(
    c: &'a x509_cert::Certificate,
) -> Option<(bool, T)> {
    c.tbs_certificate().get_extension::<T>().unwrap()
}

/// `cert`'s signature checks with `issuer`'s public key (sha256WithRSAEncryption).
fn signed_by(cert: &x509_cert::Certificate, issuer: &x509_cert::Certificate) -> bool {
    let spki = issuer.tbs_certificate().subject_public_key_info();
    let public = rsa::PublicKey::from_pkcs1_der(spki.subject_public_key.raw_bytes()).unwrap();
    let verifier = rsa::pkcs1v15::VerifyingKey::<rsa::sha2::Sha256>::new(public);
    let tbs = cert.tbs_certificate().to_der().unwrap();
    let sig = rsa::pkcs1v15::Signature::try_from(cert.signature().raw_bytes()).unwrap();
    verifier.verify(&tbs, &sig).is_ok()
}

#[test]
fn encrypt_aes_round_trips_and_has_sprig_layout() {
    let long = "x".repeat(1000);
    for text in [
        "a",
        "fifteen bytes!!",
        "sixteen bytes!!!",
        "héllo wörld 日本",
        &long,
    ] {
        for password in ["", "k", "a password longer than thirty-two bytes"] {
            let t = format!("{{{{ encryptAES {password:?} {text:?} }}}}");
            let c = r(&t);
            let raw = base64::engine::general_purpose::STANDARD
                .decode(&c)
                .unwrap();
            // IV + PKCS#7 padding to the next whole block (a full block when aligned).
            assert_eq!(raw.len(), 16 + (text.len() / 16 + 1) * 16, "{t}");
            assert_ne!(c, r(&t), "a random IV each time: {t}");
            let back = r(&format!("{{{{ {c:?} | decryptAES {password:?} }}}}"));
            assert_eq!(back, text, "{t}");
        }
    }
    // sprig keeps 32 bytes of the password: what follows does not matter.
    let c = r(&format!(
        "{{{{ encryptAES \"{}\" \"x\" }}}}",
        "k".repeat(32)
    ));
    assert_eq!(
        r(&format!(
            "{{{{ decryptAES \"{}tail\" {c:?} }}}}",
            "k".repeat(32)
        )),
        "x"
    );
    assert_eq!(
        r("{{ encryptAES \"k\" \"\" }}|{{ decryptAES \"k\" \"\" }}"),
        "|"
    );
    // Produced by sprig v2.22.0: {{ encryptAES "secret" "plain text" }}.
    assert_eq!(
        r("{{ decryptAES \"secret\" \"uyML9axRBb88SxlECkaAqqbOUDnO7kWbTQzDy27q+xM=\" }}"),
        "plain text"
    );
}

#[test]
fn decrypt_aes_errors_are_sprigs() {
    // Go's messages, including the runtime panics sprig lets text/template recover.
    for (crypt, msg) in [
        ("!!", "illegal base64 data at input byte 0"),
        (
            "YQ==",
            "runtime error: slice bounds out of range [:16] with capacity 3",
        ),
        (
            "AAAAAAAAAAAAAAAAAAAAAA==",
            "runtime error: index out of range [-1]",
        ),
        (
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
            "crypto/cipher: input not full blocks",
        ),
    ] {
        let err = e(&format!("{{{{ decryptAES \"k\" {crypt:?} }}}}"));
        assert!(
            err.ends_with(&format!("error calling decryptAES: {msg}")),
            "{crypt}: {err}"
        );
    }
    // A wrong password gives garbage or a slice error (sprig does not check
    // the padding), never a panic.
    for i in 0..40 {
        let c = r(&format!("{{{{ encryptAES \"right\" \"text {i}\" }}}}"));
        match render(
            &format!("{{{{ decryptAES \"wrong\" {c:?} }}}}"),
            &serde_json::json!({}),
        ) {
            Ok(out) => assert_ne!(out, format!("text {i}")),
            Err(err) => assert!(
                err.to_string().contains("slice bounds out of range [:-"),
                "{err}"
            ),
        }
    }
    assert!(e("{{ encryptAES 1 \"x\" }}").contains("expected string"));
}

#[test]
fn gen_private_key_makes_go_pem_keys() {
    let key = r("{{ genPrivateKey \"ecdsa\" }}");
    let der = pem_der(&key, "EC PRIVATE KEY");
    assert_eq!(der.len(), 121, "SEC1 P-256 key with curve and public key");
    assert_eq!(&der[..7], &[0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20]);
    assert_eq!(der[56], 0x04, "uncompressed public point");

    // sprig: 4096-bit PKCS#1.
    let key = r("{{ genPrivateKey \"rsa\" }}");
    assert_eq!(rsa_bits(&key), 4096);
    assert_ne!(key, r("{{ genPrivateKey \"rsa\" }}"));

    assert_eq!(r("{{ genPrivateKey \"ed25519\" }}"), "Unknown type ed25519");
    for refused in ["dsa", ""] {
        let err = e(&format!("{{{{ genPrivateKey {refused:?} }}}}"));
        assert!(
            err.contains(&format!(
                "sprig usage of 'genPrivateKey for {refused} key' is not allowed by kanister"
            )),
            "{err}"
        );
    }
}

#[test]
fn gen_ca_and_signed_certs_have_sprigs_fields_and_verify() {
    let (ca_pem, ca_key) = cert_and_key("genCA \"my-ca\" 30");
    assert_eq!(rsa_bits(&ca_key), 2048);
    let ca = parse_cert(&ca_pem);
    let tbs = ca.tbs_certificate();
    assert_eq!(tbs.subject().to_string(), "CN=my-ca");
    assert_eq!(tbs.issuer(), tbs.subject());
    let validity = tbs.validity();
    let (from, to) = (
        validity.not_before.to_unix_duration().as_secs(),
        validity.not_after.to_unix_duration().as_secs(),
    );
    let now = chrono::DateTime::parse_from_rfc3339(NOW)
        .unwrap()
        .timestamp() as u64;
    assert_eq!((from, to), (now, now + 30 * 86_400));
    let (critical, bc) = ext::<BasicConstraints>(&ca).unwrap();
    assert!(critical && bc.ca && bc.path_len_constraint.is_none());
    let (critical, ku) = ext::<KeyUsage>(&ca).unwrap();
    assert!(critical && ku.digital_signature() && ku.key_encipherment() && ku.key_cert_sign());
    let (_, eku) = ext::<ExtendedKeyUsage>(&ca).unwrap();
    assert_eq!(eku.0.len(), 2, "serverAuth and clientAuth");
    let (_, ski) = ext::<SubjectKeyIdentifier>(&ca).unwrap();
    assert!(ext::<AuthorityKeyIdentifier>(&ca).is_none(), "self-signed");
    assert!(ext::<SubjectAltName>(&ca).is_none());
    assert!(signed_by(&ca, &ca));

    // The CA object from genCA signs directly; the same CA through
    // buildCustomCert (base64 PEM) signs too.
    let leaf_expr = |ca: &str| {
        format!(
            "genSignedCert \"leaf\" (list \"10.0.0.1\" \"::ffff:1.2.3.4\" \"fe80::1\") (list \"a.example\" \"*.b.example\") 7 {ca}"
        )
    };
    let (direct, _) = cert_and_key(&leaf_expr("(genCA \"other\" 1)"));
    assert_eq!(
        parse_cert(&direct).tbs_certificate().issuer().to_string(),
        "CN=other"
    );
    let rebuilt = format!(
        "(buildCustomCert {:?} {:?})",
        base64::engine::general_purpose::STANDARD.encode(&ca_pem),
        base64::engine::general_purpose::STANDARD.encode(&ca_key)
    );
    let (leaf_pem, leaf_key) = cert_and_key(&leaf_expr(&rebuilt));
    assert_eq!(rsa_bits(&leaf_key), 2048);
    let leaf = parse_cert(&leaf_pem);
    assert!(signed_by(&leaf, &ca));
    let t = leaf.tbs_certificate();
    assert_eq!(t.subject().to_string(), "CN=leaf");
    assert_eq!(
        t.issuer().to_der().unwrap(),
        tbs.subject().to_der().unwrap()
    );
    let (critical, bc) = ext::<BasicConstraints>(&leaf).unwrap();
    assert!(critical && !bc.ca);
    let (_, ku) = ext::<KeyUsage>(&leaf).unwrap();
    assert!(ku.digital_signature() && ku.key_encipherment() && !ku.key_cert_sign());
    assert!(ext::<SubjectKeyIdentifier>(&leaf).is_none(), "Go: CAs only");
    let (_, aki) = ext::<AuthorityKeyIdentifier>(&leaf).unwrap();
    assert_eq!(aki.key_identifier, Some(ski.0));
    let (critical, san) = ext::<SubjectAltName>(&leaf).unwrap();
    assert!(!critical, "the subject is not empty");
    let names: Vec<String> = san.0.iter().map(|n| format!("{n:?}")).collect();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(names[0].contains("a.example") && names[1].contains("*.b.example"));
    let ips: Vec<usize> = san.0[2..]
        .iter()
        .map(|n| match n {
            x509_cert::ext::pkix::name::GeneralName::IpAddress(ip) => ip.as_bytes().len(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ips, vec![4, 4, 16], "IPv4 and IPv4-mapped as 4 bytes");
}

#[test]
fn self_signed_certs_and_build_custom_cert() {
    let (pem, key) = cert_and_key("genSelfSignedCert \"\" nil (list \"only.example\") -1");
    let cert = parse_cert(&pem);
    let tbs = cert.tbs_certificate();
    assert!(tbs.subject().is_empty());
    assert!(signed_by(&cert, &cert));
    let (critical, _) = ext::<SubjectAltName>(&cert).unwrap();
    assert!(
        critical,
        "RFC 5280: SAN is critical when the subject is empty"
    );
    assert!(ext::<SubjectKeyIdentifier>(&cert).is_none());
    assert!(ext::<AuthorityKeyIdentifier>(&cert).is_none());
    let v = tbs.validity();
    assert_eq!(
        v.not_before.to_unix_duration().as_secs() - v.not_after.to_unix_duration().as_secs(),
        86_400,
        "negative days: NotAfter before NotBefore, as in Go"
    );

    // Go's days * 24h wraps instead of overflowing; so do ours.
    for days in [i64::MAX, i64::MIN + 1] {
        let (pem, _) = cert_and_key(&format!("genCA \"x\" {days}"));
        let v = *parse_cert(&pem).tbs_certificate().validity();
        let years = (v.not_after.to_unix_duration().as_secs() as f64
            - v.not_before.to_unix_duration().as_secs() as f64)
            / 86_400.0
            / 365.25;
        assert!(years.abs() < 293.0, "{days}: {years} years");
    }

    // buildCustomCert returns its inputs, decoded, as the same struct.
    let b64 = |x: &str| base64::engine::general_purpose::STANDARD.encode(x);
    let out = r(&format!(
        "{{{{ $c := buildCustomCert {:?} {:?} }}}}{{{{ $c.Cert }}}}|{{{{ $c.Key }}}}|{{{{ typeOf $c }}}}",
        b64(&pem),
        b64(&key)
    ));
    assert_eq!(out, format!("{pem}|{key}|sprig.certificate"));
    let json = r("{{ toJson (genCA \"x\" 1) }}");
    assert!(
        json.starts_with("{\"Cert\":\"-----BEGIN CERTIFICATE-----\\n"),
        "{json}"
    );
    assert!(
        json.contains("\",\"Key\":\"-----BEGIN RSA PRIVATE KEY-----\\n"),
        "{json}"
    );
}

#[test]
fn certificate_errors_are_sprigs_and_clear() {
    let b64 = |x: &str| base64::engine::general_purpose::STANDARD.encode(x);
    let (ca, _) = cert_and_key("genCA \"ca\" 1");
    let (_, other_key) = cert_and_key("genCA \"other\" 1");
    let pkcs8 = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIBRxH2vL6rW9dXg5YxxzHHGaTGgs1Shd2Bs1uJDQ9Q5a\n-----END PRIVATE KEY-----\n";
    for (t, msg) in [
        (
            "{{ buildCustomCert \"!\" \"x\" }}".to_string(),
            "unable to decode base64 certificate",
        ),
        (
            "{{ buildCustomCert \"eA==\" \"!\" }}".to_string(),
            "unable to decode base64 private key",
        ),
        (
            "{{ buildCustomCert \"eA==\" \"eA==\" }}".to_string(),
            "unable to decode certificate",
        ),
        (
            format!(
                "{{{{ buildCustomCert {:?} \"eA==\" }}}}",
                b64("-----BEGIN X-----\neA==\n-----END X-----\n")
            ),
            "error parsing certificate: decodedCert.Bytes: ",
        ),
        (
            format!("{{{{ buildCustomCert {:?} \"eA==\" }}}}", b64(&ca)),
            "unable to decode key",
        ),
        (
            format!("{{{{ buildCustomCert {:?} {:?} }}}}", b64(&ca), b64(pkcs8)),
            "error parsing prive key: decodedKey.Bytes: ",
        ),
        (
            // buildCustomCert does not pair them; signing does.
            format!(
                "{{{{ genSignedCert \"x\" nil nil 1 (buildCustomCert {:?} {:?}) }}}}",
                b64(&ca),
                b64(&other_key)
            ),
            "error creating certificate: x509: provided PrivateKey doesn't match parent's PublicKey",
        ),
        (
            "{{ genSelfSignedCert \"x\" (list 1) nil 1 }}".into(),
            "error parsing ip: 1 is not a string",
        ),
        (
            "{{ genSelfSignedCert \"x\" (list \"bad\") nil 1 }}".into(),
            "error parsing ip: bad",
        ),
        (
            "{{ genSelfSignedCert \"x\" nil (list 2) 1 }}".into(),
            "error processing alternate dns name: 2 is not a string",
        ),
        (
            "{{ genSelfSignedCert \"x\" nil (list \"日本\") 1 }}".into(),
            "error creating certificate: x509: \"日本\" cannot be encoded as an IA5String",
        ),
        (
            "{{ genSelfSignedCert \"x\" .StatefulSet.Pods nil 1 }}".into(),
            "wrong type for value; expected []interface {}; got []string",
        ),
        (
            "{{ genSignedCert \"x\" nil nil 1 \"notacert\" }}".into(),
            "expected sprig.certificate; got string",
        ),
        ("{{ genCA \"x\" \"1\" }}".into(), "expected int"),
    ] {
        let err = match render(&t, &serde_json::json!({"StatefulSet": {"Pods": ["a"]}})) {
            Ok(out) => panic!("{t}: expected an error, got {out:?}"),
            Err(err) => err.to_string(),
        };
        assert!(err.contains(msg), "{t}:\n  {err}\n  wanted: {msg}");
    }
}
