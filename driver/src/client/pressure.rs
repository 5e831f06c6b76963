//! Whether the client-side budget (`--kube-qps`/`--kube-burst`) is holding
//! back writes that converge parents: a finalizer, a child's apply or
//! delete, an adoption. While it is, a reconcile may leave a parent's
//! status for a later pass (`plan::StatusPace`): the budget goes to the
//! children first, and a status written later has usually caught up with
//! them, so two status writes become one.
//!
//! Status writes and Events waiting on the budget do not count: otherwise
//! deferred statuses, once they flow, would defer each other.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// How long after a converging write last waited for a token the budget
/// still counts as short: about the time a burst of writes takes to drain
/// at low budgets, short enough that statuses follow soon after.
const WINDOW: Duration = Duration::from_secs(1);

/// Shared between the throttle layer (which notes) and the reconciles
/// (which ask). The default never notes anything: no budget, no pressure.
#[derive(Debug, Clone, Default)]
pub struct Pressure {
    last_wait: Arc<Mutex<Option<Instant>>>,
}

impl Pressure {
    /// A request waited for a token; `converging` says whether it was a
    /// write that converges a parent.
    pub(crate) fn waited(&self, converging: bool) {
        if converging {
            *self.last_wait.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        }
    }

    /// A converging write waited for a token within the last second.
    pub fn busy(&self) -> bool {
        self.last_wait
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|at| at.elapsed() < WINDOW)
    }
}

/// A write (POST, PUT, PATCH, DELETE) that is neither a status write nor
/// an Event: what converges a parent and its children.
pub(crate) fn converging<B>(request: &http::Request<B>) -> bool {
    let write = matches!(
        *request.method(),
        http::Method::POST | http::Method::PUT | http::Method::PATCH | http::Method::DELETE
    );
    let path = request.uri().path();
    write && !path.ends_with("/status") && !is_event(path)
}

/// `/apis/events.k8s.io/…`, or core Events at `/api/v1/[namespaces/<ns>/]events[/<name>]`.
fn is_event(path: &str) -> bool {
    if path.starts_with("/apis/events.k8s.io/") {
        return true;
    }
    let Some(rest) = path.strip_prefix("/api/v1/") else {
        return false;
    };
    let segments: Vec<&str> = rest.split('/').collect();
    matches!(
        segments.as_slice(),
        ["events", ..] | ["namespaces", _, "events", ..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: http::Method, path: &str) -> http::Request<()> {
        http::Request::builder()
            .method(method)
            .uri(path)
            .body(())
            .unwrap()
    }

    #[test]
    fn only_writes_that_converge_parents_count() {
        use http::Method;
        let converging_writes = [
            (Method::PATCH, "/apis/apps/v1/namespaces/a/deployments/web"),
            (Method::POST, "/apis/apps/v1/namespaces/a/deployments"),
            (Method::DELETE, "/api/v1/namespaces/a/configmaps/x"),
            (Method::PATCH, "/apis/metahook.dev/v1/namespaces/a/hellos/h"),
            // A child named like the resource Events live in.
            (
                Method::PATCH,
                "/apis/apps/v1/namespaces/a/deployments/events",
            ),
            (Method::PUT, "/api/v1/namespaces/events/configmaps/c"),
        ];
        for (method, path) in converging_writes {
            assert!(
                converging(&request(method.clone(), path)),
                "{method} {path}"
            );
        }
        let others = [
            (
                Method::PATCH,
                "/apis/metahook.dev/v1/namespaces/a/hellos/h/status",
            ),
            (Method::POST, "/apis/events.k8s.io/v1/namespaces/a/events"),
            (
                Method::PATCH,
                "/apis/events.k8s.io/v1/namespaces/a/events/e.1",
            ),
            (Method::POST, "/api/v1/namespaces/a/events"),
            (Method::POST, "/api/v1/events"),
            (Method::GET, "/apis/apps/v1/namespaces/a/deployments/web"),
            (Method::GET, "/apis/apps/v1/deployments?watch=true"),
        ];
        for (method, path) in others {
            assert!(
                !converging(&request(method.clone(), path)),
                "{method} {path}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn busy_for_a_second_after_a_converging_write_waited() {
        let pressure = Pressure::default();
        assert!(!pressure.busy());
        pressure.waited(false);
        assert!(
            !pressure.busy(),
            "a status write or Event waiting is not pressure"
        );
        pressure.waited(true);
        assert!(pressure.busy());
        tokio::time::advance(Duration::from_millis(999)).await;
        assert!(pressure.busy());
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(!pressure.busy());
    }
}
