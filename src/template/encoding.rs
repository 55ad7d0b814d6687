//! Byte encodings and digests of the template functions: hex, base32 and
//! the digests by crates (`data-encoding`, `ring`); base64 decoding with Go's
//! error positions, which sprig prints and no crate reports the same way.

/// Go's `base64.StdEncoding.DecodeString`, with Go's error positions.
pub fn go_b64_decode(src: &[u8]) -> Result<Vec<u8>, usize> {
    fn val(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some((c - b'A') as u32),
            b'a'..=b'z' => Some((c - b'a') as u32 + 26),
            b'0'..=b'9' => Some((c - b'0') as u32 + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let mut out = Vec::with_capacity(src.len() * 3 / 4);
    let mut si = 0usize;
    loop {
        let mut dbuf = [0u32; 4];
        let mut dlen = 4;
        let mut j = 0;
        let mut trailing_err = None;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                return Err(si - j);
            }
            let c = src[si];
            si += 1;
            if let Some(v) = val(c) {
                dbuf[j] = v;
                j += 1;
                continue;
            }
            if c == b'\n' || c == b'\r' {
                continue;
            }
            if c != b'=' {
                return Err(si - 1);
            }
            match j {
                0 | 1 => return Err(si - 1),
                2 => {
                    while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(src.len());
                    }
                    if src[si] != b'=' {
                        return Err(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                si += 1;
            }
            if si < src.len() {
                trailing_err = Some(si);
            }
            dlen = j;
            break;
        }
        let v = dbuf[0] << 18 | dbuf[1] << 12 | dbuf[2] << 6 | dbuf[3];
        let bytes = [(v >> 16) as u8, (v >> 8) as u8, v as u8];
        out.extend_from_slice(&bytes[..dlen - 1]);
        if let Some(e) = trailing_err {
            return Err(e);
        }
        if dlen < 4 {
            return Ok(out);
        }
    }
}

pub fn hex(b: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(b)
}

/// Go `base32.StdEncoding.EncodeToString`.
pub fn b32_encode(data: &[u8]) -> String {
    data_encoding::BASE32.encode(data)
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, data).as_ref())
}

/// sprig `sha1sum` (SHA-1 only as a checksum, as sprig uses it).
pub fn sha1_hex(data: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, data).as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b64_errors_match_go_positions() {
        assert_eq!(go_b64_decode(b"aGVsbG8="), Ok(b"hello".to_vec()));
        assert_eq!(go_b64_decode(b"aGVsbG8"), Err(4));
        assert_eq!(go_b64_decode(b"a!"), Err(1));
        assert_eq!(go_b64_decode(b"aGVs\nbG8="), Ok(b"hello".to_vec()));
        assert_eq!(go_b64_decode(b"aGk=x"), Err(4));
    }

    #[test]
    fn sha1_known() {
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    }

    #[test]
    fn b32_known() {
        assert_eq!(b32_encode(b"foobar"), "MZXW6YTBOI======");
    }
}
