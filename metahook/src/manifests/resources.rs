//! The types a driver of some controllers reads and writes, by API group:
//! what the driver's ClusterRole and the plan's read-only one name.

use metahook_core::{Controller, Shape, TypeRef};
use std::collections::{BTreeMap, BTreeSet};

/// The resources a driver of `controllers` reads and writes, by API group:
/// the parents (or decorated objects), and the children (or attachments).
pub(super) fn resources_by_group(
    controllers: &[Controller],
) -> (
    BTreeMap<String, BTreeSet<String>>,
    BTreeMap<String, BTreeSet<String>>,
) {
    let mut parents: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut children: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let add = |map: &mut BTreeMap<String, BTreeSet<String>>, t: &TypeRef| {
        map.entry(t.group().to_owned())
            .or_default()
            .insert(t.plural.to_string());
    };
    for controller in controllers {
        match controller.shape() {
            Shape::Composite {
                parent,
                children: c,
                ..
            } => {
                add(&mut parents, parent);
                c.iter().for_each(|c| add(&mut children, &c.type_ref));
            }
            Shape::Decorator {
                resource,
                attachments,
            } => {
                add(&mut parents, resource);
                attachments
                    .iter()
                    .for_each(|c| add(&mut children, &c.type_ref));
            }
        }
    }
    (parents, children)
}
