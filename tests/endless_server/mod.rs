//! A hostile HTTP server on 127.0.0.1: it answers every request with a 200
//! that announces a 1 TB JSON body and then sends zeros until the client
//! hangs up. Counts the requests it saw.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

pub struct EndlessServer {
    pub port: u16,
    requests: Arc<AtomicUsize>,
}

impl EndlessServer {
    pub fn start() -> EndlessServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let requests = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&requests);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = Arc::clone(&seen);
                thread::spawn(move || {
                    let Ok(mut out) = stream.try_clone() else {
                        return;
                    };
                    let mut reader = BufReader::new(stream);
                    // The request head; a body, if any, is never read.
                    let mut line = String::new();
                    while reader.read_line(&mut line).map(|n| n > 2).unwrap_or(false) {
                        line.clear();
                    }
                    seen.fetch_add(1, Ordering::SeqCst);
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                                content-length: 1000000000000\r\n\r\n";
                    if out.write_all(head.as_bytes()).is_err() {
                        return;
                    }
                    let chunk = vec![b'0'; 1 << 20];
                    while out.write_all(&chunk).is_ok() {}
                });
            }
        });
        EndlessServer { port, requests }
    }

    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}
