//! The Events a plan publishes on its parent, cut to what the API server
//! accepts; a failure is logged, never fatal.

use super::error::namespace_terminating;
use super::executor::Executor;
use crate::decide::model::Driven;
use crate::decide::plan::EventType;
use crate::write::events::Published;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;

impl Executor {
    /// Publishes an Event on the parent; a failure is logged, never fatal.
    pub async fn publish(
        &self,
        ctl: &Driven,
        parent: &(impl Resource + Sync),
        kind: EventType,
        reason: String,
        note: String,
    ) {
        let Some(events) = &self.events else {
            return;
        };
        let meta = parent.meta();
        let reference = ObjectReference {
            api_version: Some(ctl.parent.api.api_version.clone()),
            kind: Some(ctl.parent.api.kind.clone()),
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            field_path: None,
        };
        let type_ = match kind {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        };
        // The API server caps notes at 1 kB and reasons at 128 characters.
        let result = events
            .publish(
                &reference,
                type_,
                &truncate(&reason, 128),
                "Reconcile",
                &truncate(&note, 1000),
            )
            .await;
        match result {
            Ok(Published::Sent) => {}
            Ok(Published::Dropped) => self.metrics.event_dropped(),
            Err(err) if namespace_terminating(&err) => {
                tracing::debug!(error = %crate::api_error_chain(&err), "no event: the namespace is being deleted");
            }
            // The API server is out of reach: the failure that made this
            // Event says so already.
            Err(err) if !matches!(err, kube::Error::Api(_)) => {
                tracing::debug!(error = %crate::api_error_chain(&err), "no event: the API server is out of reach");
            }
            Err(err) => {
                tracing::warn!(error = %crate::api_error_chain(&err), "publishing an event failed");
            }
        }
    }
}

/// At most `max` bytes, cut at a character boundary, `…` marking the cut.
fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
