//! The Events a plan publishes on its parent, cut to what the API server
//! accepts; a failure is logged, never fatal.

use super::error::namespace_terminating;
use super::executor::Executor;
use crate::decide::model::Driven;
use crate::decide::plan::EventType;
use crate::write::events::Published;
use kube::Resource;
use kube::core::ApiResource;

impl Executor {
    /// Publishes an Event on the parent; a failure is logged, never fatal.
    pub async fn publish(
        &self,
        ctl: &Driven,
        parent: &(impl Resource<DynamicType = ApiResource> + Sync),
        kind: EventType,
        reason: String,
        note: String,
    ) {
        let Some(events) = &self.events else {
            return;
        };
        let reference = parent.object_ref(&ctl.parent.api);
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
                tracing::debug!(error = %crate::error_chain(&err), "no event: the namespace is being deleted");
            }
            // The API server is out of reach: the failure that made this
            // Event says so already.
            Err(err) if !matches!(err, kube::Error::Api(_)) => {
                tracing::debug!(error = %crate::error_chain(&err), "no event: the API server is out of reach");
            }
            Err(err) => {
                tracing::warn!(error = %crate::error_chain(&err), "publishing an event failed");
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
