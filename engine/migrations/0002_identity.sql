-- Schema version 2: what both stacks share (organizations, members,
-- sessions, invitations, the operator token's hash, the node's secret),
-- so every node pointed at the database knows the same people, and the
-- operator's audit log.

CREATE TABLE sika_identity (
    key text PRIMARY KEY,
    value bytea NOT NULL
);

CREATE TABLE sika_audit (
    position bigint PRIMARY KEY,
    record bytea NOT NULL
);
