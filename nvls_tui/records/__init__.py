"""What nvls-tui writes down: the audit log, the incident report, the contract's JSON, and the
private files on the bastion they live in."""
