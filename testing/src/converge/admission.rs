//! A write of the parent through the controller's own admission hooks, as
//! the API server makes it: the `default` hook's patch applied, then the
//! `validate` hook asked, each with an AdmissionReview as kube-apiserver
//! sends one (`fixtures/foo/admission/`), for the creates and updates the
//! generated webhook configurations cover
//! (`Controller::webhook_configurations`).

use super::error::{ConvergeError, Refused, verb};
use crate::review::review;
use jiff::Timestamp;
use metahook_core::admission::{FieldError, Operation};
use metahook_core::{Controller, HookKind, registry};
use serde::Deserialize;
use serde_json::Value;

/// The parent as admitted, and what the hooks warned.
pub(super) struct Admitted {
    pub(super) object: Value,
    pub(super) warnings: Vec<String>,
}

/// `object` (and, on an update, the `old` one) through `controller`'s
/// `default` then `validate` hooks, as the API server would before it
/// stores it; a controller without them admits it as it is. `defaults`
/// are the API server's own, run again after a patch as it runs them.
/// `n` numbers the review (its uid).
pub(super) fn admit(
    controller: &Controller,
    operation: Operation,
    object: Value,
    old: Option<&Value>,
    defaults: &dyn Fn(&mut Value),
    n: usize,
    now: Timestamp,
) -> Result<Admitted, ConvergeError> {
    let mut admitted = Admitted {
        object,
        warnings: Vec::new(),
    };
    for hook in [HookKind::Default, HookKind::Validate] {
        let Some(handler) = controller.hook(hook) else {
            continue;
        };
        let uid = format!("converge-{n}-{hook}");
        let review = review(controller, &uid, operation, &admitted.object, old);
        let failed = |message: String| ConvergeError::Admission {
            hook,
            operation: verb(operation),
            message,
        };
        let answer = match registry::call(&handler, review.to_string().as_bytes(), now) {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => return Err(failed(e.to_string())),
            Err(panicked) => return Err(failed(panicked.to_string())),
        };
        let WireReview { response } = serde_json::from_slice(&answer)
            .map_err(|e| failed(format!("the answer is not an AdmissionReview: {e}")))?;
        // The API server's own checks of an answer.
        if response.uid != uid {
            return Err(failed(format!(
                "the answer's uid is {:?}, not {uid:?}",
                response.uid
            )));
        }
        admitted.warnings.extend(response.warnings);
        if !response.allowed {
            let status = response.status.unwrap_or_default();
            return Err(Refused {
                hook,
                operation,
                object: describe(&admitted.object),
                message: status.message,
                fields: status
                    .details
                    .causes
                    .into_iter()
                    .map(|c| FieldError::new(c.field, c.message))
                    .collect(),
                warnings: admitted.warnings,
            }
            .into());
        }
        if let Some(patch) = response.patch {
            if response.patch_type.as_deref() != Some("JSONPatch") {
                return Err(failed(format!(
                    "a patch of type {:?}, not JSONPatch",
                    response.patch_type
                )));
            }
            let patch: json_patch::Patch = serde_json::from_slice(&patch.0)
                .map_err(|e| failed(format!("the patch is not a JSON patch: {e}")))?;
            json_patch::patch(&mut admitted.object, &patch)
                .map_err(|e| failed(format!("the patch does not apply: {e}")))?;
            defaults(&mut admitted.object);
        }
    }
    Ok(admitted)
}

/// `Foo default/example-foo`.
fn describe(object: &Value) -> String {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let (kind, name) = (text(&object["kind"]), text(&object["metadata"]["name"]));
    match object["metadata"]["namespace"].as_str() {
        Some(namespace) => format!("{kind} {namespace}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// The answer, as the API server reads it.
#[derive(Deserialize)]
struct WireReview {
    response: WireResponse,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireResponse {
    uid: String,
    allowed: bool,
    #[serde(default)]
    status: Option<WireStatus>,
    #[serde(default)]
    warnings: Vec<String>,
    #[serde(default)]
    patch_type: Option<String>,
    #[serde(default)]
    patch: Option<k8s_openapi::ByteString>,
}

#[derive(Default, Deserialize)]
struct WireStatus {
    #[serde(default)]
    message: String,
    #[serde(default)]
    details: WireDetails,
}

#[derive(Default, Deserialize)]
struct WireDetails {
    #[serde(default)]
    causes: Vec<WireCause>,
}

#[derive(Deserialize)]
struct WireCause {
    #[serde(default)]
    field: String,
    #[serde(default)]
    message: String,
}
