//! `[email]`, checked: the SMTP server as a typed address, the sender and
//! the operator's address, and the hourly bound per organization.

use super::file::{EmailTable, Secret};

/// `max_per_org_per_hour` unless set.
pub const EMAILS_PER_ORG_PER_HOUR_DEFAULT: u32 = 100;

/// How the connection to the SMTP server is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpSecurity {
    /// `smtp://`: plain, upgraded with STARTTLS when the server offers it.
    Opportunistic,
    /// `smtps://`: TLS from the first byte.
    Wrapper,
}

/// `[email].smtp_url`, taken apart.
#[derive(Debug, Clone)]
pub struct SmtpServer {
    pub security: SmtpSecurity,
    pub host: String,
    pub port: u16,
    /// User and password, percent-decoded.
    pub credentials: Option<(String, Secret)>,
}

/// `[email]`, checked.
#[derive(Debug, Clone)]
pub struct EmailConfig {
    pub server: SmtpServer,
    /// As written: `Name <address>` or an address.
    pub from: String,
    pub operator: Option<String>,
    pub max_per_org_per_hour: u32,
}

/// `[email]`, or the problems found in it (one line each, naming the key).
pub(crate) fn resolve(table: Option<&EmailTable>, problems: &mut Vec<String>) -> Option<EmailConfig> {
    let table = table?;
    let before = problems.len();
    let server = match &table.smtp_url {
        None => {
            problems.push("email.smtp_url: is required (smtp://host:port or smtps://host:port)".into());
            None
        }
        Some(url) => match parse_smtp_url(url.expose()) {
            Ok(server) => Some(server),
            Err(why) => {
                problems.push(format!("email.smtp_url: {why}"));
                None
            }
        },
    };
    let from = match &table.from {
        None => {
            problems.push(
                "email.from: is required (the sender's address, e.g. Sika <noreply@example.com>)".into(),
            );
            None
        }
        Some(from) if !is_mailbox(from) => {
            problems.push(format!(
                "email.from: '{from}' is not an email address (name@domain or Name <name@domain>)"
            ));
            None
        }
        Some(from) => Some(from.trim().to_string()),
    };
    if let Some(operator) = &table.operator
        && !is_address(operator.trim())
    {
        problems.push(format!("email.operator: '{operator}' is not an email address"));
    }
    if table.max_per_org_per_hour == Some(0) {
        problems.push("email.max_per_org_per_hour: must be at least 1".into());
    }
    if problems.len() > before {
        return None;
    }
    Some(EmailConfig {
        server: server?,
        from: from?,
        operator: table.operator.as_ref().map(|o| o.trim().to_string()),
        max_per_org_per_hour: table.max_per_org_per_hour.unwrap_or(EMAILS_PER_ORG_PER_HOUR_DEFAULT),
    })
}

/// `smtp://[user[:password]@]host[:port][/]` or `smtps://…`.
pub(crate) fn parse_smtp_url(url: &str) -> Result<SmtpServer, String> {
    let (security, rest, default_port) = if let Some(rest) = url.strip_prefix("smtp://") {
        (SmtpSecurity::Opportunistic, rest, 25)
    } else if let Some(rest) = url.strip_prefix("smtps://") {
        (SmtpSecurity::Wrapper, rest, 465)
    } else {
        return Err("must start with smtp:// or smtps://".into());
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains(['/', '?', '#']) || rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must be smtp(s)://[user:password@]host[:port] with no path or query".into());
    }
    let (userinfo, hostport) = match rest.rsplit_once('@') {
        Some((userinfo, hostport)) => (Some(userinfo), hostport),
        None => (None, rest),
    };
    let (host, port) =
        match hostport.rsplit_once(':').filter(|(h, _)| !h.ends_with(']') || h.starts_with('[')) {
            Some((host, port)) if !host.is_empty() && !hostport.ends_with(']') => {
                let port: u16 = port.parse().map_err(|_| format!("'{port}' is not a port"))?;
                if port == 0 {
                    return Err("port 0 is not a port".into());
                }
                (host, port)
            }
            _ => (hostport, default_port),
        };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err("names no host".into());
    }
    let credentials = match userinfo {
        None => None,
        Some(userinfo) => {
            let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            let user = percent_decode(user).ok_or("the user is not valid percent-encoding")?;
            let password = percent_decode(password).ok_or("the password is not valid percent-encoding")?;
            Some((user, Secret::new(password)))
        }
    };
    Ok(SmtpServer { security, host: host.to_string(), port, credentials })
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `name@domain`: one `@`, something on each side, a dot in the domain,
/// nothing blank or hidden.
pub fn is_address(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else { return false };
    !local.is_empty()
        && !domain.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !text.chars().any(|c| c.is_whitespace() || c.is_control() || "<>()[],;:\"\\".contains(c))
}

/// An address, or `Display Name <address>`.
fn is_mailbox(text: &str) -> bool {
    let text = text.trim();
    match text.strip_suffix('>').and_then(|t| t.rsplit_once('<')) {
        Some((name, address)) => {
            is_address(address) && !name.contains(['<', '>', '"']) && !name.chars().any(char::is_control)
        }
        None => is_address(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smtp_urls_are_taken_apart() {
        let server = parse_smtp_url("smtp://mailer%40x:p%3Ass@mail.example.com:2525").unwrap();
        assert_eq!(server.security, SmtpSecurity::Opportunistic);
        assert_eq!((server.host.as_str(), server.port), ("mail.example.com", 2525));
        let (user, password) = server.credentials.unwrap();
        assert_eq!((user.as_str(), password.expose()), ("mailer@x", "p:ss"));
        let server = parse_smtp_url("smtps://mail.example.com").unwrap();
        assert_eq!((server.security, server.port), (SmtpSecurity::Wrapper, 465));
        assert!(server.credentials.is_none());
        assert_eq!(parse_smtp_url("smtp://127.0.0.1:25/").unwrap().host, "127.0.0.1");
        for bad in ["http://mail.example.com", "smtp://", "smtp://host:0", "smtp://host:x", "smtp://h/p"] {
            assert!(parse_smtp_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn senders_are_addresses() {
        for good in ["noreply@example.com", "Sika <noreply@example.com>", " a.b+c@d.example "] {
            assert!(is_mailbox(good), "{good}");
        }
        for bad in ["noreply", "@example.com", "a@b", "Sika <nope>", "a b@example.com", "a@example.com>"] {
            assert!(!is_mailbox(bad), "{bad}");
        }
    }
}
