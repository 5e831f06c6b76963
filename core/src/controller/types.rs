//! A controller's child (or attachment) types, as its hooks' request types
//! name them, each with its update strategy: worked out when the
//! controller is built, so the order of the builder's calls does not
//! matter.

use super::declaration::Controller;
use super::shape::{ChildType, Shape, UpdateStrategy};
use crate::collection::ObjectSet;
use crate::object::{Object, TypeRef};

/// The strategy of a child type no [`Types::update`] names: the hook's
/// answer is what the child becomes, as `kubectl apply` would make it.
pub(super) const DEFAULT_UPDATE: UpdateStrategy = UpdateStrategy::InPlace;

/// What the builder has been told so far.
#[derive(Debug, Default)]
pub(super) struct Types {
    /// Every type a hook reads, in the order first read.
    read: Vec<TypeRef>,
    /// The strategies given, and the Rust type each was given for.
    updates: Vec<(TypeRef, UpdateStrategy, &'static str)>,
}

impl Types {
    /// The types of the set `C` a hook reads.
    pub(super) fn read<C: ObjectSet<M>, M>(&mut self) {
        for member in C::members() {
            for type_ref in (member.type_refs)() {
                if !self.read.contains(&type_ref) {
                    self.read.push(type_ref);
                }
            }
        }
    }

    /// The strategy of `T`'s types.
    pub(super) fn update<T: Object>(&mut self, update: UpdateStrategy) {
        for type_ref in T::type_refs() {
            self.updates
                .push((type_ref, update, std::any::type_name::<T>()));
        }
    }

    /// Writes the types into `controller`'s shape; a strategy given for a
    /// type no hook reads is a problem (a typo, or a hook that lost it).
    pub(super) fn declare(self, controller: &mut Controller, what: &str) {
        let types: Vec<ChildType> = self
            .read
            .iter()
            .map(|type_ref| ChildType {
                type_ref: type_ref.clone(),
                update: self
                    .updates
                    .iter()
                    .rev()
                    .find(|(t, _, _)| t == type_ref)
                    .map_or(DEFAULT_UPDATE, |(_, update, _)| *update),
            })
            .collect();
        for (type_ref, _, rust) in &self.updates {
            if !self.read.contains(type_ref) {
                controller.problems.push(format!(
                    "an update strategy is given for {rust} ({}), which no hook reads as {what}",
                    type_ref.group_key()
                ));
            }
        }
        let (Shape::Composite {
            children: declared, ..
        }
        | Shape::Decorator {
            attachments: declared,
            ..
        }) = &mut controller.shape;
        *declared = types;
    }
}
