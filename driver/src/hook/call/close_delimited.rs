//! Hook servers written as Metacontroller's examples write them (Python's
//! `http.server` over `ssl`) end a response by closing the connection,
//! without a TLS `close_notify`. Go's client, Metacontroller's, reads that
//! as the end of the body; rustls reports an unexpected EOF, and hyper
//! fails the call. Here such an EOF ends the body as a clean one would. A
//! response with a `Content-Length` cut short is still an error (hyper
//! counts its bytes); one delimited by the close and cut short is a JSON
//! document cut short, which the decoder refuses.

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tower::Service;

/// A connector whose connections read an unexpected EOF as the end.
#[derive(Clone)]
pub(super) struct CloseDelimited<C>(pub(super) C);

impl<C, U> Service<U> for CloseDelimited<C>
where
    C: Service<U>,
    C::Future: Send + 'static,
{
    type Response = EofAsEnd<C::Response>;
    type Error = C::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, uri: U) -> Self::Future {
        let connecting = self.0.call(uri);
        Box::pin(async move { connecting.await.map(EofAsEnd) })
    }
}

/// A connection that reads an unexpected EOF as the end of the stream.
pub(super) struct EofAsEnd<T>(T);

impl<T: Read + Unpin> Read for EofAsEnd<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.0).poll_read(cx, buf) {
            Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => Poll::Ready(Ok(())),
            other => other,
        }
    }
}

impl<T: Write + Unpin> Write for EofAsEnd<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }
}

impl<T: Connection> Connection for EofAsEnd<T> {
    fn connected(&self) -> Connected {
        self.0.connected()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::rt::ReadBuf;

    /// Reads `data` once, then fails with `then`.
    struct Scripted {
        data: &'static [u8],
        then: io::ErrorKind,
    }

    impl Read for Scripted {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            mut buf: ReadBufCursor<'_>,
        ) -> Poll<io::Result<()>> {
            if self.data.is_empty() {
                return Poll::Ready(Err(io::Error::from(self.then)));
            }
            buf.put_slice(self.data);
            self.data = &[];
            Poll::Ready(Ok(()))
        }
    }

    /// What reading to the end gives: the bytes, or the error.
    fn read_all(inner: Scripted) -> Result<Vec<u8>, io::ErrorKind> {
        let mut conn = EofAsEnd(inner);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut all = Vec::new();
        loop {
            let mut storage = [0u8; 64];
            let mut buf = ReadBuf::new(&mut storage);
            match Pin::new(&mut conn).poll_read(&mut cx, buf.unfilled()) {
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Ok(all),
                Poll::Ready(Ok(())) => all.extend_from_slice(buf.filled()),
                Poll::Ready(Err(e)) => return Err(e.kind()),
                Poll::Pending => unreachable!("the script never waits"),
            }
        }
    }

    #[test]
    fn a_close_without_close_notify_ends_the_body_other_errors_stay_errors() {
        let body = br#"{"status": {}}"#;
        assert_eq!(
            read_all(Scripted {
                data: body,
                then: io::ErrorKind::UnexpectedEof
            }),
            Ok(body.to_vec())
        );
        assert_eq!(
            read_all(Scripted {
                data: body,
                then: io::ErrorKind::ConnectionReset
            }),
            Err(io::ErrorKind::ConnectionReset)
        );
    }
}
