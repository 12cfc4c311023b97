//! The real terminal: raw mode and the alternate screen on the way in, and
//! always back out again, after an error and after a panic too.

use std::io::{self, Stdout};
use std::sync::Once;

use crossterm::execute;
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Owns the terminal's console mode; dropping it restores the terminal, so
/// every return path (including `?`) restores it.
pub struct TerminalGuard {
    pub terminal: Term,
}

impl TerminalGuard {
    pub fn enter() -> Result<TerminalGuard, String> {
        install_panic_hook();
        enable_raw_mode().map_err(|e| format!("cannot switch the terminal to raw mode: {e}"))?;
        if let Err(e) = execute!(io::stdout(), EnterAlternateScreen) {
            restore();
            return Err(format!("cannot open the alternate screen: {e}"));
        }
        match Terminal::new(CrosstermBackend::new(io::stdout())) {
            Ok(mut terminal) => {
                let _ = terminal.hide_cursor();
                Ok(TerminalGuard { terminal })
            }
            Err(e) => {
                restore();
                Err(format!("cannot open the terminal: {e}"))
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = self.terminal.show_cursor();
        restore();
    }
}

/// Leaves the alternate screen and raw mode; harmless when neither is on.
pub fn restore() {
    let _ = execute!(io::stdout(), LeaveAlternateScreen, crossterm::cursor::Show);
    let _ = disable_raw_mode();
}

/// A panic prints its message on the normal screen, after the terminal is
/// restored, instead of into the alternate screen that is about to vanish.
fn install_panic_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}
