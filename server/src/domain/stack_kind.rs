//! Which of the node's two stacks something belongs to: a leaf, so a
//! module can ask whether it runs on the sandbox without seeing the `Stack`.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum StackKind {
    Live,
    Sandbox,
}

impl StackKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            StackKind::Live => "live",
            StackKind::Sandbox => "sandbox",
        }
    }

    pub(crate) fn key_prefix(self) -> &'static str {
        match self {
            StackKind::Live => "sk_live_",
            StackKind::Sandbox => "sk_test_",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<StackKind> {
        match name {
            "live" => Some(StackKind::Live),
            "sandbox" => Some(StackKind::Sandbox),
            _ => None,
        }
    }

    /// The stack's name in the wire types.
    pub(crate) fn wire_name(self) -> sika_api::admin::StackName {
        match self {
            StackKind::Live => sika_api::admin::StackName::Live,
            StackKind::Sandbox => sika_api::admin::StackName::Sandbox,
        }
    }

    pub(crate) fn database_file(self) -> &'static str {
        match self {
            StackKind::Live => "live.redb",
            StackKind::Sandbox => "sandbox.redb",
        }
    }
}
