//! The rails a movement goes through. A payout or collection stores its
//! rail as a string (the name below, byte for byte); code that decides by
//! rail parses it into [`Rail`] instead of comparing strings.

/// One rail. Not `non_exhaustive`: code that maps rails to behaviour
/// matches on every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rail {
    /// The sandbox's simulator: scheduled jobs settle the movement.
    SandboxSimulator,
    /// No connector takes it: the operator confirms it by hand.
    ManualSettlement,
    /// Flutterwave, driven by the reconciler.
    Flutterwave,
}

impl Rail {
    /// Every rail.
    pub const ALL: [Rail; 3] = [Rail::SandboxSimulator, Rail::ManualSettlement, Rail::Flutterwave];

    /// The name a movement stores.
    pub const fn name(self) -> &'static str {
        match self {
            Rail::SandboxSimulator => "sandbox_simulator",
            Rail::ManualSettlement => "manual_settlement",
            Rail::Flutterwave => "flutterwave",
        }
    }

    /// The rail a stored name names, if any.
    pub fn from_name(name: &str) -> Option<Rail> {
        Rail::ALL.into_iter().find(|rail| rail.name() == name)
    }

    /// Whether a provider drives movements on this rail (the reconciler
    /// owes them an answer until they settle).
    pub const fn is_provider(self) -> bool {
        matches!(self, Rail::Flutterwave)
    }
}

impl std::fmt::Display for Rail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Rail;

    /// The names movements have always stored.
    #[test]
    fn names_are_the_stored_ones() {
        let names: Vec<&str> = Rail::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(names, ["sandbox_simulator", "manual_settlement", "flutterwave"]);
        for rail in Rail::ALL {
            assert_eq!(Rail::from_name(rail.name()), Some(rail));
        }
        assert_eq!(Rail::from_name("Flutterwave"), None);
    }
}
