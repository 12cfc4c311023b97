//! # sika-tui
//!
//! The operator console. It speaks HTTP to the admin API like any remote
//! operator would, and links neither the server nor the engine.
//!
//! The pieces, in the order data flows through them:
//!
//! - [`Client`] is the admin API's operations; [`HttpClient`] implements it
//!   over HTTP with the operator token.
//! - [`App`] holds everything on screen. [`App::handle_key`] and
//!   [`App::apply`] change it without I/O and say what to fetch next as
//!   [`Request`]s.
//! - [`fetch`] runs those requests on worker threads, so a slow or dead node
//!   never freezes the keyboard.
//! - [`render`] draws a frame from the state alone.
//! - [`run`] owns the real terminal and the loop: draw, handle one event,
//!   take in what the workers fetched.
//!
//! ```
//! use std::time::Instant;
//! use ratatui::{Terminal, backend::TestBackend};
//! use sika_tui::{App, NodeStatus, Payload, Request, Response, render};
//!
//! let mut app = App::new("http://127.0.0.1:8082");
//! let status = NodeStatus { uptime_seconds: 42, ..NodeStatus::default() };
//! app.apply(Response { request: Request::Status, outcome: Ok(Payload::Status(status)) }, Instant::now());
//!
//! let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
//! terminal.draw(|frame| render(&app, frame)).unwrap();
//! let screen: String = terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect();
//! assert!(screen.contains("up 42s"));
//! ```

pub mod api;
pub mod app;
pub mod cli;
pub mod error;
pub mod fetch;
mod http;
pub mod view;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event};
use ratatui::DefaultTerminal;

pub use api::*;
pub use app::{Action, App, Connection, Detail, Tab};
pub use error::ConsoleError;
pub use fetch::{Payload, Request, Response};
pub use http::HttpClient;
pub use view::render;

/// How long the loop waits for a key before it draws again; also how late
/// fetched data can appear on screen.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// Responses taken in per frame, so a burst cannot starve the keyboard.
const RESPONSES_PER_FRAME_MAX: usize = 64;

/// Runs the console against the admin API at `admin_url` until the operator
/// quits. The token is `token`, or else `<data_dir>/admin-token`.
pub fn run(data_dir: &Path, admin_url: &str, token: Option<String>) -> Result<(), ConsoleError> {
    let token = operator_token(data_dir, token)?;
    let client = HttpClient::new(admin_url, &token)?;
    let fetcher = fetch::Fetcher::spawn(Arc::new(client));
    let mut app = App::new(admin_url);
    // ratatui's init turns on raw mode and the alternate screen, and installs
    // a panic hook that restores the terminal before the message prints.
    let mut terminal = ratatui::try_init().map_err(|e| {
        // It can fail after raw mode is already on.
        ratatui::restore();
        ConsoleError::Terminal { doing: "open", source: e }
    })?;
    let result = event_loop(&mut terminal, &mut app, &fetcher);
    ratatui::restore();
    result
}

pub(crate) fn operator_token(data_dir: &Path, token: Option<String>) -> Result<String, ConsoleError> {
    let token_path = data_dir.join("admin-token");
    let token = match token {
        Some(token) => token,
        None => std::fs::read_to_string(&token_path)
            .map_err(|source| ConsoleError::TokenUnreadable { path: token_path.clone(), source })?,
    };
    let token = token.trim().to_string();
    if token.is_empty() {
        return Err(ConsoleError::TokenEmpty(token_path));
    }
    Ok(token)
}

fn event_loop(
    terminal: &mut DefaultTerminal,
    app: &mut App,
    fetcher: &fetch::Fetcher,
) -> Result<(), ConsoleError> {
    loop {
        let now = Instant::now();
        let mut requests = app.tick(now);
        for _ in 0..RESPONSES_PER_FRAME_MAX {
            let Some(response) = fetcher.try_receive() else { break };
            requests.extend(app.apply(response, now));
        }
        for request in app.start(requests) {
            fetcher.send(request);
        }
        terminal
            .draw(|frame| render(app, frame))
            .map_err(|source| ConsoleError::Terminal { doing: "draw on", source })?;
        if !event::poll(POLL_INTERVAL).map_err(|source| ConsoleError::Terminal { doing: "read", source })? {
            continue;
        }
        // Resize needs nothing: the next draw fits the new size.
        if let Event::Key(key) =
            event::read().map_err(|source| ConsoleError::Terminal { doing: "read", source })?
        {
            match app.handle_key(key) {
                Action::Quit => return Ok(()),
                Action::Fetch(requests) => {
                    for request in app.start(requests) {
                        fetcher.send(request);
                    }
                }
                Action::None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_comes_from_the_flag_or_the_data_directory() {
        let dir = std::env::temp_dir().join(format!("sika-tui-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(operator_token(&dir, Some(" adm_flag \n".into())).unwrap(), "adm_flag");
        assert!(operator_token(&dir, None).unwrap_err().to_string().contains("admin-token"));
        std::fs::write(dir.join("admin-token"), "adm_file\n").unwrap();
        assert_eq!(operator_token(&dir, None).unwrap(), "adm_file");
        std::fs::write(dir.join("admin-token"), "  \n").unwrap();
        assert!(operator_token(&dir, None).unwrap_err().to_string().contains("empty"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
