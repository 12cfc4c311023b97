//! Where a webhook may be delivered. Live endpoints reach only public
//! addresses (unless the operator allows private ones), and no stack ever
//! delivers to the node's own listeners. Checked on the URL when an endpoint
//! is saved, and again on every attempt at connect time: the HTTP client
//! resolves host names through `Guard`, which refuses non-public answers, so
//! a name that resolves (or later re-resolves) to loopback is caught.

use std::error::Error;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::config::NodeConfig;
use crate::domain::stack_kind::StackKind;

/// The address rules of one stack.
#[derive(Debug, Clone, Default)]
pub(crate) struct Guard {
    /// Loopback and private addresses are allowed (the sandbox, or a live
    /// stack under `--allow-private-webhooks`).
    pub(crate) allow_private: bool,
    /// The node's listeners (live, sandbox, admin).
    pub(crate) own: Vec<SocketAddr>,
}

/// Why an address was refused; the attempt records its text.
#[derive(Debug, Clone)]
pub(crate) struct Refused(pub(crate) String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Refused {}

const PRIVATE_HINT: &str = "the operator can allow it with --allow-private-webhooks";

impl Guard {
    /// The rules of the `stack` instance of a node configured by `config`.
    pub(crate) fn new(stack: StackKind, config: &NodeConfig) -> Guard {
        Guard {
            allow_private: stack == StackKind::Sandbox || config.allow_private_webhooks,
            own: vec![config.live_addr, config.sandbox_addr, config.admin_addr],
        }
    }

    /// Whether `ip` may be connected to at all (the port aside).
    pub(crate) fn check_ip(&self, ip: IpAddr) -> Result<(), Refused> {
        if self.allow_private || is_public(ip) {
            Ok(())
        } else {
            Err(Refused(format!(
                "refused to connect to {ip}: live endpoints may not reach loopback, private or reserved addresses ({PRIVATE_HINT})"
            )))
        }
    }

    /// Whether `addr` is one of the node's own listeners.
    pub(crate) fn check_own(&self, addr: SocketAddr) -> Result<(), Refused> {
        let ip = addr.ip().to_canonical();
        let local = ip.is_loopback() || ip.is_unspecified();
        let own = self.own.iter().any(|l| {
            l.port() == addr.port()
                && (l.ip().to_canonical() == ip || local && (l.ip().is_unspecified() || l.ip().is_loopback()))
        });
        if own {
            Err(Refused(format!("refused to connect to {addr}: it is one of this node's own listeners")))
        } else {
            Ok(())
        }
    }

    /// The checks a URL can get without resolving its host: an IP literal
    /// is checked fully, a name only against the loopback names.
    pub(crate) fn check_url(&self, url: &Url) -> Result<(), Refused> {
        let port = url.port_or_known_default().unwrap_or(80);
        match host_of(url) {
            Some(Host::Ip(ip)) => self.check_addr(SocketAddr::new(ip, port)),
            Some(Host::Name(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                if name == "localhost" || name.ends_with(".localhost") {
                    self.check_addr(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port))
                } else {
                    Ok(())
                }
            }
            None => Ok(()),
        }
    }

    fn check_addr(&self, addr: SocketAddr) -> Result<(), Refused> {
        self.check_ip(addr.ip())?;
        self.check_own(addr)
    }

    /// Checks an attempt's URL just before it is sent: the literal checks,
    /// and for a name on one of the node's listener ports, every address
    /// it resolves to (the resolver below cannot see the port).
    pub(crate) async fn check_attempt(&self, url: &Url) -> Result<(), Refused> {
        self.check_url(url)?;
        let port = url.port_or_known_default().unwrap_or(80);
        if let Some(Host::Name(name)) = host_of(url)
            && self.own.iter().any(|l| l.port() == port)
        {
            let addrs = tokio::net::lookup_host((name, port))
                .await
                .map_err(|e| Refused(format!("could not resolve {name}: {e}")))?;
            for addr in addrs {
                self.check_own(addr)?;
            }
        }
        Ok(())
    }
}

enum Host<'a> {
    Ip(IpAddr),
    Name(&'a str),
}

fn host_of(url: &Url) -> Option<Host<'_>> {
    let host = url.host_str()?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    Some(match bare.parse::<IpAddr>() {
        Ok(ip) => Host::Ip(ip),
        Err(_) => Host::Name(host),
    })
}

/// The HTTP client's resolver: every answer is checked, and a name with no
/// acceptable address fails the connection with the reason.
impl Resolve for Guard {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = self.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let mut allowed = Vec::with_capacity(found.len());
            for addr in found {
                match guard.check_ip(addr.ip()) {
                    Ok(()) => allowed.push(addr),
                    Err(e) => refused = Some(e),
                }
            }
            // A name with any non-public address is refused outright, so a
            // retry cannot land on the private one.
            if let Some(Refused(reason)) = refused {
                return Err(Box::new(Refused(format!("{host} resolves to a non-public address; {reason}")))
                    as Box<dyn Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// The reason an attempt was refused, if a `Refused` is in the error chain.
pub(crate) fn refusal(error: &(dyn Error + 'static)) -> Option<String> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(r) = e.downcast_ref::<Refused>() {
            return Some(r.0.clone());
        }
        next = e.source();
    }
    None
}

/// Whether `ip` is a globally routable unicast address: not loopback,
/// private, shared (CGNAT), link-local, site-local, documentation,
/// benchmarking, multicast, reserved or unspecified, in either family and
/// in any IPv4-in-IPv6 form.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0                                     // "this network"
        || a == 10                               // private
        || a == 127                              // loopback
        || a == 100 && (64..128).contains(&b)    // shared address space (CGNAT)
        || a == 169 && b == 254                  // link-local
        || a == 172 && (16..32).contains(&b)     // private
        || a == 192 && b == 0 && c == 0          // IETF protocol assignments
        || a == 192 && b == 0 && c == 2          // documentation
        || a == 192 && b == 88 && c == 99        // 6to4 relay anycast
        || a == 192 && b == 168                  // private
        || a == 198 && (18..20).contains(&b)     // benchmarking
        || a == 198 && b == 51 && c == 100       // documentation
        || a == 203 && b == 0 && c == 113        // documentation
        || a >= 224) // multicast, reserved, broadcast
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4] {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    if s[0] == 0x2002 {
        let [a, b] = s[1].to_be_bytes();
        let [c, d] = s[2].to_be_bytes();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    // Only global unicast (2000::/3) is public, less its special blocks:
    // this excludes ::, ::1, IPv4-compatible, discard, unique-local,
    // link-local, site-local and multicast.
    let global_unicast = (s[0] & 0xe000) == 0x2000;
    let protocol_assignments = s[0] == 0x2001 && s[1] < 0x0200; // Teredo, ORCHID…
    let documentation = s[0] == 0x2001 && s[1] == 0x0db8 || s[0] == 0x3fff && s[1] < 0x1000;
    global_unicast && !protocol_assignments && !documentation
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_unicast_is_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "198.18.0.1",
            "198.19.255.1",
            "224.0.0.1",
            "239.1.1.1",
            "240.0.0.1",
            "255.255.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "192.0.2.1",
            "192.0.0.8",
            "203.0.113.9",
            "::",
            "::1",
            "::ffff:169.254.169.254",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "64:ff9b::a00:1",
            "2002:7f00:1::1",
            "100::1",
            "3fff::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "100.128.0.1",
            "198.20.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn own_listeners_are_refused_even_when_private_is_allowed() {
        let guard = Guard {
            allow_private: true,
            own: vec!["127.0.0.1:8081".parse().unwrap(), "0.0.0.0:8082".parse().unwrap()],
        };
        for url in [
            "http://127.0.0.1:8081/x",
            "http://localhost:8081/",
            "http://[::ffff:127.0.0.1]:8081/",
            "http://127.0.0.1:8082/",
            "http://0.0.0.0:8082/",
        ] {
            assert!(guard.check_url(&Url::parse(url).unwrap()).is_err(), "{url}");
        }
        for url in ["http://127.0.0.1:9000/", "http://10.0.0.1:8081/", "http://example.com:8081/"] {
            assert!(guard.check_url(&Url::parse(url).unwrap()).is_ok(), "{url}");
        }
    }
}
