//! A tiny Anthropic-style provider on 127.0.0.1, bundled so the demo needs
//! no API key and no network. It answers `POST /v1/messages` by how far the
//! conversation has come: a `tool_use` of the `skill` tool first, then (once
//! a tool result is back) a `question` for the user, then a final text.

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
        // The conversation so far decides the answer: first the skill, then
        // (once its result is back) a question for the user, then the reply.
        let results = String::from_utf8_lossy(&body)
            .matches("\"tool_result\"")
            .count();
        let answer = if !request_line.starts_with("POST /v1/messages") {
            r#"{"error":{"type":"not_found","message":"the mock provider only serves POST /v1/messages"}}"#
        } else if results == 0 {
            r#"{"id":"msg_demo","type":"message","role":"assistant","model":"mock-claude","content":[{"type":"text","text":"Let me load the hello-world skill first."},{"type":"tool_use","id":"toolu_demo_1","name":"skill","input":{"name":"hello-world"}}],"stop_reason":"tool_use","usage":{"input_tokens":412,"output_tokens":38}}"#
        } else if results == 1 {
            r#"{"id":"msg_demo_2","type":"message","role":"assistant","model":"mock-claude","content":[{"type":"tool_use","id":"toolu_demo_2","name":"question","input":{"questions":[{"question":"How should I greet Ada?","options":["formally","warmly"]}]}}],"stop_reason":"tool_use","usage":{"input_tokens":530,"output_tokens":31}}"#
        } else {
            r#"{"id":"msg_demo_3","type":"message","role":"assistant","model":"mock-claude","content":[{"type":"text","text":"Hello, Ada! Warm greetings from the hello-world skill."}],"stop_reason":"end_turn","usage":{"input_tokens":561,"output_tokens":14}}"#
        };
        let known = request_line.starts_with("POST /v1/messages");
        let status = if known { "200 OK" } else { "404 Not Found" };
        write!(
            writer,
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        )?;
        writer.flush()?;
    }
}
