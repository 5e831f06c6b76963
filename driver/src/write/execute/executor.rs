//! The executor itself: its client and bookkeeping, and what each of its
//! writes uses (the API of the parent's or a child's type, the count of
//! every call, a JSON patch built).

use super::error::{ExecuteError, status_code};
use crate::client::responses::last_answer;
use crate::decide::model::Driven;
use crate::observe::metrics::DriverMetrics;
use crate::write::events::EventPublisher;
use crate::write::memory::ApplyMemory;
use kube::Client;
use kube::api::{Api, DynamicObject};
use serde_json::Value;
use std::sync::Arc;

/// Performs plans (the loop: [`Executor::execute`]).
#[derive(Clone)]
pub struct Executor {
    pub(super) client: Client,
    pub(super) events: Option<Arc<EventPublisher>>,
    pub(super) memory: Arc<ApplyMemory>,
    pub(super) metrics: Arc<DriverMetrics>,
}

pub(super) fn patch_from(value: Value) -> Result<json_patch::Patch, ExecuteError> {
    serde_json::from_value(value).map_err(ExecuteError::BuildPatch)
}

impl Executor {
    /// `events`: where Events go (none in tests that do not script them).
    pub fn new(
        client: Client,
        events: Option<Arc<EventPublisher>>,
        memory: Arc<ApplyMemory>,
        metrics: Arc<DriverMetrics>,
    ) -> Self {
        Executor {
            client,
            events,
            memory,
            metrics,
        }
    }

    /// What this executor last applied: the planner's input.
    pub fn memory(&self) -> &Arc<ApplyMemory> {
        &self.memory
    }

    pub(super) fn parent_api(&self, ctl: &Driven, parent: &DynamicObject) -> Api<DynamicObject> {
        match parent.metadata.namespace.as_deref() {
            Some(ns) if ctl.parent.namespaced => {
                Api::namespaced_with(self.client.clone(), ns, &ctl.parent.api)
            }
            _ => Api::all_with(self.client.clone(), &ctl.parent.api),
        }
    }

    pub(super) fn child_api(
        &self,
        ctl: &Driven,
        type_index: usize,
        namespace: Option<&str>,
    ) -> Result<(Api<DynamicObject>, String), ExecuteError> {
        let child = ctl
            .children
            .get(type_index)
            .ok_or(ExecuteError::UnknownChildType(type_index))?;
        let api = match namespace {
            Some(ns) if child.resource.namespaced => {
                Api::namespaced_with(self.client.clone(), ns, &child.resource.api)
            }
            _ => Api::all_with(self.client.clone(), &child.resource.api),
        };
        Ok((api, child.resource.api.kind.clone()))
    }

    /// Counts one API call by the status code the API server answered
    /// (inside [`remembering_answers`](crate::client::responses::remembering_answers),
    /// as `execute` runs; else 200 for success), 0 when no answer came.
    pub(super) fn count<T>(
        &self,
        ctl: &Driven,
        operation: &'static str,
        kind: &str,
        result: &Result<T, kube::Error>,
    ) {
        let code = last_answer().unwrap_or(match result {
            Ok(_) => 200,
            Err(e) => status_code(e).unwrap_or(0),
        });
        self.metrics
            .api_operation(ctl.name(), operation, kind, code);
    }
}
