//! A tiny Anthropic-style provider on 127.0.0.1, bundled so the demo needs
//! no API key and no network: it answers every `POST /v1/messages` with one
//! text block and one `tool_use` block asking for the `skill` tool.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;

/// Starts the provider and returns its base URL.
pub fn start() -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            thread::spawn(move || {
                let _ = serve(stream);
            });
        }
    });
    Ok(format!("http://{addr}"))
}

fn serve(stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line)?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body)?;
        let answer = if request_line.starts_with("POST /v1/messages") {
            r#"{"id":"msg_demo","type":"message","role":"assistant","model":"mock-claude","content":[{"type":"text","text":"Let me load the hello-world skill first."},{"type":"tool_use","id":"toolu_demo_1","name":"skill","input":{"name":"hello-world"}}],"stop_reason":"tool_use","usage":{"input_tokens":412,"output_tokens":38}}"#
        } else {
            r#"{"error":{"type":"not_found","message":"the mock provider only serves POST /v1/messages"}}"#
        };
        let status = if request_line.starts_with("POST /v1/messages") {
            "200 OK"
        } else {
            "404 Not Found"
        };
        write!(
            writer,
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        )?;
        writer.flush()?;
    }
}
