//! The customize hook: with each sync, send the source ConfigMap and every
//! Namespace. Both arrive as related objects whoever owns them; a new
//! Namespace, or a change to the source, is itself a reason to sync.

use crate::resource::GlobalConfigMap;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use metahook::{Customize, CustomizeAnswer, RelatedResourceRule};

pub fn customize(req: &Customize<GlobalConfigMap>) -> CustomizeAnswer {
    // A spec that cannot be read names no source: sync reports it.
    let Ok(spec) = &req.parent.spec else {
        return CustomizeAnswer::none();
    };
    CustomizeAnswer::rules([
        RelatedResourceRule::of::<ConfigMap>()
            .in_namespace(spec.source_namespace.clone())
            .named([spec.source_name.clone()]),
        // Every Namespace.
        RelatedResourceRule::of::<Namespace>(),
    ])
}
