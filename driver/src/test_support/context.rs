//! A controller's context for tests that run whole reconciles: empty caches
//! the test preloads, hooks answered in process, no Events, nothing
//! related discovered, and the status written in the same pass as the
//! children (as Metacontroller writes it; the settling has its own test).

use crate::client::pressure::Pressure;
use crate::config::HookVersion;
use crate::controller::cache::Caches;
use crate::controller::context::{HookTargets, Shared};
use crate::controller::customized::Discover;
use crate::hook::call::{Endpoint, HookCaller, HookTarget};
use crate::observe::metrics::DriverMetrics;
use metahook_core::HookKind;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A hook as the tests' manifests declare it: v2, strict.
pub(crate) fn hook(kind: HookKind, endpoint: Endpoint) -> HookTarget {
    HookTarget {
        kind,
        version: HookVersion::V2,
        strict: true,
        endpoint,
        revision: None,
    }
}

/// A controller with a sync hook only.
pub(crate) fn sync_only(endpoint: Endpoint) -> HookTargets {
    HookTargets {
        sync: hook(HookKind::Sync, endpoint),
        finalize: None,
        customize: None,
    }
}

/// Caches on `client` that start nothing until asked: a test preloads them.
pub(crate) fn caches(client: &kube::Client) -> Arc<Caches> {
    Caches::new(
        client.clone(),
        CancellationToken::new(),
        Arc::new(DriverMetrics::default()),
    )
}

/// What a test's context shares (see the module's doc); a test changes the
/// fields it needs.
pub(crate) fn shared(client: kube::Client, caches: Arc<Caches>) -> Shared {
    let metrics = Arc::new(DriverMetrics::default());
    let discover: Discover = Arc::new(|_: &str, _: &str| Box::pin(async { None }));
    Shared {
        client,
        caches,
        discover,
        events: None,
        caller: HookCaller::in_process(jiff::Timestamp::now, metrics.clone()),
        metrics,
        pressure: Pressure::default(),
        status_settle: Duration::ZERO,
    }
}
