-- Sika's ledger on PostgreSQL, schema version 1.
--
-- Every stack's state is the same key-value records the embedded store
-- keeps in redb: one row a key, with the commit epoch that last wrote it.
-- A deleted key stays as a row with no value (a tombstone), so a node's
-- local cache catches up by reading the rows newer than its own epoch.

-- One row a stack: the storage format that wrote it and its newest epoch,
-- which every batch's transaction raises (it never goes back).
CREATE TABLE sika_stacks (
    stack text PRIMARY KEY,
    format integer NOT NULL,
    epoch bigint NOT NULL,
    -- A random id: a local cache filled from another database is not reused.
    origin text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The writer lease of each stack: only the holder of the current term
-- commits, and each commit checks it in its own transaction.
CREATE TABLE sika_leases (
    stack text PRIMARY KEY,
    holder text NOT NULL,
    term bigint NOT NULL,
    expires_at timestamptz NOT NULL
);

-- Most batches rewrite rows already there (an account's balance, a
-- payout's status). With room left in each page and no index on the
-- columns that change, those are heap-only updates: no index is touched.
-- So `epoch` has no index; reading the rows newer than a cache (on start
-- and takeover) scans the stack's rows instead.
CREATE TABLE sika_records (
    stack text NOT NULL,
    key bytea NOT NULL,
    value bytea,
    epoch bigint NOT NULL,
    PRIMARY KEY (stack, key)
) WITH (fillfactor = 70);
