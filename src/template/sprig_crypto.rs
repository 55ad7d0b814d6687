//! sprig v2.22.0 `encryptAES`, `decryptAES` and `genPrivateKey` (with
//! Kanister's FIPS filter), and the PEM and RSA helpers the certificate
//! functions of [`super::sprig_certs`] use too.

use super::args::{FnResult, arity, s};
use super::encoding::go_b64_decode;
use super::error::FuncError;
use super::error::check_len;
use super::sprig_other::random_bytes;
use super::value::Value;
use base64::Engine;

pub const NAMES: &[&str] = &["encryptAES", "decryptAES", "genPrivateKey"];

pub fn call(name: &str, args: &[Value]) -> Option<FnResult> {
    if !NAMES.contains(&name) {
        return None;
    }
    Some(match name {
        "encryptAES" | "decryptAES" => aes_call(name, args),
        _ => gen_private_key(args),
    })
}

fn aes_call(name: &str, args: &[Value]) -> FnResult {
    arity(name, args, 2)?;
    let (password, text) = (s(&args[0])?, s(&args[1])?);
    let out = if name == "encryptAES" {
        encrypt_aes(password, text)?
    } else {
        decrypt_aes(password, text)?
    };
    Ok(Value::str(out))
}

// Kanister allows only rsa, ecdsa and ed25519; sprig v2.22.0 knows no ed25519.
fn gen_private_key(args: &[Value]) -> FnResult {
    arity("genPrivateKey", args, 1)?;
    Ok(Value::str(match s(&args[0])? {
        "ecdsa" => ecdsa_p256_pem()?,
        "ed25519" => "Unknown type ed25519".to_string(),
        // sprig returns its failures as the key text.
        "rsa" => match new_rsa_key(4096).and_then(|k| rsa_key_pem(&k)) {
            Ok(pem) => pem,
            Err(e) => format!("failed to generate private key: {e}"),
        },
        other => {
            return Err(FuncError::NotFips(format!("genPrivateKey for {other} key")));
        }
    }))
}

const AES_BLOCK: usize = 16;

/// sprig's key: the password's bytes zero-padded or cut to 32 (AES-256).
fn aes_key(password: &str) -> [u8; 32] {
    let mut key = [0u8; 32];
    let n = password.len().min(32);
    key[..n].copy_from_slice(&password.as_bytes()[..n]);
    key
}

/// sprig `encryptAES`: base64 of a random IV followed by the AES-256-CBC
/// ciphertext of the PKCS#7-padded text ("" stays "").
fn encrypt_aes(password: &str, plaintext: &str) -> Result<String, FuncError> {
    use aes::cipher::{BlockModeEncrypt, KeyIvInit, block_padding::Pkcs7};
    if plaintext.is_empty() {
        return Ok(String::new());
    }
    let n = plaintext.len();
    let padded = n + AES_BLOCK - n % AES_BLOCK;
    check_len(
        (AES_BLOCK + padded).div_ceil(3) * 4,
        "the result of encryptAES",
    )?;
    let mut iv = [0u8; AES_BLOCK];
    iv.copy_from_slice(&random_bytes(AES_BLOCK)?);
    let mut buf = vec![0u8; AES_BLOCK + padded];
    buf[..AES_BLOCK].copy_from_slice(&iv);
    buf[AES_BLOCK..AES_BLOCK + n].copy_from_slice(plaintext.as_bytes());
    cbc::Encryptor::<aes::Aes256>::new(&aes_key(password).into(), &iv.into())
        .encrypt_padded::<Pkcs7>(&mut buf[AES_BLOCK..], n)
        .map_err(|_| FuncError::AesPadding)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(&buf))
}

/// sprig `decryptAES`. sprig checks nothing: its padding is cut without
/// validation (a wrong password gives garbage or an error), and short input
/// panics inside Go; those panics are returned with Go's runtime messages.
fn decrypt_aes(password: &str, crypt64: &str) -> Result<String, FuncError> {
    use aes::cipher::{BlockModeDecrypt, KeyIvInit, block_padding::NoPadding};
    if crypt64.is_empty() {
        return Ok(String::new());
    }
    let crypt = go_b64_decode(crypt64.as_bytes()).map_err(FuncError::Base64)?;
    if crypt.len() < AES_BLOCK {
        // Go's decode buffer has DecodedLen capacity.
        return Err(FuncError::Panic(format!(
            "slice bounds out of range [:{AES_BLOCK}] with capacity {}",
            crypt64.len() / 4 * 3
        )));
    }
    let (iv, body) = crypt.split_at(AES_BLOCK);
    if body.len() % AES_BLOCK != 0 {
        return Err(FuncError::NotFullBlocks);
    }
    if body.is_empty() {
        return Err(FuncError::Panic("index out of range [-1]".into()));
    }
    let mut iv_block = [0u8; AES_BLOCK];
    iv_block.copy_from_slice(iv);
    let mut buf = body.to_vec();
    cbc::Decryptor::<aes::Aes256>::new(&aes_key(password).into(), &iv_block.into())
        .decrypt_padded::<NoPadding>(&mut buf)
        .map_err(|_| FuncError::NotFullBlocks)?;
    let pad = usize::from(buf[buf.len() - 1]);
    let Some(end) = buf.len().checked_sub(pad) else {
        return Err(FuncError::Panic(format!(
            "slice bounds out of range [:{}]",
            buf.len() as i64 - pad as i64
        )));
    };
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// A new RSA key with exponent 65537, as Go's `rsa.GenerateKey`.
pub fn new_rsa_key(bits: usize) -> Result<rsa::PrivateKey, rsa::Error> {
    rsa::PrivateKey::new(&mut getrandom::SysRng, bits)
}

/// Go's `x509.MarshalPKCS1PrivateKey` in a PEM block ("RSA PRIVATE KEY").
pub fn rsa_key_pem(key: &rsa::PrivateKey) -> Result<String, rsa::Error> {
    use rsa::pkcs1::EncodeRsaPrivateKey;
    let der = key.to_pkcs1_der()?;
    Ok(pem_encode("RSA PRIVATE KEY", der.as_bytes()))
}

/// Go's `pem.EncodeToMemory` without headers (64-column base64).
pub fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(chunk));
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {label}-----\n"));
    pem
}

/// The bytes of the first PEM block in `data`, of any type, as Go's
/// `pem.Decode` finds it (a candidate that does not decode is skipped).
/// Headers (`Key: value` lines after BEGIN) are skipped, not returned.
pub fn pem_decode(data: &[u8]) -> Option<Vec<u8>> {
    const BEGIN: &[u8] = b"-----BEGIN ";
    let line_end = |b: &[u8]| b.iter().position(|c| *c == b'\n').unwrap_or(b.len());
    fn trim(mut l: &[u8]) -> &[u8] {
        while let [rest @ .., b' ' | b'\t' | b'\r'] = l {
            l = rest;
        }
        l
    }
    let mut rest = data;
    loop {
        let at = if rest.starts_with(BEGIN) {
            0
        } else {
            rest.windows(BEGIN.len() + 1)
                .position(|w| w[0] == b'\n' && &w[1..] == BEGIN)?
                + 1
        };
        rest = &rest[at + BEGIN.len()..];
        let end = line_end(rest);
        let type_line = trim(&rest[..end]);
        rest = &rest[(end + 1).min(rest.len())..];
        let Some(label) = type_line.strip_suffix(b"-----") else {
            continue;
        };
        // Header lines hold a colon; the body does not.
        let mut body = rest;
        while !body.is_empty() && body[..line_end(body)].contains(&b':') {
            body = &body[(line_end(body) + 1).min(body.len())..];
        }
        let mut end_marker = b"-----END ".to_vec();
        end_marker.extend_from_slice(label);
        end_marker.extend_from_slice(b"-----");
        let end_at = if body.starts_with(&end_marker) {
            Some(0)
        } else {
            body.windows(end_marker.len() + 1)
                .position(|w| w[0] == b'\n' && w[1..] == end_marker[..])
        };
        let Some(end_at) = end_at else {
            continue;
        };
        let after = &body[end_at + usize::from(end_at > 0) + end_marker.len()..];
        if !trim(&after[..line_end(after)]).is_empty() {
            continue;
        }
        let b64: Vec<u8> = body[..end_at]
            .iter()
            .copied()
            .filter(|c| *c != b' ' && *c != b'\t')
            .collect();
        if let Ok(der) = go_b64_decode(&b64) {
            return Some(der);
        }
    }
}

/// A P-256 key as Go's `x509.MarshalECPrivateKey` PEM ("EC PRIVATE KEY").
fn ecdsa_p256_pem() -> Result<String, FuncError> {
    use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair};
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
        .map_err(|_| FuncError::KeyGeneration)?;
    let der = pkcs8.as_ref();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, der, &rng)
        .map_err(|_| FuncError::KeyGeneration)?;
    // ring's PKCS#8 holds the SEC1 key: the 32-byte scalar follows `02 01 01 04 20`.
    let at = der
        .windows(5)
        .position(|w| w == [0x02, 0x01, 0x01, 0x04, 0x20])
        .ok_or(FuncError::KeyGeneration)?;
    let scalar = &der[at + 5..at + 37];
    let public = pair.public_key().as_ref();
    let mut sec1 = vec![0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20];
    sec1.extend_from_slice(scalar);
    sec1.extend_from_slice(&[
        0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
    ]);
    sec1.extend_from_slice(&[0xa1, 0x44, 0x03, 0x42, 0x00]);
    sec1.extend_from_slice(public);
    Ok(pem_encode("EC PRIVATE KEY", &sec1))
}
