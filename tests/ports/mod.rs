//! Ports for tests that run beside other test processes (CI's second run,
//! scripts/flake_hunt.sh's load): a port picked by binding port 0 and then
//! freeing it can be taken by another process before it is used, which
//! sends one test's client to another test's server. Nothing here frees a
//! port it hands out while the caller holds it.
#![allow(dead_code)]

use socket2::{Domain, Socket, Type};
use std::net::SocketAddr;

/// A loopback port where a connection is refused for as long as the
/// returned socket lives: it is bound but never listens, so the kernel
/// answers a connect with a reset, and no other process can bind the port
/// meanwhile.
pub fn refused_port() -> (Socket, u16) {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("a socket");
    let any: SocketAddr = "127.0.0.1:0".parse().expect("an address");
    socket.bind(&any.into()).expect("bind 127.0.0.1:0");
    let port = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .map(|a| a.port())
        .expect("the bound port");
    (socket, port)
}
