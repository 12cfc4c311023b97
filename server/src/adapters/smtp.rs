//! The email sender's SMTP client (`lettre`), a `Transport` of
//! `domain::emails::sender`: `smtp://` upgrades with STARTTLS when the
//! server offers it, `smtps://` speaks TLS from the first byte; the user
//! and password come from `[email].smtp_url`.

use std::time::Duration;

use lettre::message::{Mailbox, MultiPart, header};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::config::EmailConfig;
use crate::config::email::SmtpSecurity;
use crate::domain::emails::sender::{Envelope, Refusal, Sending, Transport};

/// How long one exchange with the server may take.
const TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) struct Smtp {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl Smtp {
    pub(crate) fn new(config: &EmailConfig) -> Result<Smtp, String> {
        let server = &config.server;
        let tls = TlsParameters::new(server.host.clone())
            .map_err(|e| format!("cannot set up TLS for the SMTP server: {e}"))?;
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(server.host.clone())
            .port(server.port)
            .timeout(Some(TIMEOUT))
            .tls(match server.security {
                SmtpSecurity::Opportunistic => Tls::Opportunistic(tls),
                SmtpSecurity::Wrapper => Tls::Wrapper(tls),
            });
        if let Some((user, password)) = &server.credentials {
            builder = builder.credentials(Credentials::new(user.clone(), password.expose().to_string()));
        }
        let from: Mailbox = config.from.parse().map_err(|e| format!("email.from: {e}"))?;
        Ok(Smtp { transport: builder.build(), from })
    }

    fn message(&self, envelope: Envelope) -> Result<Message, String> {
        let to: Mailbox = envelope
            .to
            .parse()
            .map_err(|e| format!("the recipient '{}' is not an address: {e}", envelope.to))?;
        Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(envelope.subject)
            .message_id(Some(envelope.message_id))
            .header(header::MIME_VERSION_1_0)
            .multipart(MultiPart::alternative_plain_html(envelope.text, envelope.html))
            .map_err(|e| format!("cannot build the email: {e}"))
    }
}

impl Transport for Smtp {
    fn send(&self, envelope: Envelope) -> Sending<'_> {
        Box::pin(async move {
            let message = self.message(envelope).map_err(Refusal)?;
            match self.transport.send(message).await {
                Ok(_) => Ok(()),
                Err(e) => Err(Refusal(describe(&e))),
            }
        })
    }
}

/// The server's answer or the connection's failure, with its causes.
fn describe(error: &lettre::transport::smtp::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
