//! The log's way to stderr. Every API request logs one line, and writing
//! each line to an unbuffered stderr cost a `write(2)` on the request's
//! own thread: at 40k requests/s that alone was ~6 µs of the ~60 µs of node
//! CPU a `GET /v1/accounts` takes. Here an info, debug or trace line is
//! appended to a shared buffer that a thread of its own writes out at most
//! `FLUSH_AFTER` later (or at once, on the logging thread, past
//! `BUFFER_MAX`), so a burst of lines costs one write. A warning or an
//! error is written at once, behind everything logged before it, so a line
//! that matters is never waiting in memory when the process dies. What a
//! SIGKILL can lose is the last `FLUSH_AFTER` of info lines; a clean stop
//! writes everything (`LogPipe::flush`, called before `main` returns).

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tracing::{Level, Metadata};

/// How long an info line may wait in memory.
const FLUSH_AFTER: Duration = Duration::from_millis(20);
/// Past this many buffered bytes the logging thread writes them itself.
const BUFFER_MAX: usize = 64 * 1024;

#[derive(Clone)]
pub(crate) struct LogPipe {
    shared: Arc<Shared>,
}

struct Shared {
    /// Lines not yet written. Every write to stderr happens while holding
    /// it, so lines reach stderr in the order they were logged.
    buffer: Mutex<Vec<u8>>,
    /// Signalled when the buffer goes from empty to holding a line.
    filled: Condvar,
    /// Whether a thread writes the buffer out (otherwise every line is
    /// written at once).
    flushed_by_thread: bool,
}

impl Shared {
    fn new(flushed_by_thread: bool) -> Arc<Shared> {
        Arc::new(Shared { buffer: Mutex::new(Vec::new()), filled: Condvar::new(), flushed_by_thread })
    }

    fn lock(&self) -> MutexGuard<'_, Vec<u8>> {
        self.buffer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes one line: written out at once (with everything before it)
    /// when `at_once`, when the buffer is full or when no thread flushes.
    fn append(&self, line: &[u8], at_once: bool, out: &mut dyn Write) {
        let mut buffer = self.lock();
        let was_empty = buffer.is_empty();
        buffer.extend_from_slice(line);
        if at_once || buffer.len() >= BUFFER_MAX || !self.flushed_by_thread {
            write_out(&mut buffer, out);
        } else if was_empty {
            self.filled.notify_one();
        }
    }
}

/// Writes out what `buffer` holds and empties it. A failed write (stderr
/// closed) drops the lines: logging never stops the node.
fn write_out(buffer: &mut Vec<u8>, out: &mut dyn Write) {
    if !buffer.is_empty() {
        let _ = out.write_all(buffer);
        buffer.clear();
    }
}

impl LogPipe {
    /// The pipe and the thread that writes it out.
    pub(crate) fn start() -> LogPipe {
        let shared = Shared::new(true);
        let flusher = shared.clone();
        let started = std::thread::Builder::new().name("sika-log-writer".into()).spawn(move || {
            loop {
                drop(flusher.filled.wait_while(flusher.lock(), |b| b.is_empty()));
                // Let the lines of the next few milliseconds join this write.
                std::thread::sleep(FLUSH_AFTER);
                write_out(&mut flusher.lock(), &mut std::io::stderr());
            }
        });
        match started {
            Ok(_) => LogPipe { shared },
            Err(e) => {
                eprintln!("cannot start the log's writer thread ({e}); each line is written at once");
                LogPipe { shared: Shared::new(false) }
            }
        }
    }

    /// Writes out every line logged so far.
    pub(crate) fn flush(&self) {
        write_out(&mut self.shared.lock(), &mut std::io::stderr());
    }
}

/// One formatted line on its way into the pipe (the formatter writes a
/// whole line per event).
pub(crate) struct Line<'a> {
    shared: &'a Shared,
    at_once: bool,
}

impl Write for Line<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.shared.append(bytes, self.at_once, &mut std::io::stderr());
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogPipe {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        Line { shared: &self.shared, at_once: true }
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Line<'a> {
        // Levels order by verbosity: WARN and ERROR are at or below WARN.
        Line { shared: &self.shared, at_once: *meta.level() <= Level::WARN }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_goes_out_at_once_after_the_lines_logged_before_it() {
        let shared = Shared::new(true);
        let mut out = Vec::new();
        shared.append(b"info one\n", false, &mut out);
        shared.append(b"info two\n", false, &mut out);
        assert!(out.is_empty(), "info lines wait for the writer thread");
        shared.append(b"warning\n", true, &mut out);
        assert_eq!(out, b"info one\ninfo two\nwarning\n");
        assert!(shared.lock().is_empty());
    }

    #[test]
    fn a_full_buffer_is_written_by_the_thread_that_fills_it() {
        let shared = Shared::new(true);
        let mut out = Vec::new();
        let line = vec![b'x'; 1000];
        for _ in 0..BUFFER_MAX / 1000 {
            shared.append(&line, false, &mut out);
        }
        assert!(out.is_empty());
        shared.append(&line, false, &mut out);
        assert_eq!(out.len(), (BUFFER_MAX / 1000 + 1) * 1000, "every line, in one write");
    }

    #[test]
    fn without_the_thread_each_line_is_written_at_once() {
        let shared = Shared::new(false);
        let mut out = Vec::new();
        shared.append(b"info\n", false, &mut out);
        assert_eq!(out, b"info\n");
    }
}
