//! Profile endpoints in link-local and cloud metadata ranges.
//!
//! A Profile's `location.endpoint` is where the controller (LocationDelete)
//! and the data-mover pods (restic) send requests signed with the Profile's
//! keys, and whose error answers end up in the ActionSet's status. Pointed at
//! a cloud metadata service (`169.254.169.254` and friends) it turns the
//! controller into a proxy for the node's cloud credentials. Unless the
//! controller runs with `--allow-metadata-endpoints`, such a Profile is
//! refused when it is read, before anything connects: literal addresses are
//! checked as written, names by what they resolve to from the controller.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Host names of metadata services that resolve only inside their cloud.
const METADATA_NAMES: &[&str] = &["metadata.google.internal", "metadata.goog", "metadata"];

/// Why `ip` is refused, if it is.
pub fn metadata_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_range(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4_range(v4);
            }
            if v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
                Some("the AWS instance metadata service (fd00:ec2::254)")
            } else if v6.segments()[0] & 0xffc0 == 0xfe80 {
                Some("the link-local range fe80::/10")
            } else {
                None
            }
        }
    }
}

fn v4_range(v4: Ipv4Addr) -> Option<&'static str> {
    if v4.is_link_local() {
        Some("the link-local range 169.254.0.0/16 (cloud metadata services)")
    } else if v4 == Ipv4Addr::new(100, 100, 100, 200) {
        Some("the Alibaba Cloud metadata service (100.100.100.200)")
    } else {
        None
    }
}

/// The host and port of a Profile endpoint (`http(s)://host[:port][/path]`,
/// or `host[:port]`, https assumed); `None` when empty (AWS S3) or unparsable
/// (the data mover reports that).
pub fn host_port(endpoint: &str) -> Option<(String, u16)> {
    let e = endpoint.trim();
    if e.is_empty() {
        return None;
    }
    let with_scheme = if e.contains("://") {
        e.to_string()
    } else {
        format!("https://{e}")
    };
    let uri: http::Uri = with_scheme.parse().ok()?;
    let host = uri
        .host()?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
        Some("http") => 80,
        _ => 443,
    });
    Some((host, port))
}

/// A Profile endpoint refused: `place` says what about it ("is in ", "names ", "resolves to
/// <ip>, in "), `why` which metadata range or service.
#[derive(Debug, thiserror::Error)]
#[error(
    "Profile {profile}: location.endpoint {endpoint:?} {place}{why}; refused before connecting \
     (requests signed with the Profile's keys must not reach a metadata service). Use the object \
     store's address, or start the controller with --allow-metadata-endpoints if this endpoint \
     is intended"
)]
pub struct MetadataEndpoint {
    pub profile: String,
    pub endpoint: String,
    pub place: String,
    pub why: &'static str,
}

/// The refusal for a Profile endpoint, if any: names first (literal IPs and
/// metadata host names), then every address the name resolves to.
pub async fn check(endpoint: &str, profile: &str) -> Result<(), MetadataEndpoint> {
    let Some((host, port)) = host_port(endpoint) else {
        return Ok(());
    };
    let refuse = |place: &str, why: &'static str| {
        Err(MetadataEndpoint {
            profile: profile.into(),
            endpoint: endpoint.into(),
            place: place.into(),
            why,
        })
    };
    if let Ok(ip) = host.parse::<IpAddr>() {
        return match metadata_range(ip) {
            Some(why) => refuse("is in ", why),
            None => Ok(()),
        };
    }
    let lower = host.to_ascii_lowercase();
    if METADATA_NAMES.contains(&lower.trim_end_matches('.')) {
        return refuse("names ", "a cloud metadata service");
    }
    // A name that does not resolve here is left to the data mover's error.
    if let Ok(addrs) = tokio::net::lookup_host((host.as_str(), port)).await {
        for a in addrs {
            if let Some(why) = metadata_range(a.ip()) {
                return refuse(&format!("resolves to {}, in ", a.ip()), why);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_and_link_local_addresses() {
        let r = |s: &str| metadata_range(s.parse().unwrap());
        assert!(r("169.254.169.254").is_some());
        assert!(r("169.254.170.2").is_some());
        assert!(r("100.100.100.200").is_some());
        assert!(r("fd00:ec2::254").is_some());
        assert!(r("fe80::1").is_some());
        assert!(r("::ffff:169.254.169.254").is_some());
        assert!(r("127.0.0.1").is_none());
        assert!(r("10.0.0.5").is_none());
        assert!(r("100.100.100.201").is_none());
        assert!(r("::1").is_none());
        assert!(r("fd00::1").is_none());
    }

    #[test]
    fn endpoint_hosts() {
        assert_eq!(
            host_port("http://169.254.169.254/latest"),
            Some(("169.254.169.254".into(), 80))
        );
        assert_eq!(
            host_port("minio.example:9000"),
            Some(("minio.example".into(), 9000))
        );
        assert_eq!(
            host_port("https://[fe80::1]:9000"),
            Some(("fe80::1".into(), 9000))
        );
        assert_eq!(host_port(""), None);
    }

    #[tokio::test]
    async fn refused_before_connecting() {
        // Literal addresses and metadata names are refused without a lookup
        // or a connection (nothing listens on these addresses here).
        for ep in [
            "http://169.254.169.254",
            "169.254.169.254:80",
            "http://[fd00:ec2::254]/",
            "https://metadata.google.internal",
            "http://100.100.100.200",
        ] {
            let e = check(ep, "ns/p").await.unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("Profile ns/p: location.endpoint {ep:?}")),
                "{e}"
            );
            assert!(e.contains("--allow-metadata-endpoints"), "{e}");
        }
        let e = check("http://169.254.169.254", "ns/p")
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("link-local range 169.254.0.0/16"), "{e}");
        for ep in ["", "http://127.0.0.1:9000", "localhost:9000"] {
            assert!(check(ep, "ns/p").await.is_ok(), "{ep}");
        }
    }

    /// The resolver branch, through the system's real resolver: these hosts
    /// are no IP address to Rust's parser and no metadata name, but
    /// getaddrinfo reads them (inet_aton's forms) as 169.254.169.254, as
    /// any name whose DNS record points there resolves. Without the lookup
    /// they would pass.
    #[tokio::test]
    async fn names_resolving_to_a_metadata_address_are_refused() {
        for ep in [
            "http://2852039166/",
            "http://0xa9.0xfe.0xa9.0xfe:8080",
            "169.254.43518",
        ] {
            let (host, _) = host_port(ep).unwrap();
            assert!(
                host.parse::<IpAddr>().is_err(),
                "{host} is a literal address"
            );
            let e = check(ep, "ns/p").await.unwrap_err().to_string();
            assert!(
                e.contains("resolves to 169.254.169.254, in the link-local range 169.254.0.0/16"),
                "{ep}: {e}"
            );
            assert!(e.contains("--allow-metadata-endpoints"), "{e}");
        }
    }
}
