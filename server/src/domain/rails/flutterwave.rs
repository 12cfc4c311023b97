//! How Sika routes methods through Flutterwave (API v3): which method codes
//! the connector carries, whom a transfer pays and how a collection is
//! charged. These are the domain's decisions; the HTTP client that speaks
//! to Flutterwave is `crate::adapters::flutterwave`.

/// Who a transfer pays, as Flutterwave's `account_bank` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Payee {
    /// A mobile-money wallet: `account_bank` is its network's code.
    Wallet(&'static str),
    /// A bank account: `account_bank` is the bank's code, which the payout
    /// carries (`to.bankCode`).
    Bank,
}

/// How a collection on a method is charged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Charge {
    pub charge_type: &'static str,
    pub network: Option<&'static str>,
    pub country: Option<&'static str>,
}

/// How a method code goes through Flutterwave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Route {
    pub payee: Payee,
    /// `None`: payouts only (collections stay with the operator).
    pub charge: Option<Charge>,
    /// Flutterwave wants the sender (`meta.sender`, `sender_country`,
    /// `mobile_number`) on transfers to it: M-Pesa.
    pub needs_sender: bool,
    /// Flutterwave's account resolve looks its destinations up.
    pub resolves: bool,
}

/// The methods the connector carries: mobile money it both pays out to and
/// collects from, and Nigerian bank accounts (payouts), the one bank rail
/// whose transfers need nothing a payout does not carry.
pub(crate) fn route(code: &str) -> Option<Route> {
    let wallet = |account_bank, charge_type, network, country| Route {
        payee: Payee::Wallet(account_bank),
        charge: Some(Charge { charge_type, network, country }),
        needs_sender: false,
        resolves: false,
    };
    Some(match code {
        "mtn_gh" => wallet("MTN", "mobile_money_ghana", Some("MTN"), None),
        "telecel_gh" => wallet("VODAFONE", "mobile_money_ghana", Some("VODAFONE"), None),
        "airteltigo_gh" => wallet("AIRTELTIGO", "mobile_money_ghana", Some("TIGO"), None),
        "mpesa_ke" => Route { needs_sender: true, ..wallet("MPS", "mpesa", None, None) },
        "mtn_ug" => wallet("MTN", "mobile_money_uganda", Some("MTN"), None),
        "airtel_ug" => wallet("AIRTEL", "mobile_money_uganda", Some("AIRTEL"), None),
        "mtn_rw" => wallet("MTN", "mobile_money_rwanda", Some("MTN"), None),
        "orange_ci" => wallet("ORANGE", "mobile_money_franco", None, Some("CI")),
        "mtn_ci" => wallet("MTN", "mobile_money_franco", None, Some("CI")),
        "wave_ci" => wallet("WAVE", "mobile_money_franco", None, Some("CI")),
        "orange_sn" => wallet("ORANGEMONEY", "mobile_money_franco", None, Some("SN")),
        "wave_sn" => wallet("WAVE", "mobile_money_franco", None, Some("SN")),
        "bank_ng" => Route { payee: Payee::Bank, charge: None, needs_sender: false, resolves: true },
        _ => return None,
    })
}

/// Why `code` cannot go through the connector (for `sika config check`).
pub(crate) fn unroutable(code: &str) -> &'static str {
    match code {
        "bank_gh" | "bank_ug" | "bank_tz" | "bank_rw" | "bank_ci" | "bank_sn" => {
            "Flutterwave's bank transfers there need the branch's code (destination_branch_code), \
             which a payout does not carry; settle them by hand"
        }
        "bank_ke" => {
            "Flutterwave's Kenyan bank transfers need the sender's identity document and the \
             beneficiary's mobile number, which a payout does not carry; settle them by hand"
        }
        "bank_za" => {
            "Flutterwave's South African bank transfers need the recipient's names, email, mobile \
             number and address, which a payout does not carry; settle them by hand"
        }
        _ => {
            "the connector carries the mobile money Flutterwave both pays out to and collects \
             from, and Nigerian bank accounts; settle the others by hand"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mobile_money_and_nigerian_banks_route() {
        assert_eq!(route("mtn_gh").unwrap().payee, Payee::Wallet("MTN"));
        assert_eq!(route("mpesa_ke").unwrap().charge.unwrap().charge_type, "mpesa");
        assert!(route("mpesa_ke").unwrap().needs_sender);
        let bank = route("bank_ng").unwrap();
        assert_eq!((bank.payee, bank.charge, bank.resolves), (Payee::Bank, None, true));
        assert!(route("bank_gh").is_none());
        assert!(unroutable("bank_gh").contains("destination_branch_code"));
    }
}
