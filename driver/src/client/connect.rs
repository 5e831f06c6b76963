//! The driver's connection to the API server: the kubeconfig found the
//! usual way, a User-Agent of its own, every answer counted, kube's retries
//! of 429/503/504, the client-side budget (`--kube-qps`/`--kube-burst`)
//! for everything but the Lease (Events have one of their own), and the
//! leader's fence on every write but the Lease's.

use crate::client::pressure::Pressure;
use crate::client::read_only::ReadOnlyLayer;
use crate::client::responses::CountResponsesLayer;
use crate::client::throttle::{Budget, ThrottleLayer};
use crate::observe::metrics::DriverMetrics;
use crate::start::leader::fence::{Fence, FenceLayer};
use kube::Client;
use std::sync::Arc;

/// The driver's API clients.
#[derive(Clone)]
pub struct Clients {
    /// Every watch, read and write of the controllers: within the
    /// client-side budget, if there is one.
    pub client: Client,
    /// Events, within a budget of their own of the same size (as
    /// client-go gives Metacontroller's event recorder, a clientset of its
    /// own): an Event never waits for, nor delays, a write that converges
    /// a parent.
    pub events: Client,
    /// The Lease's, outside the budget: a renewal queued behind a burst of
    /// throttled requests would lose the lease, and a lost lease stops the
    /// driver.
    pub lease: Client,
    /// Whether `client`'s budget is holding back converging writes.
    pub pressure: Pressure,
    /// What lets `client`'s and `events`' writes through: while this
    /// replica leads (or always, without leader election).
    pub fence: Fence,
}

/// The kubeconfig the usual way: in-cluster, `KUBECONFIG`, `~/.kube/config`.
/// Requests say `User-Agent: metahook/<version>`, so the API server's
/// audit log and metrics tell the driver's calls apart (kube sets none).
/// `budget`: `--kube-qps` / `--kube-burst`, none for no client-side limit;
/// every request is counted in `metrics` either way. `fence`: see
/// [`Clients::fence`].
pub async fn connect(
    budget: Option<Budget>,
    metrics: Arc<DriverMetrics>,
    fence: Fence,
) -> Result<Clients, kube::Error> {
    let mut config = inferred(USER_AGENT).await?;
    // kube's own retry of 429, 503 and 504 (Retry-After honoured) moves
    // outside the layer that counts answers, so that a throttled attempt
    // shows even when its retry succeeds. Retries do not spend the
    // client-side budget again (client-go's do).
    config.default_retry = false;
    // The fence is the innermost layer: a write is judged as it leaves,
    // after any wait for the budget, and each retry again.
    let build = |config: kube::Config, throttle: ThrottleLayer, fence: Option<&Fence>| {
        kube::client::ClientBuilder::try_from(config).map(|builder| {
            builder
                .with_layer(&tower::util::option_layer(fence.cloned().map(FenceLayer)))
                .with_layer(&CountResponsesLayer::new(metrics.clone()))
                .with_layer(&tower::buffer::BufferLayer::new(1024))
                .with_layer(&tower::retry::RetryLayer::new(
                    kube::client::retry::RetryPolicy::server_retry(),
                ))
                .with_layer(&throttle)
                .build()
        })
    };
    let throttle = ThrottleLayer::new(budget, metrics.clone());
    Ok(Clients {
        lease: build(
            config.clone(),
            ThrottleLayer::new(None, metrics.clone()),
            None,
        )?,
        events: build(
            config.clone(),
            ThrottleLayer::new(budget, metrics.clone()),
            Some(&fence),
        )?,
        pressure: throttle.pressure(),
        client: build(config, throttle, Some(&fence))?,
        fence,
    })
}

/// What the driver calls itself in every request.
pub const USER_AGENT: &str = concat!("metahook/", env!("CARGO_PKG_VERSION"));

/// What `plan --live` calls itself in every request: the audit log tells
/// its reads from the driver's.
pub const PLAN_USER_AGENT: &str = concat!("metahook-plan/", env!("CARGO_PKG_VERSION"));

/// A client that only reads (`plan --live`): the kubeconfig found as
/// [`connect`] finds it, [`PLAN_USER_AGENT`], kube's retries, `budget`
/// (none: no client-side limit) and, innermost, [`ReadOnlyLayer`]: a
/// write is refused before it leaves, whatever the kubeconfig's user may do.
pub async fn connect_read_only(
    budget: Option<Budget>,
    metrics: Arc<DriverMetrics>,
) -> Result<Client, kube::Error> {
    let config = inferred(PLAN_USER_AGENT).await?;
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&ReadOnlyLayer)
        .with_layer(&ThrottleLayer::new(budget, metrics))
        .build())
}

/// The kubeconfig found the usual way, every request naming `user_agent`.
async fn inferred(user_agent: &'static str) -> Result<kube::Config, kube::Error> {
    let mut config = kube::Config::infer()
        .await
        .map_err(kube::Error::InferConfig)?;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(user_agent),
    ));
    Ok(config)
}
