//! The parent's CRD with every version it serves, and the conversion
//! webhook between them ([`Composite::version`](crate::Composite::version)).

use super::declaration::{Controller, DeclarationError};
use crate::conversion::ConversionWebhook;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::crd::merge_crds;

impl Controller {
    /// The CRDs it owns, as [`Controller::crds`], but the parent's with
    /// every version declared ([`Composite::version`](crate::Composite::version)):
    /// all served, the hub's stored, converted by this controller's
    /// `convert` hook at `webhook`. The same as [`Controller::crds`] for a
    /// controller with one version.
    ///
    /// Install it only where the API server reaches `webhook`: a CRD that
    /// serves two versions without a working conversion webhook cannot be
    /// read at the version its objects are not stored in. This is why
    /// [`Controller::crds`] (what `crds` prints, and what the chart
    /// installs without TLS) keeps to the hub's version; the chart and
    /// `manifests --ca-bundle` install this one where the hooks serve TLS.
    ///
    /// Fails when the versions do not make one CRD: a group, kind or
    /// scope that differs from the hub's, or a version declared twice
    /// ([`Controller::check`] says the same).
    pub fn crds_with_conversion(
        &self,
        webhook: &ConversionWebhook,
    ) -> Result<Vec<CustomResourceDefinition>, DeclarationError> {
        let Some(versions) = &self.versions else {
            return Ok(self.crds());
        };
        self.crds_with_parent(|hub| {
            let mut all = vec![hub()];
            // merge_crds takes the others from the end.
            all.extend(versions.others.iter().rev().map(|make| make()));
            let mut merged = merge_crds(all, &versions.hub).map_err(|e| DeclarationError {
                name: self.name.clone(),
                problems: vec![format!("its parent's versions do not make one CRD: {e}")],
            })?;
            merged.spec.conversion = Some(webhook.conversion(&self.name));
            Ok(merged)
        })
    }
}
