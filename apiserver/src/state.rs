//! What the routes read: the driver's records and who sent a request,
//! each behind a small trait so that the routes' tests can stand in for a
//! running driver (whose [`View`] only the driver fills) and for a TLS
//! connection (actix's in-process test requests carry no client
//! certificate).

use crate::authorize::Authorizer;
use crate::front_proxy::{FrontProxy, User};
use crate::tls::PeerCerts;
use actix_web::HttpRequest;
use metahook_driver::observe::records::Record;
use metahook_driver::observe::view::View;
use std::sync::Arc;

/// What the handlers share.
#[derive(Debug)]
pub struct State {
    pub records: Arc<dyn Records>,
    pub authenticator: Arc<dyn Authenticator>,
    pub authorizer: Arc<Authorizer>,
}

/// The driver's reconcile records.
pub trait Records: Send + Sync + std::fmt::Debug {
    /// Whether this replica drives (only the Lease holder has records).
    fn driving(&self) -> bool;
    /// The last reconcile of every parent, optionally of one controller
    /// and in one namespace.
    fn reconciles(&self, controller: Option<&str>, namespace: Option<&str>) -> Vec<Record>;
}

impl Records for View {
    fn driving(&self) -> bool {
        View::driving(self)
    }

    fn reconciles(&self, controller: Option<&str>, namespace: Option<&str>) -> Vec<Record> {
        View::reconciles(self, controller, namespace)
    }
}

/// Who a request is for; `Err` says why it is not trusted.
pub trait Authenticator: Send + Sync + std::fmt::Debug {
    fn user(&self, request: &HttpRequest) -> Result<User, String>;
}

/// The front proxy's certificate, kept with the connection by
/// [`crate::tls::keep_peer_certs`], and the user in the request's headers.
impl Authenticator for FrontProxy {
    fn user(&self, request: &HttpRequest) -> Result<User, String> {
        let peer = request.conn_data::<PeerCerts>().map(|p| p.0.as_slice());
        self.authenticate(peer, request.headers())
    }
}
