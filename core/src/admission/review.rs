//! The AdmissionReview (`admission.k8s.io/v1`) the API server sends a
//! webhook, as a validate hook reads it ([`Admission`]), and the review it
//! answers with.

use super::verdict::Verdict;
use crate::answer::IntoAnswer;
use crate::decode::decode;
use crate::hook::{Handler, HookError};
use crate::request::{Parent, ParentType};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::sync::Arc;

/// What the client asked the API server to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// A new object: [`Admission::object`] is it, there is no old one.
    Create,
    /// A change: the object as it would be stored, and the old one.
    Update,
    /// A delete: only the old object.
    Delete,
    /// A connect (exec, port-forward): not sent for custom resources.
    Connect,
}

/// Who asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct User {
    /// `system:serviceaccount:shop:deployer`, `alice@example.com`.
    #[serde(default)]
    pub username: String,
    /// The groups the API server put them in.
    #[serde(default)]
    pub groups: Vec<String>,
}

/// A request to store, change or delete a parent, as a validate hook reads
/// it: the object as it would be stored and the one it replaces, read as
/// `sync` reads its parent ([`Parent`]), so one check serves both.
pub struct Admission<P: ParentType> {
    /// Create, update or delete.
    pub operation: Operation,
    /// The object's name (empty on a create with `generateName`).
    pub name: String,
    /// Its namespace; `None` for a cluster-scoped one.
    pub namespace: Option<String>,
    /// The object as it would be stored; `None` on a delete.
    pub object: Option<Parent<P>>,
    /// The object as it is now; `None` on a create.
    pub old: Option<Parent<P>>,
    /// Who asked.
    pub user: User,
    /// A dry run (`kubectl apply --dry-run=server`): nothing is stored.
    pub dry_run: bool,
}

impl<P: ParentType> std::fmt::Debug for Admission<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("operation", &self.operation)
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .field("user", &self.user.username)
            .field("dry_run", &self.dry_run)
            .finish_non_exhaustive()
    }
}

/// The review as it arrives.
#[derive(Deserialize)]
pub(super) struct WireReview {
    pub(super) request: WireRequest,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireRequest {
    pub(super) uid: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    operation: Operation,
    #[serde(default)]
    user_info: User,
    // Kept as text: read as the parent type, and (by the defaults hook)
    // as JSON, to patch.
    #[serde(default)]
    pub(super) object: Option<Box<RawValue>>,
    #[serde(default)]
    old_object: Option<Box<RawValue>>,
    #[serde(default)]
    dry_run: bool,
}

impl WireRequest {
    /// The request as the hook reads it; `at` names the object that does
    /// not fit the parent type.
    pub(super) fn admission<P: ParentType>(&self) -> Result<Admission<P>, HookError> {
        let read = |raw: &Option<Box<RawValue>>, at: &str| -> Result<_, HookError> {
            raw.as_deref()
                .map(|raw| decode::<Parent<P>>(raw.get().as_bytes()))
                .transpose()
                .map_err(|e| HookError::Decode(e.under(at)))
        };
        Ok(Admission {
            operation: self.operation,
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            object: read(&self.object, "request.object")?,
            old: read(&self.old_object, "request.oldObject")?,
            user: self.user_info.clone(),
            dry_run: self.dry_run,
        })
    }
}

/// The review a webhook answers with.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Reply<'a> {
    api_version: &'static str,
    kind: &'static str,
    response: Response<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Response<'a> {
    uid: &'a str,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Status<'a>>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<k8s_openapi::ByteString>,
}

/// What the client sees of a refusal: the API server puts it, code and
/// causes included, in its own answer ("admission webhook … denied the
/// request: <message>").
#[derive(Serialize)]
struct Status<'a> {
    code: u16,
    reason: &'static str,
    message: String,
    details: Details<'a>,
}

#[derive(Serialize)]
struct Details<'a> {
    causes: Vec<Cause<'a>>,
}

#[derive(Serialize)]
struct Cause<'a> {
    reason: &'static str,
    field: &'a str,
    message: &'a str,
}

impl<'a> Reply<'a> {
    /// The answer to the review `uid`: allowed (with `patch`, a JSON
    /// patch, if any) or refused, with warnings either way.
    pub(super) fn new(uid: &'a str, verdict: &'a Verdict, patch: Option<Vec<u8>>) -> Self {
        let status = (!verdict.allowed()).then(|| Status {
            // 422 Invalid, as the API server answers a value its own
            // validation refuses.
            code: 422,
            reason: "Invalid",
            message: verdict.message(),
            details: Details {
                causes: verdict
                    .refused()
                    .iter()
                    .map(|e| Cause {
                        reason: "FieldValueInvalid",
                        field: &e.field,
                        message: &e.message,
                    })
                    .collect(),
            },
        });
        Reply {
            api_version: "admission.k8s.io/v1",
            kind: "AdmissionReview",
            response: Response {
                uid,
                allowed: verdict.allowed(),
                status,
                warnings: verdict.warnings(),
                patch_type: patch.is_some().then_some("JSONPatch"),
                patch: patch.map(k8s_openapi::ByteString),
            },
        }
    }
}

impl IntoAnswer<Verdict> for Verdict {
    fn into_answer(self) -> Result<Verdict, String> {
        Ok(self)
    }
}

/// `hook` as the handler of a controller's `validate` path.
pub(crate) fn validate_handler<P, A, F>(hook: F) -> Handler
where
    P: ParentType,
    A: IntoAnswer<Verdict>,
    F: Fn(&Admission<P>) -> A + Send + Sync + 'static,
{
    Arc::new(move |body, _now| {
        let review: WireReview = decode(body)?;
        let admission = review.request.admission::<P>()?;
        let verdict = hook(&admission)
            .into_answer()
            .map_err(|message| HookError::Failed { message })?;
        Ok(serde_json::to_vec(&Reply::new(
            &review.request.uid,
            &verdict,
            None,
        ))?)
    })
}
