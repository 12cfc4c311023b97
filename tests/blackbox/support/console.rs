//! The console's `App` driven in process against a real node: the keys an
//! operator presses, each answered by fetching over HTTP from the admin API
//! right away (the same code `sika tui` runs, without the terminal).

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use sika_tui::{Action, App, HttpClient};

use super::Node;

pub struct Console {
    pub app: App,
    pub client: HttpClient,
}

impl Console {
    /// A console on the admin API at `url`, before its first tick: nothing
    /// is fetched until a key asks for it.
    pub fn new(url: &str, token: &str) -> Console {
        let client = HttpClient::new(url, token).expect("client");
        Console { app: App::new(url), client }
    }

    /// A console on the node's admin API as the operator, after its first
    /// tick has fetched what the opening tab shows.
    pub fn open(node: &Node) -> Console {
        let mut console = Console::new(&node.admin, &node.creds.admin_token);
        let requests = console.app.tick(Instant::now());
        console.app.fetch_now(&console.client, requests, Instant::now());
        console
    }

    pub fn press(&mut self, code: KeyCode) {
        if let Action::Fetch(requests) = self.app.handle_key(KeyEvent::new(code, KeyModifiers::NONE)) {
            self.app.fetch_now(&self.client, requests, Instant::now());
        }
    }

    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.press(KeyCode::Char(c));
        }
    }

    /// The screen drawn into a 160 x 48 test terminal, as text.
    pub fn screen(&self) -> String {
        let mut terminal = Terminal::new(TestBackend::new(160, 48)).expect("terminal");
        terminal.draw(|frame| sika_tui::render(&self.app, frame)).expect("draw");
        terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect()
    }

    /// Moves the Organizations tab's selection to the one named `name`.
    pub fn select_organization(&mut self, name: &str) {
        let index = self.app.organization_rows().iter().position(|o| o.name == name);
        let index = index.unwrap_or_else(|| panic!("no organization {name}: {:?}", self.app.organizations));
        self.press(KeyCode::Home);
        for _ in 0..index {
            self.press(KeyCode::Down);
        }
    }

    pub fn organization(&self, name: &str) -> sika_tui::Organization {
        self.app.organization_rows().iter().find(|o| o.name == name).cloned().expect("listed")
    }
}
