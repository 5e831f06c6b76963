//! The driver seen from outside while it runs: its caches and the last
//! reconcile of every parent, as JSON (served on `/debug/driver` by the
//! binary). Empty while this replica does not lead.

use crate::controller::cache::{CacheState, Caches};
use crate::controller::context::Context;
use crate::observe::records::Record;
use serde::Serialize;
use std::sync::{Arc, Mutex, MutexGuard};

/// What the driver runs now; set when it starts leading, cleared when it
/// stops.
#[derive(Default)]
pub struct View {
    running: Mutex<Option<Running>>,
}

/// The caches and controllers of the term this replica leads.
type Running = (Arc<Caches>, Vec<Arc<Context>>);

/// `/debug/driver`: every cache and every controller.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    /// Whether this replica drives (holds the Lease, or needs none).
    pub driving: bool,
    pub caches: Vec<CacheState>,
    pub controllers: Vec<ControllerState>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerState {
    pub name: String,
    pub parents: usize,
    pub queued: usize,
    pub backing_off: usize,
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View")
            .field("driving", &self.lock().is_some())
            .finish()
    }
}

impl View {
    fn lock(&self) -> MutexGuard<'_, Option<Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set(&self, caches: Arc<Caches>, contexts: Vec<Arc<Context>>) {
        *self.lock() = Some((caches, contexts));
    }

    pub(crate) fn clear(&self) {
        *self.lock() = None;
    }

    /// Whether this replica drives now (its records are the cluster's).
    pub fn driving(&self) -> bool {
        self.lock().is_some()
    }

    pub fn overview(&self) -> Overview {
        match &*self.lock() {
            None => Overview {
                driving: false,
                caches: Vec::new(),
                controllers: Vec::new(),
            },
            Some((caches, contexts)) => Overview {
                driving: true,
                caches: caches.states(),
                controllers: contexts
                    .iter()
                    .map(|ctx| ControllerState {
                        name: ctx.name().to_owned(),
                        parents: ctx.records.len(),
                        queued: ctx.queue.len(),
                        backing_off: ctx.backoff.len(),
                    })
                    .collect(),
            },
        }
    }

    /// The last reconcile of every parent, optionally of one controller
    /// and in one namespace.
    pub fn reconciles(&self, controller: Option<&str>, namespace: Option<&str>) -> Vec<Record> {
        match &*self.lock() {
            None => Vec::new(),
            Some((_, contexts)) => contexts
                .iter()
                .filter(|ctx| controller.is_none_or(|c| ctx.name() == c))
                .flat_map(|ctx| ctx.records.list(namespace))
                .collect(),
        }
    }
}
