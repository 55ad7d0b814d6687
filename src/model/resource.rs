//! `kube::Resource` for Kanister's kinds. Blueprint and Profile have no
//! `spec`, so kube's `CustomResource` derive does not fit them; the trait is
//! implemented by hand, once, through a macro.

/// Implements `kube::Resource` for a namespaced kind of `cr.kanister.io/v1alpha1`.
macro_rules! kanister_resource {
    ($ty:ty, $kind:literal, $plural:literal) => {
        impl kube::Resource for $ty {
            type DynamicType = ();
            type Scope = kube::core::NamespaceResourceScope;

            fn kind(_: &()) -> std::borrow::Cow<'_, str> {
                $kind.into()
            }
            fn group(_: &()) -> std::borrow::Cow<'_, str> {
                $crate::model::GROUP.into()
            }
            fn version(_: &()) -> std::borrow::Cow<'_, str> {
                $crate::model::VERSION.into()
            }
            fn plural(_: &()) -> std::borrow::Cow<'_, str> {
                $plural.into()
            }
            fn meta(&self) -> &kube::core::ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut kube::core::ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

pub(crate) use kanister_resource;
