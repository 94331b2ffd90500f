// SPDX-License-Identifier: Apache-2.0
//! Relaying a child's stdout and stderr line by line as they are written, each
//! stream apart, to a caller's sink; and not waiting forever for a pipe end that a
//! process outside the child's tree still holds open.

use std::io::{BufRead, BufReader, Read};
use std::process::Child;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

/// Which output stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Receives each line (without its `\n`) of the stream it came from.
pub type Sink = Arc<dyn Fn(Stream, &[u8]) + Send + Sync>;

/// The relay threads of one child.
pub struct Relay {
    done: Receiver<()>,
    running: usize,
}

impl Relay {
    /// Starts one thread per piped stream of `child`.
    pub fn start(child: &mut Child, sink: &Sink) -> Relay {
        let (tx, done) = mpsc::channel();
        let out = child
            .stdout
            .take()
            .map(|p| (Stream::Stdout, Box::new(p) as Box<dyn Read + Send>));
        let err = child
            .stderr
            .take()
            .map(|p| (Stream::Stderr, Box::new(p) as Box<dyn Read + Send>));
        let mut running = 0;
        for (stream, pipe) in [out, err].into_iter().flatten() {
            let (tx, sink) = (tx.clone(), Arc::clone(sink));
            running += 1;
            thread::spawn(move || {
                for line in BufReader::new(pipe).split(b'\n') {
                    let Ok(line) = line else { break };
                    sink(stream, &line);
                }
                let _ = tx.send(());
            });
        }
        Relay { done, running }
    }

    /// Waits up to `bound` for both streams to reach their end; true when they did.
    /// A stream still open after that is held by a process outside the child's tree:
    /// its thread keeps relaying what comes, the caller no longer waits for it.
    pub fn finish(self, bound: Duration) -> bool {
        let until = Instant::now() + bound;
        (0..self.running).all(|_| {
            self.done
                .recv_timeout(until.saturating_duration_since(Instant::now()))
                .is_ok()
        })
    }
}
