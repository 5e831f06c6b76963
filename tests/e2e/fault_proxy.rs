//! A TCP proxy on loopback between one client and the API server that
//! breaks the link on purpose: every byte held back by a delay, or the link
//! cut (connections reset, new ones closed at once) until it is healed.
//! TLS passes through untouched: the client still talks to the API server.

use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// What the link does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    Up,
    /// Each chunk, both ways, delivered this long after it was read.
    Slow(Duration),
    /// Nothing gets through.
    Cut,
}

/// A proxy listening on loopback; dropping it stops it.
pub struct FaultProxy {
    pub addr: SocketAddr,
    link: watch::Sender<Link>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FaultProxy {
    /// Forwards connections on a new loopback port to `upstream`.
    pub async fn start(upstream: SocketAddr) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the proxy");
        let addr = listener.local_addr().expect("its address");
        let (link, state) = watch::channel(Link::Up);
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                if *state.borrow() == Link::Cut {
                    drop(client);
                    continue;
                }
                tokio::spawn(relay(client, upstream, state.clone()));
            }
        });
        FaultProxy { addr, link, task }
    }

    pub fn set(&self, link: Link) {
        self.link.send_replace(link);
    }
}

/// One connection, until either side closes or the link is cut.
async fn relay(client: TcpStream, upstream: SocketAddr, mut state: watch::Receiver<Link>) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let pumps = futures::future::join(
        pump(client_read, server_write, state.clone()),
        pump(server_read, client_write, state.clone()),
    );
    tokio::select! {
        _ = pumps => {}
        _ = state.wait_for(|link| *link == Link::Cut) => {
            // Dropping the halves closes both sockets: the client sees a
            // reset or an end, as on a link that went down.
        }
    }
}

/// One direction: chunks read are written after the delay in force when
/// they were read, in order; an end is passed on once the chunks before it
/// are.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    state: watch::Receiver<Link>,
) {
    let (queue, mut due) = mpsc::unbounded_channel::<(Instant, Option<Vec<u8>>)>();
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = from.read(&mut buf).await.unwrap_or(0);
            let delay = match *state.borrow() {
                Link::Slow(delay) => delay,
                Link::Up | Link::Cut => Duration::ZERO,
            };
            let chunk = (n > 0).then(|| buf[..n].to_vec());
            if queue.send((Instant::now() + delay, chunk)).is_err() || n == 0 {
                return;
            }
        }
    };
    let writer = async move {
        while let Some((at, chunk)) = due.recv().await {
            tokio::time::sleep_until(at).await;
            match chunk {
                Some(bytes) => {
                    if to.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
                None => {
                    let _ = to.shutdown().await;
                    return;
                }
            }
        }
    };
    tokio::join!(reader, writer);
}

/// `kubeconfig`'s text with its server's address (`https://HOST:PORT`)
/// replaced by the proxy's.
pub fn through(kubeconfig: &str, proxy: SocketAddr) -> String {
    kubeconfig
        .lines()
        .map(
            |line| match line.trim_start().strip_prefix("server: https://") {
                Some(_) => {
                    let indent = &line[..line.len() - line.trim_start().len()];
                    format!("{indent}server: https://{proxy}")
                }
                None => line.to_owned(),
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
}

/// The API server's address in `kubeconfig`'s text.
pub fn api_server(kubeconfig: &str) -> SocketAddr {
    kubeconfig
        .lines()
        .find_map(|line| line.trim_start().strip_prefix("server: https://"))
        .and_then(|addr| addr.trim().trim_matches('"').parse().ok())
        .expect("a kubeconfig whose server is https://IP:PORT")
}
